"""workspace/didChangeWatchedFiles and textDocument/didSave: workspace schemas and fragment files kept fresh.

Γ for SQL also comes from files the user is not editing (DDL scripts, SQLite
databases). When the client reports that such files changed, the schema
catalogs re-read exactly those files (off the event loop: a SQLite file can
take a moment), and if the schema moved, the open documents' diagnostics are
published again, so a column added in ``schema.sql`` stops being flagged in
``query.sql`` without a keystroke there. A save of a document counts as a
change of its file.

Who watches is ``gdg.watchFiles``: ``auto`` asks a client that can register
file watchers dynamically to watch the schema and fragment files at
``initialized``, and otherwise starts the server's own watcher
(``file_watcher.py``: ``watchfiles`` in a thread, a bounded number of folders),
whose changes go to the same refresh; ``server`` and ``client`` choose one,
``off`` neither. Γ does not wait for either: every source a request uses is
checked against the stamps of what it read at that request (``gdg_lsp.stamps``),
so a file written a moment ago is seen even with no watcher at all; a watcher
makes the index fresh before the request and publishes diagnostics again when
a schema moves. Turning the setting to ``off`` or ``client`` stops the server's
watcher within a second; the folders it watches follow the workspace folders.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Iterable
from pathlib import Path

from lsprotocol import types

from gdg_lsp.documents import uri_to_path
from gdg_lsp.languages.sql import catalog as sql_catalog
from gdg_lsp.server import diagnostics, fragment_files
from gdg_lsp.server.file_watcher import FileWatcher

log = logging.getLogger(__name__)

WATCHED_GLOBS = ("**/*.sql", "**/*.sqlite", "**/*.sqlite3", "**/*.db")
"""The files workspace Γ sources read (see ``workspace/sql_ddl_files`` and ``sql_sqlite``)."""


async def refresh(ls, paths: Iterable[Path]) -> bool:
    """Re-read ``paths`` in every schema catalog; re-publish diagnostics if anything changed."""
    paths = list(paths)
    if not paths:
        return False
    try:
        changed = await asyncio.to_thread(sql_catalog.refresh_all, paths)
    except Exception:
        log.exception("refreshing the workspace schemas failed (the last known schemas stay in use)")
        return False
    if changed:
        log.info("workspace schema changed (%s): diagnostics refreshed", ", ".join(p.name for p in paths[:5]))
        for doc in list(ls.session.documents):
            diagnostics.schedule(ls, doc.uri)
    return changed


_WATCHERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""The server's own watcher of each session that runs one."""


def server_watcher(ls) -> FileWatcher | None:
    """The session's own file watcher, if it runs one."""
    return _WATCHERS.get(ls.session)


async def changed(ls, paths: list[Path]) -> None:
    """What a batch of changed files (from a watcher, the client's or the server's) refreshes."""
    await refresh(ls, paths)
    await fragment_files.refresh(ls, paths)


async def watch(ls) -> None:
    """Start watching the workspace as ``gdg.watchFiles`` says (at ``initialized``)."""
    mode = getattr(ls.session.settings, "watch_files", "auto")
    caps = ls.client_capabilities
    watched = caps and caps.workspace and caps.workspace.did_change_watched_files
    client_can = bool(watched and watched.dynamic_registration)
    if mode in ("auto", "client") and client_can:
        await _ask_client(ls)
    if mode == "server" or (mode == "auto" and not client_can):
        _start_server_watcher(ls)


def _start_server_watcher(ls) -> None:
    session = ls.session
    loop = session.loop or asyncio.get_running_loop()
    if (running := _WATCHERS.get(session)) is not None and running.running:
        return

    def alive() -> bool:
        # the session's loop still runs, the client has not shut it down, and the setting still wants it
        return (not loop.is_closed() and not getattr(ls.protocol, "_shutdown", False)
                and getattr(session.settings, "watch_files", "auto") in ("auto", "server"))

    def deliver(paths: list[Path]) -> None:
        asyncio.run_coroutine_threadsafe(changed(ls, paths), loop)

    watcher = FileWatcher(lambda: list(session.workspace.roots), deliver, alive)
    _WATCHERS[session] = watcher
    watcher.start()


async def _ask_client(ls) -> None:
    """Ask the client to watch the schema and fragment files."""
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in (*WATCHED_GLOBS, fragment_files.WATCHED_GLOB)])
    registration = types.Registration(
        id=str(uuid.uuid4()), method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as err:
        log.warning("the client did not register the schema file watchers (%s); schemas are re-checked when used", err)


def register(server) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls, params: types.DidChangeWatchedFilesParams) -> None:
        await changed(ls, [p for change in params.changes if (p := uri_to_path(change.uri)) is not None])

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        if (path := uri_to_path(params.text_document.uri)) is not None:
            await changed(ls, [path])
