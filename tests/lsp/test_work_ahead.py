"""Work ahead of the inline request (gdg.workAhead): after an edit the prompt is already in the
model's cache and the grammar compiled when the request comes; the next edit cancels it; it never
changes what is suggested; a request never waits for more than the chunk it is in."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from gdg_lsp.backends.lean.batching import SlotPool
from gdg_lsp.backends.lean.llama import PREFILL_CHUNK, FastLlamaBackend
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.server import create_server
from tests.perf.test_perf_batching import _weights

URI = "file:///ahead.py"
BODY = "".join(f"    value_{i} = len(items) + {i}\n" for i in range(40))
TEXT = f"import os\n\n\ndef total(items, limit):\n{BODY}    return limit\n"
EDIT_LINE = 4 + 40  # the `return limit` line: the user opens a line above it
OPTIONS = {"batchSize": 1, "maxTokens": 6, "maxLines": 1, "workAheadDebounceMs": 30, "timeoutMs": 60_000}


def _server(tiny_vocab, chunk_seconds: float = 0.0, forwards: list | None = None, hold: threading.Event | None = None):
    """A server over a random-weight lean model; ``chunk_seconds`` slows every forward (a prefill
    chunk or a step), ``forwards`` records (start time, tokens) of each, and every forward waits
    while ``hold`` is clear (a prefill kept running for as long as a test needs, whatever the
    machine's speed)."""
    weights = _weights(tiny_vocab, max_positions=2048)

    def resolve(settings, progress):
        def load(device):
            backend = FastLlamaBackend(weights, tiny_vocab, "lean-tiny")
            if chunk_seconds or forwards is not None or hold is not None:
                inner = backend.model.forward

                def forward(ids, *args, **kwargs):
                    if forwards is not None:
                        forwards.append((time.perf_counter(), len(ids)))
                    if hold is not None:
                        assert hold.wait(60), "the test never let the forward go on"
                    time.sleep(chunk_seconds)
                    return inner(ids, *args, **kwargs)

                backend.model.forward = forward
            return backend

        return "lean-tiny", load

    server = create_server(dev=True)
    server.session.worker.resolve_model = resolve
    return server


def _open_line(server: InProcessServer, version: int) -> None:
    """The user presses Enter at the end of the line above ``return limit`` (the editor indents)."""
    server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version}, "contentChanges": [
        {"range": {"start": {"line": EDIT_LINE - 1, "character": 100}, "end": {"line": EDIT_LINE - 1, "character": 100}},
         "text": "\n    "}]})


async def _ask(server: InProcessServer, line: int = EDIT_LINE, character: int = 4) -> list[str]:
    answer = await server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2}}, timeout=120)
    return [item["insertText"] for item in answer["result"]["items"]]


@contextlib.asynccontextmanager
async def _opened(tiny_vocab, options: dict | None = None, **slowed):
    """A server (``_server(tiny_vocab, **slowed)``) with ``options`` over OPTIONS, its model ready and
    TEXT open, the open's own work ahead over: (client, session, worker)."""
    server_obj = _server(tiny_vocab, **slowed)
    async with InProcessServer(server=server_obj, initialization_options={**OPTIONS, **(options or {})}) as server:
        assert await server.wait_model() == "ready"
        session = server_obj.session
        server.open(URI, TEXT)
        await server.quiet()
        yield server, session, session.worker


async def _running(worker):
    """The document's work ahead once it has started running."""
    deadline = time.monotonic() + 30
    while URI not in worker._ahead or not worker._ahead[URI].started.is_set():
        assert time.monotonic() < deadline, "no work ahead started"
        await asyncio.sleep(0.005)
    return worker._ahead[URI]


async def _edit_then_ask(tiny_vocab, work_ahead: bool) -> tuple[list[str], int, int, dict]:
    """Open, let the open's work settle, press Enter, wait past the debounce, ask: (the answer, prompt
    tokens the request prefilled, prompt tokens of its prompt, the worker's work-ahead counts)."""
    async with _opened(tiny_vocab, {"workAhead": work_ahead}) as (server, session, worker):
        _open_line(server, 2)
        await server.quiet()
        backend = worker.service.backend
        before = backend.stats.prefill_tokens
        items = await _ask(server)
        prompt_tokens = session.last_suggestion["promptTokens"]
        return items, backend.stats.prefill_tokens - before, prompt_tokens, worker.stats_payload()["workAhead"]


