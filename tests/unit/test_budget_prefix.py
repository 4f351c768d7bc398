"""A suggestion cut by its budget keeps the longest decoded prefix that is valid under the fragment
and does not end inside a name, instead of falling back to nothing."""

from __future__ import annotations

import re

import xgrammar as xgr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder, DecodeResult
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

CODE = "def f(alpha, beta, count):\n    "
_CACHES: dict = {}


def _run(tiny_vocab, seed: int, max_tokens: int):
    backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
    snapshot = Snapshot("file:///b.py", "python", 1, CODE, parse(CODE.encode()))
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(snapshot, len(CODE), WorkspaceContext())
    cache = _CACHES.setdefault(id(tiny_vocab), GrammarCache(tiny_vocab))
    executor = Executor(analyzer, Decoder(backend), cache)
    execution = executor.run(hole, Prompt(tiny_vocab.encode(CODE).ids), "scope", max_tokens=max_tokens, max_lines=1,
                             temperature=1.0, seed=seed)
    return hole, execution, cache


def test_token_prefixes_end_on_token_ends_and_never_split_a_word():
    result = DecodeResult(text="total = alpha_sum(be", region_text="", stop_reason="timeout",
                          token_ends=[3, 5, 7, 8, 13, 17, 18, 20], complete_text="")
    # "tot|al" (3) and "alpha|_sum" (13) split a word the text goes on with; the last word may be cut
    assert result.token_prefixes() == ["total = alpha_sum(be", "total = alpha_sum(", "total = alpha_sum",
                                       "total = ", "total =", "total"]
    multibyte = DecodeResult(text="s = 'é'", region_text="", stop_reason="timeout",
                             token_ends=[5, 6, 7], complete_text="")
    assert multibyte.token_prefixes() == ["s = 'é", "s = '"]  # 6 ends inside é


def _recording(monkeypatch) -> list:
    """(text the budget cut, text shown) for every cut the executor makes."""
    cuts = []
    real = Executor._budget_cut

    def recording(self, result, *args):
        chosen = real(self, result, *args)
        cuts.append((result, chosen))
        return chosen

    monkeypatch.setattr(Executor, "_budget_cut", recording)
    return cuts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), budget=st.integers(1, 24))
def test_a_cut_suggestion_is_a_valid_prefix_that_ends_outside_any_name(seed, budget, tiny_vocab, monkeypatch):
    with monkeypatch.context() as patch:
        cuts = _recording(patch)
        hole, execution, cache = _run(tiny_vocab, seed, budget)
    text = execution.text
    if cuts:
        (result, chosen), = cuts
        assert result.text.startswith(chosen) and text == chosen  # a prefix of what was decoded
        if chosen and chosen != result.text:  # the word it ends with did not go on in the decode
            following = result.text[len(chosen)]
            assert not (re.match(r"\w", chosen[-1]) and re.match(r"\w", following)), (chosen, result.text)
        last = re.search(r"[A-Za-z_]\w*\Z", chosen)  # the last word is a whole name or a keyword
        assert last is None or last.group() in hole.gamma or last.group() in PythonAnalyzer.keywords, chosen
    trace = execution.statements[0]
    if text and trace.grammar is not None:
        matcher = xgr.GrammarMatcher(cache.get(trace.grammar))
        assert matcher.accept_string(hole.typed + text), text  # valid under the fragment


def test_budget_cuts_keep_prefixes_where_a_complete_statement_would_be_nothing(tiny_vocab, monkeypatch):
    """Over seeds and budgets, cuts show more than the complete statement the grammar saw
    (often nothing): the prefix is what the issue asks for, not the old fallback."""
    cuts = _recording(monkeypatch)
    for seed in range(12):
        for budget in (3, 5, 8):
            _run(tiny_vocab, seed, budget)
    pairs = [(result.complete_text or "", chosen) for result, chosen in cuts]
    assert pairs and all(chosen.startswith(complete) for complete, chosen in pairs)
    assert any(not complete and chosen for complete, chosen in pairs), pairs
