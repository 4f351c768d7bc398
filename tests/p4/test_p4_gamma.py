"""Γ for P4: sorts and types of bindings, typed paths, declare-before-use,
include resolution (settings, workspace, p4c locations, library facts), and
Γ recovered from programs cut at statement boundaries."""

from __future__ import annotations

import random
import re
import shutil

from p4_helpers import (
    BASIC,
    INCLUDE,
    corpus_programs,
    hole_after,
    hole_in_new_line,
    workspace,
)

from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.p4.preprocess import preprocess


def test_bindings_carry_types_directions_and_parents(p4):
    hole = hole_after(p4, BASIC, "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n")
    assert isinstance(hole, Hole) and hole.fragment == "statement"
    g = hole.gamma
    hdr = g.lookup("hdr")
    assert (hdr.sort, hdr.attrs["type"], hdr.attrs["direction"], hdr.attrs["writable"]) == ("Parameter", "headers", "inout", True)
    port = g.lookup("port")  # an action parameter without direction: action data, read-only
    assert (port.sort, port.attrs["type"], port.attrs["direction"], port.attrs["writable"]) == ("Parameter", "egressSpec_t", "", False)
    ttl = g.lookup("ipv4_t.ttl")
    assert (ttl.sort, ttl.attrs["parent"], ttl.attrs["type"]) == ("Field", "ipv4_t", "bit<8>")
    assert g.lookup("hdr.ipv4.ttl").attrs == {"type": "bit<8>", "root": "hdr", "writable": True}
    assert g.lookup("hdr.ethernet.dstAddr").attrs["type"] == "macAddr_t"
    assert g.lookup("Color.RED").sort == "EnumMember"
    assert {"error.NoError", "error.BadHop"} <= set(g.names("Error"))
    assert set(g.names("MatchKind")) == {"exact", "ternary", "lpm", "range", "optional", "selector"}
    assert g.lookup("TYPE_IPV4").attrs["type"] == "bit<16>"
    assert g.lookup("MAX_HOPS").attrs == {"macro": True, "value": "3"}
    assert g.lookup("hits").attrs["type"] == "counter"
    drop = g.lookup("drop")
    assert drop.sort == "Action" and drop.attrs.get("arity_0") and not drop.attrs.get("arity_1")
    mark = g.lookup("mark_to_drop")  # two overloads: no argument, and standard_metadata
    assert mark.sort == "ExternFunction" and mark.attrs["arity_0"] and mark.attrs["arity_1"]
    assert g.lookup("packet_in.extract").sort == "ExternMethod"


def test_methods_and_stack_paths_follow_the_types(p4):
    g = hole_after(p4, BASIC, "            ipv4_lpm.apply();\n").gamma
    assert {"hdr.ipv4.isValid", "hdr.ipv4.setValid", "hdr.ipv4.setInvalid", "ipv4_lpm.apply", "hits.count"} <= set(g.names("Method"))
    assert g.lookup("hits.count").attrs.get("arity_1")
    assert g.lookup("ipv4_lpm.apply").attrs["table"]
    paths = set(g.names("Path"))
    assert {"hdr.hops[0].bos", "hdr.hops[2].port", "hdr.hops.last.bos"} <= paths
    assert "hdr.hops[3]" not in paths  # the stack has MAX_HOPS = 3 elements
    assert "hdr.hops.next" not in paths  # .next only in parsers
    assert "hdr.ipv4.nosuch" not in paths and "meta.ttl" not in paths
    assert set(g.names("ParserState")) == set()  # no states outside a parser


def test_parser_scope_has_its_states_and_packet_methods(p4):
    hole = hole_in_new_line(p4, BASIC, "        packet.extract(hdr.ipv4);\n")
    g = hole.gamma
    assert set(g.names("ParserState")) == {"start", "parse_ipv4", "accept", "reject"}
    assert {"packet.extract", "packet.lookahead", "packet.advance", "hdr.hops.next"} <= set(g.names(["Method", "Path"]))
    assert g.lookup("packet.extract").attrs.get("arity_1") and g.lookup("packet.extract").attrs.get("arity_2")
    assert "NoAction" in g and "Action" not in hole.context["callable_sorts"]  # actions are not called in parsers
    assert hole.context["kw_transition"] == ["transition"] and hole.context["kw_exit"] == []


def test_declare_before_use(p4):
    text = BASIC.replace("        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n",
                         "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n\n        bit<8> later = 1;\n")
    g = hole_after(p4, text, "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n").gamma
    assert "later" not in g  # a local declared after the cursor
    assert "ipv4_lpm" not in g  # a table declared after the action
    assert "Later" not in g  # a control declared after the cursor
    assert "forward" not in g  # the action being written is not in its own Γ
    assert "drop" in g
    g2 = hole_after(p4, text, "bit<8> later = 1;\n").gamma
    assert g2.lookup("later").attrs == {"type": "bit<8>", "writable": True}