async def test_the_request_after_an_edit_finds_its_prompt_prefilled_and_suggests_the_same(tiny_vocab):
    with_items, with_prefill, prompt_tokens, with_counts = await _edit_then_ask(tiny_vocab, work_ahead=True)
    without_items, without_prefill, _, without_counts = await _edit_then_ask(tiny_vocab, work_ahead=False)
    assert prompt_tokens > 2 * PREFILL_CHUNK  # a prompt long enough for the prefill to matter
    # with work ahead the request runs only the prompt's last token (its logits) per decode
    assert with_prefill <= 2, with_prefill
    assert without_prefill >= prompt_tokens // 2, (without_prefill, prompt_tokens)
    assert with_counts["runs"] >= 1  # the open's and the edit's
    assert without_counts == {"runs": 0, "skipped": 0, "cancelled": 0}  # the setting off: nothing ahead
    assert with_items == without_items  # greedy: the same suggestion either way


async def test_a_second_edit_cancels_the_pending_work_ahead(tiny_vocab):
    async with _opened(tiny_vocab, {"workAheadDebounceMs": 400}) as (server, session, worker):
        prepared: list[int] = []
        service = worker.service
        real_plan = service.plan

        def plan(snapshot, *args, **kwargs):
            prepared.append(snapshot.version)
            return real_plan(snapshot, *args, **kwargs)

        service.plan = plan
        _open_line(server, 2)
        await server.settle(0.05)  # well inside the debounce
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [
            {"range": {"start": {"line": EDIT_LINE, "character": 4}, "end": {"line": EDIT_LINE, "character": 4}},
             "text": "x"}]})
        await server.quiet()
        assert prepared == [3]  # version 2 was never worked on


async def test_an_edit_stops_work_ahead_in_flight_and_a_request_waits_at_most_one_chunk(tiny_vocab):
    forwards: list[tuple[float, int]] = []
    async with _opened(tiny_vocab, chunk_seconds=0.15, forwards=forwards) as (server, session, worker):
        backend = worker.service.backend
        # a line added at the top and the user opening a line near the end: the whole prompt is new
        ran_before = len(forwards)
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "#\n"},
            {"range": {"start": {"line": EDIT_LINE, "character": 100}, "end": {"line": EDIT_LINE, "character": 100}},
             "text": "\n    "}]})
        deadline = time.monotonic() + 30
        while URI not in worker._ahead or len(forwards) <= ran_before:  # its first chunk is running
            assert time.monotonic() < deadline, "no work ahead started"
            await asyncio.sleep(0.005)
        job = worker._ahead[URI]
        ended: list[float] = []
        job.future.add_done_callback(lambda _: ended.append(time.perf_counter()))
        before = backend.stats.prefill_tokens
        asked = time.perf_counter()
        await _ask(server, EDIT_LINE + 1, 4)
        assert job.cancel.is_set() and ended
        # chunks the work ahead began after the request came: at most the one it was deciding on
        assert sum(1 for t, _ in forwards if asked < t < ended[0]) <= 1
        # and the request reused the chunks it ran (its prompt starts at the top of the file)
        assert backend.stats.prefill_tokens - before < session.last_suggestion["promptTokens"]
        assert worker.stats.ahead_cancelled >= 1


async def test_a_batching_pool_is_primed_in_the_documents_own_slot(tiny_vocab):
    async with _opened(tiny_vocab, {"batchSize": 2}) as (server, session, worker):
        assert isinstance(worker.service.backend, SlotPool)
        _open_line(server, 2)
        await server.quiet()
        pool = worker.service.backend
        before = pool.stats.prefill_tokens
        assert await _ask(server) is not None
        assert pool.stats.prefill_tokens - before <= 2


