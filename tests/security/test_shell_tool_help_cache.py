"""Attack: another local user plants an entry in the tool-help cache, and the server runs what
the entry says. The entry for ``python`` listed a planted script's path as a subcommand; a
shell script that runs ``python <that path>`` made the server ask the "subcommand" for its
help: ``python <planted path> --help`` ran as the server's user.

The cache folder (``GDG_LSP_CACHE_DIR``) is one that others may write to, or the entry's
content is not what a tool could have said; either way the planted script must never run
(it would write a marker file), and the tool's own help is asked again instead."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gdg_lsp.boundary import real
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import snapshot, workspace, write

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="folder owners are POSIX")


@pytest.fixture
def attack(tmp_path: Path, monkeypatch) -> dict:
    """A workspace, a ``python`` on PATH outside it, a planted script and the entry naming it."""
    root, bin_dir, marker = tmp_path / "ws", tmp_path / "bin", tmp_path / "PWNED"
    root.mkdir()
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python")
    path_env = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    monkeypatch.setenv("PATH", path_env)
    planted = tmp_path / "drop" / "planted.py"
    write(planted, f"open({str(marker)!r}, 'w').write('ran')\n")
    executable = str(real(shutil.which("python", path=path_env)))
    version = subprocess.run([executable, "--version"], capture_output=True, text=True, env={"PATH": path_env},
                             check=True).stdout.strip().splitlines()[0]
    # what an attacker computes: the entry's name and the fields the server compares
    entry = {"format": 1, "tool": "python", "path": executable, "mtime_ns": os.stat(executable).st_mtime_ns,
             "version": version, "top": {"tool": "python", "path": executable, "version": version,
                                         "source": "python --help", "subcommands": [str(planted)], "options": []},
             "subs": {}}
    name = hashlib.sha256(executable.encode()).hexdigest()[:32] + ".json"
    return {"root": root, "marker": marker, "planted": planted, "entry": entry, "name": name}


def _analyse(attack: dict) -> Hole:
    root = attack["root"]
    text = f"python {attack['planted']}\npython "
    analyzer, context = ShellAnalyzer(), workspace(root, ["python"])
    snap = snapshot(root, text)
    analyzer.diagnostics(snap, context)
    hole = analyzer.hole_at(snap, len(text), context)
    assert isinstance(hole, Hole), hole
    return hole


def _plant(folder: Path, attack: dict, mode: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    entry = folder / attack["name"]
    entry.write_text(json.dumps(attack["entry"]))
    os.chmod(entry, 0o666)
    os.chmod(folder, mode)
    return entry


def test_an_entry_planted_in_a_folder_others_may_write_is_never_trusted(tmp_path, attack, monkeypatch):
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    _plant(shared / "tool-help", attack, 0o777)
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(shared))
    tool_help = ToolHelp()  # the folder from the environment, as the server finds it
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(tool_help))
    hole = _analyse(attack)
    assert not attack["marker"].exists(), "the planted script ran"
    assert str(attack["planted"]) not in {b.attrs.get("word") for b in hole.gamma.bindings("Subcommand")}
    assert tool_help.runs >= 1  # python was asked itself


def test_an_entry_whose_words_a_tool_could_not_have_said_is_rebuilt(tmp_path, attack, monkeypatch):
    """The folder is the user's own and private, but the entry in it names a path as a
    subcommand (written by anything that could write there, or by an older version)."""
    cache = tmp_path / "own-cache"
    entry = _plant(cache, attack, 0o700)
    os.chmod(entry, 0o600)
    tool_help = ToolHelp(cache)
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(tool_help))
    hole = _analyse(attack)
    assert not attack["marker"].exists(), "the planted script ran"
    assert str(attack["planted"]) not in {b.attrs.get("word") for b in hole.gamma.bindings("Subcommand")}
    rebuilt = json.loads(entry.read_text())
    assert str(attack["planted"]) not in json.dumps(rebuilt)  # asked again and written over


def test_a_cache_folder_that_is_a_link_or_belongs_to_others_is_not_used(tmp_path, attack, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    _plant(elsewhere, attack, 0o700)
    shared = tmp_path / "cache-root"
    shared.mkdir(mode=0o700)
    os.symlink(elsewhere, shared / "tool-help")  # planted in place of the folder
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(shared))
    tool_help = ToolHelp()
    assert tool_help.folder is None
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(tool_help))
    _analyse(attack)
    assert not attack["marker"].exists(), "the planted script ran"


def test_the_cache_folder_is_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(tmp_path / "fresh"))
    folder = ToolHelp().folder
    assert folder == tmp_path / "fresh" / "tool-help"
    assert (os.stat(folder).st_mode & 0o777) == 0o700 and os.stat(folder).st_uid == os.geteuid()
