"""The files a glob names inside the boundary, walked with a bound (``gdg.jq.inputs`` input globs,
``gdg.sql.sources`` ``ddl`` and ``sqlite`` globs).

A glob is walked here, not by ``Path.glob`` or ``glob.glob``: those follow every link to a
folder, so a folder holding two links back to itself doubled the folders listed with each
``*/`` (minutes per request), they list folders outside the workspace, and ``Path.glob``
refuses absolute patterns with an exception. The walk lists each real folder at most once per
step of the pattern, follows a link to a folder only where it leads inside the boundary, never
lists a folder outside it, and stops at ``max_folders`` folders or ``max_matches`` files
(the caller's bounds: ``gdg.limits.globFolders`` and ``globMatches``): the walk then carries one
problem for the user to read. A walk is kept until one of the folders it looked into changes (their
stamps, ``gdg_lsp.stamps``, are compared at each use: one ``stat`` each; a folder changed within the
file system's time granularity is never trusted, so an entry added in the same tick is not missed).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp import stamps as file_stamps
from gdg_lsp.boundary import Boundary, real
from gdg_lsp.caches import BoundedCache

MAX_FOLDERS = 2_000
"""Folders one glob may list (per workspace folder) by default; past it the walk stops."""
MAX_MATCHES = 1_000
"""Files one glob may match by default before the walk stops."""
_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Walk:
    """What one glob found, and how to tell that it is still right."""

    files: tuple[Path, ...]
    stamps: tuple[tuple[str, file_stamps.Stamp], ...]
    """Each folder looked into, with its stamp then (taken before it was listed)."""
    problem: str | None = None
    """Why the walk stopped before its end, or why it was not walked at all."""

    def fresh(self) -> bool:
        if not self.stamps:
            return False  # nothing was there to look into: look again (it costs nothing)
        return file_stamps.unchanged(self.stamps)


@functools.lru_cache(maxsize=256)
def _matcher(part: str):
    return re.compile(fnmatch.translate(part)).match


def _split(pattern: str) -> tuple[str, ...]:
    return tuple(p for p in pattern.replace(os.sep, "/").split("/") if p not in ("", "."))


def _stamp(folder: str) -> file_stamps.Stamp:
    """The folder's stamp (None: missing, or not a folder)."""
    try:
        if not stat.S_ISDIR(os.stat(folder).st_mode):
            return None
    except OSError:
        return None
    return file_stamps.of(folder)


Entry = tuple[str, bool, bool]
"""A folder's entry: its name, whether it is a link, whether it is (or leads to) a folder."""
Place = tuple[str, str]
"""A folder as the walk knows it: its real path (judged, listed, stamped) and its path as
the glob spells it from the workspace folder (what the files found are named by)."""


