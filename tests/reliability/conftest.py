from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from gdg_lsp.bench.inprocess import InProcessServer

NO_MODEL = {"model": "/nonexistent/gdg-test-model.gguf"}
"""Settings whose model fails at once: Γ-only features, no torch load."""


@contextlib.contextmanager
def quiet_logs():
    """The fuzzers send thousands of bad messages; formatting each warning's traceback costs more than the test."""
    loggers = [logging.getLogger(name) for name in ("pygls", "gdg_lsp")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


class LoopServer:
    """An in-process server on a loop of its own, for synchronous (hypothesis) tests."""

    def __init__(self, **kwargs) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = InProcessServer(**kwargs)
        self.run(self.server.__aenter__())

    def run(self, coroutine):
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        self.run(self.server.__aexit__(None, None, None))
        self.loop.run_until_complete(asyncio.sleep(0))
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.loop.close()


@pytest.fixture
def loop_server():
    servers = []

    def make(**kwargs) -> LoopServer:
        kwargs.setdefault("initialization_options", NO_MODEL)
        servers.append(LoopServer(**kwargs))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A live PostgreSQL: $GDG_TEST_PG_DSN (CI sources .ci/setup.d/postgres.sh), else the same
    script is run here (it reuses a server it started before). No server is a failure, not a skip."""
    import os
    import subprocess
    from pathlib import Path

    dsn = os.environ.get("GDG_TEST_PG_DSN")
    if dsn:
        return dsn
    script = Path(__file__).resolve().parents[2] / ".ci" / "setup.d" / "postgres.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        pytest.fail(f"no PostgreSQL server: .ci/setup.d/postgres.sh failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]