def test_library_facts_stand_in_for_missing_includes(p4):
    marker = "            ipv4_lpm.apply();\n"
    with_files = hole_after(p4, BASIC, marker, workspace([str(INCLUDE)])).gamma
    with_facts = hole_after(p4, BASIC, marker, workspace(["/nonexistent/include"])).gamma

    def library(g):
        return {sort: names for sort, names in g.by_sort().items() if sort not in ("Parameter", "Instance", "Table", "Path")}

    assert library(with_files) == library(with_facts)
    assert set(with_files.names("Path")) == set(with_facts.names("Path"))


def test_facts_follow_v1model_version(p4):
    text = BASIC.replace("#include <v1model.p4>", "#define V1MODEL_VERSION 20200408\n#include <v1model.p4>")
    marker = "            ipv4_lpm.apply();\n"
    with_files = hole_after(p4, text, marker, workspace([str(INCLUDE)])).gamma
    with_facts = hole_after(p4, text, marker, workspace(["/nonexistent"])).gamma
    assert "PortId_t" in with_files and "PortId_t" in with_facts
    assert with_facts.lookup("standard_metadata_t.egress_spec").attrs["type"] == "PortId_t"
    assert with_files.lookup("standard_metadata_t.egress_spec").attrs["type"] == "PortId_t"


def test_include_resolution_order(p4, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mine.p4").write_text("const bit<8> FROM_SETTING = 1;\n")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "include").mkdir()
    (tmp_path / "root" / "include" / "other.p4").write_text("const bit<8> FROM_ROOT = 2;\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "local.p4").write_text("const bit<8> FROM_SIBLING = 3;\n")
    program = ('#include "local.p4"\n#include <mine.p4>\n#include <other.p4>\n#include <missing.p4>\n'
               "control C(inout bit<8> x) {\n    apply {\n        x = 1;\n    }\n}\n")
    uri = (tmp_path / "src" / "main.p4").as_uri()
    ws = workspace([str(tmp_path / "lib")], roots=[tmp_path / "root"])
    g = hole_after(p4, program, "        x = 1;\n", ws, uri=uri).gamma
    assert {"FROM_SETTING", "FROM_ROOT", "FROM_SIBLING"} <= set(g.names("Constant"))


def test_p4c_install_location_is_searched(p4, tmp_path, monkeypatch):
    from gdg_lsp.languages.p4 import workspace as p4_workspace

    fake = tmp_path / "usr" / "share" / "p4c" / "p4include"
    fake.mkdir(parents=True)
    shutil.copy(INCLUDE / "core.p4", fake / "core.p4")
    monkeypatch.setattr(p4_workspace, "P4C_INCLUDE_DIRS", (str(fake),))
    program = "#include <core.p4>\ncontrol C(inout bit<8> x) {\n    apply {\n        x = 1;\n    }\n}\n"
    analysis = p4.analysis(program, "file:///elsewhere/c.p4", workspace([]))
    include, found = analysis.includes[0]
    assert found is not None and not found.from_facts and found.path == (fake / "core.p4").resolve()


def test_gamma_survives_programs_cut_at_statements(p4):
    """Cut every corpus program after randomly chosen statements: Γ at the cut holds
    every name the complete program has there that was declared before the cut."""
    rng = random.Random(7)
    ws = workspace()
    cuts = 0
    for path in corpus_programs():
        text = path.read_text()
        code = preprocess(text).code
        ends = [m.end() for m in re.finditer(r";[ \t]*\n", code)]
        uri = path.as_uri()
        full = p4.analysis(text, uri, ws)
        for cut in rng.sample(ends, min(4, len(ends))):
            line = text.count("\n", 0, cut)
            expected = {name for name, b in p4.gamma_for(full, cut).visible().items()
                        if b.origin is None or b.origin.uri != uri or b.origin.line < line}
            got = set(p4.gamma_for(p4.analysis(text[:cut], uri, ws), cut).visible())
            assert expected <= got, (path.name, line + 1, sorted(expected - got)[:10])
            cuts += 1
    assert cuts >= 150


def test_stack_sizes_from_constants(p4):
    text = ("header h_t { bit<8> f; }\nconst bit<32> N = 2;\nstruct s_t { h_t[N] st; }\n"
            "control C(inout s_t s) {\n    apply {\n    }\n}\n")
    analysis = p4.analysis(text, "file:///work/test/stack.p4", workspace([]))
    paths = set(p4.gamma_for(analysis, text.index("apply {") + 8).names("Path"))
    assert {"s.st[0].f", "s.st[1].f", "s.st.last.f"} <= paths and "s.st[2]" not in paths
