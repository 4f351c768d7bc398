"""Attacks through the files of a workspace a shell script is analysed in.

The workspace carries a Makefile whose parsing would run `$(shell ...)`, a
`.git` whose config has hooks, an fsmonitor command and shell aliases, a
package.json with lifecycle scripts, and executables named git, make and npm
placed first on PATH. Holes, diagnostics and hover are asked for everything;
nothing may run: no marker file appears anywhere, and the tools that describe
themselves are the ones outside the workspace."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import make_repo, snapshot, workspace, write

MARKERS = ("pwned-make", "pwned-make-include", "pwned-hook", "pwned-fsmonitor", "pwned-alias", "pwned-npm",
           "pwned-git", "pwned-path-make", "pwned-path-npm")


def _executable(path: Path, body: str) -> None:
    write(path, "#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "ws"
    marker = tmp_path / "markers"
    marker.mkdir()
    make_repo(root)
    write(root / "Makefile", f"X := $(shell touch {marker}/pwned-make)\ninclude $(shell touch {marker}/pwned-make-include)\n"
          f"build:\n\ttouch {marker}/pwned-make\n")
    config = (root / ".git" / "config").read_text()
    write(root / ".git" / "config", config + f"[core]\n\thooksPath = hooks\n\tfsmonitor = touch {marker}/pwned-fsmonitor\n"
          f"[alias]\n\tst = !touch {marker}/pwned-alias\n")
    for hook in ("post-checkout", "pre-commit", "fsmonitor-watchman"):
        _executable(root / ".git" / "hooks" / hook, f"touch {marker}/pwned-hook\n")
        _executable(root / "hooks" / hook, f"touch {marker}/pwned-hook\n")
    write(root / "package.json", json.dumps({"scripts": {
        "build": f"touch {marker}/pwned-npm", "preinstall": f"touch {marker}/pwned-npm",
        "postinstall": f"touch {marker}/pwned-npm", "prepare": f"touch {marker}/pwned-npm"}}))
    _executable(root / "bin" / "git", f"touch {marker}/pwned-git\n")
    _executable(root / "bin" / "make", f"touch {marker}/pwned-path-make\n")
    _executable(root / "bin" / "npm", f"touch {marker}/pwned-path-npm\n")
    monkeypatch.setenv("PATH", f"{root / 'bin'}{os.pathsep}bin{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(ToolHelp(tmp_path / "cache")))
    return root


def test_nothing_in_the_workspace_runs(hostile: Path):
    markers = hostile.parent / "markers"
    text = "git checkout main\ngit st\nmake build\nnpm run build\nnpm install\ngit co main\n"
    analyzer, context = ShellAnalyzer(), workspace(hostile, ["git", "make", "npm"])
    snap = snapshot(hostile, text)
    analyzer.diagnostics(snap, context)
    for line_end in [i for i, ch in enumerate(text) if ch == "\n"]:
        analyzer.binding_at(snap, line_end - 1, context)
    for start in ("git checkout ", "make ", "npm run ", "git "):
        hole = analyzer.hole_at(snapshot(hostile, start), len(start), context)
        assert isinstance(hole, Hole)
    assert sorted(p.name for p in markers.iterdir()) == []
    assert not any((hostile / m).exists() for m in MARKERS) and not any(Path.cwd().glob("pwned*"))
    # the Makefile's targets were read all the same, and the scripts' names
    gamma = analyzer.gamma_for(snap, context)
    assert [b.attrs["word"] for b in gamma.bindings("MakeTarget")] == ["build"]
    assert "npm:postinstall" in gamma


def test_a_tool_inside_the_workspace_is_never_the_one_asked(hostile: Path):
    boundary = Boundary.of([hostile])
    for tool in ("git", "make", "npm"):
        resolved = ToolHelp.resolve(tool, boundary)
        assert resolved is None or not Path(resolved).is_relative_to(hostile), (tool, resolved)
    # a workspace whose folder is the only place the tool exists: the tool is missing
    assert ToolHelp.resolve("git", boundary, str(hostile / "bin")) is None


def test_the_shell_bench_never_uses_a_repository_planted_in_the_shared_temp_folder(tmp_path, monkeypatch):
    """The bench's oracle runs git in a throwaway repository per project. One planted (or left
    stale by a run cut off) at a fixed name in the shared temporary folder, with a hook, an
    fsmonitor command and no remotes, must not be the one used: the repositories are made in a
    folder of the process's own, and a gold answer is never judged a ghost."""
    from gdg_lsp.languages.shell import bench as shell_bench

    shared = tmp_path / "shared-tmp"
    marker = tmp_path / "markers"
    shared.mkdir()
    marker.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.setattr(shell_bench, "_MADE", {}, raising=False)
    monkeypatch.setattr("gdg_lsp.languages.cases._SCRATCH", [], raising=False)
    root = shell_bench.corpus_root(shell_bench.HERE_CORPUS)
    planted = []
    for project in shell_bench.projects(root):
        scripts = sorted(project.rglob("*.sh"))
        if not scripts:
            continue
        folder = shared / "gdg-bench-shell" / project.relative_to(root).as_posix().replace("/", "__")
        make_repo(folder)
        write(folder / ".git" / "config", f"[core]\n\thooksPath = hooks\n\tfsmonitor = touch {marker}/pwned-fsmonitor\n")
        _executable(folder / "hooks" / "post-checkout", f"touch {marker}/pwned-hook\n")
        write(folder / ".bench-stamp", json.dumps(shell_bench._wanted_refs(scripts), sort_keys=True))
        planted.append(folder)
    assert planted

    cases = shell_bench.cut_holes(shell_bench.HERE_CORPUS, 0, 0)
    assert cases
    for case in cases:
        repo = Path(case.meta["repo"])
        assert not any(repo.is_relative_to(p) for p in planted), repo
        assert stat.S_IMODE(repo.parents[1].stat().st_mode) == 0o700  # the process's own scratch folder
        verdict = shell_bench.check(case, case.expected)
        assert verdict.parsed and not verdict.ghosts, (case.case_id, verdict)
    assert list(marker.iterdir()) == []
