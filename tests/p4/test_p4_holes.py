"""The hole classifier and the analyzer's answers to the executor."""

from __future__ import annotations

import pytest
from p4_helpers import BASIC, hole_in_new_line, snapshot, workspace

from gdg_lsp import fragments, languages
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.languages.base import Hole, NoHole


@pytest.mark.parametrize("after, indent, fragment", [
    ("        mark_to_drop(standard_metadata);\n", "        ", "statement"),
    ("            ipv4_lpm.apply();\n", "            ", "statement"),
    ("        hits.count(0);\n", "        ", "statement"),
    ("        packet.extract(hdr.ethernet);\n", "        ", "statement"),
    ("            TYPE_IPV4: parse_ipv4;\n", "            ", "select_case"),
    ("            hdr.ipv4.dstAddr: lpm;\n", "            ", "key_entry"),
    ("            forward;\n", "            ", "action_ref"),
    ("        size = 1024;\n", "        ", "table_property"),
])
def test_the_fragment_follows_the_block(p4, after, indent, fragment):
    hole = hole_in_new_line(p4, BASIC, after, indent)
    assert isinstance(hole, Hole), hole
    assert hole.fragment == fragment and hole.typed == "" and hole.indent == indent


@pytest.mark.parametrize("after, reason", [
    ("    counter(512, CounterType.packets) hits;\n", "control's declarations"),
    ("struct metadata {\n", "field list"),
    ("error { BadHop }\n", "top level"),
])
def test_no_hole_where_nothing_is_completed(p4, after, reason):
    hole = hole_in_new_line(p4, BASIC, after, "    ")
    assert isinstance(hole, NoHole) and reason in hole.reason


def test_no_hole_in_comments_strings_directives_and_names(p4):
    text = BASIC.replace("        mark_to_drop(standard_metadata);\n",
                         "        mark_to_drop(standard_metadata); // a comment\n        /* block */\n")
    snap = snapshot(p4, text)
    assert isinstance(p4.hole_at(snap, text.index("a comment") + 3, workspace()), NoHole)
    assert isinstance(p4.hole_at(snap, text.index("block */") + 2, workspace()), NoHole)
    assert isinstance(p4.hole_at(snap, text.index("#include <v1") + 5, workspace()), NoHole)
    inside = p4.hole_at(snap, text.index("mark_to_drop(") + 4, workspace())
    assert isinstance(inside, NoHole) and "inside a name" in inside.reason
    # between words the line's rest stays after a mid-line hole (tests/p4/test_p4_mid_line.py)
    mid = p4.hole_at(snap, text.index("mark_to_drop(") + len("mark_to_drop("), workspace())
    assert not isinstance(mid, NoHole) and mid.suffix == "standard_metadata); // a comment"


def test_typed_text_and_closers_after_the_cursor(p4):
    hole = hole_in_new_line(p4, BASIC, "        hits.count(0);\n", "        ", typed="hdr.ipv4.")
    assert hole.typed == "hdr.ipv4." and hole.replace_end == hole.cursor
    text = BASIC.replace("        hits.count(0);\n", "        hits.count(0);\n        mark_to_drop()\n")
    cursor = text.index("mark_to_drop()") + len("mark_to_drop(")
    hole = p4.hole_at(snapshot(p4, text), cursor, workspace())
    assert hole.typed == "mark_to_drop(" and text[hole.replace_end - 1] == ")"


def test_a_statement_continued_over_lines_is_one_region(p4):
    text = BASIC.replace("        hits.count(0);\n", "        hits.count(0);\n        mark_to_drop(\n            ")
    hole = p4.hole_at(snapshot(p4, text), len(text) - len(text.split("mark_to_drop(\n            ")[1]), workspace())
    assert isinstance(hole, Hole) and hole.typed == "mark_to_drop( "


def test_else_only_after_an_if_block(p4):
    after_if = hole_in_new_line(p4, BASIC, "            ipv4_lpm.apply();\n        }\n", "        ")
    assert after_if.context["kw_else"] == ["else"]
    elsewhere = hole_in_new_line(p4, BASIC, "        hits.count(0);\n", "        ")
    assert elsewhere.context["kw_else"] == []
    frag = fragments.fragment("p4", "statement")
    from gdg_lsp.explain import byte_grammars

    with_else = byte_grammars().get(fragments.instantiate(frag, "ctx", after_if.gamma, after_if.context).text)
    without = byte_grammars().get(fragments.instantiate(frag, "ctx", elsewhere.gamma, elsewhere.context).text)
    assert full_match(with_else, "else {\n") and not full_match(without, "else {\n")


