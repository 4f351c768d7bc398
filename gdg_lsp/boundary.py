"""Which files the server may read: the workspace folders and the folders the user configured.

Everything that reads a file named by something else (a P4 ``#include``, a
schema file found by walking the workspace, a star-import source) asks
``Boundary.allows(path)`` first, or reads through ``Boundary.read``. A path is
allowed when its real location (symlinks followed to the end) lies under one
of the allowed folders, so a link inside the workspace pointing outside it is
refused like ``../outside``. The folders the user configured outside the
workspace (``gdg.p4.includePaths``, p4c's own include folder) are allowed as
named; they come from user settings, never from a file of the workspace. A
document outside every workspace folder (a file opened on its own) brings its own
folder (``workspace_folders``).

``read`` also bounds what one file may cost: it refuses anything that is not
a regular file (a FIFO would block the reader forever, a device never ends)
and anything larger than the caller's limit, without reading it. ``read_text``
is the same read decoded (undecodable bytes replaced); ``head`` reads the
first bytes of a file of any size (a sample of a large JSON input, a SQLite
file's header). ``read_noted`` / ``read_text_noted`` answer None for a missing or refused
file, a refusal noted for the user (``note_unread``).

This is the one reader of workspace files: ``tests/security/test_one_reader.py``
fails on a file read anywhere else in ``gdg_lsp`` that its allow-list does not
name with a reason.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gdg_lsp import words


def real(path: str | os.PathLike[str]) -> Path:
    """The path with every symlink resolved (``strict=False``: a missing tail is kept)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def workspace_folders(document: str | os.PathLike[str] | None,
                      roots: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The workspace folders, plus the document's own folder when the document lies in
    none of them (a file opened on its own, as editors treat it): its siblings are read,
    ``../elsewhere`` is not."""
    folders = [Path(root) for root in roots]
    if document is not None and not Boundary.of(folders).allows(document):
        folders.append(Path(document).parent)
    return folders


class Refused(Exception):
    """A file that is not read: outside the allowed folders, not a regular file, or too large.
    The message names the file and the reason (for a diagnostic)."""


class TooLarge(Refused):
    pass


def _size_text(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


def _open_regular(path: str | os.PathLike[str], shown: str) -> tuple[BinaryIO, os.stat_result]:
    """The open file ``path`` and its status, when it is a regular file: opened without
    following a final symlink and without blocking (a FIFO put in place after a check is
    refused, not waited on), judged on the open file."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.fspath(path), flags)
    except OSError as err:
        raise Refused(f"cannot read {shown}: {err.strerror or err}") from None
    handle = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return handle, info
    handle.close()
    raise Refused(f"{shown} is not a regular file (not read)")


def read_bounded(path: str | os.PathLike[str], limit: int, shown: str | None = None) -> bytes:
    """The bytes of the regular file ``path`` if it holds at most ``limit`` bytes.

    The size is checked on the open file and the read stops at ``limit + 1`` bytes, so a
    file growing meanwhile cannot make it read more."""
    shown = shown or os.fspath(path)
    handle, info = _open_regular(path, shown)
    with handle:
        if (why := _unfit(info, limit, shown)) is not None:
            raise why
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"{shown} is over the limit of {_size_text(limit)} (not read)")
    return data


def read_head(path: str | os.PathLike[str], limit: int, shown: str | None = None) -> tuple[bytes, int]:
    """The first ``limit`` bytes of the regular file ``path`` (all of it when it is
    shorter), and its size: a sample of a file of any size, opened as ``read_bounded`` does."""
    handle, info = _open_regular(path, shown or os.fspath(path))
    with handle:
        return handle.read(limit), info.st_size


def _unfit(info: os.stat_result, limit: int, shown: str) -> Refused | None:
    if not stat.S_ISREG(info.st_mode):
        return Refused(f"{shown} is not a regular file (not read)")
    if info.st_size > limit:
        return TooLarge(f"{shown} is {_size_text(info.st_size)}, over the limit of {_size_text(limit)} (not read)")
    return None


def note_unread(path: str | os.PathLike[str], err: Refused) -> None:
    """Say once (``words.REJECTIONS``) that ``path`` is there but was refused, so the names it
    would have given are missing for a reason the user can read; a missing file says nothing."""
    if os.path.lexists(path):
        words.REJECTIONS.note(words.Rejected(os.fspath(path), os.path.basename(path), f"the file was not read: {err}"))


@dataclass(frozen=True)
class Boundary:
    folders: tuple[Path, ...]
    """Real paths of the folders whose files may be read."""

    @classmethod
    def of(cls, *groups: Iterable[str | os.PathLike[str]]) -> Boundary:
        return cls(tuple(dict.fromkeys(real(folder) for group in groups for folder in group)))

    def allows(self, path: str | os.PathLike[str]) -> bool:
        return self._inside(real(path))

    def _inside(self, target: Path) -> bool:
        return any(target == folder or target.is_relative_to(folder) for folder in self.folders)

    def why_not(self, path: str | os.PathLike[str]) -> str:
        """The message for a refused path (a diagnostic or a log line)."""
        shown = os.fspath(path)
        target = real(path)
        if os.fspath(target) != os.path.abspath(shown):
            return f"{shown} leads to {target}, outside the workspace and the configured folders (not read)"
        return f"{shown} is outside the workspace and the configured folders (not read)"

    def refusal(self, path: str | os.PathLike[str], limit: int) -> str | None:
        """Why ``read(path, limit)`` would refuse the file, judged without reading it
        (None: it would be read, or it does not exist)."""
        target = real(path)
        if not self._inside(target):
            return self.why_not(path)
        try:
            why = _unfit(os.stat(target), limit, os.fspath(path))
        except OSError:
            return None
        return str(why) if why is not None else None

    def read(self, path: str | os.PathLike[str], limit: int) -> bytes:
        """The file's bytes when it is allowed, a regular file and at most ``limit`` bytes;
        ``Refused`` (``TooLarge``) otherwise. The real path is judged and then opened, so a
        link is read only where it leads inside the boundary."""
        return read_bounded(self._judged(path), limit, shown=os.fspath(path))

    def read_text(self, path: str | os.PathLike[str], limit: int) -> str:
        """``read`` decoded as UTF-8, undecodable bytes replaced (a source file, a schema)."""
        return self.read(path, limit).decode("utf-8", errors="replace")

    def read_noted(self, path: str | os.PathLike[str], limit: int) -> bytes | None:
        """``read``, or None: a missing file is simply absent, and one that is there but refused
        is noted once (``note_unread``), for sources that go on without it (a Makefile include,
        ``.git/packed-refs``)."""
        try:
            return self.read(path, limit)
        except Refused as err:
            note_unread(path, err)
            return None

    def read_text_noted(self, path: str | os.PathLike[str], limit: int) -> str | None:
        """``read_noted`` decoded as UTF-8, undecodable bytes replaced."""
        data = self.read_noted(path, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def head(self, path: str | os.PathLike[str], limit: int) -> tuple[bytes, int]:
        """The first ``limit`` bytes of the allowed regular file ``path`` and its size
        (``read_head``); ``Refused`` otherwise."""
        return read_head(self._judged(path), limit, shown=os.fspath(path))

    def _judged(self, path: str | os.PathLike[str]) -> Path:
        """The real path of ``path`` when it lies inside the boundary; ``Refused`` otherwise."""
        target = real(path)
        if not self._inside(target):
            raise Refused(self.why_not(path))
        return target
