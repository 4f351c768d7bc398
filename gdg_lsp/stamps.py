"""What an answer read from the disk depends on, and whether it still holds.

Γ's sources outside the document (schema files, imported modules, includes,
Makefiles, JSON inputs) are read once and kept; each request checks, before it
uses what was kept, that the disk still says the same. That check must cost a
few ``stat`` calls, never a read: so every read is preceded by the *stamp* of
what it reads, and a ``Witness`` holds the stamps an answer was made from.

A stamp is ``(mtime_ns, size, inode, device, ctime_ns)`` (None for a path that does
not exist: its appearance changes the answer too). A folder's stamp changes when an
entry is added to, removed from or renamed in it, so a folder's stamp witnesses
its listing: a new ``schema.sql`` beside a query, a new module beside a script.
The inode tells a file replaced by a rename (editors save so) from one written
in place; ctime, a change that put the old mtime back (``touch -r``, ``cp -p``).

Racy stamps: a file system keeps times at a granularity (Linux's local file
systems take the kernel's coarse clock, one tick: 1 to 10 ms; APFS and NTFS
100 ns or less), so a file written twice within one tick, to the same size,
keeps its stamp, and a read between the two writes would be believed for good.
A stamp taken less than ``RACY_S`` after the file's own change is therefore
*racy*: it equals no other stamp, so what was read is read again at the next
check, until the file has been still for ``RACY_S`` (git's racily clean index
entries, and the same remedy). Readers that re-read compare what they read with
what they had, so a racy file costs a read, not a change. On file systems with
coarser times (FAT's 2 s, HFS+'s 1 s) two same-size writes within one such
step, with a request between them, are not told apart until the next change.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterable, Iterator

RACY_S = 0.05
"""How long after its last change a file's stamp is not trusted: five ticks of the
coarsest kernel clock Linux file systems stamp with (HZ=100)."""

Stamp = tuple | None
_serials = itertools.count(1)


def of(path: str | os.PathLike[str], follow: bool = True) -> Stamp:
    """The stamp of ``path`` now (None: it does not exist or cannot be stat-ed)."""
    try:
        info = os.stat(path, follow_symlinks=follow)
    except (OSError, ValueError):
        return None
    found = (info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev, info.st_ctime_ns)
    newest = max(info.st_mtime_ns, info.st_ctime_ns)
    if time.time_ns() - newest < RACY_S * 1e9:
        return (*found, "racy", next(_serials))  # equals no later stamp: read again at the next check
    return found


def racy(stamp: Stamp) -> bool:
    return stamp is not None and len(stamp) > 5


def unchanged(stamped: Iterable[tuple[str, Stamp]]) -> bool:
    """Whether every path still has its stamp (a racy one never has; a path keyed with a
    leading NUL is stat-ed without following a link)."""
    for key, stamp in stamped:
        if racy(stamp):
            return False
        follow = not key.startswith("\0")
        if of(key if follow else key[1:], follow) != stamp:
            return False
    return True


class Witness:
    """The stamps one answer was made from, each taken before its read; ``holds`` while the
    disk still shows every one of them. Paths noted twice keep their first stamp."""

    __slots__ = ("_stamps",)

    def __init__(self, paths: Iterable[str | os.PathLike[str]] = ()) -> None:
        self._stamps: dict[str, Stamp] = {}
        for path in paths:
            self.note(path)

    def note(self, path: str | os.PathLike[str], follow: bool = True) -> Stamp:
        """Stamp ``path`` (a file about to be read, a folder about to be listed, or a path
        whose absence the answer relies on) and remember it."""
        key = os.fspath(path) if follow else "\0" + os.fspath(path)
        if key not in self._stamps:
            self._stamps[key] = of(path, follow)
        return self._stamps[key]

    def keep(self, path: str | os.PathLike[str], stamp: Stamp) -> None:
        """Remember a stamp taken earlier (before a read made elsewhere)."""
        self._stamps.setdefault(os.fspath(path), stamp)

    def add(self, other: Witness | None) -> Witness:
        if other is not None:
            for path, stamp in other._stamps.items():
                self._stamps.setdefault(path, stamp)
        return self

    def holds(self) -> bool:
        """Whether nothing witnessed has changed (one ``stat`` per path; a racy stamp never holds)."""
        return unchanged(self._stamps.items())

    def paths(self) -> Iterator[str]:
        return (key.lstrip("\0") for key in self._stamps)

    def __len__(self) -> int:
        return len(self._stamps)

    def __repr__(self) -> str:
        return f"Witness({len(self._stamps)} paths)"