def test_ctx_keeps_writable_targets_and_arity(p4, byte_cache):
    hole = hole_in_new_line(p4, BASIC, "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n")
    frag = fragments.fragment("p4", "statement")
    ctx = byte_cache.get(fragments.instantiate(frag, "ctx", hole.gamma, hole.context).text)
    gamma = byte_cache.get(fragments.instantiate(frag, "gamma", hole.gamma, hole.context).text)
    assert full_match(ctx, "hdr.ipv4.ttl = port;\n")
    assert not full_match(ctx, "port = 1;\n") and full_match(gamma, "port = 1;\n")  # action data is read-only
    assert full_match(ctx, "mark_to_drop(standard_metadata);\n") and full_match(ctx, "mark_to_drop();\n")
    assert not full_match(ctx, "mark_to_drop(1, 2);\n") and full_match(gamma, "mark_to_drop(1, 2);\n")
    assert full_match(ctx, "hdr.ipv4.setValid();\n") and not full_match(ctx, "hdr.ipv4.ttl.setValid();\n")
    assert not full_match(ctx, "transition accept;\n")  # not in a parser
    assert full_match(ctx, "bit<8> tmp = hdr.ipv4.ttl;\n")


def test_statement_effects_declare_locals_with_their_paths(p4):
    hole = hole_in_new_line(p4, BASIC, "        hits.count(0);\n")
    effects = p4.statement_effects("        headers copy = hdr;", hole, hole.gamma)
    names = {b.name: b for b in effects.declarations}
    assert names["copy"].sort == "Variable" and names["copy"].attrs["type"] == "headers"
    assert {"copy.ipv4.ttl", "copy.ipv4.setValid"} <= set(names)
    opened = p4.statement_effects("if (hdr.ipv4.isValid()) {", hole, hole.gamma)
    assert opened.opens_block == "block" and list(opened.declarations) == []
    assert p4.next_indents("if (x) {", hole, "        ") == ("            ",)
    assert p4.next_indents("transition select(x) {", hole, "        ") == ()


def test_trim_partial_ends_on_a_whole_path(p4):
    hole = hole_in_new_line(p4, BASIC, "        hits.count(0);\n")
    assert p4.trim_partial("hdr.ipv4.tt", hole.gamma) == "hdr.ipv4"
    assert p4.trim_partial("x = hdr.ipv4.ttl", hole.gamma) == "x = hdr.ipv4.ttl"
    assert p4.trim_partial("x = zzz", hole.gamma) == "x ="


def test_registry_and_parser(p4):
    assert languages.language_for_path("a/b/prog.p4") == "p4"
    assert languages.analyzer("p4") is p4
    program = p4.parser()(BASIC.encode(), None)
    assert program is not None and len(program.items) > 10
    assert p4.parser()(b"\xff\xfe garbage {{{", None) is not None


def test_hover_names_the_binding(p4):
    text = BASIC
    at = text.index("hdr.ipv4.ttl - 1") + len("hdr.ipv4.t")
    found = p4.binding_at(snapshot(p4, text), at, workspace())
    assert found is not None and found[0].name == "hdr.ipv4.ttl" and found[0].attrs["type"] == "bit<8>"


def test_return_a_value_only_from_functions(p4, byte_cache):
    text = BASIC.replace("control MyIngress(", "bit<8> twice(in bit<8> v) {\n    return v + v;\n}\n\ncontrol MyIngress(")
    frag = fragments.fragment("p4", "statement")
    in_function = hole_in_new_line(p4, text, "    return v + v;\n", "    ")
    in_action = hole_in_new_line(p4, text, "        mark_to_drop(standard_metadata);\n")
    g_function = byte_cache.get(fragments.instantiate(frag, "ctx", in_function.gamma, in_function.context).text)
    g_action = byte_cache.get(fragments.instantiate(frag, "ctx", in_action.gamma, in_action.context).text)
    assert full_match(g_function, "return v;\n") and full_match(g_action, "return;\n")
    assert not full_match(g_action, "return 1;\n")
