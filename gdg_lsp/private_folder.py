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
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

PRIVATE_MODE = 0o700


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
