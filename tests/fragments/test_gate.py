"""The hard gate: positives accepted, mined ghosts rejected, with the engine the decoder uses."""

from __future__ import annotations

import pytest

from gdg_lsp.fragments import fileformat, gate
from gdg_lsp.grammar.fragment_engine import byte_engine

FRAGMENT = '''
language = "demo"
name = "load"
rungs = ["pin", "ctx", "gamma", "base"]
template = \'\'\'
root ::= "load(" %ptr% (" + " %off%)? (", mask=" %mask%)? ")"
\'\'\'
[hole]
kind = "call:load("
trigger = ["load("]
[slots.ptr]
base = { identifier = { first = "a-zA-Z_", rest = "a-zA-Z0-9_", exclude = ["if"] } }
gamma = { sort = ["Parameter", "Variable"] }
ctx = { sort = ["Parameter"], kind = "pointer" }
pin = { sort = ["Parameter"], kind = "pointer", among = ["x_ptr", "y_ptr"] }
[slots.off]
gamma = { sort = ["Variable"] }
base = { identifier = {} }
optional = true
[slots.mask]
gamma = { sort = ["Variable"] }
base = { identifier = {} }
optional = true

[[examples]]
text = "load(x_ptr + offs, mask=m)"
gamma = { x_ptr = { sort = "Parameter", kind = "pointer" }, offs = { sort = "Variable" }, m = { sort = "Variable" }, i = { sort = "LoopIndex" } }

[[examples]]
text = "load(y_ptr)"
gamma = { y_ptr = { sort = "Parameter", kind = "pointer" }, n = { sort = "Parameter", kind = "int" }, j = { sort = "LoopIndex" } }
'''


def _positives(ff):
    return [gate.example_positive(e, ff.hole.triggers, f"example {i + 1}") for i, e in enumerate(ff.examples)]


def test_example_positives_mark_references_but_not_the_trigger_or_keyword_names():
    ff = fileformat.parse(FRAGMENT)
    first = _positives(ff)[0]
    assert [name for _, _, name in first.references] == ["x_ptr", "offs", "m"]
    for start, end, name in first.references:
        assert first.text[start:end] == name


def test_mining_makes_every_kind_of_ghost_and_none_is_bound_where_it_is_put():
    ff = fileformat.parse(FRAGMENT)
    positives = _positives(ff)
    negatives = gate.mine(positives)
    assert {n.kind for n in negatives} == set(gate.KINDS)
    for n in negatives:
        g = positives[n.positive].gamma
        if n.kind == "wrong-sort":
            assert g.lookup(n.replacement).sort == "LoopIndex"
        else:
            assert g.lookup(n.replacement) is None, n  # a ghost: not in this Γ
        assert n.replacement in n.text and n.text != positives[n.positive].text


def test_a_sound_fragment_passes_with_every_ghost_rejected():
    ff = fileformat.parse(FRAGMENT)
    report = gate.run(ff.fragment, _positives(ff), byte_engine())
    assert report.passed, report.lines()
    assert report.accepted == report.positives == 2
    assert report.rejected == report.negatives > 0
    assert report.rungs["pin"] == [2, 2]


def test_a_fragment_whose_reference_is_an_open_identifier_leaks_ghosts_and_fails():
    loose = FRAGMENT.replace('gamma = { sort = ["Parameter", "Variable"] }',
                             'gamma = { identifier = { first = "a-zA-Z_", rest = "a-zA-Z0-9_" } }')
    loose = loose.replace('ctx = { sort = ["Parameter"], kind = "pointer" }\n', "")
    loose = loose.replace('pin = { sort = ["Parameter"], kind = "pointer", among = ["x_ptr", "y_ptr"] }\n', "")
    ff = fileformat.parse(loose.replace('rungs = ["pin", "ctx", "gamma", "base"]', 'rungs = ["gamma", "base"]'))
    report = gate.run(ff.fragment, _positives(ff), byte_engine())
    assert not report.passed
    assert report.accepted == report.positives  # the positives still parse
    assert report.rejection_rate < 0.99 and report.leaks
    assert "mined ghosts" in report.why_not()


def test_a_fragment_that_rejects_a_positive_fails():
    strict = FRAGMENT.replace('(", mask=" %mask%)?', "")
    ff = fileformat.parse(strict)
    report = gate.run(ff.fragment, _positives(ff), byte_engine())
    assert not report.passed and report.accepted == 1
    assert "rejects 1 of 2 positives" in report.why_not()


def test_a_grammar_the_engine_refuses_fails_the_gate():
    class Refusing:
        def compile(self, text):
            from gdg_lsp.errors import GrammarError

            raise GrammarError("refused")

        def full_match(self, compiled, text):
            raise AssertionError("never asked")

        def free_bits(self, compiled, text):
            return None

    ff = fileformat.parse(FRAGMENT)
    report = gate.run(ff.fragment, _positives(ff), Refusing())
    assert not report.passed and report.compile_errors


def test_free_bits_fall_along_the_ladder_in_a_real_vocabulary(smol_vocab):
    from gdg_lsp.grammar.fragment_engine import token_engine

    ff = fileformat.parse(FRAGMENT)
    report = gate.run(ff.fragment, _positives(ff), byte_engine(), free_bits_engine=token_engine(smol_vocab))
    assert report.monotone is True and report.passed
    bits = report.free_bits
    assert bits["base"] > bits["gamma"] >= bits["ctx"] >= bits["pin"]


def test_rising_free_bits_fail_the_gate():
    class Bits:
        def __init__(self):
            self.engine = byte_engine()

        def compile(self, text):
            return (self.engine.compile(text), text)

        def full_match(self, compiled, text):
            return self.engine.full_match(compiled[0], text)

        def free_bits(self, compiled, text):
            return float(len(compiled[1]) % 7)  # anything but monotone

    ff = fileformat.parse(FRAGMENT)
    report = gate.run(ff.fragment, _positives(ff), byte_engine(), free_bits_engine=Bits())
    if report.monotone is False:
        assert not report.passed and "free_bits rise" in report.why_not()
    else:
        pytest.fail(f"the made-up bits happened to be monotone: {report.free_bits}")
