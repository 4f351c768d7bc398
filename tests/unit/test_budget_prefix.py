"""A suggestion cut by its budget keeps the longest decoded prefix that is valid under the fragment
and does not end inside a name, instead of falling back to nothing."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder, DecodeResult
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from tests.unit.test_guarantee import assert_no_ghosts

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
        result.stop_reason = "timeout"  # the same tokens, as if time had run out: the prefix rule
        chosen = real(self, result, *args)
        cuts.append((result, chosen))
        return chosen

    monkeypatch.setattr(Executor, "_budget_cut", recording)
    return cuts


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
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
        if chosen != (result.complete_text or ""):  # past the complete statement: the last word is a whole name
            last = re.search(r"(?<!\w)[^\W\d]\w*\Z", chosen)
            assert last is None or last.group() in hole.gamma or last.group() in PythonAnalyzer.keywords, chosen
    assert_no_ghosts("def f(alpha, beta, count)", text, set(hole.gamma.names()))  # read as it stands
    trace = execution.statements[0]
    if text and trace.grammar is not None:
        assert accepts(cache.get(trace.grammar), hole.typed + text), text  # valid under the fragment


def _cut(text: str, ends: list[int], complete: str = "", stop: str = "timeout") -> str:
    code = "def f(alpha):\n    "
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(Snapshot("file:///r.py", "python", 1, code, parse(code.encode())), len(code),
                            WorkspaceContext())
    from gdg_lsp.executor import _Progress

    state = _Progress(fragment=None, gamma=hole.gamma.overlay(), context={}, ids=[], heal="", heal_outside=0,
                      tokens_left=0, indent="    ", allowed_indents=("    ",))
    result = DecodeResult(text=text, region_text="", stop_reason=stop, complete_text=complete, token_ends=ends)
    choice = type("Choice", (), {"guaranteed": False})()
    return Executor(analyzer, None, None)._budget_cut(result, state, True, hole, choice)


def test_a_prefix_whose_names_would_read_differently_is_not_shown():
    """``x, y = cc, dd = alpha`` cut after ``cc,`` would read ``cc`` as a reference (a ghost)."""
    cut = _cut("x, y = cc,", [1, 2, 4, 5, 6, 7, 9, 10])
    assert "cc" not in cut
    # names of Γ and keywords stand on their own: the longest such prefix is kept, where the
    # complete statement the grammar saw would be nothing
    assert _cut("print(alpha, alp", [5, 6, 11, 12, 13, 16]) == "print(alpha, "
    assert _cut("return alpha + alpha_", [6, 12, 13, 14, 15, 21]) == "return alpha + "
    assert _cut("_", [1]) == ""  # a soft keyword alone is a reference to a name not in Γ
    # the complete statement is kept when nothing longer qualifies, unless it splits a word
    assert _cut("return alpha + zz", [6, 12, 17], complete="return alpha") == "return alpha"
    assert _cut("return6", [6, 7], complete="return") == ""
    # cut by the token budget (the length the user chose): complete statements only
    assert _cut("print(alpha, alp", [5, 6, 11, 12, 13, 16], stop="max-tokens") == ""
    assert _cut("return alpha + zz", [6, 12, 14, 17], complete="return alpha", stop="max-tokens") == "return alpha"
