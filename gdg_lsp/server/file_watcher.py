"""The server's own watcher of the workspace, for clients that watch no files.

Γ is checked against the disk at every request anyway (``gdg_lsp.stamps``: the stamps of
what each source read); the watcher makes the index fresh *before* the request, and
publishes diagnostics again when a schema moves, as the client's
``workspace/didChangeWatchedFiles`` would (Neovim on Linux registers no watchers:
``didChangeWatchedFiles = { dynamicRegistration = false }``). What it sees goes to the
same refresh as those notifications (``workspace_files.refresh``).

It runs ``watchfiles`` (the maintained binding of Rust's notify: inotify, FSEvents,
ReadDirectoryChangesW) in a thread of its own, and its cost is bounded: it watches the
workspace folders' subfolders one by one (not recursively, so nothing under a skipped
folder costs a watch), skipping hidden folders but ``.gdg`` (``.git`` among them: its
files are stamped at each request by the shell sources), dependency and build folders
(``SKIPPED``), links to folders, and every folder past ``MAX_WATCHED_FOLDERS`` (said once
in the log; those are still checked at each request). A folder that appears, or roots
that change, make it list the folders again. Changes are delivered in batches
(``DEBOUNCE_MS``); it stops when the session ends.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

MAX_WATCHED_FOLDERS = 2_000
"""Folders watched (one inotify watch each); past it a folder is still checked at each request."""
DEBOUNCE_MS = 50
"""Changes within this of each other are delivered together."""
WAKE_MS = 1_000
"""How often the thread wakes with nothing to deliver, to see whether it must stop or re-plan."""
SKIPPED = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages", "dist", "build", "target",
                     "bower_components", ".tox", ".mypy_cache", ".pytest_cache", ".hypothesis"})
KEPT_HIDDEN = frozenset({".gdg"})
"""Hidden folders watched all the same (users' fragment files live in ``.gdg/fragments``)."""


def folders_to_watch(roots: Sequence[Path], limit: int = MAX_WATCHED_FOLDERS) -> tuple[list[Path], bool]:
    """The folders to watch under ``roots`` (breadth first, by name), and whether ``limit`` cut them."""
    found: list[Path] = []
    queue = [Path(r) for r in roots if os.path.isdir(r)]
    seen: set[str] = set()
    while queue:
        folder = queue.pop(0)
        key = os.path.realpath(folder)
        if key in seen:
            continue
        if len(found) >= limit:
            return found, True
        seen.add(key)
        found.append(folder)
        try:
            with os.scandir(folder) as listing:
                names = sorted(entry.name for entry in listing if _entered(entry))
        except OSError:
            continue
        queue.extend(folder / name for name in names)
    return found, False


def _entered(entry: os.DirEntry) -> bool:
    try:
        if not entry.is_dir(follow_symlinks=False):  # links to folders are not followed
            return False
    except OSError:
        return False
    name = entry.name
    return name not in SKIPPED and (not name.startswith(".") or name in KEPT_HIDDEN)


class FileWatcher:
    """One thread watching the folders of ``roots()`` and handing each batch of changed paths
    to ``deliver`` (called on the watcher's thread), while ``alive()``."""

    def __init__(self, roots: Callable[[], Sequence[Path]], deliver: Callable[[list[Path]], None],
                 alive: Callable[[], bool], limit: int = MAX_WATCHED_FOLDERS) -> None:
        self._roots = roots
        self._deliver = deliver
        self._alive = alive
        self._limit = limit
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.watched: list[Path] = []
        """The folders watched now."""
        self.delivered = 0
        """Paths handed to ``deliver`` so far."""
        self.ready = threading.Event()
        """Set once the first folders are watched (tests wait for it)."""

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gdg-file-watcher", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        try:
            import watchfiles
        except ImportError as err:  # a broken install: the stamps at each request remain
            log.warning("the file watcher is off: watchfiles cannot be imported (%s)", err)
            return
        warned = False
        while self._keep_going():
            roots = tuple(Path(r) for r in self._roots())
            folders, capped = folders_to_watch(roots, self._limit)
            if capped and not warned:
                warned = True
                log.warning("the file watcher watches the first %d folders of the workspace (MAX_WATCHED_FOLDERS); "
                            "the others are checked at each request", self._limit)
            self.watched = folders
            if not folders:
                self.ready.set()
                if self._stop.wait(WAKE_MS / 1000):
                    return
                continue
            log.info("the server watches %d folders of the workspace for changes", len(folders))
            try:
                self._watch(watchfiles, folders, roots)
            except Exception as err:  # an exhausted inotify limit, a folder gone: say so, try again later
                log.warning("the file watcher stopped (%s); files are still checked at each request", err)
                if self._stop.wait(10):
                    return

    def _watch(self, watchfiles, folders: list[Path], roots: tuple[Path, ...]) -> None:
        """Watch until the thread must stop or re-plan (a new folder, other roots)."""
        watching = set(map(str, folders))
        for changes in watchfiles.watch(*folders, watch_filter=None, debounce=DEBOUNCE_MS, step=20,
                                        stop_event=self._stop, rust_timeout=WAKE_MS, yield_on_timeout=True,
                                        recursive=False, raise_interrupt=False, ignore_permission_denied=True):
            self.ready.set()
            if not self._keep_going():
                return
            if changes:
                paths = sorted({Path(path) for _, path in changes})
                self.delivered += len(paths)
                try:
                    self._deliver(paths)
                except Exception:
                    log.exception("delivering file changes failed (the next request checks the files itself)")
                if any((str(p) not in watching and p.is_dir()) or (str(p) in watching and not p.is_dir())
                       for p in paths):
                    return  # a folder came or went: list the folders again
            if tuple(Path(r) for r in self._roots()) != roots:
                return

    def _keep_going(self) -> bool:
        if self._stop.is_set():
            return False
        try:
            return self._alive()
        except Exception:
            return False
