"""The real engine tier (``.ci/tiers.d/vllm.sh`` starts vLLM CPU and sets GDG_REMOTE_URL).

Marked ``remote``: deselected (and counted) when no engine is configured. Against
the engine: the held-out-style Python and SQL holes give 0 ghosts through
gdg.backend=remote; four documents at once; a proxy that strips grammars is
refused at connect and, when it fools the probe, caught per suggestion; local vs
remote latency and tokens/s on the same holes are printed; the last test kills
the engine mid-request (GDG_REMOTE_PID) and expects a prompt, explained failure.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest

from gdg_lsp.backends import remote
from gdg_lsp.service.remote import RemoteCompletionService, Status
from gdg_lsp.settings import RemoteSettings, Settings
from tests.remote import holes
from tests.remote.proxy import StrippingProxy

pytestmark = pytest.mark.remote

URL = os.environ.get("GDG_REMOTE_URL", "")
KIND = os.environ.get("GDG_REMOTE_KIND", "vllm")
N_HOLES = int(os.environ.get("GDG_REMOTE_HOLES", "8"))


def settings_for(url: str = URL, **kw) -> Settings:
    remote_settings = RemoteSettings(url=url, kind=KIND, timeout_ms=30_000, connect_timeout_ms=5000, fallback="none")
    return Settings(backend="remote", remote=remote_settings, max_tokens=kw.get("max_tokens", 32),
                    max_lines=kw.get("max_lines", 1), timeout_ms=60_000)


def remote_service(url: str = URL, statuses: list | None = None) -> RemoteCompletionService:
    service = RemoteCompletionService(settings_for(url), on_status=(statuses.append if statuses is not None else lambda s: None))
    service.start()
    return service


def _report(label: str, filled: list[holes.Filled]) -> dict[str, float]:
    tokens = sum(f.suggestion.tokens for f in filled)
    seconds = sum(f.seconds for f in filled)
    decode = sum(f.suggestion.timings.get("decode", 0.0) for f in filled)
    row = {"holes": len(filled), "mean_latency_s": seconds / max(len(filled), 1), "tokens": tokens,
           "tokens_per_s": tokens / decode if decode else 0.0,
           "ghosts": sum(len(f.verdict.ghosts) for f in filled),
           "suggested": sum(1 for f in filled if f.suggestion.text)}
    print(f"\n[remote tier] {label}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in row.items()))
    return row


@pytest.mark.parametrize("language", ["python", "sql"])
def test_holes_through_the_engine_have_no_ghosts_and_compare_with_local(language):
    cases = holes.cut(language, N_HOLES, seed=11)
    statuses: list[Status] = []
    service = remote_service(statuses=statuses)
    assert service.using_remote, statuses[-1].message if statuses else "no status"
    settings = settings_for()
    holes.fill(service, cases[:1], settings)  # warm the engine (first request compiles its kernels)
    filled = holes.fill(service, cases, settings)
    assert service.using_remote
    assert not [(f.case.case_id, f.suggestion.text, f.verdict.ghosts) for f in filled if f.verdict.ghosts]
    assert not [f.outside_grammar for f in filled if f.outside_grammar]
    assert any(f.suggestion.text for f in filled), [f.suggestion.reason for f in filled]
    remote_row = _report(f"{language} remote ({KIND})", filled)

    from gdg_lsp.backends import models
    from gdg_lsp.service.local import CompletionService

    local = CompletionService(models.load(models.resolve("default"), "cpu"))
    local_settings = Settings(max_tokens=32, max_lines=1, timeout_ms=60_000)
    holes.fill(local, cases[:1], local_settings)
    local_row = _report(f"{language} local", holes.fill(local, cases, local_settings))
    assert local_row["ghosts"] == 0
    print(f"[remote tier] {language}: latency remote/local = "
          f"{remote_row['mean_latency_s'] / max(local_row['mean_latency_s'], 1e-9):.2f}")


def test_four_documents_at_once():
    cases = [holes.cut(language, 1, seed=5)[0] for language in ("python", "sql", "p4", "tilelang")]
    results: dict[str, list] = {}
    errors: list[BaseException] = []

    def one(case):
        try:
            results[case.language] = holes.fill(remote_service(), [case, case], settings_for())
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=one, args=(c,)) for c in cases]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    print(f"\n[remote tier] four documents at once: {time.perf_counter() - began:.2f} s")
    assert not errors and len(results) == 4
    for language, filled in results.items():
        for f in filled:
            assert not f.verdict.ghosts and not f.outside_grammar, (language, f.suggestion.text)


def test_a_proxy_that_strips_grammars_is_caught(caplog):
    with StrippingProxy(URL) as proxy:
        statuses: list[Status] = []
        assert not remote_service(proxy.url, statuses).using_remote
        assert "does not apply grammars" in statuses[-1].message
    with StrippingProxy(URL, after=1) as proxy:  # fools the probe, then strips
        service = remote_service(proxy.url)
        assert service.using_remote
        cases = holes.cut("sql", N_HOLES, seed=11) + holes.cut("python", N_HOLES, seed=11)
        with caplog.at_level(logging.WARNING, logger="gdg_lsp.decoding.remote"):
            filled = holes.fill(service, cases, settings_for(max_tokens=24))
        assert proxy.stripped >= len(cases)
    assert not [f.verdict.ghosts for f in filled if f.verdict.ghosts]
    assert not [f.outside_grammar for f in filled if f.outside_grammar]
    dropped = [r.getMessage() for r in caplog.records if "dropped the remote suggestion" in r.getMessage()]
    print(f"\n[remote tier] grammar-stripping proxy: {len(dropped)} of {len(filled)} answers dropped by the local re-check")
    assert dropped


@pytest.mark.skipif(not os.environ.get("GDG_REMOTE_PID"), reason="GDG_REMOTE_PID not set: the tier owns the engine's life")
def test_zz_engine_killed_mid_request():
    """Runs last (zz): kills the engine (its process group) while requests stream."""
    statuses: list[Status] = []
    service = remote_service(statuses=statuses)
    assert service.using_remote
    case = holes.cut("python", 1, seed=5)[0]
    killed_at: list[float] = []

    def kill() -> None:
        killed_at.append(time.monotonic())
        os.killpg(int(os.environ["GDG_REMOTE_PID"]), signal.SIGKILL)

    threading.Timer(1.0, kill).start()
    began = time.monotonic()
    while service.using_remote and time.monotonic() - began < 60:
        last = holes.fill(service, [case], settings_for(max_tokens=400, max_lines=12))[0]
    assert killed_at and not service.using_remote
    elapsed = time.monotonic() - killed_at[0]
    print(f"\n[remote tier] engine killed mid-request: answered {elapsed:.2f} s after the kill: {statuses[-1].message}")
    assert elapsed < 10
    assert statuses[-1].state == "failed" and statuses[-1].notice
    assert last.suggestion.text == "" or last.suggestion.stop_reason != "remote-unavailable"
    with pytest.raises(remote.RemoteUnavailableError):
        remote.connect(remote.Endpoint.from_settings(settings_for().remote))
