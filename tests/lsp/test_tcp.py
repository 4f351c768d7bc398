"""gdg-lsp --tcp HOST:PORT serves the same protocol over a socket, one client after another."""

from __future__ import annotations

import subprocess
import sys

from tests.lsp.tcp_client import TcpClient, start_server, stop

OPEN = {"textDocument": {"uri": "file:///tcp/a.py", "languageId": "python", "version": 1, "text": "alpha = 1\n"}}
HOVER = {"textDocument": {"uri": "file:///tcp/a.py"}, "position": {"line": 0, "character": 1}}


def test_tcp_server_answers_initialize():
    proc, port = start_server()
    try:
        client = TcpClient(port)
        answer = client.initialize()
        assert answer["id"] == 1 and "inlineCompletionProvider" in answer["result"]["capabilities"]
        client.close()
    finally:
        stop(proc)


def test_each_client_gets_a_fresh_session_after_the_last_one_left():
    proc, port = start_server()
    try:
        polite = TcpClient(port)
        polite.initialize()
        polite.notify("textDocument/didOpen", OPEN)
        assert polite.request(2, "textDocument/hover", HOVER)["result"] is not None
        assert polite.request(3, "shutdown") is not None
        polite.notify("exit")
        assert polite.closed()  # exit ends this client's session...
        assert proc.poll() is None  # ...not the server

        rude = TcpClient(port)
        rude.initialize()
        # the document of the client before is gone: a fresh session
        assert rude.request(2, "textDocument/hover", HOVER)["result"] is None
        rude.notify("textDocument/didOpen", OPEN)
        rude.close()  # no shutdown, no exit: the connection just drops

        after = TcpClient(port)
        assert "result" in after.initialize()
        after.notify("textDocument/didOpen", OPEN)
        assert after.request(2, "textDocument/hover", HOVER)["result"] is not None
        after.close()
        assert proc.poll() is None
    finally:
        stop(proc)


def test_bad_tcp_address_is_a_clear_error():
    result = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", "nonsense"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "HOST:PORT" in result.stderr
