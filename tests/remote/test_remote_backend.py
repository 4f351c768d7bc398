"""gdg.backend = remote against an in-process OpenAI-compatible engine (tests/remote/fake_engine.py).

The fake engine is a random "model" under the grammar it is sent, or an
adversary that ignores it; either way no suggestion may name anything outside
Γ, and the failures (engine down, killed mid-request, hanging, erroring,
stripping grammars) must end in a clear status and the configured fallback,
never in a hung request.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

from gdg_lsp.backends import remote
from gdg_lsp.decoding.engine import DecodeSpec
from gdg_lsp.documents import Document
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.service.remote import RemoteCompletionService, Status
from gdg_lsp.settings import RemoteSettings, Settings, from_json
from tests.remote import gbnf_check, holes
from tests.remote.fake_engine import PROBES, FakeEngine, is_lark, matches

CODE = "import os\n\ndef f(alpha, beta):\n    gamma = alpha + 1\n    "


@pytest.fixture
def engine():
    with FakeEngine() as fake:
        yield fake


def settings_for(engine: FakeEngine, **remote_kw) -> Settings:
    remote_kw = {"url": engine.url, "kind": engine.kind, "timeout_ms": 2000, **remote_kw}
    return Settings(backend="remote", remote=RemoteSettings(**remote_kw), max_tokens=40, max_lines=2, timeout_ms=5000)


def service_for(settings: Settings, random_backend=None, statuses: list | None = None) -> RemoteCompletionService:
    loader = (lambda s, w: CompletionService(random_backend, w)) if random_backend is not None else None
    service = RemoteCompletionService(settings, on_status=(statuses.append if statuses is not None else lambda s: None),
                                      local_loader=loader)
    service.start()
    return service


def complete(service, settings: Settings, code: str = CODE, cancel: threading.Event | None = None):
    doc = Document("file:///s.py", "python", 1, code, parse)
    return service.complete(doc.snapshot(), len(code), settings, cancel)


# -- the guarantee through the engine --------------------------------------------------------


@pytest.mark.parametrize(("kind", "dialect"), [("vllm", "auto"), ("llamacpp", "auto"), ("vllm", "lark"),
                                               ("llamacpp", "lark")])
@pytest.mark.parametrize("language", ["python", "sql"])
def test_no_ghosts_from_a_random_or_adversarial_engine(kind, dialect, language, caplog):
    """Held-out-style holes: half the answers follow the grammar at random, half ignore it
    (names from nowhere). The independent oracles (pyflakes, SQLite) find no ghost, and
    the adversarial answers were dropped by the local re-check, with the reason logged.
    Grammars go out in the dialect asked for: EBNF to vLLM and GBNF to llama.cpp by
    default; Lark (vLLM's guidance backend, llama.cpp after ``%llguidance``) when set."""
    with FakeEngine(kind=kind, mode="mixed", seed=7) as engine:
        settings = settings_for(engine, dialect=dialect)
        service = service_for(settings)
        assert service.using_remote
        cases = holes.cut(language, 8, seed=3)
        with caplog.at_level(logging.WARNING, logger="gdg_lsp.decoding.remote"):
            filled = holes.fill(service, cases, Settings(backend="remote", remote=settings.remote, max_tokens=40,
                                                         max_lines=2 if language == "python" else 1, timeout_ms=5000))
    ghosts = [(f.case.case_id, f.suggestion.text, f.verdict.ghosts) for f in filled if f.verdict.ghosts]
    assert not ghosts
    assert not [f.outside_grammar for f in filled if f.outside_grammar]
    grammars = [engine.grammar_of(r) for r in engine.requests]
    assert all(g for g in grammars), "a request went out without a grammar"
    if kind == "vllm":
        assert all("guided_grammar" not in r and "grammar" not in r for r in engine.requests)
    if dialect == "lark":
        assert all(is_lark(g) for g in grammars)
        assert all(g.startswith("%llguidance {}\n") for g in grammars) == (kind == "llamacpp")
    elif kind == "llamacpp":
        for g in grammars:
            gbnf_check.check(g)
    rejected = [r for r in caplog.records if "dropped the remote suggestion" in r.getMessage()]
    assert rejected, "the adversarial engine never answered outside the grammar: the re-check was not exercised"
    assert any(f.suggestion.text for f in filled), "nothing was ever suggested: the test proves nothing"


def test_a_llamacpp_without_llguidance_is_refused_at_connect_when_lark_is_asked(random_backend):
    """gdg.remote.dialect lark to a llama.cpp built without llguidance: the probe's grammar is
    refused (HTTP 400), so the engine is not used, and the notice says what to set."""
    with FakeEngine(kind="llamacpp") as engine:
        engine.llguidance_build = False
        statuses: list[Status] = []
        service = service_for(settings_for(engine, dialect="lark"), random_backend, statuses)
        assert not service.using_remote
        assert any(s.notice for s in statuses)
        assert engine.requests and engine.requests[0]["grammar"].startswith("%llguidance {}\n")


def test_a_proxy_that_strips_grammars_is_refused_at_connect(random_backend):
    """An engine that ignores grammars fails the probe; the fallback takes over, and says so."""
    with FakeEngine(mode="ignore") as engine:
        engine.honour_probe = False
        statuses: list[Status] = []
        service = service_for(settings_for(engine), random_backend, statuses)
        assert not service.using_remote
        notice = next(s.notice for s in statuses if s.notice and "will be sent" not in s.notice)
        assert "does not apply grammars" in notice and "using the local model" in notice
        suggestion = complete(service, settings_for(engine))
        assert suggestion.stop_reason != "remote-unavailable"  # served by the local model


def test_a_proxy_that_strips_grammars_after_the_probe_is_caught_per_suggestion(engine, caplog):
    """The probe passed, then every answer ignores the grammar: each is dropped, none shown."""
    settings = settings_for(engine)
    service = service_for(settings)
    assert service.using_remote
    engine.mode = "ignore"
    with caplog.at_level(logging.WARNING, logger="gdg_lsp.decoding.remote"):
        results = [complete(service, settings) for _ in range(6)]
    assert all(r.text == "" for r in results)
    assert all(r.execution.statements[0].stop_reason == remote.STOP_REJECTED for r in results)
    assert sum("dropped the remote suggestion" in r.getMessage() for r in caplog.records) == 6


def test_four_documents_at_once_with_different_grammars(engine):
    """Four developers (four services) ask the same engine at the same time, each a
    different language: every answer is checked against its own grammar."""
    engine.delay = 0.01
    settings = settings_for(engine)
    cases = [holes.cut(language, 1, seed=5)[0] for language in ("python", "sql", "p4", "tilelang")]
    results: dict[str, list] = {}
    errors: list[BaseException] = []

    def one(case):
        try:
            service = service_for(settings)
            results[case.language] = holes.fill(service, [case] * 3, settings)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=one, args=(case,)) for case in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and set(results) == {"python", "sql", "p4", "tilelang"}
    assert engine.max_in_flight >= 2, "the requests never overlapped"
    sent = {engine.grammar_of(r) for r in engine.requests if (engine.grammar_of(r) or '').strip() not in PROBES}
    assert len(sent) >= 4
    for language, filled in results.items():
        for f in filled:
            assert not f.outside_grammar and not f.verdict.ghosts, (language, f.suggestion.text)
            assert f.suggestion.hole is not None and f.suggestion.language == language