class _Walker:
    def __init__(self, parts: tuple[str, ...], boundary: Boundary, label: str, max_folders: int,
                 max_matches: int) -> None:
        self.parts = parts
        self.boundary = boundary
        self.label = label
        self.max_folders = max_folders
        self.max_matches = max_matches
        self.files: list[Path] = []
        self.stamps: dict[str, file_stamps.Stamp] = {}
        self.seen: set[tuple[str, int]] = set()
        self.listed: dict[str, list[Entry]] = {}
        self.problem: str | None = None

    def full(self) -> bool:
        return self.problem is not None

    def look_into(self, folder: str) -> bool:
        """Stamp the real ``folder`` before reading it; False when the folder budget is spent."""
        if folder in self.stamps:
            return True
        if len(self.stamps) >= self.max_folders:
            self.problem = (f"{self.label} looks into more than {self.max_folders:,} folders; the files found "
                            f"in the first {self.max_folders:,} are used (narrow the glob, or raise "
                            f"gdg.limits.globFolders in your user settings)")
            return False
        stamp = _stamp(folder)
        if stamp is None:
            return False
        self.stamps[folder] = stamp
        return True

    def walk(self, start: Place) -> None:
        """Match the parts under ``start`` (inside the boundary), depth first with a stack of
        its own (a folder tree nested deeper than Python recurses is walked too). Each real
        folder is matched against each part once, however many links lead to it."""
        stack = [(start, 0)]
        while stack and not self.full():
            place, index = stack.pop()
            if (place[0], index) in self.seen:
                continue
            self.seen.add((place[0], index))
            stack.extend(reversed(self._steps(place, index)))

    def _steps(self, place: Place, index: int) -> list[tuple[Place, int]]:
        """What to match next after ``parts[index]`` in ``place``; files the last part
        matches are kept."""
        folder, shown = place
        part = self.parts[index]
        last = index == len(self.parts) - 1
        if part == "**":
            if last:
                return []  # a folder is never the file a glob names
            # like Path.glob, ``**`` descends into real folders only, never through a link
            return [(place, index + 1), *(((os.path.join(folder, name), os.path.join(shown, name)), index)
                                          for name, is_link, is_dir in self._entries(folder)
                                          if is_dir and not is_link)]
        if part == "..":
            parent = os.path.dirname(folder)
            return [] if last or not self.boundary.allows(parent) else [((parent, os.path.join(shown, "..")), index + 1)]
        if not _WILDCARD.search(part):
            if not self.look_into(folder):
                return []
            if last:
                if os.path.isfile(os.path.join(folder, part)):
                    self._found(os.path.join(shown, part))
                return []
            child = self._child(folder, part, os.path.islink(os.path.join(folder, part)))
            return [] if child is None else [((child, os.path.join(shown, part)), index + 1)]
        matches = _matcher(part)
        steps = []
        for name, is_link, is_dir in self._entries(folder):
            if self.full():
                break
            if not matches(name):
                continue
            if last:
                if not is_dir:
                    self._found(os.path.join(shown, name))
            elif is_dir and (child := self._child(folder, name, is_link)) is not None:
                steps.append(((child, os.path.join(shown, name)), index + 1))
        return steps

    def _entries(self, folder: str) -> list[Entry]:
        """The real folder's entries, sorted (listed once per walk: ``**`` and the part after
        it both look at them)."""
        if (known := self.listed.get(folder)) is not None:
            return known
        if not self.look_into(folder):
            return []
        entries = []
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    try:
                        entries.append((entry.name, entry.is_symlink(), entry.is_dir()))
                    except OSError:
                        continue
        except OSError:
            pass
        self.listed[folder] = sorted(entries)
        return self.listed[folder]

    def _child(self, folder: str, name: str, is_link: bool) -> str | None:
        """The real path of the folder ``name`` in ``folder``; None when it is missing, not a
        folder, or a link whose end lies outside the boundary."""
        path = os.path.join(folder, name)
        if not is_link:
            return path if os.path.isdir(path) else None
        target = os.fspath(real(path))
        return target if os.path.isdir(target) and self.boundary.allows(target) else None

    def _found(self, path: str) -> None:
        if len(self.files) >= self.max_matches:
            self.problem = (f"{self.label} matches more than {self.max_matches:,} files; the first "
                            f"{self.max_matches:,} found are used (narrow the glob, or raise "
                            f"gdg.limits.globMatches in your user settings)")
            return
        self.files.append(Path(path))


_walks: BoundedCache[tuple, Walk] = BoundedCache("folder-walk.globs", 64)


def _start(root: Path, pattern: str, boundary: Boundary, label: str) -> tuple[Place, tuple[str, ...]] | str:
    """Where the walk of ``pattern`` begins (a folder inside the boundary) and the parts left
    to match; or the problem that keeps it from being walked."""
    parts = _split(pattern)
    if not os.path.isabs(pattern):
        return (os.fspath(real(root)), os.fspath(root)), parts
    literal = 0
    while literal < len(parts) - 1 and not _WILDCARD.search(parts[literal]) and parts[literal] != "..":
        literal += 1
    base = os.path.join(os.sep, *parts[:literal])
    if not boundary.allows(base):
        return f"{label} lies outside the workspace folders (not read)"
    return (os.fspath(real(base)), base), parts[literal:]


def _key(place: Place, parts: tuple[str, ...], boundary: Boundary, label: str, max_folders: int,
         max_matches: int) -> tuple:
    return place, parts, boundary.folders, label, max_folders, max_matches


def glob_walk(root: Path, pattern: str, boundary: Boundary, label: str, *, max_folders: int = MAX_FOLDERS,
              max_matches: int = MAX_MATCHES) -> Walk:
    """The files ``pattern`` (relative to ``root``, or absolute) matches inside ``boundary``,
    sorted; walked again only when a folder it looked into has changed. ``label`` begins the
    problem a cut walk carries (``gdg.jq.inputs: the input glob 'x/*.json'``)."""
    start = _start(root, pattern, boundary, label)
    if isinstance(start, str):
        return Walk((), (), start)
    place, parts = start
    key = _key(place, parts, boundary, label, max_folders, max_matches)
    cached = _walks.get(key)
    if cached is not None and cached.fresh():
        return cached
    walker = _Walker(parts, boundary, label, max_folders, max_matches)
    if parts and boundary.allows(place[0]):
        walker.walk(place)
    return _walks.put(key, Walk(tuple(sorted(walker.files)), tuple(walker.stamps.items()), walker.problem))


def known_problem(root: Path, pattern: str, boundary: Boundary, label: str, *, max_folders: int = MAX_FOLDERS,
                  max_matches: int = MAX_MATCHES) -> str | None:
    """The problem of the walk ``glob_walk`` made last with these arguments, or of its start
    (nothing is walked here: for messages about the walks made so far)."""
    start = _start(root, pattern, boundary, label)
    if isinstance(start, str):
        return start
    place, parts = start
    walk = _walks.get(_key(place, parts, boundary, label, max_folders, max_matches))
    return walk.problem if walk is not None else None
