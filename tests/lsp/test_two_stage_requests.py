"""The inline request in two stages: its plan (hole, Γ, digest, prompt, first grammar) on the document's
analysis lane with no model slot held, then its decode on a slot. A document whose analysis is slow
(a database that takes seconds to introspect) holds no slot meanwhile; work ahead and the request
share one plan; work ahead is made at didOpen for any file and again once the model is ready."""

from __future__ import annotations

import asyncio
import threading
import time

from gdg_lsp import languages
from gdg_lsp.bench.inprocess import InProcessServer
from tests.lsp.test_work_ahead import OPTIONS, TEXT, URI, _ask, _open_line, _opened, _server

SLOW_URI = "file:///slow_source.py"
SLOW = "def total(items, limit):\n    count = len(items)\n    \n"
OTHER_URI = "file:///other.py"
OTHER = "def mean(values):\n    total = sum(values)\n    \n"
AT_THE_HOLE = {"line": 2, "character": 4}  # the blank line in the body, both documents


class _BlockedAnalysis:
    """The Python analyzer's ``hole_at`` held for one document until ``release`` (as a data source
    that takes seconds to answer holds a SQL file's analysis); every other document analyses as
    usual. ``entered`` is set once the held analysis has begun; ``calls`` counts every hole_at."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls: list[str] = []
        self._analyzer = languages.analyzer("python")
        self._real = self._analyzer.hole_at

    def __enter__(self) -> _BlockedAnalysis:
        def hole_at(snapshot, offset, workspace=None):
            self.calls.append(snapshot.uri)
            if snapshot.uri == self.uri:
                self.entered.set()
                assert self.release.wait(60), "the test never let the analysis go on"
            return self._real(snapshot, offset, workspace)

        self._analyzer.hole_at = hole_at
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        del self._analyzer.hole_at  # the class's method again


async def test_a_slow_analysis_holds_no_model_slot_and_another_document_decodes_meanwhile(tiny_vocab):
    """One slot (gdg.batchSize 1) and one decode thread: while document A's analysis is held (its
    request has begun, its plan is on A's lane), a request for document B gets the slot and is
    answered by the model; A's is answered once its analysis goes on."""
    async with _opened(tiny_vocab, {"workAhead": False}) as (server, session, worker):
        with _BlockedAnalysis(SLOW_URI) as blocked:
            server.open(SLOW_URI, SLOW)
            server.open(OTHER_URI, OTHER)
            await server.settle(0.1)
            decodes = worker.stats.decodes
            slow = asyncio.ensure_future(server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": SLOW_URI}, "position": AT_THE_HOLE,
                "context": {"triggerKind": 2}}, timeout=120))
            assert await asyncio.to_thread(blocked.entered.wait, 30), "A's analysis never began"
            answer = await server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": OTHER_URI}, "position": AT_THE_HOLE,
                "context": {"triggerKind": 2}}, timeout=60)
            assert "result" in answer
            assert not slow.done()  # A is still in its analysis...
            assert worker.stats.decodes == decodes + 1  # ... and B was decoded on the only slot
            assert session.last_suggestion["uri"] == OTHER_URI and session.last_suggestion["promptTokens"] > 0
            blocked.release.set()
            assert "result" in await slow
            assert worker.stats.decodes == decodes + 2


async def test_the_request_after_an_edit_uses_the_plan_work_ahead_made(tiny_vocab):
    """After the edit and the debounce, work ahead planned the position: the request finds that plan
    for its version and place, and neither analyses the position again nor compiles."""
    async with _opened(tiny_vocab) as (server, session, worker):
        _open_line(server, 2)
        await server.quiet()
        await asyncio.wrap_future(session.plans.latest(URI).done)  # its grammar compiled too (after the prefill)
        engine = worker.service.grammars(session.settings.grammar_engine)
        compiles = engine.stats.compiles
        with _BlockedAnalysis("file:///none") as counted:
            await _ask(server)
        info = session.last_suggestion
        assert info["plan"] == "shared" and info["version"] == 2
        assert URI not in counted.calls  # the request did not analyse the position again
        assert engine.stats.compiles == compiles
        assert info["promptTokens"] > 0 and session.plans.shared >= 1


async def test_a_long_file_opened_is_analysed_ahead_and_its_first_ask_shares_the_plan(tiny_vocab):
    """A file too long for its prompt to be worked on at its end still gets its plan made at
    didOpen (its analysis is the part of a fresh file's first ask that does not depend on the
    place): an ask at its end finds it, with no prefill done ahead."""
    async with _opened(tiny_vocab, {"contextTokens": 512}) as (server, session, worker):
        long_uri = "file:///long.py"
        text = TEXT + "\n"
        made = session.plans.made
        server.open(long_uri, text)
        await server.quiet()
        assert session.plans.made == made + 1
        assert worker.stats.ahead_runs == 0  # planned, not prefilled: the window at its end is a guess
        entry = session.plans.latest(long_uri)
        assert entry is not None and entry.ready.done() and entry.ready.result().ready
        lines = text.count("\n")
        await _ask_at(server, long_uri, lines, 0)
        assert session.last_suggestion["plan"] == "shared"


async def _ask_at(server: InProcessServer, uri: str, line: int, character: int) -> dict:
    answer = await server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2}}, timeout=120)
    return answer["result"]


