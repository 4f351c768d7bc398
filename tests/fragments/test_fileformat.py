"""The fragment file format: what it reads, what it refuses (located), and that writing round-trips."""

from __future__ import annotations

import pytest

from gdg_lsp import fragments
from gdg_lsp.fragments import fileformat
from gdg_lsp.fragments.fileformat import FragmentFileError

from tests.fragments.test_gate import FRAGMENT


def test_a_file_reads_into_a_fragment_with_its_hole_slots_and_examples():
    ff = fileformat.parse(FRAGMENT, "load.toml")
    assert (ff.language, ff.name, ff.fragment.rungs) == ("demo", "load", ("pin", "ctx", "gamma", "base"))
    assert ff.hole.node_type == "call" and ff.hole.prefix == "load(" and ff.hole.triggers == ("load(",)
    assert set(ff.fragment.slots) == {"ptr", "off", "mask"}
    assert ff.fragment.slots["off"].optional and not ff.fragment.slots["ptr"].optional
    assert dict(ff.fragment.slots["ptr"].spec_for("pin"))["among"] == ("x_ptr", "y_ptr")
    assert len(ff.examples) == 2 and ff.examples[1].gamma["n"]["kind"] == "int"


def test_writing_round_trips():
    ff = fileformat.parse(FRAGMENT)
    again = fileformat.parse(fileformat.dumps(ff, header="a header\nof two lines"))
    assert again.fragment == ff.fragment
    assert again.examples == ff.examples and again.hole == ff.hole


@pytest.mark.parametrize("edit, message, line", [
    (lambda t: t.replace('name = "load"', 'name = "lo ad"'), "must be an identifier", 3),
    (lambda t: t.replace('rungs = ["pin", "ctx", "gamma", "base"]', 'rungs = ["tight"]'), "unknown rungs", 4),
    (lambda t: t.replace('" + " %off%', '" + " %offset%'), "offset", 6),
    (lambda t: t.replace('root ::= "load("', 'root ::= "load(" undefined_rule'), "undefined_rule", 6),
    (lambda t: t.replace("[slots.off]", "[slots.off]\nwhat = 1"), "unknown key 'what'", 0),
    (lambda t: t.replace('gamma = { sort = ["Variable"] }', 'gamma = { mem = "shared" }', 1), "needs `sort`", 0),
    (lambda t: t + "\n[surprise]\nx = 1\n", "unknown key 'surprise'", 0),
    (lambda t: t.replace('language = "demo"', 'language = "Demo Lang"'), "lower case", 2),
])
def test_a_bad_file_is_refused_with_the_line_it_is_about(edit, message, line):
    text = edit(FRAGMENT)
    with pytest.raises(FragmentFileError) as info:
        fileformat.parse(text, "bad.toml")
    err = info.value
    assert message in err.message and str(err).startswith("bad.toml:")
    if line:
        assert err.line == line, (err.line, text.splitlines()[err.line - 1] if err.line else "")
    else:
        assert err.line > 0


def test_built_in_fragment_files_load_like_manifest_fragments():
    p4 = fragments.load_fragments("p4")
    assert {"action_ref", "key_entry", "select_case", "table_property"} <= set(p4)
