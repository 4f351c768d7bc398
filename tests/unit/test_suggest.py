"""'Did you mean': the closest existing name, never the name itself, never a far-fetched one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gdg_lsp.languages.sql.lexer import ident_key
from gdg_lsp.languages.suggest import closest


def test_a_typo_finds_its_name():
    assert closest("widht", ["width", "height", "exit"]) == "width"
    assert closest("nmae", ["id", "name"]) == "name"


def test_nothing_close_means_no_suggestion():
    assert closest("heigth", ["exit", "print", "len"]) is None
    assert closest("x", []) is None


def test_the_key_folds_spellings_and_the_candidate_keeps_its_own():
    assert closest('"UserNmae"', ['"UserName"', "id"], key=ident_key) == '"UserName"'


@given(st.text(min_size=1, max_size=12), st.lists(st.text(max_size=12), max_size=20))
def test_a_suggestion_is_always_one_of_the_candidates_and_never_the_name(name, candidates):
    fix = closest(name, candidates)
    assert fix is None or (fix in candidates and fix != name)
