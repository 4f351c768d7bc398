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
