"""initialize / initialized / workspace/didChangeConfiguration / workspace/didChangeWorkspaceFolders / shutdown.

Settings come globally (``initializationOptions``, ``didChangeConfiguration``) and, from clients
that answer ``workspace/configuration``, per folder: the ``gdg`` section asked with each folder's
``scopeUri`` at ``initialized``, for the folders added, and again at every configuration change
(server/folders.py says what a folder's answer may set). Folders added after the start are the
workspace's from then on; a folder removed takes its settings and whatever was read from it along
(every cache entry keyed by a path inside it: ``caches.forget_paths``), and its fragment files.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types

from gdg_lsp import caches
from gdg_lsp.documents import PositionEncoding
from gdg_lsp.server import diagnostics, fragment_files, workspace_files

log = logging.getLogger(__name__)

CONFIGURATION_TIMEOUT_S = 10.0
"""How long the folders' settings are waited for (meanwhile they have the global ones)."""


def _answers_configuration(ls) -> bool:
    caps = ls.client_capabilities
    return bool(caps and caps.workspace and caps.workspace.configuration)


def _recheck(ls) -> None:
    """The open documents' diagnostics are computed again (debounced, off the event loop)."""
    for doc in list(ls.session.documents):
        diagnostics.schedule(ls, doc.uri)


async def pull_folder_settings(ls, folders: Sequence[Path] | None = None) -> None:
    """Ask the client for the ``gdg`` section of each of ``folders`` (default: every folder) and
    keep the answers; a client that cannot answer leaves every folder the global settings."""
    session = ls.session
    folders = list(session.workspace.roots if folders is None else folders)
    if not folders or not _answers_configuration(ls):
        return
    items = [types.ConfigurationItem(scope_uri=folder.absolute().as_uri(), section="gdg") for folder in folders]
    try:
        answers = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)), CONFIGURATION_TIMEOUT_S)
    except Exception as err:  # an error answer, a client that went away or never answers
        log.warning("could not read the workspace folders' gdg settings (%s); they have the global ones", err)
        return
    if not isinstance(answers, (list, tuple)) or len(answers) != len(folders):
        log.warning("the client answered %s for the settings of %d folders; they have the global ones",
                    type(answers).__name__, len(folders))
        return
    session.apply_folder_settings(dict(zip(folders, answers)))


def register(server) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls, params: types.InitializeParams) -> None:
        session = ls.session
        session.loop = asyncio.get_running_loop()
        session.loop_thread = threading.get_ident()
        session.encoding = PositionEncoding.parse(ls.workspace.position_encoding)
        session.set_roots(params)
        session.apply_settings(params.initialization_options, initial=True)
        log.info("client %s, position encoding %s, roots %s",
                 params.client_info.name if params.client_info else "?", session.encoding.value,
                 [str(r) for r in session.workspace.roots])

    @server.feature(types.INITIALIZED)
    async def initialized(ls, params: types.InitializedParams) -> None:
        ls.session.start_model()  # in the decode worker: the server keeps answering meanwhile
        await pull_folder_settings(ls)
        await fragment_files.load(ls)
        await workspace_files.watch(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls, params: types.DidChangeConfigurationParams) -> None:
        data = params.settings
        if not data:  # pull-style clients send nothing: ask for the section
            try:
                result = await ls.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="gdg")]))
                data = result[0] if result else None
            except Exception as err:
                log.warning("could not read the gdg configuration section: %s", err)
                return
        before = ls.session.settings.fragments  # paths, trusted folders, claims
        ls.session.apply_settings(data)
        await pull_folder_settings(ls)
        if ls.session.settings.fragments != before:
            await fragment_files.load(ls)
        _recheck(ls)  # what a document is told may depend on its folder's settings

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(ls, params: types.DidChangeWorkspaceFoldersParams) -> None:
        session = ls.session
        added, removed = session.change_folders(params.event.added or [], params.event.removed or [])
        if not (added or removed):
            return
        log.info("workspace folders: %s added, %s removed; now %s", [str(p) for p in added],
                 [str(p) for p in removed], [str(r) for r in session.workspace.roots])
        if removed:  # what was read there is released, and never served again
            dropped = await asyncio.to_thread(caches.forget_paths, removed)
            log.info("%d cached entries of the removed folders dropped", dropped)
        await pull_folder_settings(ls, added)
        await fragment_files.forget_folders(ls, removed)
        await fragment_files.load(ls)  # the folders' fragment files, with consent
        _recheck(ls)  # a document's folder, and so its files and settings, may have changed

    @server.feature(types.SHUTDOWN)
    def shutdown(ls, params) -> None:
        ls.session.worker.shutdown()
        ls.session.scheduler.shutdown()
        ls.session.fragments.close()
