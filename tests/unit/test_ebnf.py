"""The template EBNF: parse/print round trip, slots, pruning of empty derivations."""

from __future__ import annotations

import pytest

from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf

TEMPLATE = r'''
# a comment line
root ::= stmt ("\n" | ";")
stmt ::= "return" [ \t]+ %name% | %kw% [ \t]* "x"{1,3} | call
call ::= %name% "(" (%name% ("," %name%)*)? ")"
'''


def test_round_trip_is_stable():
    rules = ebnf.parse(TEMPLATE)
    again = ebnf.parse(ebnf.render(rules))
    assert again == rules
    assert list(rules) == ["root", "stmt", "call"]


def test_slots_and_references_are_found():
    rules = ebnf.parse(TEMPLATE)
    assert set(ebnf.slots(rules["stmt"])) == {"name", "kw"}
    assert set(ebnf.references(rules["root"])) == {"stmt"}


def test_an_empty_optional_slot_removes_only_what_needs_it():
    rules = ebnf.parse(TEMPLATE)
    pruned = {n: ebnf.map_slots(e, lambda s: None if s == "kw" else ebnf.Ref("names")) for n, e in rules.items()}
    pruned["names"] = ebnf.Lit("f")
    live = ebnf.prune_empty_rules(pruned)
    text = ebnf.render(live)
    assert "%kw%" not in text and '"x"' not in text  # the alternative that needed %kw% is gone
    assert '"return"' in text and "call" in text


def test_emptiness_propagates_to_the_root():
    rules = ebnf.parse('root ::= a\na ::= b "x"\nb ::= %s%')
    mapped = {n: ebnf.map_slots(e, lambda s: None) for n, e in rules.items()}
    with pytest.raises(GrammarError):
        ebnf.prune_empty_rules(mapped)


def test_optional_use_of_an_empty_rule_survives():
    rules = ebnf.parse('root ::= "a" b?\nb ::= %s%')
    mapped = {n: ebnf.map_slots(e, lambda s: None) for n, e in rules.items()}
    live = ebnf.prune_empty_rules(mapped)
    assert ebnf.render(live) == 'root ::= "a"\n'


def test_errors_are_located():
    with pytest.raises(GrammarError, match="defined twice"):
        ebnf.parse('root ::= "a"\nroot ::= "b"')
    with pytest.raises(GrammarError, match="undefined rule"):
        ebnf.check(ebnf.parse("root ::= missing"), "t")
    with pytest.raises(GrammarError, match=":2:"):
        ebnf.parse('root ::= "a"\n  $$$')


@pytest.mark.parametrize("text", ['a"b', "a\\b", "line\nbreak", "tab\tx", "nul\x00", "é😀", "|()[]*+?"])
def test_literals_escape_and_unescape_exactly(text):
    literal = ebnf.escape_literal(text)
    assert ebnf.parse(f"root ::= {literal}")["root"] == ebnf.Lit(text)
    assert "\n" not in literal and "\x00" not in literal
