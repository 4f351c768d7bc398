"""Γ sources of shell scripts, each read from files (nothing is run): refs from .git,
targets from Makefiles, scripts from package.json / justfile / Taskfile."""

from __future__ import annotations

import os
from pathlib import Path

from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.shell import git_state, make_targets, package_scripts
from gdg_lsp.languages.shell.gamma import Place, Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import SHA, make_repo, make_workspace, write


def test_refs_come_from_loose_refs_packed_refs_head_and_config(tmp_path: Path):
    make_repo(tmp_path)
    boundary = Boundary.of([tmp_path])
    git_dir = git_state.find_git_dir(tmp_path / "scripts", boundary)
    assert git_dir == tmp_path / ".git"
    state = git_state.read_state(git_dir, boundary)
    by_kind = {kind: sorted(r.name for r in state.of_kind(kind))
               for kind in ("branch", "tag", "remote-branch", "remote", "pseudo", "alias")}
    assert by_kind == {
        "branch": ["feature/login", "main", "release-1.2"],
        "tag": ["v1.0"],
        "remote-branch": ["origin/main", "upstream/dev"],  # origin/HEAD is a symbolic ref, not a branch
        "remote": ["origin", "upstream"],
        "pseudo": ["HEAD", "ORIG_HEAD"],
        "alias": ["co"],
    }
    assert [r.name for r in state.refs if r.current] == ["main"]


def test_a_linked_worktree_reads_the_shared_refs(tmp_path: Path):
    main = tmp_path / "main"
    make_repo(main)
    linked_git = main / ".git" / "worktrees" / "wt"
    write(linked_git / "HEAD", "ref: refs/heads/feature/login\n")
    write(linked_git / "commondir", "../..\n")
    write(linked_git / "gitdir", str(tmp_path / "wt" / ".git") + "\n")
    write(tmp_path / "wt" / ".git", f"gitdir: {linked_git}\n")
    boundary = Boundary.of([tmp_path])
    git_dir = git_state.find_git_dir(tmp_path / "wt", boundary)
    state = git_state.read_state(git_dir, boundary)
    assert {r.name for r in state.of_kind("branch")} == {"main", "feature/login", "release-1.2"}
    assert [r.name for r in state.refs if r.current] == ["feature/login"]
    assert [r.name for r in state.of_kind("worktree")] == [str(tmp_path / "wt")]


def test_a_gitdir_outside_the_workspace_is_not_read(tmp_path: Path):
    outside, inside = tmp_path / "outside", tmp_path / "ws"
    make_repo(outside)
    write(inside / ".git", f"gitdir: {outside / '.git'}\n")
    assert git_state.find_git_dir(inside, Boundary.of([inside])) is None


def test_makefile_targets_follow_includes_and_skip_patterns_specials_and_variables(tmp_path: Path):
    make_workspace(tmp_path)
    targets = make_targets.read_targets(tmp_path / "Makefile", Boundary.of([tmp_path]))
    assert [t.name for t in targets] == ["lint", "build", "test", "ci-only"]
    lint = targets[0]
    assert lint.file.endswith("common.mk") and lint.line == 0


def test_an_include_that_leaves_the_workspace_is_not_followed(tmp_path: Path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    write(outside / "evil.mk", "secret-target:\n\techo x\n")
    write(ws / "Makefile", "include ../outside/evil.mk\nall:\n\techo a\n")
    os.symlink(outside / "evil.mk", ws / "linked.mk")
    write(ws / "GNUmakefile", "include linked.mk\nmine:\n\techo m\n")
    boundary = Boundary.of([ws])
    assert [t.name for t in make_targets.read_targets(ws / "Makefile", boundary)] == ["all"]
    assert make_targets.find_makefile(ws, boundary) == ws / "GNUmakefile"
    assert [t.name for t in make_targets.read_targets(ws / "GNUmakefile", boundary)] == ["mine"]


def test_package_scripts_justfile_recipes_and_taskfile_tasks(tmp_path: Path):
    make_workspace(tmp_path)
    boundary = Boundary.of([tmp_path])
    assert [s.name for s in package_scripts.npm_scripts(tmp_path / "package.json", boundary)] == \
        ["build", "test", "postinstall"]
    assert sorted(s.name for s in package_scripts.just_recipes(tmp_path / "justfile", boundary)) == ["b", "deploy"]
    assert [s.name for s in package_scripts.taskfile_tasks(tmp_path / "Taskfile.yml", boundary)] == ["fmt", "vet"]
    write(tmp_path / "broken" / "package.json", "{not json")
    assert package_scripts.npm_scripts(tmp_path / "broken" / "package.json", boundary) == []


def test_sources_make_one_gamma_and_refresh_when_a_ref_appears(tmp_path: Path):
    make_workspace(tmp_path)
    sources = Sources(ToolHelp(tmp_path / "cache"))
    place = Place(tmp_path, Boundary.of([tmp_path]))
    gamma = sources.gamma(place, tools=[])
    assert gamma.names("Branch") == ["refs/heads/feature/login", "refs/heads/main", "refs/heads/release-1.2"]
    assert [b.attrs["word"] for b in gamma.bindings("MakeTarget")] == ["build", "ci-only", "lint", "test"]
    assert [b.attrs["word"] for b in gamma.bindings("NpmScript")] == ["build", "postinstall", "test"]
    assert [b.attrs["word"] for b in gamma.bindings("JustRecipe")] == ["b", "deploy"]
    assert [b.attrs["word"] for b in gamma.bindings("Task")] == ["fmt", "vet"]
    assert gamma.lookup("refs/heads/main").origin.uri == (tmp_path / ".git" / "refs" / "heads" / "main").as_uri()
    assert gamma.lookup("make:lint").origin.detail == "common.mk:1"
    write(tmp_path / ".git" / "refs" / "heads" / "hotfix", SHA + "\n")
    assert "refs/heads/hotfix" in sources.gamma(place, tools=[])
