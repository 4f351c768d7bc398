"""Grammar dialects and grammar derivatives on every language's fragments.

Each fragment template is instantiated with hostile names (quotes, a
backslash, ``|``, parentheses, an underscore, unicode) and printed in every
dialect. XGrammar EBNF must parse with XGrammar; GBNF must pass a strict
reader of llama.cpp's rules (tests/remote/gbnf_check.py); Lark must parse with
llguidance; and they mean the same: random strings of the template grammar are
accepted by every printed form, each read by the engine that reads it.
The grammar sent to an engine after typed text (``continuation.request_grammar``)
is checked both ways: the rest of a real string is in it, and every random
string of it, appended to the typed text, is in the original grammar.
"""

from __future__ import annotations

import random

import pytest

from gdg_lsp import fragments
from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.grammar import continuation, dialects
from gdg_lsp.grammar.engine import accepts, full_match
from tests.remote import gbnf_check
from tests.remote.fake_engine import BYTE_GRAMMARS, matches, sample

HOSTILE = ["alpha_beta", 'q"uote', "back\\slash", "p|i(pe)", "é_ü", "x"]
LANGUAGES = ["python", "sql", "p4", "tilelang"]


STRUCTURAL = {"line_break": ebnf.Lit("\n")}
"""Slots whose answer is a fixed piece of syntax, never a name (the Python/TileLang analyzer
lists "\n" or nothing for ``line_break``): they get that answer, as in use. Filled with names,
the lexemes that end with them (``COMMA``, ``BINOP``...) would swallow a name in Lark's
greedy lexer, a grammar no request can build."""


def _instantiated(fragment: fragments.Fragment) -> dict[str, ebnf.Expr]:
    names = ebnf.Alt(tuple(ebnf.Lit(n) for n in HOSTILE))
    rules = {k: ebnf.map_slots(v, lambda slot: STRUCTURAL.get(slot, names)) for k, v in fragment.rules.items()}
    return {k: v for k, v in rules.items() if v is not None}


def _cases():
    for language in LANGUAGES:
        for name in fragments.load_fragments(language):
            yield pytest.param(language, name, id=f"{language}-{name}")


@pytest.fixture(scope="module")
def byte_cache():
    """XGrammar reads both EBNF dialects (the GBNF printer writes their common subset)."""
    from gdg_lsp.explain import byte_grammars

    return byte_grammars("xgrammar")


def _means(byte_cache, dialect: str, text: str, string: str, complete: bool) -> bool:
    if dialect == "lark":
        return matches(text, string, complete)
    return (full_match if complete else accepts)(byte_cache.get(text), string)


@pytest.mark.parametrize(("language", "name"), list(_cases()))
def test_both_dialects_parse_and_mean_the_same(language, name, byte_cache):
    rules = _instantiated(fragments.fragment(language, name))
    original = ebnf.render(rules)
    xgrammar_text = dialects.render(rules, "xgrammar")
    gbnf_text = dialects.render(rules, "gbnf")
    lark_text = dialects.render(rules, "lark")
    dialects.validate(xgrammar_text, "xgrammar")
    dialects.validate(gbnf_text, "gbnf")
    dialects.validate(lark_text, "lark")
    defined = gbnf_check.check(gbnf_text)
    assert all("_" not in n for n in defined)
    assert "_" in "".join(rules), "the test should exercise renaming: some rule name has an underscore"
    rng = random.Random(f"{language}/{name}")
    printed = {"xgrammar": xgrammar_text, "gbnf": gbnf_text, "lark": lark_text}
    for _ in range(12):  # random walks often wander into strings: those are checked as prefixes
        text, ended = sample(BYTE_GRAMMARS, original, rng, 300)
        assert text
        for dialect, grammar in printed.items():
            assert _means(byte_cache, dialect, grammar, text, ended), (dialect, text, ended)


