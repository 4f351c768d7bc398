"""A grammar being compiled is compiled once: a second ask for it (another slot, the plan on an
analysis thread and the decode beside it) waits for that compile instead of starting its own."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from gdg_lsp.errors import GrammarError
from gdg_lsp.grammar import engine as grammar_engine

GRAMMAR = 'root ::= "x" [a-z]* " = " ("len" | "print") "()"'


def _slowed(name: str, vocab, started: threading.Event, release: threading.Event):
    """A fresh engine whose compiles wait for ``release`` once they have begun (``started``)."""
    engine = grammar_engine.create(name, vocab)
    real = engine._compile
    calls: list[str] = []

    def compile_(grammar):
        calls.append(grammar_engine.grammar_key(grammar))
        started.set()
        assert release.wait(30), "the test never let the compile finish"
        return real(grammar)

    engine._compile = compile_
    return engine, calls


def test_two_asks_for_a_grammar_in_flight_compile_it_once(engine_name, tiny_vocab):
    started, release = threading.Event(), threading.Event()
    engine, calls = _slowed(engine_name, tiny_vocab, started, release)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(engine.get, GRAMMAR)
        assert started.wait(30)
        second = pool.submit(engine.get, GRAMMAR)  # arrives while the first compiles
        while engine.stats.shared == 0:  # until it waits on the first one's compile
            threading.Event().wait(0.005)
        release.set()
        assert first.result(30) is second.result(30)
    assert len(calls) == 1
    assert engine.stats.compiles == 1 and engine.stats.shared == 1
    assert engine.get(GRAMMAR) is first.result()  # and later asks hit the cache


def test_a_failed_compile_fails_every_ask_waiting_on_it_and_is_not_kept(engine_name, tiny_vocab):
    started, release = threading.Event(), threading.Event()
    engine, calls = _slowed(engine_name, tiny_vocab, started, release)
    broken = 'root ::= "x" undefined_rule'
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(engine.get, broken)
        assert started.wait(30)
        second = pool.submit(engine.get, broken)
        while engine.stats.shared == 0:
            threading.Event().wait(0.005)
        release.set()
        for future in (first, second):
            with pytest.raises(GrammarError):
                future.result(30)
    assert len(calls) == 1
    with pytest.raises(GrammarError):  # nothing in flight any more: the next ask compiles again
        engine.get(broken)
    assert len(calls) == 2
