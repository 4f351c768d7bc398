"""The first statement's prompt is prefilled while its grammar compiles, without
ever letting two threads use the backend at once or changing what is decoded."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

CODE = "def f(alpha, beta):\n    gamma = alpha\n    "


class ExclusiveBackend:
    """Wraps a backend; records calls and fails a test if two threads overlap in it."""

    def __init__(self, inner, on_prefill=None) -> None:
        self.inner = inner
        self.vocab = inner.vocab
        self.stats = getattr(inner, "stats", None)
        self.prefills: list[str] = []
        self.overlaps = 0
        self._busy = threading.Lock()
        self._on_prefill = on_prefill

    def _exclusive(self, call, *args):
        if not self._busy.acquire(blocking=False):
            self.overlaps += 1
            self._busy.acquire()
        try:
            return call(*args)
        finally:
            self._busy.release()

    def prefill(self, ids):
        self.prefills.append(threading.current_thread().name)
        if self._on_prefill is not None:
            self._on_prefill()
        return self._exclusive(self.inner.prefill, ids)

    def step(self, token_id):
        return self._exclusive(self.inner.step, token_id)


class HandshakeCache(GrammarCache):
    """A compile that only finishes once the prefill has begun: it proves overlap
    (a sequential implementation would see the prefill begin after the compile)."""

    def __init__(self, vocab, prefill_started: threading.Event) -> None:
        super().__init__(vocab)
        self.prefill_started = prefill_started
        self.saw_prefill_during_compile: list[bool] = []

    def get(self, text):
        compiled = super().get(text)
        self.saw_prefill_during_compile.append(self.prefill_started.wait(timeout=10))
        return compiled


def _hole():
    analyzer = PythonAnalyzer()
    snapshot = Snapshot("file:///p.py", "python", 1, CODE, parse(CODE.encode()))
    return analyzer, analyzer.hole_at(snapshot, len(CODE), WorkspaceContext())


def test_the_prompt_is_prefilled_while_the_grammar_compiles(random_backend, tiny_vocab):
    started = threading.Event()
    backend = ExclusiveBackend(random_backend, on_prefill=started.set)
    cache = HandshakeCache(tiny_vocab, started)
    analyzer, hole = _hole()
    execution = Executor(analyzer, Decoder(backend), cache).run(
        hole, Prompt(tiny_vocab.encode(CODE).ids), "scope", max_tokens=24, max_lines=2)
    assert execution.rung is not None
    assert cache.saw_prefill_during_compile[0], "the compile finished before the prefill began"
    assert backend.prefills[0] == "gdg-prefill-ahead"
    assert backend.overlaps == 0


@pytest.mark.parametrize("constraint", ["syntax", "scope"])
def test_prefilling_ahead_decodes_the_same_tokens(random_backend, tiny_vocab, constraint):
    analyzer, hole = _hole()
    prompt = Prompt(tiny_vocab.encode(CODE).ids)
    cache = GrammarCache(tiny_vocab)

    class Inline(Decoder):  # the same loop with no prefill_ahead: prefill in line, after the compile
        prefill_ahead = None

    for seed in range(4):
        random_backend.reset()
        ahead = Executor(analyzer, Decoder(random_backend), cache).run(
            hole, prompt, constraint, max_tokens=40, max_lines=3, temperature=1.0, seed=seed)
        random_backend.reset()
        inline = Executor(analyzer, Inline(random_backend), cache).run(
            hole, prompt, constraint, max_tokens=40, max_lines=3, temperature=1.0, seed=seed)
        assert ahead.text == inline.text
        assert [s.tokens for s in ahead.statements] == [s.tokens for s in inline.statements]


def test_the_backend_is_free_again_when_no_rung_fits(random_backend, tiny_vocab):
    """No statement is decoded, yet the prefill that was started must be over (and
    its thread out of the backend) when the executor returns."""
    finished = threading.Event()

    class SlowBackend(ExclusiveBackend):
        def prefill(self, ids):
            try:
                threading.Event().wait(0.2)  # still running when π gives up
                return super().prefill(ids)
            finally:
                finished.set()

    backend = SlowBackend(random_backend)
    analyzer = PythonAnalyzer()
    code = "def f(alpha):\n    return alpha +"
    hole = analyzer.hole_at(Snapshot("file:///p.py", "python", 1, code, parse(code.encode())), len(code),
                            WorkspaceContext())
    hole = dataclasses.replace(hole, typed=hole.typed + " ]]] \"unclosed")  # no rung accepts it
    execution = Executor(analyzer, Decoder(backend), GrammarCache(tiny_vocab)).run(
        hole, Prompt(tiny_vocab.encode(code).ids), "scope", max_tokens=8, max_lines=1)
    assert execution.rung is None and execution.stop_reason == "no-rung"
    assert finished.is_set(), "the executor returned while the prefill was still using the backend"


def test_a_failing_prefill_is_raised_where_the_decode_needs_it(random_backend, tiny_vocab):
    class Broken(ExclusiveBackend):
        def prefill(self, ids):
            raise ValueError("sequence of 99999 tokens is longer than the model's 4096")

    analyzer, hole = _hole()
    with pytest.raises(ValueError, match="longer than the model"):
        Executor(analyzer, Decoder(Broken(random_backend)), GrammarCache(tiny_vocab)).run(
            hole, Prompt(tiny_vocab.encode(CODE).ids), "scope", max_tokens=8, max_lines=1)
