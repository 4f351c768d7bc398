"""Rule families in fragments (the core change SQL needs): one copy of some rules per member."""

from __future__ import annotations

import textwrap

import pytest

from gdg_lsp import fragments
from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.explain import byte_grammars
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Gamma
from gdg_lsp.grammar.engine import full_match

TEMPLATE = textwrap.dedent("""
    root ::= m_query (" UNION " any_query)?
    any_query ::= m_query
    m_query ::= %flag% "SELECT " m_col " FROM " %table%
    m_col ::= %cols%
""")


def fragment(members: str | dict = "scopes") -> fragments.Fragment:
    rules = ebnf.parse(TEMPLATE)
    slots = {
        "cols": fragments.SlotSpec("cols", {"all": {"context": "cols"}}),
        "table": fragments.SlotSpec("table", {"all": {"context": "table"}}),
        "flag": fragments.SlotSpec("flag", {"all": {"context": "flag"}}, optional=True),
    }
    family = fragments.Family("scope", ("m_query", "m_col"), {"all": members} if isinstance(members, str) else members)
    return fragments.Fragment("test", "q", "Stmt", ("ctx", "gamma"), rules, slots, families=(family,))


MEMBERS = [
    {"cols": ["a", "b"], "table": ["t"], "flag": [""]},
    {"cols": ["c"], "table": ["u"], "flag": [""]},
]


def test_each_member_keeps_its_own_names():
    grammar = fragments.instantiate(fragment(), "ctx", Gamma(), {"scopes": MEMBERS})
    compiled = byte_grammars().get(grammar.text)
    assert full_match(compiled, "SELECT a FROM t")
    assert full_match(compiled, "SELECT c FROM u")
    assert not full_match(compiled, "SELECT c FROM t")  # c belongs to the other member
    # a reference from outside the family means any member
    assert full_match(compiled, "SELECT b FROM t UNION SELECT c FROM u")


def test_a_member_whose_required_slot_is_empty_disappears():
    members = [MEMBERS[0], {**MEMBERS[1], "flag": []}]
    grammar = fragments.instantiate(fragment(), "ctx", Gamma(), {"scopes": members})
    compiled = byte_grammars().get(grammar.text)
    assert full_match(compiled, "SELECT a FROM t") and not full_match(compiled, "SELECT c FROM u")


def test_no_members_or_no_live_member_is_an_empty_rung():
    with pytest.raises(GammaEmptyError):
        fragments.instantiate(fragment(), "ctx", Gamma(), {"scopes": []})
    with pytest.raises(GammaEmptyError):
        fragments.instantiate(fragment(), "ctx", Gamma(), {"scopes": [{**m, "flag": []} for m in MEMBERS]})


def test_members_per_rung_and_identical_text_for_identical_members():
    frag = fragment({"ctx": "scopes", "gamma": "wide"})
    wide = [{"cols": ["a", "b", "c"], "table": ["t", "u"], "flag": [""]}]
    context = {"scopes": MEMBERS, "wide": wide}
    ctx = fragments.instantiate(frag, "ctx", Gamma(), context)
    gamma = fragments.instantiate(frag, "gamma", Gamma(), context)
    assert full_match(byte_grammars().get(gamma.text), "SELECT c FROM t")
    assert not full_match(byte_grammars().get(ctx.text), "SELECT c FROM t")
    assert fragments.instantiate(frag, "ctx", Gamma(), context).text == ctx.text


def test_the_sql_manifest_declares_a_valid_family():
    frag = fragments.fragment("sql", "statement")
    assert [f.name for f in frag.families] == ["scope"]
    assert all(rule in frag.rules for rule in frag.families[0].rules)
    assert "root" not in frag.families[0].rules


def test_bad_family_declarations_are_refused(tmp_path, monkeypatch):
    from importlib import resources

    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "g.ebnf").write_text('root ::= a\na ::= "x"\n')
    (folder / "manifest.toml").write_text(
        '[fragments.f]\nfile = "g.ebnf"\n[fragments.f.families.x]\nmembers = "m"\nrules = ["nosuch"]\n')
    monkeypatch.setattr(resources, "files", lambda package: tmp_path)
    fragments.load_fragments.cache_clear()
    try:
        with pytest.raises(GrammarError, match="undefined rules"):
            fragments.load_fragments("bad")
    finally:
        fragments.load_fragments.cache_clear()


def test_spellings_offer_lower_case_only_where_case_cannot_matter():
    from gdg_lsp.languages.sql.members import spellings

    assert spellings("Age") == ["Age", "age"]  # unquoted: folded (PostgreSQL) or ignored (SQLite)
    assert spellings("`Age`") == ["`Age`", "Age", "age"]  # backticks: engines that ignore case
    assert spellings("[Hire Date]") == ["[Hire Date]"]  # not a plain word: only as declared
    assert spellings('"Age"') == ['"Age"']  # double quotes: PostgreSQL keeps the case
    assert spellings('"age"') == ['"age"', "age"]
    assert spellings("`Select`") == ["`Select`"]  # a reserved word stays quoted