# -- failures ----------------------------------------------------------------------------


def test_engine_killed_mid_request_falls_back_to_local_and_says_so(engine, random_backend):
    statuses: list[Status] = []
    settings = settings_for(engine)
    service = service_for(settings, random_backend, statuses)
    assert service.using_remote and statuses[-1].state == "ready" and statuses[-1].device == "remote"
    engine.mode = "die"
    began = time.monotonic()
    suggestion = complete(service, settings)
    assert time.monotonic() - began < 5
    assert not service.using_remote
    assert suggestion.stop_reason != "remote-unavailable" and suggestion.hole is not None  # the local model answered
    notice = [s for s in statuses if s.notice]
    assert notice and "stopped answering mid-request" in notice[-1].notice and "local model" in notice[-1].notice
    # the engine is gone for good: requests go straight to the fallback, quickly, without new notices
    engine.stop()
    count = len([s for s in statuses if s.notice])
    began = time.monotonic()
    for _ in range(3):
        complete(service, settings)
    assert time.monotonic() - began < 5
    assert len([s for s in statuses if s.notice]) == count


def test_engine_down_with_fallback_none_suggests_nothing_and_says_why():
    engine = FakeEngine()
    engine.stop()  # nothing listens there any more
    statuses: list[Status] = []
    settings = settings_for(engine, fallback="none", retries=0)
    service = service_for(settings, None, statuses)
    assert statuses[-1].state == "failed" and "connection refused" in statuses[-1].message
    assert "gdg.remote.fallback is none" in statuses[-1].notice
    suggestion = complete(service, settings)
    assert suggestion.text == "" and suggestion.stop_reason == "remote-unavailable"
    assert "remote engine is unavailable" in suggestion.reason


def test_an_engine_that_returns_to_service_is_used_again(engine, random_backend, monkeypatch):
    from gdg_lsp.service import remote as remote_service

    statuses: list[Status] = []
    settings = settings_for(engine)
    service = service_for(settings, random_backend, statuses)
    engine.mode = "error"
    complete(service, settings)
    assert not service.using_remote and "HTTP 500" in statuses[-1].message
    engine.mode = "grammar"
    monkeypatch.setattr(remote_service, "RETRY_AFTER_SECONDS", 0.0)
    service._retry_at = 0.0
    complete(service, settings)
    assert service.using_remote and statuses[-1].notice and "back" in statuses[-1].notice


