"""The decode worker with a batching model (gdg.batchSize): documents decode at once,
one request per document at a time, the newest winning; other engines one at a time."""

from __future__ import annotations

import threading
import time

import pytest

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.server.worker import DecodeWorker
from gdg_lsp.settings import Settings


def _lean_resolver(vocab):
    def resolve(settings, progress):
        def load(device: str):
            from gdg_lsp.backends.lean.llama import FastLlamaBackend
            from tests.perf.test_perf_batching import _weights

            return FastLlamaBackend(_weights(vocab), vocab, "lean-random")

        return "lean-random", load

    return resolve


@pytest.fixture
def worker():
    made = DecodeWorker(lambda state: None, lambda message, percent: None)
    yield made
    made.shutdown()


def _loaded(worker, resolver, **settings) -> None:
    worker.resolve_model = resolver
    worker.load(Settings(**settings), WorkspaceContext()).result(60)
    assert worker.state.state == "ready", worker.state


def test_two_documents_decode_at_once(worker, tiny_vocab):
    from gdg_lsp.documents import Document
    from gdg_lsp.languages.python.analyzer import parse

    _loaded(worker, _lean_resolver(tiny_vocab), batch_size=2)
    assert worker.service.concurrency == 2
    inside = threading.Barrier(2, timeout=30)  # passes only if both requests are in at once
    settings = Settings(max_tokens=12, timeout_ms=60_000)

    def ask(doc):
        def fn(service, cancel):
            inside.wait()
            return service.complete(doc.snapshot(), len(doc.text), settings, cancel)
        return fn

    docs = [Document(f"file:///w{i}.py", "python", 1, f"def f{i}(ab):\n    x = ab\n    ", parse) for i in range(2)]
    jobs = [worker.submit(doc.uri, ask(doc)) for doc in docs]
    suggestions = [job.future.result(60) for job in jobs]
    assert all(s is not None and s.hole is not None for s in suggestions)
    assert worker.max_running == 2


def test_one_document_is_one_request_at_a_time_newest_wins(worker, tiny_vocab):
    _loaded(worker, _lean_resolver(tiny_vocab), batch_size=4)
    running = []
    overlap = []
    lock = threading.Lock()

    def fn(name):
        def run(service, cancel):
            with lock:
                overlap.append(len(running))
                running.append(name)
            try:
                cancel.wait(5)  # a decode that runs until superseded
                return name
            finally:
                with lock:
                    running.remove(name)
        return run

    first = worker.submit("file:///same.py", fn("first"))
    while worker.running == 0:
        time.sleep(0.005)
    second = worker.submit("file:///same.py", fn("second"))  # cancels the first; waits for its end
    third = worker.submit("file:///same.py", fn("third"))  # supersedes the second before it starts
    assert first.future.result(10) == "first" and first.cancel.is_set()
    assert second.future.result(10) is None  # skipped: superseded before it started
    while "third" not in running:
        time.sleep(0.005)
    third.cancel.set()
    assert third.future.result(10) == "third"
    assert overlap == [0, 0]
    assert worker.stats.skipped == 1


def test_other_engines_and_batch_size_one_decode_one_at_a_time(worker, tiny_vocab):
    from gdg_lsp.bench.stress import slow_random_resolver

    _loaded(worker, slow_random_resolver(0.0), batch_size=4)  # not the lean engine
    assert worker.service.concurrency == 1
    _loaded(worker, _lean_resolver(tiny_vocab), batch_size=1)
    assert worker.service.concurrency == 1
    entered = threading.Event()

    def blocking(service, cancel):
        entered.set()
        cancel.wait(5)

    job = worker.submit("file:///a.py", blocking)
    entered.wait(5)
    other = worker.submit("file:///b.py", lambda service, cancel: worker.running)
    time.sleep(0.2)
    assert not other.future.done()  # queued behind the first document
    job.cancel.set()
    assert other.future.result(10) == 1
