"""Names read from the workspace are words before they are Γ (languages/shell/names.py):
git's ref rules, the shapes a tool's words have, and the word a name is written as, which the
shell (``shlex`` here, the analyzer's own reading in the second half) reads back as that one
name. A quoted name is checked, hovered and fixed by what it names, never by its quotes."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell import names
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import snapshot, workspace, write


@pytest.mark.parametrize("name", ["main", "feature/login", "release-1.2", "v1.0", "origin/main", "b$(id)", "c;id",
                                  "ünï", "a{b}", "x@y"])
def test_names_git_makes_pass_the_ref_rule(name):
    assert names.ref(name) is None


@pytest.mark.parametrize("name", ["-rf", "a..b", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[b", "a\\b", "d@{1}", "@",
                                  "/a", "a/", "a.", "a//b", ".hidden", "a/.b", "x.lock", "x.lock/y", "a\nb", "a\x1b",
                                  "a\x7f", "", "a\u202eb"])
def test_names_git_refuses_fail_the_ref_rule(name):
    assert names.ref(name) is not None


def test_tool_words_and_aliases_have_their_shapes():
    assert names.subcommand("rev-parse") is None and names.subcommand("/tmp/planted.py") is not None
    assert names.subcommand("Build") is not None and names.subcommand("-x") is not None
    assert names.option("--quiet") is None and names.option("-q") is None and names.option("-?") is None
    assert names.option("--x;id") is not None and names.option("quiet") is not None
    assert names.alias("co") is None and names.alias("co$(id)") is not None
    assert names.script("build:prod") is None and names.script("fmt $(touch PWN)") is None
    assert names.script("-x") is not None and names.script("a\nb") is not None


@pytest.mark.parametrize("name, written", [
    ("build:prod", "build:prod"), ("a.b/c@d%e+f,g=h-i_j", "a.b/c@d%e+f,g=h-i_j"), ("ünïcode", "ünïcode"),
    ("fmt it", "'fmt it'"), ("it's", "'it'\\''s'"), ("$x", "'$x'"), ("~x", "'~x'"), ("a*", "'a*'"),
    ("#x", "'#x'"), ("!x", "'!x'"), ("a;b", "'a;b'"), ("`x`", "'`x`'"), ('"x"', "'\"x\"'"), ("a{b}", "'a{b}'"),
])
def test_a_name_is_written_plain_or_single_quoted_by_its_characters(name, written):
    assert names.shell_word(name) == written
    assert shlex.split(written) == [name]


@given(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=30))
def test_every_name_that_passes_reads_back_as_itself_and_one_word(name):
    if names.script(name) is None:
        assert shlex.split(names.shell_word(name), comments=True) == [name]


@pytest.fixture
def quoted_ws(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "ws"
    write(root / "package.json", json.dumps({"scripts": {"fmt it": "x", "fmt": "y", "lint; rm -rf ~": "z"}}))
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(ToolHelp(tmp_path / "cache")))
    return root


def test_a_quoted_script_is_checked_and_hovered_by_the_name_it_is_read_as(quoted_ws: Path):
    analyzer, context = ShellAnalyzer(), workspace(quoted_ws, [])
    text = "npm run 'fmt it'\nnpm run \"fmt it\"\nnpm run fmt\\ it\nnpm run 'fmt  it'\n"
    found = analyzer.diagnostics(snapshot(quoted_ws, text), context)
    assert [(text[f.start:f.end], f.code) for f in found] == [("fmt  it", "shell.unknown-script")]
    binding, start, end = analyzer.binding_at(snapshot(quoted_ws, text), 10, context)
    assert binding.name == "npm:fmt it" and text[start:end] == "'fmt it'"


def test_a_name_that_needs_quotes_is_never_a_quick_fix(quoted_ws: Path):
    """A fix rewrites the name inside the word as it stands; written into "...", a quoted
    replacement would be another name, and a $(...) in it would run."""
    analyzer, context = ShellAnalyzer(), workspace(quoted_ws, [])
    text = 'npm run "lint; rm -rf ~~"\nnpm run fmtt\n'
    found = analyzer.diagnostics(snapshot(quoted_ws, text), context)
    assert [f.data.get("replacement") for f in found] == [None, "fmt"]
    assert all(names.plain(c) for f in found for c in f.data["candidates"])


def test_the_hole_offers_the_quoted_word_and_the_prompt_shows_it(quoted_ws: Path):
    analyzer, context = ShellAnalyzer(), workspace(quoted_ws, [])
    hole = analyzer.hole_at(snapshot(quoted_ws, "npm run "), len("npm run "), context)
    assert isinstance(hole, Hole)
    assert sorted(b.attrs["word"] for b in hole.gamma.bindings("NpmScript")) == ["'fmt it'", "'lint; rm -rf ~'", "fmt"]
    assert "# npm scripts: fmt, 'fmt it', 'lint; rm -rf ~'\n" in analyzer.prompt_context(
        snapshot(quoted_ws, "npm run "), hole, context)
