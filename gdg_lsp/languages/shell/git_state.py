"""Branches, tags, remotes and worktrees of a repository, read from its ``.git`` files.

git is never run (a hook, an alias or a ``core.fsmonitor`` in ``.git/config``
would run with it); the files are read directly, each through the boundary
(``Boundary.read_text_noted``: regular files only, never blocking, links followed only
inside the workspace):

- ``HEAD`` (a symbolic ref names the current branch), ``ORIG_HEAD`` and friends;
- loose refs (one file per ref under ``refs/heads``, ``refs/tags``,
  ``refs/remotes``; only their names are read) and ``packed-refs``
  (``<sha> refs/...`` lines);
- ``config``: only its ``[remote "name"]`` section headers and ``[alias]`` keys;
- ``worktrees/*/gitdir``: where each linked worktree is checked out.

A checkout whose ``.git`` is a file (``gitdir: ...``, a linked worktree or a
submodule) is followed, and ``commondir`` to the shared refs, but only within
the boundary: a repository outside the workspace folders is not read. The walk
over ``refs/`` never enters a link.

Every name passes its rule (``names``: git's ref rules for refs and remotes)
before it is kept; one that fails is noted once in ``words.REJECTIONS``.

Costs are bounded whatever the repository holds: at most ``gdg.limits.refs`` names and
``gdg.limits.refFolders`` folders are read (the first name past a bound is noted), and
whether anything changed is told by ``fresh``: the stamps (``gdg_lsp.stamps``: mtime,
size, inode, ctime; one taken within the file system's time step never trusted) of
the files read, of the pseudo-refs looked for and of the folders walked, a few
``stat`` calls per request instead of a walk (past ``FOLDERS_EVERY_CHECK`` folders,
theirs at most every ``REFS_RECHECK_S``, less than the 0.3 s a change may precede
the request it must show in).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp import stamps, words
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.shell import names
from gdg_lsp.settings import LimitsSettings

MAX_REFS = 5000
"""Names kept per repository (refs, remotes, aliases, worktrees together): the default of
``gdg.limits.refs``."""
MAX_REF_FOLDERS = 512
"""Folders under ``refs/`` walked, the default of ``gdg.limits.refFolders`` (loose refs are few once git packs them; packed-refs holds the rest)."""
FOLDERS_EVERY_CHECK = 128
"""Up to this many walked folders are stat-ed at every freshness check (a ref added in one is
seen at the next request); past it they are stat-ed at most every ``REFS_RECHECK_S``."""
REFS_RECHECK_S = 0.25
MAX_WORKTREES = 256
MAX_FILE = 4 * 1024 * 1024
"""``HEAD``, ``config``, ``commondir``, ``gitdir`` files."""
MAX_PACKED_REFS = 32 * 1024 * 1024
"""The default of ``gdg.limits.packedRefsBytes``: ``packed-refs`` of a large repository (100,000 refs are about 7 MiB); only the first
``MAX_REFS`` of its names are kept."""
PSEUDO_REFS = ("HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD")
_REMOTE_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"\n]+)"\s*\]', re.MULTILINE)
_SECTION = re.compile(r"^\s*\[([^\]\n]*)\]", re.MULTILINE)
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$)", re.MULTILINE)
_RULES: dict[str, Callable[[str], str | None]] = {
    "branch": names.ref, "tag": names.ref, "remote-branch": names.ref, "remote": names.ref,
    "alias": names.alias, "worktree": names.path, "pseudo": names.ref,
}


@dataclass(frozen=True)
class Ref:
    name: str
    """As the shell reads it on a command line: ``main``, ``v1.0``, ``origin/main``, ``HEAD``, ``origin``."""
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
    folders: tuple[str, ...] = ()
    """The folders under ``refs/`` that were walked (their stamps tell a ref added or removed)."""
    stamp: tuple = ()
    """What ``fresh`` compares: the stamps of everything read, each taken before its read."""
    folders_checked: float = field(default_factory=time.monotonic)
    """When the folders' stamps were last compared (or read)."""

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
            text = boundary.read_text_noted(dot, MAX_FILE)
            if text and text.startswith("gitdir:"):
                target = (current / text[len("gitdir:"):].strip()).resolve()
                return target if target.is_dir() and boundary.allows(target) else None
            return None
        if current.parent == current:
            return None
        current = current.parent


