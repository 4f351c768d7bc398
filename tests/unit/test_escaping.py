"""Differential test of τ_Γ's escaping: a slot accepts exactly its names.

Over 24+ Γ configurations with hostile names, every name in the set is a
complete string of the compiled grammar, and at least 1,000 strings outside
the set (near misses, bare prefixes and suffixes, pieces split at ``|``,
grammar-metacharacter injections) are not, using the same engines and
compiled objects the decoder uses: XGrammar reading the escaped literals of the
template dialect, llguidance the regular expression ``lark_emitter`` prints.
"""

from __future__ import annotations

import random

import pytest

from gdg_lsp import fragments
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.grammar.engine import full_match

CONFIGS = [
    ["plain"],
    ["a", "b"],
    ['quo"te', '""', '"'],
    ["back\\slash", "\\", "\\\\n"],
    ["pi|pe", "|", "a|b|c"],
    ["(paren)", ")(", "f(x)", "()"],
    ["new\nline", "\n", "cr\rlf\r\n"],
    ["tab\there", "\t\t"],
    ["naïve", "日本語", "Ωmega", "é"],
    ["emoji😀", "😀😀"],
    ["x" * 256],
    ["y" * 255 + "z", "y" * 256],
    ["[cls]", "[^a]", "a-z"],
    ["star*", "plus+", "q?", "{1,3}"],
    ["::=", "root ::= x", "%slot%"],
    ["nul\x00byte", "\x01\x02", "del\x7f"],
    ["#comment", "a # b"],
    ["'single'", "it's"],
    ["ab", "abc", "abcd"],
    ["\\u0041", "\\x41", "\\U0001F600"],
    ["sp ace", " lead", "trail "],
    ['mix"|()\\\n\t😀'],
    ["a" + str(i) for i in range(300)],
    ["only_one"],
    ["Name", "name", "NAME"],
    ["\u2028sep", "\ufeffbom"],
]

META = ['"', "\\", "|", "(", ")", "[", "]", "*", "+", "?", "\n", "\t", "#", "%", "{", "}", " ", "\x00"]


def _fragment():
    rules = ebnf.parse("root ::= %name%")
    slot = fragments.SlotSpec("name", {"gamma": {"sort": "Variable"}})
    return fragments.Fragment("test", "slot", "Name", ("gamma",), rules, {"name": slot})


def _negatives(names: list[str], rng: random.Random) -> set[str]:
    out: set[str] = set()
    for name in names:
        for i in range(len(name) + 1):
            if i < len(name):
                out.add(name[:i] + name[i + 1 :])  # deletion
                out.add(name[:i] + chr((ord(name[i]) + 1) % 0x10FFFF or 1) + name[i + 1 :])  # substitution
            out.add(name[:i] + rng.choice(META) + name[i:])  # insertion of a metacharacter
        out.update(name[:k] for k in range(1, len(name)))  # bare prefixes
        out.update(name[k:] for k in range(1, len(name)))  # bare suffixes
        out.update(name.split("|"))
        out.add(name + name)
    joined = "|".join(names)
    out.update({joined, f"({joined})", '" | "'.join(names), f'{names[0]}" | "x', f"{names[0]}) | (x"})
    return {s for s in out if s and s not in names and not any(0xD800 <= ord(c) <= 0xDFFF for c in s)}


def test_there_are_enough_configurations_and_negatives():
    rng = random.Random(0)
    assert len(CONFIGS) >= 24
    assert sum(len(_negatives(c, rng)) for c in CONFIGS) >= 1000


@pytest.mark.parametrize("names", CONFIGS, ids=[f"config{i}" for i in range(len(CONFIGS))])
def test_slot_accepts_exactly_its_names(names, byte_engine):
    gamma = Gamma([Binding(n, "Variable") for n in names])
    grammar = fragments.instantiate(_fragment(), "gamma", gamma)
    compiled = byte_engine.get(grammar)
    for name in names:
        assert full_match(compiled, name), f"in-set name rejected: {name!r}"
    rng = random.Random(len(names))
    for candidate in _negatives(names, rng):
        assert not full_match(compiled, candidate), f"out-of-set string accepted: {candidate!r}"


@pytest.mark.parametrize("names", [CONFIGS[2], CONFIGS[4], CONFIGS[8], CONFIGS[21]])
def test_same_result_with_the_real_vocabulary(names, smol_engine):
    """The decoder's own engine (the model's vocabulary) agrees on a sample."""
    gamma = Gamma([Binding(n, "Variable") for n in names])
    compiled = smol_engine.get(fragments.instantiate(_fragment(), "gamma", gamma))
    rng = random.Random(1)
    assert all(full_match(compiled, n) for n in names)
    assert not any(full_match(compiled, s) for s in _negatives(names, rng))


def test_render_alternation_contract():
    assert fragments.render_alternation(["b", "a", "a"]) == '("a" | "b")'
    assert fragments.render_alternation(["x"]) == '("x")'
    with pytest.raises(ValueError):
        fragments.render_alternation([])
