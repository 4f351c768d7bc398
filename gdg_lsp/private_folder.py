"""Folders only the server's own user can write: the caches whose entries the server trusts.

A cache entry is used as the server's own work -- converted weights it decodes with, a
tool's parsed ``--help`` it turns into Γ and argv -- so it is only as trustworthy as
whoever can write where it lies. ``private_folder(path)`` creates a missing folder (and
its missing parents) with mode 0700, and checks one that exists: a real folder (not a
symbolic link), owned by this process's user, writable by nobody else (no group or
other write bit). One that fails raises ``NotPrivate`` with the reason, and the caller
keeps nothing there. ``why_not_private(path)`` judges one entry inside such a folder
(a file or a folder) by the same rules without creating anything: an entry planted
before the folder became private, or linked out of it, is ignored and rebuilt.

Modes are left as they are on systems without POSIX owners (Windows): there only the
link check applies.

The user's state folder (``state_folder``: ``$GDG_LSP_STATE_DIR``, else the platform's) holds
what the server remembers for the user across sessions (the fragment-file answers, the
acceptance statistics); its files are written whole or not at all (``write_private_file``)
and believed only when they pass the same check (``read_private_file``).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import platformdirs

from gdg_lsp import boundary

PRIVATE_MODE = 0o700
STATE_DIR_VARIABLE = "GDG_LSP_STATE_DIR"


class NotPrivate(Exception):
    """A folder others could write (or a link, or not a folder): the message says which and how to fix it."""


def why_not_private(path: str | os.PathLike[str]) -> str | None:
    """Why the existing file or folder ``path`` cannot be trusted as this user's own (None: it can).
    A missing path is ``None`` too: nothing planted there."""
    shown = os.fspath(path)
    try:
        info = os.lstat(shown)
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"{shown} cannot be checked ({err.strerror or err})"
    if stat.S_ISLNK(info.st_mode):
        return f"{shown} is a symbolic link (a cache entry must be the folder's own)"
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return f"{shown} is neither a folder nor a regular file"
    if os.name != "posix":
        return None
    if info.st_uid != os.getuid():
        return f"{shown} belongs to user id {info.st_uid}, not to this server's user ({os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{shown} may be written by other users (mode {stat.filemode(info.st_mode)}); chmod go-w it"
    return None


def private_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder only this user can write: created 0700 (with its missing parents)
    when missing, checked when it exists; ``NotPrivate`` when it cannot be trusted."""
    folder = Path(path)
    missing = []
    probe = folder
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for step in reversed(missing):
        try:
            os.mkdir(step, PRIVATE_MODE)
        except FileExistsError:  # made meanwhile by another process: judged below like any other
            pass
        except OSError as err:
            raise NotPrivate(f"cannot create {step}: {err.strerror or err}") from None
        else:
            os.chmod(step, PRIVATE_MODE)  # a umask such as 0277 would leave it unwritable to its owner too
    if (why := why_not_private(folder)) is not None:
        raise NotPrivate(why)
    if not folder.is_dir():
        raise NotPrivate(f"{folder} is not a folder")
    return folder


def remove_entry(path: str | os.PathLike[str]) -> None:
    """Take away what lies at ``path`` in a private folder before an entry is rebuilt there:
    a link itself (never what it points to), a file, or a folder with what it holds."""
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.lexists(path):
        shutil.rmtree(path)


def state_folder() -> Path:
    """The user's state folder: ``$GDG_LSP_STATE_DIR``, else ``platformdirs.user_state_dir``
    (never a workspace's; ``private_folder`` makes or checks it before anything is written)."""
    explicit = os.environ.get(STATE_DIR_VARIABLE)
    return Path(explicit) if explicit else Path(platformdirs.user_state_dir("gdg-lsp", appauthor=False))


def read_private_file(folder: Path, name: str, max_bytes: int) -> tuple[bytes | None, str | None]:
    """(the bytes of ``folder/name``, None) when it and its folder are this user's own and it is
    at most ``max_bytes``; (None, why not) otherwise; (None, None) when there is no such file."""
    path = folder / name
    if not os.path.lexists(path):
        return None, None
    why = why_not_private(folder) or why_not_private(path)
    if why is not None:
        return None, why
    try:
        return boundary.read_bounded(path, max_bytes), None
    except boundary.Refused as err:
        return None, str(err)


def write_private_file(folder: Path, name: str, body: bytes) -> Path:
    """Write ``body`` as ``folder/name`` whole or not at all: a 0600 file beside it (never through
    a link), synced, then renamed over the old one. ``NotPrivate`` when the folder cannot be
    trusted; ``OSError`` when it cannot be written."""
    where = private_folder(folder)
    temporary = where / f".{name}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, where / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return where / name


class StateFile:
    """One file the server keeps in the user's state folder (``folder``: for tests, else
    ``state_folder()``), believed only as ``read_private_file`` allows; why it was not, the
    last time it was read, is ``problem`` (in the subclass's words: ``ignored_because``)."""

    NAME = ""
    MAX_BYTES = 256 * 1024

    def __init__(self, folder: Path | None = None) -> None:
        self._folder = folder
        self.problem: str | None = None

    @property
    def folder(self) -> Path:
        return self._folder or state_folder()

    @property
    def path(self) -> Path:
        return self.folder / self.NAME

    def ignored_because(self, why: str) -> str:
        return f"{self.path} is ignored: {why}"

    def read_body(self) -> bytes | None:
        """The file's bytes, or None (``problem`` says why, unless there is no file)."""
        self.problem = None
        body, why = read_private_file(self.folder, self.NAME, self.MAX_BYTES)
        if why is not None:
            self.problem = self.ignored_because(why)
        return body

    def write_body(self, body: bytes) -> Path:
        return write_private_file(self.folder, self.NAME, body)
