"""workspace/didChangeWatchedFiles and textDocument/didSave: workspace schemas and fragment files kept fresh.

Γ for SQL also comes from files the user is not editing (DDL scripts, SQLite
databases). When the client reports that such files changed, the schema
catalogs re-read exactly those files (off the event loop: a SQLite file can
take a moment), and if the schema moved, the open documents' diagnostics are
published again, so a column added in ``schema.sql`` stops being flagged in
``query.sql`` without a keystroke there. A save of a document counts as a
change of its file.

Clients that can register file watchers dynamically are asked to watch the
schema files at ``initialized``; others still get fresh schemas, because the
catalogs also re-check file stamps at most every two seconds when asked.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from pathlib import Path

from lsprotocol import types

from gdg_lsp.documents import uri_to_path
from gdg_lsp.languages.sql import catalog as sql_catalog
from gdg_lsp.server import diagnostics, fragment_files

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


async def watch(ls) -> None:
    """Ask the client to watch the schema files, when it can register watchers."""
    caps = ls.client_capabilities
    watched = caps and caps.workspace and caps.workspace.did_change_watched_files
    if not (watched and watched.dynamic_registration):
        return
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
        paths = [p for change in params.changes if (p := uri_to_path(change.uri)) is not None]
        await refresh(ls, paths)
        await fragment_files.refresh(ls, paths)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls, params: types.DidSaveTextDocumentParams) -> None:
        if (path := uri_to_path(params.text_document.uri)) is not None:
            await refresh(ls, [path])
            await fragment_files.refresh(ls, [path])