@pytest.mark.parametrize(("language", "name"), list(_cases()))
def test_request_grammar_is_exactly_the_rest(language, name, byte_cache):
    """After typed text p (and a healed suffix h of it), the grammar sent accepts h·w
    for the rest w of a real string, and every string h·v it generates has p·v in
    the original grammar: the engine cannot be told more, nor less."""
    rules = _instantiated(fragments.fragment(language, name))
    original = byte_cache.get(ebnf.render(rules))
    rng = random.Random(f"rest/{language}/{name}")
    checked = 0
    for _ in range(6):
        text, ended = sample(BYTE_GRAMMARS, ebnf.render(rules), rng, 60, newline_bias=0.05)
        if len(text) < 2:
            continue
        cut = rng.randrange(1, len(text))
        heal = text[max(0, cut - rng.randrange(0, 4)) : cut]
        for dialect in dialects.DIALECTS:
            sent = dialects.render(continuation.request_grammar(rules, text[:cut], heal, False), dialect)
            dialects.validate(sent, dialect)
            if dialect == "gbnf":
                gbnf_check.check(sent)
            assert _means(byte_cache, dialect, sent, heal + text[cut:], ended), (dialect, text, cut, heal)
            for _ in range(3):
                other, other_ended = sample(BYTE_GRAMMARS, sent, rng, 60, newline_bias=0.05)
                assert other.startswith(heal) or heal.startswith(other)
                if other.startswith(heal):
                    rebuilt = text[:cut] + other[len(heal):]
                    assert (full_match if other_ended else accepts)(original, rebuilt), (text[:cut], other)
            checked += 1
    assert checked


def test_gbnf_names_never_collide_and_root_stays():
    rules = {"root": ebnf.Ref("a_b"), "a_b": ebnf.Ref("a-b"), "a-b": ebnf.Lit("x")}
    text = dialects.render(rules, "gbnf")
    names = gbnf_check.check(text)
    assert names[0] == "root" and len(set(names)) == 3


def test_the_strict_gbnf_reader_rejects_what_llama_cpp_rejects():
    for bad in ['root ::= a_b\na_b ::= "x"\n',          # underscore in a name
                'root ::= "a"\n  | "b"\n',               # alternative continued outside parentheses
                'root ::= [\\-a]\n',                     # escape llama.cpp does not know
                'root ::= "\\x4"\n',                     # \x needs two digits
                'root ::= other\n',                      # undefined rule
                'start ::= "x"\n']:                      # no root
        with pytest.raises(gbnf_check.GbnfError):
            gbnf_check.check(bad)
    assert gbnf_check.check('root ::= "a" |\n  "b" (x\n | "c")* .\nx ::= [^\\n\\]a-z]{1,3}\n') == ["root", "x"]


def test_invalid_grammar_is_never_sendable():
    with pytest.raises(GrammarError):
        dialects.validate('root ::= "a" undefined_rule\n', "xgrammar")
    with pytest.raises(GrammarError):
        dialects.validate("root_x ::= \"a\"\n", "gbnf")


def test_nothing_after_the_typed_text_is_an_error(byte_cache):
    rules = ebnf.parse('root ::= "ab" | "ac"')
    assert continuation.request_grammar(rules, "a", "", False)
    with pytest.raises(GrammarError):
        continuation.request_grammar(rules, "x", "", False)
    no_blank = continuation.request_grammar(ebnf.parse('root ::= [ \\t]* "x"'), "", "", True)
    compiled = byte_cache.get(dialects.render(no_blank, "xgrammar"))
    assert full_match(compiled, "x") and not accepts(compiled, " ")


@pytest.mark.parametrize("dialect", ["xgrammar", "lark"])
def test_a_region_that_may_not_start_with_the_closer(dialect, byte_cache):
    """``avoid_start`` (the retry at ``f(|)`` whose first answer only closed the call): the grammar
    sent allows what the local mask allows, the closer only after something else, blanks aside."""
    rules = ebnf.parse('root ::= [ ]* (")" | "a" ")" | "(" ")")')
    sent = dialects.render(continuation.request_grammar(rules, "", "", False, avoid_start=")"), dialect)
    for text in ("a)", " a)", "  ()"):
        assert matches(sent, text, complete=True), text
    for text in (")", " )", "    )"):
        assert not matches(sent, text, complete=False), text
    plain = dialects.render(continuation.request_grammar(rules, "", "", False), dialect)
    assert matches(plain, " )", complete=True)
    # where only the closer can come, the grammar is the plain one (the local decode ends there)
    only = ebnf.parse('root ::= ")"')
    assert continuation.request_grammar(only, "", "", False, avoid_start=")") == continuation.request_grammar(
        only, "", "", False)
