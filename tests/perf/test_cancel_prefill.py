"""Cancellation everywhere: a superseded request stops during its prefill (between chunks) and
before compiling a grammar, and what the prefill already ran is reused by the next request."""

from __future__ import annotations

import threading

import torch

from gdg_lsp.backends.base import PrefillCancelled
from gdg_lsp.backends.lean import llama
from gdg_lsp.backends.lean.batching import PREFILL_CHUNK as POOL_CHUNK
from gdg_lsp.backends.lean.batching import SlotPool
from gdg_lsp.backends.lean.llama import FastLlamaBackend
from gdg_lsp.decoding.engine import STOP_CANCELLED, Decoder, DecodeSpec
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt, StopReason
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from tests.perf.test_perf_batching import _weights


class SetAfter(threading.Event):
    """A cancel event that reads as set from its ``n``-th check on (a newer request came mid-prefill)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.checks = 0
        self.n = n

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks >= self.n or super().is_set()


def _prompt(vocab, tokens: int) -> list[int]:
    ids = vocab.encode("def f(x):\n    return x + 1\n" * 40).ids
    return (ids * (tokens // len(ids) + 1))[:tokens]


def test_a_lean_prefill_stops_between_chunks_and_keeps_what_ran(tiny_vocab, monkeypatch):
    monkeypatch.setattr(llama, "PREFILL_CHUNK", 32)
    weights = _weights(tiny_vocab, max_positions=1024)
    backend = FastLlamaBackend(weights, tiny_vocab, "lean")
    ids = _prompt(tiny_vocab, 200)
    cancel = SetAfter(2)  # the check before the 2nd chunk after the first says "cancelled"
    try:
        backend.prefill_until(ids, cancel)
        raise AssertionError("the prefill ran to its end")
    except PrefillCancelled:
        pass
    assert len(backend._ids) == 64 and backend.model.cache.length == 64  # two chunks ran
    reused = backend.stats.reused_tokens
    logits = backend.prefill(ids)  # the next request for the document goes on from there
    assert backend.stats.reused_tokens - reused == 64
    fresh = FastLlamaBackend(weights, tiny_vocab, "fresh").prefill(ids)
    assert torch.allclose(logits, fresh, atol=1e-4)


def test_a_pooled_prefill_stops_between_chunks(tiny_vocab):
    weights = _weights(tiny_vocab, max_positions=1024)
    pool = SlotPool(weights, tiny_vocab, "pool", slots=2, capacity=600)
    try:
        ids = _prompt(tiny_vocab, POOL_CHUNK * 5)
        with pool.lease("doc") as slot:
            try:
                slot.prefill_until(ids, SetAfter(3))
                raise AssertionError("the prefill ran to its end")
            except PrefillCancelled:
                pass
            assert len(slot.ids) == 3 * POOL_CHUNK  # checked before chunks 2, 3 and 4: three ran
            logits = slot.prefill(ids)
            assert slot.stats.reused_tokens == 3 * POOL_CHUNK
        fresh = FastLlamaBackend(weights, tiny_vocab, "fresh").prefill(ids)
        assert torch.allclose(logits, fresh, atol=1e-4)
    finally:
        pool.close()


def test_a_decode_cancelled_during_its_prefill_ends_with_no_tokens(tiny_vocab, monkeypatch):
    monkeypatch.setattr(llama, "PREFILL_CHUNK", 32)
    backend = FastLlamaBackend(_weights(tiny_vocab, max_positions=1024), tiny_vocab, "lean")
    result = Decoder(backend).decode(DecodeSpec(_prompt(tiny_vocab, 160), cancel=SetAfter(1), max_tokens=8))
    assert result.stop_reason == STOP_CANCELLED and result.steps == 0 and result.text == ""
    assert len(backend._ids) == 32


def test_a_cancelled_request_compiles_no_grammar(tiny_vocab):
    code = "def f(alpha, beta):\n    "
    snapshot = Snapshot("file:///c.py", "python", 1, code, parse(code.encode()))
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(snapshot, len(code), WorkspaceContext())
    backend = FastLlamaBackend(_weights(tiny_vocab), tiny_vocab, "lean")
    cache = GrammarCache(tiny_vocab)
    cancel = threading.Event()
    cancel.set()
    execution = Executor(analyzer, Decoder(backend), cache).run(
        hole, Prompt(tiny_vocab.encode(code).ids), "scope", max_tokens=8, max_lines=1, cancel=cancel)
    assert execution.stop_reason == StopReason.CANCELLED and execution.text == ""
    assert len(cache) == 0  # superseded before π compiled anything
