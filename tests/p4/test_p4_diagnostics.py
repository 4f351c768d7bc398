"""Diagnostics: undeclared names and invalid field paths are reported where they
are; correct programs (the whole corpus) get none."""

from __future__ import annotations

from p4_helpers import BASIC, corpus_programs, snapshot, workspace


def _findings(p4, text, ws=None):
    return [(f.code, text[f.start:f.end], f.message) for f in p4.diagnostics(snapshot(p4, text), ws or workspace())]


def test_corpus_programs_have_no_findings(p4, p4_corpus):
    for path in corpus_programs():
        text = path.read_text()
        found = p4.diagnostics(snapshot(p4, text, path.as_uri()), workspace())
        assert found == [], (path.name, [(text[f.start:f.end], f.message) for f in found][:3])


def test_the_test_program_is_clean(p4):
    assert _findings(p4, BASIC) == []


def test_undeclared_names_and_invalid_paths(p4):
    text = BASIC.replace("        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n", (
        "        hdr.ipv4.tll = hdr.ipv4.ttl - 1;\n"
        "        hdr.ipv4.ttl.low = 1;\n"
        "        meta.ttl = 1;\n"
        "        nosuch(hdr);\n"
        "        hdr.hops[0].bos = 1;\n"
        "        hdr.ipv4[0].ttl = 1;\n"
        "        hdr.hops.last.port = ghost_const;\n"
        "        standard_metadata.egress_spc = port;\n"
        "        hits.cnt(1);\n"
        "        ipv4_lpm.apply();\n"
    ))
    text = text.replace("transition accept;\n    }\n}", "transition nowhere;\n    }\n}")
    text = text.replace("hdr.ipv4.dstAddr: lpm;", "hdr.ipv4.dstAddr: longest;")
    text = text.replace("            drop;\n", "            dropp;\n")
    text = text.replace("default: accept;", "Color.BLUE: accept;\n            error.Nope: accept;\n            default: accept;")
    found = _findings(p4, text)
    by_code = {}
    for code, span, _ in found:
        by_code.setdefault(code, []).append(span)
    assert sorted(by_code["invalid-field-path"]) == sorted(["tll", "low", "ttl", "hdr.ipv4[0]", "egress_spc", "cnt", "BLUE"])
    # the table is declared after the action that applies it: P4 declares before use
    assert sorted(by_code["undeclared-name"]) == ["ghost_const", "ipv4_lpm", "nosuch"]
    assert by_code["undeclared-state"] == ["nowhere"]
    assert by_code["undeclared-match-kind"] == ["longest"]
    assert by_code["undeclared-action"] == ["dropp"]
    assert by_code["undeclared-error"] == ["Nope"]


def test_undeclared_types_and_syntax_errors(p4):
    text = BASIC.replace("    bit<32> nhop;\n", "    nhop_t nhop;\n").replace(
        "        mark_to_drop(standard_metadata);\n", "        mark_to_drop(standard_metadata;\n")
    found = _findings(p4, text)
    assert ("undeclared-type", "nhop_t") in [(c, s) for c, s, _ in found]
    assert any(code == "syntax-error" for code, _, _ in found)


def test_paths_through_unknown_types_are_not_judged(p4):
    text = "#include <core.p4>\ncontrol C<T>(inout T x) {\n    apply {\n        x.anything = 1;\n    }\n}\n"
    assert _findings(p4, text) == []


def test_unknown_names_get_the_closest_declared_name_as_their_quick_fix(p4):
    text = BASIC.replace("        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n", (
        "        hdr.ipv4.tttl = hdr.ipv4.ttl - 1;\n"
        "        hdr.ipv4.ttl.low = 1;\n"
        "        standard_metadata.egress_spc = port;\n"
        "        hits.cnt(1);\n"
        "        nosuch(hdr);\n"
        "        forwrd(dstAddr, port);\n"  # P4 declares before use: no action calls itself
    ))
    text = text.replace("        hits.count(0);\n", "        hits.count(0);\n        forwrd(0, 0);\n")
    text = text.replace("    bit<32> nhop;\n", "    nhop_t nhop;\n")
    text = text.replace("transition accept;\n    }\n}", "transition parse_ipv5;\n    }\n}")
    text = text.replace("hdr.ipv4.dstAddr: lpm;", "hdr.ipv4.dstAddr: exakt;")
    text = text.replace("            drop;\n", "            dropp;\n")
    text = text.replace("default: accept;", "Color.GREN: accept;\n            error.BadHopp: accept;\n            default: accept;")
    found = sorted(((text[f.start:f.end], (f.data or {}).get("replacement"))
                    for f in p4.diagnostics(snapshot(p4, text), workspace())), key=repr)
    assert found == sorted([("tttl", "ttl"), ("low", None), ("egress_spc", "egress_spec"), ("cnt", "count"),
                            ("nosuch", None), ("forwrd", None), ("forwrd", "forward"), ("nhop_t", "hop_t"),
                            ("parse_ipv5", "parse_ipv4"), ("exakt", "exact"), ("dropp", "drop"),
                            ("GREN", "GREEN"), ("BadHopp", "BadHop")], key=repr)
