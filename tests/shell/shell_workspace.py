"""A workspace for the shell tests: a repository laid out by hand (no git is run),
a Makefile with an include, a package.json, a justfile, a Taskfile and a JSON input."""

from __future__ import annotations

import json
from pathlib import Path

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.shell.commands import parse
from gdg_lsp.settings import Settings, ShellSettings

SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_repo(root: Path) -> Path:
    git = root / ".git"
    write(git / "HEAD", "ref: refs/heads/main\n")
    write(git / "refs" / "heads" / "main", SHA + "\n")
    write(git / "refs" / "heads" / "feature" / "login", SHA + "\n")
    write(git / "refs" / "remotes" / "origin" / "main", SHA + "\n")
    write(git / "refs" / "remotes" / "origin" / "HEAD", "ref: refs/remotes/origin/main\n")
    write(git / "packed-refs", "# pack-refs with: peeled fully-peeled sorted\n"
          f"{SHA} refs/heads/release-1.2\n{SHA} refs/tags/v1.0\n^{SHA}\n{SHA} refs/remotes/upstream/dev\n")
    write(git / "config", '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://example.invalid/x.git\n'
          '[remote "upstream"]\n\turl = https://example.invalid/y.git\n[alias]\n\tco = checkout\n')
    write(git / "ORIG_HEAD", SHA + "\n")
    return git


def make_workspace(root: Path) -> Path:
    make_repo(root)
    write(root / "Makefile", "include mk/common.mk\n.PHONY: build test\nbuild:\n\techo b\ntest: build\n\techo t\n"
          "%.o: %.c\n\tcc -c $<\n$(OUT): x\n\techo o\nifeq ($(CI),1)\nci-only:\n\techo ci\nendif\n")
    write(root / "mk" / "common.mk", "lint:\n\techo l\n")
    write(root / "package.json", json.dumps({"name": "x", "scripts": {"build": "tsc", "test": "jest",
                                                                      "postinstall": "touch pwned"}}))
    write(root / "justfile", "set shell := [\"bash\", \"-c\"]\nalias b := deploy\ndeploy target='prod':\n\techo $target\n")
    write(root / "Taskfile.yml", "version: '3'\ntasks:\n  fmt:\n    cmds: [echo f]\n  vet:\n    cmds: [echo v]\n")
    write(root / "data.json", json.dumps({"items": [{"name": "a", "id": 1, "tags": ["x"]}], "meta": {"count": 1}}))
    return root


def workspace(root: Path, tools: list[str] | None = None) -> WorkspaceContext:
    return WorkspaceContext([root], Settings(shell=ShellSettings(tools=list(tools or []))))


def snapshot(root: Path, text: str, name: str = "run.sh") -> Snapshot:
    return Snapshot((root / name).as_uri(), "shell", 1, text, parse(text.encode()))