async def test_documents_opened_while_the_model_loads_are_worked_ahead_once_it_is_ready(tiny_vocab):
    """Opened during the load, a document gets its analysis (no model needed); once the model is
    ready its prompt goes through the model, so the first ask prefills almost nothing."""
    server_obj = _server(tiny_vocab)
    loading = threading.Event()
    resolve = server_obj.session.worker.resolve_model

    def slow(settings, progress):
        name, load = resolve(settings, progress)

        def slow_load(device):
            assert loading.wait(60), "the test never let the model load"
            return load(device)

        return name, slow_load

    server_obj.session.worker.resolve_model = slow
    async with InProcessServer(server=server_obj, initialization_options=OPTIONS) as server:
        session = server_obj.session
        short = "import os\n\n\ndef total(items):\n    \n"
        server.open("file:///short.py", short)
        await server.settle(0.3)
        assert session.worker.service is None and session.plans.made >= 1  # analysed while it loads
        loading.set()
        assert await server.wait_model() == "ready"
        await server.quiet()
        assert session.worker.stats.ahead_runs >= 1  # its prompt went through the model once it was there
        pool = session.worker.service.backend
        before = pool.stats.prefill_tokens
        await _ask_at(server, "file:///short.py", 4, 4)
        assert pool.stats.prefill_tokens - before <= 2
        assert session.last_suggestion["promptTokens"] > 2


async def test_cancel_request_stops_the_request_in_its_plan(tiny_vocab):
    """$/cancelRequest while the request is in its plan: it is answered without a decode, its
    job ends (the document's next request is not held behind it)."""
    async with _opened(tiny_vocab, {"workAhead": False}) as (server, session, worker):
        with _BlockedAnalysis(SLOW_URI) as blocked:
            server.open(SLOW_URI, SLOW)
            await server.settle(0.1)
            decodes = worker.stats.decodes
            pending = server.send_request("textDocument/inlineCompletion", {
                "textDocument": {"uri": SLOW_URI}, "position": AT_THE_HOLE,
                "context": {"triggerKind": 2}}, msg_id="slow-1")
            assert await asyncio.to_thread(blocked.entered.wait, 30)
            server.notify("$/cancelRequest", {"id": "slow-1"})
            await asyncio.wait_for(pending, 30)
            blocked.release.set()
            await server.settle(0.2)
            assert worker.stats.decodes == decodes
            deadline = time.monotonic() + 30
            while worker._latest.get(SLOW_URI) is not None:  # its job ended
                assert time.monotonic() < deadline, "the cancelled request's job never ended"
                await asyncio.sleep(0.02)
            assert "result" in await server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": SLOW_URI}, "position": AT_THE_HOLE,
                "context": {"triggerKind": 2}}, timeout=60)
            assert worker.stats.decodes == decodes + 1


async def test_a_repeated_ask_after_toggling_a_setting_that_changes_suggestions_decodes_again():
    """gdg.definitions, gdg.suffix, gdg.candidates and gdg.grammarEngine were missing from the reuse
    key: a repeated ask after toggling one served the suggestion made under the old value."""
    from tests.lsp.test_inline_reuse import CHARACTER, LINE, _ask as ask_reuse, _showing_a_suggestion

    async with _showing_a_suggestion() as (server, session, shown, decodes):
        again = await ask_reuse(server, LINE, CHARACTER)
        assert [item["insertText"] for item in again] == [shown]  # nothing changed: served again
        repeated = session.reuse.stats.repeated
        for setting, value in (("definitions", False), ("suffix", False), ("grammarEngine", "xgrammar")):
            server.notify("workspace/didChangeConfiguration", {"settings": {"gdg": {setting: value}}})
            await server.settle(0.1)
            before = session.worker.stats.decodes
            await ask_reuse(server, LINE, CHARACTER)
            assert session.worker.stats.decodes == before + 1, setting  # decoded under the new value
            assert session.reuse.stats.repeated == repeated, setting


async def test_keys_typed_during_a_prefill_never_start_a_second_one_beside_it(tiny_vocab):
    """Keys on the line while work ahead prefills (two slots free) and its analyses queue on the lane:
    most keys' work ahead is superseded there, and the ones that prefill do it one after the other
    in the document's slot (one dropped after its plan let the next start beside the running one,
    in the other slot, from nothing)."""
    async with _opened(tiny_vocab, {"batchSize": 2}) as (server, session, worker):
        pool = worker.service.backend
        real_chunk = pool._run_prefill_chunk

        def slow_chunk(job):  # (the pool's slots run forwards of their own: slowed here)
            time.sleep(0.15)
            return real_chunk(job)

        pool._run_prefill_chunk = slow_chunk
        analyzer = languages.analyzer("python")
        real_hole_at = analyzer.hole_at

        def slow_hole_at(snapshot, offset, workspace=None):
            time.sleep(0.12)  # the plans of the keys wait on the lane behind each other
            return real_hole_at(snapshot, offset, workspace)

        analyzer.hole_at = slow_hole_at
        service = worker.service
        real = service.prefill
        running, most = [0], [0]
        lock = threading.Lock()

        def prefill(plan, cancel=None):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                return real(plan, cancel)
            finally:
                with lock:
                    running[0] -= 1

        service.prefill = prefill
        # a line added at the top and the user opening a line near the end: the whole prompt is new
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "#\n"},
            {"range": {"start": {"line": 44, "character": 100}, "end": {"line": 44, "character": 100}},
             "text": "\n    "}]})
        for i, key in enumerate("count = len(items)"):
            await asyncio.sleep(0.06)
            server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3 + i}, "contentChanges": [
                {"range": {"start": {"line": 45, "character": 4 + i}, "end": {"line": 45, "character": 4 + i}},
                 "text": key}]})
        await server.quiet()
        del analyzer.hole_at
        assert most[0] == 1
        assert worker.stats.ahead_runs >= 1 and worker.stats.ahead_skipped >= 1
