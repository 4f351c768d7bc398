"""Attack: a workspace's ``.git`` links out of the workspace, so that another folder's files
become its refs: ``packed-refs``, ``config`` and ``worktrees/*/gitdir`` as symlinks to files
outside (one outside file went into the grammar whole), and ``refs/`` itself, or one of its
folders, as a link to an outside folder.

The analyzer's Γ for a script in the workspace must hold none of the outside names, each link
is noted as not read, and the repository's own names are read as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gdg_lsp import words
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import SHA, make_repo, snapshot, workspace, write

SECRETS = ("outside-secret", "outside-tag", "outside-remote", "outside-alias", "secret-worktree", "outside-loose",
           "outside-nested")


@pytest.fixture
def layout(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    make_repo(root)
    write(outside / "packed-refs", f"{SHA} refs/heads/outside-secret\n{SHA} refs/tags/outside-tag\n")
    write(outside / "config", '[remote "outside-remote"]\n\turl = x\n[alias]\n\toutside-alias = log\n')
    write(outside / "gitdir", str(tmp_path / "secret-worktree" / ".git") + "\n")
    write(outside / "refs" / "heads" / "outside-loose", SHA + "\n")
    write(outside / "nested" / "outside-nested", SHA + "\n")
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(ToolHelp(tmp_path / "cache")))
    return root, outside


def _names(root: Path) -> list[str]:
    hole = ShellAnalyzer().hole_at(snapshot(root, "git checkout "), len("git checkout "), workspace(root, []))
    assert isinstance(hole, Hole), hole
    return [b.name for b in hole.gamma.bindings()]


def _relink(path: Path, target: Path) -> None:
    if path.exists():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def test_linked_packed_refs_config_and_worktree_gitdir_are_not_read(layout):
    root, outside = layout
    git = root / ".git"
    _relink(git / "packed-refs", outside / "packed-refs")
    _relink(git / "config", outside / "config")
    _relink(git / "worktrees" / "wt" / "gitdir", outside / "gitdir")
    found = _names(root)
    assert not [n for n in found if any(secret in n for secret in SECRETS)], found
    assert "refs/heads/main" in found and "refs/remotes/origin/main" in found  # the loose refs are read as before
    for link in (git / "packed-refs", git / "config", git / "worktrees" / "wt" / "gitdir"):
        noted = [r for r in words.REJECTIONS.all() if r.source == str(link)]
        assert noted and "outside the workspace" in noted[0].why, (link, noted)


def test_the_refs_walk_never_follows_a_link_out(layout):
    root, outside = layout
    git = root / ".git"
    os.symlink(outside / "nested", git / "refs" / "heads" / "linked")  # one folder of refs/ links out
    os.symlink(outside / "refs" / "heads" / "outside-loose", git / "refs" / "heads" / "linked-file")
    assert not [n for n in _names(root) if any(secret in n or "linked" in n for secret in SECRETS)]

    (git / "refs").rename(git / "refs-real")
    os.symlink(outside / "refs", git / "refs")  # refs/ itself links out
    found = _names(root)
    assert not [n for n in found if any(secret in n for secret in SECRETS)], found
    assert "refs/heads/release-1.2" in found  # packed-refs still read
    assert [r for r in words.REJECTIONS.all() if r.source == str(git / "refs")]


def test_a_linked_refs_folder_inside_the_workspace_is_still_read(layout):
    """The control: a link that stays inside the workspace is followed as before."""
    root, _ = layout
    git = root / ".git"
    write(root / "shared-refs" / "heads" / "inside-linked", SHA + "\n")
    (git / "refs").rename(git / "refs-real")
    os.symlink(root / "shared-refs", git / "refs")
    assert "refs/heads/inside-linked" in _names(root)