def common_dir(git_dir: Path, boundary: Boundary) -> Path:
    """Where the shared refs are (``commondir``), or ``git_dir`` itself when it has none or
    when it names a folder outside the workspace (shared refs outside are not read)."""
    text = boundary.read_text_noted(git_dir / "commondir", MAX_FILE)
    if not text or not text.strip():
        return git_dir
    common = (git_dir / text.strip()).resolve()
    return common if common.is_dir() and boundary.allows(common) else git_dir


def _file_stamps(git_dir: Path, common: Path) -> tuple:
    """The stamps of the files ``read_state`` reads or looks for (a link's own and its target's)."""
    files = (*(git_dir / pseudo for pseudo in PSEUDO_REFS), common / "packed-refs", common / "config",
             common / "worktrees", common / "refs")
    return tuple((str(path), stamps.of(path, follow=False), stamps.of(path)) for path in files)


def fresh(state: RepoState) -> bool:
    """Whether nothing ``state`` was read from has changed since: the files it read and every
    folder of ``refs/`` it walked (a ref added, removed or renamed changes its folder's mtime, a
    new folder its parent's). Seventeen ``stat`` calls, plus one per walked folder when there are at
    most ``FOLDERS_EVERY_CHECK`` of them or ``REFS_RECHECK_S`` has passed since they were last
    compared, whatever the number of refs. Each stamp in ``state`` was taken before its file was
    read, so a change made while reading is seen by the next check."""
    if not state.stamp:
        return False
    git_dir = state.git_dir
    commondir, files, folders = state.stamp
    if (commondir, files) != (stamps.of(git_dir / "commondir", follow=False), _file_stamps(git_dir, state.common_dir)):
        return False
    now = time.monotonic()
    if len(state.folders) > FOLDERS_EVERY_CHECK and now < state.folders_checked + REFS_RECHECK_S:
        return True
    if folders != tuple(stamps.of(folder, follow=False) for folder in state.folders):
        return False
    state.folders_checked = now
    return True


class _Collector:
    """The names kept, each checked by its rule, at most ``max_refs`` of them."""

    def __init__(self, state: RepoState, max_refs: int) -> None:
        self.state = state
        self.max_refs = max_refs
        self.seen: set[tuple[str, str]] = set()
        self.full = False

    def add(self, ref: Ref, source: str) -> None:
        if (ref.kind, ref.name) in self.seen or not names.admit(ref.name, _RULES[ref.kind], source):
            return
        if len(self.state.refs) >= self.max_refs:
            if not self.full:
                self.full = True
                words.REJECTIONS.note(words.Rejected(
                    source, ref.name, f"the repository has more than {self.max_refs:,} names (gdg.limits.refs): "
                                      "this one and the rest are left out"))
            return
        self.seen.add((ref.kind, ref.name))
        self.state.refs.append(ref)


def read_state(git_dir: Path, boundary: Boundary, limits: LimitsSettings | None = None) -> RepoState:
    """What the repository's files say, within ``limits`` (``gdg.limits.refs``, ``refFolders``,
    ``packedRefsBytes``; the defaults without)."""
    limits = limits or LimitsSettings()
    commondir_stamp = stamps.of(git_dir / "commondir", follow=False)
    common = common_dir(git_dir, boundary)
    state = RepoState(git_dir, common)
    file_stamps = _file_stamps(git_dir, common)
    found = _Collector(state, limits.refs)

    current = None
    head = boundary.read_text_noted(git_dir / "HEAD", MAX_FILE)
    if head and head.startswith("ref:"):
        target = head[4:].strip()
        if target.startswith("refs/heads/"):
            current = target[len("refs/heads/"):]
    for pseudo in PSEUDO_REFS:
        if (git_dir / pseudo).is_file():
            found.add(Ref(pseudo, "pseudo", str(git_dir / pseudo)), str(git_dir))
    refs_root = common / "refs"
    loose, walked = _loose_refs(refs_root, boundary, limits.refs, limits.ref_folders)
    state.folders = tuple(folder for folder, _ in walked)
    state.stamp = (commondir_stamp, file_stamps, tuple(folder_stamp for _, folder_stamp in walked))
    for full, path in loose:
        _add_ref(found, f"refs/{full}", path, 0, current, str(refs_root))
    packed_path = common / "packed-refs"
    packed = boundary.read_text_noted(packed_path, limits.packed_refs_bytes)
    if packed:
        # lines end at "\n" alone: a name holding another line break is one name, and refused
        for number, line in enumerate(packed.split("\n")):
            if found.full:
                break
            parts = line.split(" ", 1)
            if len(parts) == 2 and _OBJECT_ID.match(parts[0]):
                _add_ref(found, parts[1], str(packed_path), number, current, str(packed_path))
    config_path = common / "config"
    config = boundary.read_text_noted(config_path, MAX_FILE)
    if config:
        for match in _REMOTE_SECTION.finditer(config):
            found.add(Ref(match.group(1), "remote", str(config_path), config.count("\n", 0, match.start())),
                      str(config_path))
        for name, line in _aliases(config):
            found.add(Ref(name, "alias", str(config_path), line), str(config_path))
    for remote in sorted({r.remote for r in state.refs if r.kind == "remote-branch"}):
        found.add(Ref(remote, "remote", str(refs_root / "remotes" / remote)), str(refs_root))
    _worktrees(common / "worktrees", boundary, found)
    return state


