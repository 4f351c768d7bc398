"""The shell analyzer: holes (and the jq holes inside `jq '...'`), Γ there,
diagnostics with their quick-fix data, hover with where a name came from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gdg_lsp import fragments
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, NoHole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import make_workspace, snapshot, workspace
from tests.shell.test_shell_tool_help import SYSTEM, describing_tool


@pytest.fixture
def ws(tmp_path: Path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    bin_dir = tmp_path / "bin"
    describing_tool(bin_dir)
    monkeypatch.setenv("PATH", str(bin_dir) + SYSTEM)
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(ToolHelp(tmp_path / "cache")))
    return root


def _hole(root: Path, text: str, tools=("fake",)) -> Hole:
    hole = ShellAnalyzer().hole_at(snapshot(root, text), len(text), workspace(root, list(tools)))
    assert isinstance(hole, Hole), hole
    return hole


def _grammar(hole: Hole, byte_engine, rung: str = "gamma"):
    return byte_engine.get(fragments.instantiate(fragments.fragment(hole.language, hole.fragment), rung,
                                                 hole.gamma, hole.context))


def test_the_hole_is_the_line_and_its_grammar_admits_only_existing_names(ws: Path, byte_engine):
    hole = _hole(ws, "#!/bin/sh\nset -e\nfake build --release\n  git checkout ")
    assert hole.typed == "git checkout " and hole.sort == "Command"
    grammar = _grammar(hole, byte_engine)
    for line in ("git checkout feature/login\n", "git checkout release-1.2 && make lint\n", "npm run build\n",
                 "git push origin v1.0\n", "just deploy\n", "task vet\n", "fake build --release\n",
                 "fake -C dir deploy\n", "git checkout \"$BRANCH\"\n", "git merge HEAD~2\n", "echo $(make test)\n"):
        assert accepts(grammar, line), line
    for line in ("git checkout featurelogin\n", "make deploy\n", "npm run lint\n", "git push backup main\n",
                 "just ghost\n", "task lint\n", "fake ship\n", "fake build --debug\n", "echo $(make ghost)\n"):
        assert not accepts(grammar, line), line
    assert accepts(_grammar(hole, byte_engine, "base"), "git checkout featurelogin\n")


def test_no_hole_in_comments_here_documents_or_before_text(ws: Path):
    analyzer, context = ShellAnalyzer(), workspace(ws)
    for text, offset in (("# git checkout ", 15), ("cat <<EOF\ngit chec", 18), ("git checkout main", 4)):
        assert isinstance(analyzer.hole_at(snapshot(ws, text), offset, context), NoHole), text


def test_a_jq_program_in_a_script_is_a_jq_hole_typed_by_the_input(ws: Path, byte_engine):
    text = "jq -r '.items[] | .na' data.json\n"
    hole = ShellAnalyzer().hole_at(snapshot(ws, text), text.index(".na") + 3, workspace(ws))
    assert hole.language == "jq" and hole.typed == ".na" and hole.context["node"] == ".items[]"
    assert hole.replace_end == text.index("' data") + 1  # the closing quote is written again
    grammar = _grammar(hole, byte_engine)
    assert accepts(grammar, ".name'") and accepts(grammar, ".tags[] | length'")
    assert not accepts(grammar, ".nmae'") and not accepts(grammar, ".meta'")


def test_an_embedded_program_reads_an_input_linked_inside_the_workspace(ws: Path):
    """The input a command names is judged by the workspace's boundary, as a jq file's is: a link
    to a file in another folder of the workspace is read (judged by the file's own folder, it was
    refused, and the fields were open)."""
    (ws / "fixtures").mkdir()
    (ws / "fixtures" / "orders.json").write_text('{"orders": [{"courier": "x", "total": 2}]}')
    (ws / "scripts").mkdir()
    os.symlink(ws / "fixtures" / "orders.json", ws / "scripts" / "orders.json")
    text = "jq -r '.orders[] | .co' orders.json\n"
    hole = ShellAnalyzer().hole_at(snapshot(ws, text, "scripts/run.sh"), text.index(".co") + 3, workspace(ws))
    assert isinstance(hole, Hole) and hole.language == "jq"
    assert {".orders[].courier", ".orders[].total"} <= set(hole.gamma.names("Field"))


def test_diagnostics_name_the_closest_existing_name(ws: Path):
    text = ("git checkout featur/login\ngit chekout main\nmake biuld lint\nnpm run tset\ngit push orign main\n"
            "fake build --relase\njq '.items[] | .nmae' data.json\ngit checkout -b new-branch\n"
            "git checkout \"$X\"\ngit co main\n")
    found = ShellAnalyzer().diagnostics(snapshot(ws, text), workspace(ws, ["fake"]))
    shown = [(text[f.start:f.end], f.code, f.data.get("replacement")) for f in found]
    assert shown == [
        ("featur/login", "shell.unknown-ref", "feature/login"),
        ("biuld", "shell.unknown-target", "build"),
        ("tset", "shell.unknown-script", "test"),
        ("orign", "shell.unknown-remote", "origin"),
        ("--relase", "shell.unknown-option", "--release"),
        ("nmae", "jq.unknown-field", "name"),
    ]
    # git's own subcommands are known once git describes itself
    with_git = ShellAnalyzer().diagnostics(snapshot(ws, "git chekout main\n"), workspace(ws, ["git"])) \
        if _has("git") else []
    assert not _has("git") or [f.data["replacement"] for f in with_git] == ["checkout"]


def _has(tool: str) -> bool:
    from shutil import which

    return which(tool, path=os.environ.get("PATH")) is not None


def test_hover_says_where_a_name_came_from(ws: Path):
    text = "git checkout release-1.2\nmake lint\nnpm run build\nfake deploy -q\njq '.meta.count' data.json\n"
    analyzer, context, snap = ShellAnalyzer(), workspace(ws, ["fake"]), snapshot(ws, text)

    def hover(needle: str):
        found = analyzer.binding_at(snap, text.index(needle) + 1, context)
        assert found is not None, needle
        return found[0]

    assert hover("release").origin.uri == (ws / ".git" / "packed-refs").as_uri()
    assert hover("lint").origin.detail == "common.mk:1"
    assert hover("build").origin.uri == (ws / "package.json").as_uri()
    assert "fake --help" in hover("deploy").origin.detail
    assert hover("-q").sort == "Option"
    field = hover("count")
    assert field.name == ".meta.count" and field.origin.uri == (ws / "data.json").as_uri()


def test_the_prompt_names_what_the_tools_know(ws: Path):
    analyzer, context = ShellAnalyzer(), workspace(ws)
    hole = _hole(ws, "", tools=())
    prompt = analyzer.prompt_context(snapshot(ws, ""), hole, context)
    assert "# git branches: feature/login, main, release-1.2\n" in prompt and "# make targets: build, ci-only, lint, test" in prompt
    text = "jq '.items[] | ."
    jq_hole = analyzer.hole_at(snapshot(ws, text), len(text), context)
    assert analyzer.prompt_context(snapshot(ws, text), jq_hole, context) == "# jq filter\n"  # no file named after it
