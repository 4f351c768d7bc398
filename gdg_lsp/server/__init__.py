"""The language server: pygls handlers, one module per LSP method.

Each handler translates LSP to service/analyzer calls and back; the state they
share is ``server.session`` (gdg_lsp.server.session).
"""

from __future__ import annotations

import json
import logging

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from gdg_lsp import __version__
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

    def report_server_error(self, error: Exception, source) -> None:
        # pygls' default shows a message and then shuts the server down; a bad
        # message must never do that. Log it, and answer unreadable messages.
        log.error("%s: %s", getattr(source, "__name__", source), error)
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol.report_unreadable(error)  # type: ignore[attr-defined]


def create_server() -> GdgLanguageServer:
    from gdg_lsp.server import (
        code_action, completion, configuration, custom, hover, inline_completion, sync, workspace_files,
    )

    server = GdgLanguageServer()
    for module in (configuration, sync, workspace_files, inline_completion, completion, hover, code_action, custom):
        module.register(server)
    return server
