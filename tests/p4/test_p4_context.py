"""P4's context source for the prompt: the declarations of included files (struct and header
fields, callables' signatures), read through the workspace boundary like the includes
themselves; a header the boundary refuses adds nothing."""

from __future__ import annotations

from p4_helpers import hole_after, snapshot, workspace

PROGRAM = ('#include "defs.p4"\n'
           "control C(inout flow_t f) {\n    apply {\n        f.count = 1;\n    }\n}\n")
DEFS = ("header flow_t {\n    bit<16> port;\n    bit<32> count;\n}\n"
        "extern void note_flow(in bit<16> port);\n")


def _context(p4, folder, roots):
    uri = (folder / "main.p4").as_uri()
    ws = workspace([], roots=roots)
    hole = hole_after(p4, PROGRAM, "        f.count = 1;\n", ws, uri=uri)
    return p4.prompt_context(snapshot(p4, PROGRAM, uri), hole, ws)


def test_included_declarations_are_in_the_prompt(p4, tmp_path):
    (tmp_path / "defs.p4").write_text(DEFS)
    text = _context(p4, tmp_path, [tmp_path])
    assert "// struct flow_t { bit<16> port; bit<32> count; }" in text
    assert "note_flow(" in text and "port" in text.split("note_flow(", 1)[1]


def test_a_header_outside_the_boundary_adds_nothing(p4, tmp_path):
    outside = tmp_path / "elsewhere"
    inside = tmp_path / "project"
    outside.mkdir()
    inside.mkdir()
    (outside / "defs.p4").write_text(DEFS)
    (inside / "defs.p4").symlink_to(outside / "defs.p4")  # the include resolves out of the workspace
    text = _context(p4, inside, [inside])
    assert "flow_t" not in text and "note_flow" not in text
