"""Γ: frames, shadowing, queries, the nesting cap."""

from __future__ import annotations

import pytest

from gdg_lsp.errors import NestingLimitError
from gdg_lsp.gamma import MAX_FRAMES, Binding, Gamma


def test_innermost_binding_wins_and_queries_see_only_visible_ones():
    g = Gamma([Binding("list", "Builtin"), Binding("len", "Builtin")])
    g.push("module", [Binding("x", "Variable")])
    g.push("function f", [Binding("list", "Variable", {"annotation": "int"})])
    assert g.lookup("list").sort == "Variable"
    assert g.names(sort="Builtin") == ["len"]
    assert g.names(sort=("Variable", "Builtin")) == ["len", "list", "x"]
    assert g.names(annotation="int") == ["list"]
    g.pop()
    assert g.lookup("list").sort == "Builtin"


def test_bindings_are_write_once_per_frame():
    g = Gamma()
    g.push("module")
    first = g.declare(Binding("f", "Function"))
    again = g.declare(Binding("f", "Variable"))
    assert again is first and g.lookup("f").sort == "Function"


def test_attr_filters_with_collections_and_missing_attrs():
    g = Gamma([Binding("a", "Buffer", {"mem": "shared"}), Binding("b", "Buffer", {"mem": "fragment"}), Binding("c", "Buffer")])
    assert g.names(sort="Buffer", mem=("shared", "fragment")) == ["a", "b"]
    assert g.names(sort="Buffer", mem="local") == []


def test_nesting_is_capped_at_32_and_the_33rd_is_refused_cleanly():
    g = Gamma()
    for i in range(MAX_FRAMES):
        g.push(f"block {i}")
    with pytest.raises(NestingLimitError):
        g.push("one too many")
    assert g.depth == MAX_FRAMES


def test_overlay_does_not_touch_the_original():
    g = Gamma()
    g.push("module", [Binding("x", "Variable")])
    child = g.overlay()
    child.declare(Binding("y", "Variable"))
    child.push("function f", [Binding("z", "Parameter")])
    assert "y" in child and "z" in child
    assert "y" not in g and g.depth == 1


def test_by_sort_groups_names():
    g = Gamma([Binding("print", "Builtin")], [])
    g.push("module", [Binding("x", "Variable"), Binding("f", "Function")])
    assert g.by_sort() == {"Builtin": ["print"], "Function": ["f"], "Variable": ["x"]}