def test_a_prefill_stops_at_the_request_deadline(tiny_vocab):
    """A prompt that cannot go through the model within the budget: the request ends at its deadline
    (between two chunks) with nothing, instead of running the whole prefill first."""
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.service.local import CompletionService
    from gdg_lsp.settings import Settings

    forwards: list[tuple[float, int]] = []
    server = _server(tiny_vocab, chunk_seconds=0.3, forwards=forwards)
    _, load = server.session.worker.resolve_model(None, None)
    service = CompletionService(load("cpu"))
    text = TEXT.replace("    return limit\n", "    \n    return limit\n")
    offset = text.index("    \n    return limit") + 4
    suggestion = service.complete(Snapshot(URI, "python", 1, text), offset,
                                  Settings(timeout_ms=400, max_tokens=6, constraint="none"), threading.Event())
    assert suggestion.text == "" and suggestion.stop_reason == "timeout"
    assert suggestion.prompt_tokens > 3 * PREFILL_CHUNK
    assert len(forwards) < -(-suggestion.prompt_tokens // PREFILL_CHUNK)  # not every chunk ran


async def test_no_work_ahead_while_the_user_types_the_suggestion_shown():
    """The keys of a shown suggestion are answered from it: working ahead there would only
    compete with that answer for the CPU; an edit elsewhere does work ahead."""
    from tests.lsp.test_inline_reuse import CHARACTER, LINE, _showing_a_suggestion, _type

    async with _showing_a_suggestion() as (server, session, shown, _):
        await server.quiet()
        planned = session.plans.made
        _type(server, 2, LINE, CHARACTER, shown[0])
        await server.settle(0.3)
        await server.quiet()
        assert session.plans.made == planned
        _type(server, 3, 0, 0, "#")  # not the suggestion
        await server.settle(0.3)
        await server.quiet()
        assert session.plans.made == planned + 1


async def test_an_opened_document_is_worked_ahead_at_its_end_only_when_it_fits_the_prompt(tiny_vocab):
    # TEXT has 1,260 characters: more than 2 x 512, the window at its end is not a request's
    async with _opened(tiny_vocab, {"contextTokens": 512}) as (server, session, _):
        assert session.worker.stats.ahead_runs == 0
        server.open("file:///short.py", "import os\n\n\ndef total(items):\n    \n")
        await server.quiet()
        assert session.worker.stats.ahead_runs == 1


async def test_typing_on_the_line_lets_the_running_work_ahead_finish_an_edit_above_cancels_it(tiny_vocab):
    """Keys on the line being worked for leave the prefix it primes unchanged: it goes on (restarting
    would redo the analysis at every key) and the new version's work follows; an edit above stops it."""
    forwards: list[tuple[float, int]] = []
    hold = threading.Event()
    hold.set()
    # TEXT is too long to be worked ahead at its end with 512 context tokens
    async with _opened(tiny_vocab, {"contextTokens": 512}, chunk_seconds=0.1, forwards=forwards, hold=hold) as (
            server, session, worker):

        async def until_cancelled(job) -> None:
            deadline = time.monotonic() + 30
            while not job.cancel.is_set():
                assert time.monotonic() < deadline, "the running work ahead was not cancelled"
                await asyncio.sleep(0.005)

        _open_line(server, 2)
        first = await _running(worker)
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [
            {"range": {"start": {"line": EDIT_LINE, "character": 4}, "end": {"line": EDIT_LINE, "character": 4}},
             "text": "x"}]})
        await server.quiet()
        assert not first.cancel.is_set() and worker.stats.ahead_runs == 2  # it finished, then version 3's ran
        hold.clear()  # the next work ahead stays in its prefill until the edit above has come
        _open_line(server, 4)
        second = await _running(worker)
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 5}, "contentChanges": [
            {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "#"}]})
        await until_cancelled(second)
        hold.set()
        await server.quiet()
        assert worker.stats.ahead_cancelled == 1
        # a request while one runs and the next version's waits behind it: both are cancelled
        hold.clear()  # ... and this one until the request has come
        _open_line(server, 6)
        third = await _running(worker)
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 7}, "contentChanges": [
            {"range": {"start": {"line": EDIT_LINE, "character": 4}, "end": {"line": EDIT_LINE, "character": 4}},
             "text": "y"}]})
        await server.settle(0.1)  # past the debounce: version 7's work waits behind the running one
        queued = worker._ahead[URI]
        assert queued is not third and not third.cancel.is_set()
        asked = asyncio.ensure_future(_ask(server, EDIT_LINE, 5))
        await until_cancelled(third)
        hold.set()
        await asked
        assert queued.cancel.is_set()
