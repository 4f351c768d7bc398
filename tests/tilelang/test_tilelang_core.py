"""The general pieces this language needed from the core: fragments that start from a
named rule of a shared template with shared slot specs, and π treating a grammar
emptied by optional slots as an empty slot. (The executor's per-statement fragment
switch is exercised by test_tilelang_multiline: a gemm-fragment hole continues with
whole-line statements.)"""

from __future__ import annotations

from gdg_lsp import fragments
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma


def test_start_rule_keeps_only_reachable_rules_and_their_slots():
    whole = fragments.fragment("tilelang", "statement")
    copy = fragments.fragment("tilelang", "copy")
    assert copy.rules["root"] == ebnf.Ref("copy_line")
    assert "copy_line" not in whole.rules and "copy_line" in copy.rules
    assert "launch_line" not in copy.rules and "kernel_fn" not in copy.slots
    # shared spec, overridden per fragment: optional in the whole-line fragment, required in gemm
    assert whole.slots["gemm_acc"].optional and not fragments.fragment("tilelang", "gemm").slots["gemm_acc"].optional
    assert "pin" in fragments.fragment("tilelang", "gemm").slots["gemm_acc"].per_rung
    assert "pin" not in whole.slots["gemm_acc"].per_rung


def test_choose_reports_a_grammar_emptied_by_optional_slots_as_empty_slot(tl_bytes):
    fragment = fragments.fragment("tilelang", "loop")
    gamma = Gamma([Binding("len", "Builtin")])  # no T module, no loop construct: loop_line has no derivation
    choice = fragments.choose(fragment, gamma, {}, "", "scope", tl_bytes.get, lambda c, t: True)
    assert choice.attempts[0].outcome == "empty-slot"
