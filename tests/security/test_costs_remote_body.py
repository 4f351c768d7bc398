"""Attack: a remote engine (or a proxy in front of it) answers a completion with hundreds of MB.

The client read a non-streamed body whole (``response.read()``) and a server-sent event
line whole (``readline()``) before looking at it: a 300 MB answer took the server's
resident memory from 287 to 710 MB, one endless event line 1.2 GB more
(``gdg-lsp bench costs --only remote-body``). An answer is now cut at
``MAX_RESPONSE_BYTES`` and refused. The engine here is a local HTTP server that counts
what it got out before the client hung up.
"""

from __future__ import annotations

import logging

import pytest

from gdg_lsp.backends import remote
from gdg_lsp.bench.costs_workspace import HugeBodyEngine, read_huge_answer
from gdg_lsp.documents import Document
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service.remote import RemoteCompletionService
from gdg_lsp.settings import LimitsSettings, RemoteSettings, Settings

ANSWER = 96 << 20
SLACK = 16 << 20
"""What the loopback sockets' buffers take in beyond what the client read."""


@pytest.mark.parametrize(("streamed", "declared", "pieces"), [
    (False, True, False),  # a body with its Content-Length: refused before reading it
    (False, False, False),  # a body read until the engine closes the connection
    (True, False, False),  # one server-sent event line that does not end
    (True, False, True),  # events of empty text, one after another, that never say [DONE]
], ids=["body", "body-without-length", "endless-event-line", "endless-events"])
def test_a_huge_answer_is_cut_at_the_limit_and_refused(streamed, declared, pieces):
    grown_mb, sent, outcome = read_huge_answer(ANSWER, streamed, declared, pieces)
    assert "over the limit" in outcome, outcome
    assert sent <= remote.MAX_RESPONSE_BYTES + SLACK, sent
    assert grown_mb <= 48, grown_mb  # reading 96 MB whole grows by 96 MB or more


def _complete_against(engine: HugeBodyEngine, limits: LimitsSettings | None = None):
    """(the remote service, its suggestion in a Python function) with ``engine`` answering."""
    settings = Settings(backend="remote", remote=RemoteSettings(url=engine.url, kind="vllm", timeout_ms=5000,
                                                                fallback="none"),
                        max_tokens=40, timeout_ms=10_000, limits=limits or LimitsSettings())
    try:
        service = RemoteCompletionService(settings, connector=lambda endpoint: remote.connect(endpoint, probe=False))
        service.start()
        code = "import os\n\ndef f(alpha):\n    "
        return service, service.complete(Document("file:///s.py", "python", 1, code, parse).snapshot(), len(code),
                                         settings)
    finally:
        engine.close()


def test_a_completion_over_the_limit_is_dropped_and_the_engine_stays_in_use(caplog):
    engine = HugeBodyEngine(ANSWER, streamed=True, declared=False)
    caplog.set_level(logging.WARNING)
    service, suggestion = _complete_against(engine)
    assert suggestion.text == "" and service.using_remote
    assert engine.sent <= remote.MAX_RESPONSE_BYTES + SLACK, engine.sent
    assert any("over the limit" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_the_connection_probe_is_bounded_too():
    engine = HugeBodyEngine(ANSWER, streamed=False, declared=False)
    try:
        with pytest.raises(remote.ResponseTooLarge):
            remote.connect(remote.Endpoint(engine.url, "vllm", "huge", first_token_timeout=30.0))
    finally:
        engine.close()
    assert engine.sent <= remote.MAX_RESPONSE_BYTES + SLACK


def test_the_bound_is_the_users_setting(caplog):
    """gdg.limits.remoteResponseBytes: an answer within the default but over the user's bound is
    refused, and the message names the bound and the setting."""
    caplog.set_level(logging.WARNING)
    _, suggestion = _complete_against(HugeBodyEngine(3 << 20, streamed=True, declared=False),
                                      LimitsSettings(remote_response_bytes=1 << 20))
    assert suggestion.text == ""
    said = [r.getMessage() for r in caplog.records if "over the limit" in r.getMessage()]
    assert said and "over the limit of 1 MiB" in said[0] and "gdg.limits.remoteResponseBytes" in said[0], said
