"""The language server: pygls handlers, one module per LSP method.

Each handler translates LSP to service/analyzer calls and back; the state they
share is ``server.session`` (gdg_lsp.server.session).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from gdg_lsp import __version__
from gdg_lsp.server import client_log, transport
from gdg_lsp.server.protocol import GdgProtocol
from gdg_lsp.server.session import Session

log = logging.getLogger(__name__)


class GdgLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gdg-lsp", __version__, protocol_cls=GdgProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.session = Session(self)

    # -- transports: pygls' loops, with gdg_lsp.server.transport reading the frames --

    def start_io(self, stdin=None, stdout=None) -> None:
        stdin_stream, stdout_stream = transport.stdio_streams()
        self._stop_event = threading.Event()
        serving: list[asyncio.Task] = []

        def client_gone() -> None:  # the pipe to the client closed: stop reading, end the session
            self._stop_event.set()
            for task in serving:
                task.get_loop().call_soon_threadsafe(task.cancel)

        self.protocol.set_writer(transport.PipeWriter(stdout or stdout_stream, client_gone))

        async def run() -> None:
            chunks = transport.stdin_chunks(stdin or stdin_stream, asyncio.get_running_loop())
            serving.append(asyncio.current_task())
            try:
                await self._serve(transport.FrameReader(chunks))
            except asyncio.CancelledError:
                pass

        try:
            asyncio.run(run())
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.session.acceptance.close(self)
            self.shutdown()

    async def serve_frames(self, reader: transport.FrameReader, first: bytes | None = None) -> None:
        """Serve one client's frames (``gdg_lsp.server.tcp``); ``first`` is a message already read."""
        self._stop_event = threading.Event()
        if first is not None:
            self.protocol.receive(first)  # type: ignore[attr-defined]
        await self._serve(reader)

    def end_session(self) -> None:
        """The client is gone: stop its decodes and analyses, free its model."""
        session = self.session
        for timers in (session.diagnostic_timers, session.work_ahead_timers):
            for timer in timers.values():
                timer.cancel()
            timers.clear()
        session.worker.shutdown()
        session.scheduler.shutdown()
        session.acceptance.close(self)

    async def _serve(self, reader: transport.FrameReader) -> None:
        await transport.serve(reader, self.protocol.receive, self.protocol.report_unreadable,  # type: ignore[attr-defined]
                              self._stop_event)

    def report_server_error(self, error: Exception, source) -> None:
        # pygls' default shows a message and then shuts the server down; a bad
        # message must never do that. Log it, and answer unreadable messages.
        log.error("%s: %s", getattr(source, "__name__", source), error)
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol.report_unreadable(error)  # type: ignore[attr-defined]


def create_server(dev: bool = False) -> GdgLanguageServer:
    """The server; ``dev`` adds the test features of ``gdg_lsp.server.devtools``."""
    from gdg_lsp.server import (
        acceptance,
        code_action,
        completion,
        configuration,
        custom,
        hover,
        inline_completion,
        sql_source,
        sync,
        workspace_files,
    )

    server = GdgLanguageServer()
    client_log.HANDLER.attach(server)  # its log goes to this server's client (when cli installed it)
    for module in (configuration, sync, workspace_files, acceptance, inline_completion, completion, hover, code_action,
                   custom, sql_source):
        module.register(server)
    if dev:
        from gdg_lsp.server import devtools

        devtools.register(server)
        log.warning("development features are on (--dev): not for an editor's normal session")
    return server
