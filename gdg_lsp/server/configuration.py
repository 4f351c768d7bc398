"""initialize / initialized / workspace/didChangeConfiguration / shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading

from lsprotocol import types

from gdg_lsp.documents import PositionEncoding
from gdg_lsp.server import fragment_files, workspace_files

log = logging.getLogger(__name__)


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
        if ls.session.settings.fragments != before:
            await fragment_files.load(ls)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls, params) -> None:
        ls.session.worker.shutdown()
        ls.session.scheduler.shutdown()
        ls.session.fragments.close()
