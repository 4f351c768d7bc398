"""The process's exit status after ``exit`` over stdio: 0 when ``shutdown`` came first, else 1
(the LSP specification: a client reads the status to tell a clean stop from a crash)."""

from __future__ import annotations

import pytest

from tests.lsp.stdio_client import StdioClient

NO_MODEL = {"model": "/nonexistent/model.gguf"}


@pytest.mark.parametrize("shutdown_first, status", [(True, 0), (False, 1)])
def test_exit_status_says_whether_shutdown_came_first(shutdown_first, status):
    client = StdioClient()
    try:
        assert "result" in client.initialize(options=NO_MODEL)
        if shutdown_first:
            assert client.request(2, "shutdown")["result"] is None
        client.notify("exit")
        assert client.proc.wait(30) == status
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
        client.proc.wait(30)
