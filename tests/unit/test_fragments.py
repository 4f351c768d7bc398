"""τ_Γ and π: slots from Γ, optional slots, the rung ladder."""

from __future__ import annotations

import pytest

from gdg_lsp import fragments
from gdg_lsp.errors import GammaEmptyError
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.grammar.engine import accepts, full_match


def ladder_fragment() -> fragments.Fragment:
    rules = ebnf.parse('root ::= %buf% ", " %acc% ("!" %flag%)?')
    slots = {
        "buf": fragments.SlotSpec("buf", {"pin": {"names": ["A_shared"]}, "ctx": {"sort": "Buffer", "mem": "shared"},
                                           "gamma": {"sort": "Buffer"}, "base": {"ebnf": "[a-zA-Z_]+"}}),
        "acc": fragments.SlotSpec("acc", {"ctx": {"sort": "Buffer", "mem": "$acc_mem"}, "gamma": {"sort": "Buffer"},
                                           "base": {"ebnf": "[a-zA-Z_]+"}}),
        "flag": fragments.SlotSpec("flag", {"all": {"context": "flags"}}, optional=True),
    }
    return fragments.Fragment("t", "ladder", "Stmt", ("pin", "ctx", "gamma", "base"), rules, slots)


def gamma_with(*buffers: tuple[str, str]) -> Gamma:
    return Gamma([Binding(n, "Buffer", {"mem": m}) for n, m in buffers])


def choose(frag, gamma, typed, constraint="scope", context=None, cache=None):
    return fragments.choose(frag, gamma, context or {"acc_mem": "fragment"}, typed, constraint, cache.get, accepts)


def test_instantiate_renders_each_name_set_once(byte_cache):
    g = gamma_with(("A_shared", "shared"), ("C_local", "fragment"))
    inst = fragments.instantiate(ladder_fragment(), "gamma", g, {"flags": ["x"]})
    assert inst.text.count('"A_shared"') == 1  # both slots share one rule
    assert inst.slot_values["buf"] == ("A_shared", "C_local")
    assert full_match(byte_cache.get(inst.text), "C_local, A_shared!x")


def test_context_references_and_ctx_filtering(byte_cache):
    g = gamma_with(("A_shared", "shared"), ("C_local", "fragment"))
    inst = fragments.instantiate(ladder_fragment(), "ctx", g, {"acc_mem": "fragment"})
    compiled = byte_cache.get(inst.text)
    assert full_match(compiled, "A_shared, C_local")
    assert not full_match(compiled, "C_local, C_local")  # a fragment buffer is no shared operand
    assert not full_match(compiled, "A_shared, C_local!x")  # empty optional slot removed the "!" branch


def test_empty_required_slot_raises_and_pi_climbs(byte_cache):
    frag = ladder_fragment()
    g = gamma_with(("B", "local"))
    with pytest.raises(GammaEmptyError):
        fragments.instantiate(frag, "ctx", g, {"acc_mem": "fragment"})
    choice = choose(frag, g, "B, ", cache=byte_cache)
    assert choice.rung == "gamma"
    assert [(a.rung, a.outcome) for a in choice.attempts] == [("pin", "empty-slot"), ("ctx", "empty-slot"), ("gamma", "chosen")]


def test_typed_text_outside_the_rung_climbs_to_base(byte_cache):
    frag = ladder_fragment()
    g = gamma_with(("A_shared", "shared"), ("C_local", "fragment"))
    assert choose(frag, g, "A_sh", cache=byte_cache).rung == "pin"
    assert choose(frag, g, "C_lo", cache=byte_cache).rung == "gamma"
    choice = choose(frag, g, "ghost", cache=byte_cache)
    assert choice.rung == "base" and not choice.guaranteed


def test_constraints_select_the_arms(byte_cache):
    frag = ladder_fragment()
    g = gamma_with(("A_shared", "shared"), ("C_local", "fragment"))
    assert choose(frag, g, "", "syntax", cache=byte_cache).rung == "base"
    none = choose(frag, g, "", "none", cache=byte_cache)
    assert none.rung is None and none.attempts == []
    with pytest.raises(ValueError):
        choose(frag, g, "", "strict", cache=byte_cache)


def test_no_rung_fits_means_no_grammar(byte_cache):
    choice = choose(ladder_fragment(), gamma_with(("A", "shared")), "1+1", cache=byte_cache)
    assert choice.rung is None and choice.grammar is None
    assert {a.outcome for a in choice.attempts} <= {"rejects-typed-text", "empty-slot"}


def test_python_manifest_loads_and_validates():
    frag = fragments.fragment("python", "statement")
    assert frag.rungs == ("gamma", "base")
    assert {"name", "kw_return", "kw_loop_control"} <= set(frag.slots)
    assert frag.slots["kw_return"].optional and not frag.slots["name"].optional


def test_an_identifier_slot_may_exclude_the_words_the_hole_lists(byte_cache):
    """`exclude = "$key"`: the shell's open command names are none of the known tools."""
    rules = ebnf.parse('root ::= %name% " x\\n"')
    spec = {"all": {"identifier": {"first": "a-z", "rest": "a-z", "exclude": "$taken"}}}
    fragment = fragments.Fragment("t", "f", "Stmt", ("gamma",), rules, {"name": fragments.SlotSpec("name", spec)})
    grammar = byte_cache.get(fragments.instantiate(fragment, "gamma", Gamma(), {"taken": ["git", "make"]}).text)
    assert full_match(grammar, "gi x\n") and full_match(grammar, "gitx x\n") and full_match(grammar, "ls x\n")
    assert not accepts(grammar, "git x") and not accepts(grammar, "make x")
