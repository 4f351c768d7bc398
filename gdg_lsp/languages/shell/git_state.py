"""Branches, tags, remotes and worktrees of a repository, read from its ``.git`` files.

git is never run (a hook, an alias or a ``core.fsmonitor`` in ``.git/config``
would run with it); the files are read directly:

- ``HEAD`` (a symbolic ref names the current branch), ``ORIG_HEAD`` and friends;
- loose refs (one file per ref under ``refs/heads``, ``refs/tags``,
  ``refs/remotes``) and ``packed-refs`` (``<sha> refs/...`` lines);
- ``config``: only its ``[remote "name"]`` section headers;
- ``worktrees/*/gitdir``: where each linked worktree is checked out.

A checkout whose ``.git`` is a file (``gitdir: ...``, a linked worktree or a
submodule) is followed, and ``commondir`` to the shared refs, but only within
the boundary: a repository outside the workspace folders is not read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp.boundary import Boundary

MAX_REFS = 5000
MAX_FILE = 4 * 1024 * 1024
PSEUDO_REFS = ("HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD")
_REMOTE_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"\n]+)"\s*\]', re.MULTILINE)
_SECTION = re.compile(r"^\s*\[([^\]\n]*)\]", re.MULTILINE)
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)", re.MULTILINE)


@dataclass(frozen=True)
class Ref:
    name: str
    """As written on a command line: ``main``, ``v1.0``, ``origin/main``, ``HEAD``, ``origin``."""
    kind: str
    """branch | tag | remote-branch | remote | worktree | pseudo | alias (a name of
    ``[alias]`` in the repository's config: read as a name, never run)"""
    file: str
    """The file it was read from (for hover)."""
    line: int = 0
    remote: str = ""
    current: bool = False


@dataclass
class RepoState:
    git_dir: Path
    common_dir: Path
    refs: list[Ref] = field(default_factory=list)

    def of_kind(self, *kinds: str) -> list[Ref]:
        return [r for r in self.refs if r.kind in kinds]


def find_git_dir(start: Path, boundary: Boundary) -> Path | None:
    """The git folder of the checkout holding ``start`` (walking up, never past the
    workspace folders), or None."""
    current = start if start.is_dir() else start.parent
    while True:
        if not boundary.allows(current):
            return None
        dot = current / ".git"
        if dot.is_dir() and boundary.allows(dot):
            return dot
        if dot.is_file() and boundary.allows(dot):
            text = _read(dot)
            if text and text.startswith("gitdir:"):
                target = (current / text[len("gitdir:"):].strip()).resolve()
                return target if target.is_dir() and boundary.allows(target) else None
            return None
        if current.parent == current:
            return None
        current = current.parent


def _read(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def signature(git_dir: Path) -> tuple:
    """Changes whenever a ref is added, removed or moved (mtimes of the files and
    folders the refs are read from), so the state can be cached on it."""
    common = _common_dir(git_dir) or git_dir
    parts: list[tuple[str, int]] = []
    for path in (git_dir / "HEAD", common / "packed-refs", common / "config", common / "worktrees"):
        try:
            parts.append((str(path), path.stat().st_mtime_ns))
        except OSError:
            parts.append((str(path), 0))
    for top in ("heads", "tags", "remotes"):
        for folder, _dirs, _files in os.walk(common / "refs" / top):
            try:
                parts.append((folder, os.stat(folder).st_mtime_ns))
            except OSError:
                pass
    return tuple(parts)


def _common_dir(git_dir: Path) -> Path | None:
    text = _read(git_dir / "commondir")
    if not text:
        return git_dir
    common = (git_dir / text.strip()).resolve()
    return common if common.is_dir() else None


def read_state(git_dir: Path, boundary: Boundary) -> RepoState:
    common = _common_dir(git_dir)
    if common is None or not boundary.allows(common):
        common = git_dir  # shared refs outside the workspace are not read
    state = RepoState(git_dir, common)
    seen: set[tuple[str, str]] = set()

    def add(ref: Ref) -> None:
        if len(state.refs) < MAX_REFS and (ref.kind, ref.name) not in seen and ref.name:
            seen.add((ref.kind, ref.name))
            state.refs.append(ref)

    current = None
    head = _read(git_dir / "HEAD")
    if head and head.startswith("ref:"):
        target = head[4:].strip()
        if target.startswith("refs/heads/"):
            current = target[len("refs/heads/"):]
    for pseudo in PSEUDO_REFS:
        if (git_dir / pseudo).is_file():
            add(Ref(pseudo, "pseudo", str(git_dir / pseudo)))
    refs_root = common / "refs"
    for folder, dirs, files in os.walk(refs_root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            full = path.relative_to(common).as_posix()
            _add_ref(add, full, str(path), 0, current)
    packed = _read(common / "packed-refs")
    if packed:
        for number, line in enumerate(packed.splitlines()):
            parts = line.split()
            if len(parts) == 2 and not line.startswith(("#", "^")):
                _add_ref(add, parts[1], str(common / "packed-refs"), number, current)
    config = _read(common / "config")
    if config:
        for match in _REMOTE_SECTION.finditer(config):
            add(Ref(match.group(1), "remote", str(common / "config"), config.count("\n", 0, match.start())))
        for name, line in _aliases(config):
            add(Ref(name, "alias", str(common / "config"), line))
    for remote in {r.remote for r in state.refs if r.kind == "remote-branch"}:
        add(Ref(remote, "remote", str(common / "refs" / "remotes" / remote)))
    worktrees = common / "worktrees"
    if worktrees.is_dir():
        for entry in sorted(worktrees.iterdir()):
            gitdir = _read(entry / "gitdir")
            if gitdir:
                add(Ref(str(Path(gitdir.strip()).parent), "worktree", str(entry / "gitdir")))
    return state


def _add_ref(add, full: str, file: str, line: int, current: str | None) -> None:
    if full.startswith("refs/heads/"):
        name = full[len("refs/heads/"):]
        add(Ref(name, "branch", file, line, current=name == current))
    elif full.startswith("refs/tags/"):
        add(Ref(full[len("refs/tags/"):], "tag", file, line))
    elif full.startswith("refs/remotes/"):
        short = full[len("refs/remotes/"):]
        remote = short.split("/", 1)[0]
        if short.endswith("/HEAD") or "/" not in short:
            return
        add(Ref(short, "remote-branch", file, line, remote=remote))


def _aliases(config: str) -> list[tuple[str, int]]:
    """Names defined in ``[alias]`` sections, with their line."""
    found = []
    sections = list(_SECTION.finditer(config))
    for index, section in enumerate(sections):
        if section.group(1).strip().lower() != "alias":
            continue
        end = sections[index + 1].start() if index + 1 < len(sections) else len(config)
        for key in _KEY.finditer(config, section.end(), end):
            found.append((key.group(1), config.count("\n", 0, key.start())))
    return found
