"""The server's log, to the client at its levels: ``window/logMessage`` with the record's ``MessageType``.

Editors show a language server's stderr as errors (Neovim's ``lsp.log`` wrote every INFO
line as ``[ERROR]``, VS Code's output channel as ``[error]``). While serving, records go to
the client as log messages (ERROR 1, WARNING 2, INFO 3, DEBUG 4), and only warnings and
errors to stderr as well (``cli``); ``--log-file`` keeps every record at the chosen level.

Records from any thread are sent from the event loop; pygls' own records are never sent
(at DEBUG it logs each message it sends, which would send another). Before ``initialize``
there is no client to tell: those records go to stderr and the log file only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from lsprotocol import types


def message_type(level: int) -> types.MessageType:
    if level >= logging.ERROR:
        return types.MessageType.Error
    if level >= logging.WARNING:
        return types.MessageType.Warning
    if level >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Log


class ClientLogHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.server: Any = None
        self._sending = threading.local()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def attach(self, server: Any) -> None:
        """Send to ``server``'s client from now on (the TCP server attaches each client's)."""
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        server = self.server
        if server is None or record.name.startswith("pygls") or getattr(self._sending, "busy", False):
            return
        loop = server.session.loop
        if loop is None or loop.is_closed():
            return
        try:
            params = types.LogMessageParams(type=message_type(record.levelno), message=self.format(record))
        except Exception:
            self.handleError(record)
            return
        if server.session.on_loop():
            self._send(server, params)
        else:
            try:
                loop.call_soon_threadsafe(self._send, server, params)
            except RuntimeError:  # the loop closed meanwhile: the session is over
                pass

    def _send(self, server: Any, params: types.LogMessageParams) -> None:
        self._sending.busy = True
        try:
            server.window_log_message(params)
        except Exception:  # a client gone or not initialised: the log file still has the record
            pass
        finally:
            self._sending.busy = False


HANDLER = ClientLogHandler()
"""The one handler ``cli`` installs while serving; ``create_server`` attaches each server."""