def _loose_refs(root: Path, boundary: Boundary, max_refs: int = MAX_REFS, max_folders: int = MAX_REF_FOLDERS,
                ) -> tuple[list[tuple[str, str]], list[tuple[str, tuple | None]]]:
    """``(name under refs/, file)`` of the loose refs, and ``(folder, its stamp taken before it was
    listed)`` of the folders walked. Links are never entered (nor read: a link is no ref file),
    ``root`` itself only when it lies inside the boundary; at most ``max_refs`` names and
    ``max_folders`` folders."""
    if not root.is_dir() or not boundary.allows(root):
        if os.path.lexists(root) and not boundary.allows(root):
            words.REJECTIONS.note(words.Rejected(str(root), "refs", f"the folder was not read: {boundary.why_not(root)}"))
        return [], []
    found: list[tuple[str, str]] = []
    walked: list[tuple[str, tuple | None]] = []
    stack = [(str(root), "")]
    capped = False
    while stack and len(found) < max_refs:
        folder, prefix = stack.pop()
        walked.append((folder, stamps.of(folder, follow=False)))
        try:
            with os.scandir(folder) as listing:
                # a folder of a million entries costs no more than the names that are kept
                entries = [e for _, e in zip(range(max_refs + max_folders), listing, strict=False)]
        except OSError:
            continue
        subfolders: list[os.DirEntry] = []
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                subfolders.append(entry)
            elif stat.S_ISREG(mode) and not entry.name.endswith(".lock"):  # a .lock is git's own write in progress
                found.append((prefix + entry.name, entry.path))
        room = max_folders - len(walked) - len(stack)
        if len(subfolders) > room and not capped:
            capped = True
            words.REJECTIONS.note(words.Rejected(
                str(root), prefix + subfolders[max(room, 0)].name,
                f"refs/ has more than {max_folders:,} folders (gdg.limits.refFolders): "
                "the refs in this one and the rest are left out"))
        for entry in reversed(subfolders[:max(room, 0)]):
            stack.append((entry.path, prefix + entry.name + "/"))
    return found[:max_refs], walked


def _worktrees(folder: Path, boundary: Boundary, found: _Collector) -> None:
    if not folder.is_dir() or not boundary.allows(folder):
        return
    try:
        with os.scandir(folder) as listing:
            entries = sorted(e.name for _, e in zip(range(MAX_WORKTREES), listing, strict=False))
    except OSError:
        return
    for name in entries:
        gitdir_file = folder / name / "gitdir"
        gitdir = boundary.read_text_noted(gitdir_file, MAX_FILE)
        if gitdir and gitdir.strip():
            found.add(Ref(str(Path(gitdir.strip()).parent), "worktree", str(gitdir_file)), str(gitdir_file))


def _add_ref(found: _Collector, full: str, file: str, line: int, current: str | None, source: str) -> None:
    if full.startswith("refs/heads/"):
        name = full[len("refs/heads/"):]
        found.add(Ref(name, "branch", file, line, current=name == current), source)
    elif full.startswith("refs/tags/"):
        found.add(Ref(full[len("refs/tags/"):], "tag", file, line), source)
    elif full.startswith("refs/remotes/"):
        short = full[len("refs/remotes/"):]
        remote = short.split("/", 1)[0]
        if short.endswith("/HEAD") or "/" not in short:
            return
        found.add(Ref(short, "remote-branch", file, line, remote=remote), source)


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