def test_a_hanging_engine_times_out_into_the_fallback(engine):
    statuses: list[Status] = []
    settings = settings_for(engine, timeout_ms=300, fallback="none")
    service = service_for(settings, None, statuses)
    engine.mode = "hang"
    began = time.monotonic()
    suggestion = complete(service, settings)
    assert time.monotonic() - began < 2.0
    assert suggestion.stop_reason == "remote-unavailable" and "sent nothing within 300 ms" in suggestion.reason
    assert statuses[-1].state == "failed"


def test_the_request_budget_cuts_a_slow_stream(engine):
    """A slow engine that streams: the request's own timeout ends it (no fallback; the engine works)."""
    settings = settings_for(engine)
    service = service_for(settings)
    engine.mode, engine.slow_seconds = "slow", 0.3
    budget = Settings(backend="remote", remote=settings.remote, max_tokens=200, timeout_ms=800)
    began = time.monotonic()
    complete(service, budget)
    assert time.monotonic() - began < 2.0
    assert service.using_remote
    assert engine.client_gone.wait(3), "the engine kept streaming to a client that had given up"


def test_cancellation_aborts_the_http_request(engine):
    settings = settings_for(engine)
    service = service_for(settings)
    engine.mode, engine.slow_seconds = "slow", 0.2
    cancel = threading.Event()
    threading.Timer(0.4, cancel.set).start()
    began = time.monotonic()
    suggestion = complete(service, Settings(backend="remote", remote=settings.remote, max_tokens=200, timeout_ms=20_000),
                          cancel=cancel)
    assert time.monotonic() - began < 1.5
    assert suggestion.stop_reason == "cancelled"
    assert engine.client_gone.wait(3), "the HTTP request was not aborted"
    assert service.using_remote  # a cancel is not the engine's fault


def test_api_key_comes_from_the_named_environment_variable(monkeypatch):
    with FakeEngine(api_key="s3cret") as engine:
        monkeypatch.setenv("GDG_LSP_ALLOWED_KEY_ENVS", "TEAM_ENGINE_KEY")  # allowed outside the workspace
        monkeypatch.setenv("TEAM_ENGINE_KEY", "s3cret")
        statuses: list[Status] = []
        assert service_for(settings_for(engine, api_key_env="TEAM_ENGINE_KEY"), None, statuses).using_remote
        monkeypatch.setenv("TEAM_ENGINE_KEY", "wrong")
        service = service_for(settings_for(engine, api_key_env="TEAM_ENGINE_KEY", fallback="none"), None, statuses)
        assert not service.using_remote and "refused the API key" in statuses[-1].message
        assert "s3cret" not in repr(remote.Endpoint.from_settings(settings_for(engine, api_key_env="TEAM_ENGINE_KEY").remote))


def test_settings_from_the_editor():
    settings, problems = from_json({"gdg": {"backend": "remote", "remote": {
        "url": "http://gpu:8000", "kind": "llamacpp", "apiKeyEnv": "K", "timeoutMs": 900, "retries": 2,
        "fallback": "none", "kindd": 1}}})
    assert settings.backend == "remote"
    assert settings.remote == RemoteSettings(url="http://gpu:8000", kind="llamacpp", api_key_env="K", timeout_ms=900,
                                             retries=2, fallback="none")
    assert problems == ["unknown setting gdg.remote.kindd (ignored)"]
    settings, problems = from_json({"remote": {"kind": "openai", "url": "http://x"}})
    assert settings.remote.kind == "vllm" and settings.remote.url == "http://x"
    assert len(problems) == 1 and "gdg.remote.kind" in problems[0]


def test_work_ahead_with_a_remote_engine_compiles_the_grammar_and_sends_nothing(engine):
    """Working ahead (gdg.workAhead) with the remote engine: the grammar is compiled locally, the
    prompt stays here (the engine prefills it itself when the request comes)."""
    settings = settings_for(engine)
    service = service_for(settings)
    sent = len(engine.requests)
    doc = Document("file:///s.py", "python", 1, CODE, parse)
    prepared = service.prepare(doc.snapshot(), len(CODE), settings)
    assert prepared is not None and prepared.rung is not None and prepared.prefilled_tokens == 0
    assert len(engine.requests) == sent


def test_the_retry_that_avoids_the_closer_reaches_the_engine(engine):
    """The mid-line retry (``DecodeSpec.avoid_start``: the first answer at ``f(|)`` only closed the
    call) is in the grammar the engine is sent: a random model under it never starts with the closer."""
    service = service_for(settings_for(engine))
    local = service._remote
    compiled = local.grammars().get('root ::= [ ]* (")" | "a" ")" | "b" ")")')
    sent = len(engine.requests)
    for seed in range(6):
        result = local.decoder.decode(DecodeSpec(prompt_ids=local.vocab.encode("x = f(").ids, grammar=compiled,
                                                 avoid_start=")", temperature=1.0, seed=seed, max_tokens=8))
        assert result.text.strip() in ("a)", "b)"), result
    grammars = {engine.grammar_of(body) for body in engine.requests[sent:]}
    assert grammars and all(not matches(g, " )", complete=False) for g in grammars)
