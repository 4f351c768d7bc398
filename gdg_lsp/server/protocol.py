"""JSON-RPC hardening on top of pygls' protocol.

- Every request gets an answer. pygls 2.1 raises ``JsonRpcInvalidParams``
  while deserialising a request whose params fail validation (a negative
  ``character``...) and never replies, so the client waits forever; here such
  a request is answered with an InvalidParams error. A message that is not
  JSON at all gets a ParseError response (id null), as JSON-RPC asks.
- Documents live in the project's own store (``gdg_lsp.documents``): the
  builtin didOpen/didChange/didClose handlers do not also feed pygls'
  workspace (which splits lines on U+2028 and could fail before our handler
  runs, losing the edit).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)


class _Malformed:
    """Stands in for a request whose params could not be read."""

    def __init__(self, msg_id: Any, method: str, error: JsonRpcException) -> None:
        self.msg_id = msg_id
        self.method = method
        self.error = error


class GdgProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        if isinstance(data, dict) and "jsonrpc" in data and "method" in data and "params" not in data:
            data = {**data, "params": None}  # JSON-RPC lets params be omitted
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if isinstance(data, dict) and "id" in data and "method" in data and _valid_id(data["id"]):
                return _Malformed(data["id"], str(data.get("method")), JsonRpcInvalidParams(
                    f"invalid params for {data.get('method')}: {_leaf_message(err.__cause__ or err)}"))
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Malformed):
            log.warning("rejected %s request %r: %s", message.method, message.msg_id, message.error.message)
            self._send_response(message.msg_id, error=message.error.to_response_error())
            return
        if isinstance(message, dict):  # no "jsonrpc" member: not a JSON-RPC 2.0 message
            if _valid_id(message.get("id")) and "method" in message:
                self._send_response(message["id"], error=JsonRpcInvalidRequest("not a JSON-RPC 2.0 request").to_response_error())
            else:
                log.warning("ignored a message that is not JSON-RPC 2.0")
            return
        if not hasattr(message, "jsonrpc"):
            log.warning("ignored a message that is not JSON-RPC 2.0")
            return
        super().handle_message(message)

    def report_unreadable(self, error: Exception) -> None:
        """The message body was not JSON (or not a JSON object): answer with a ParseError."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            # written as a plain object: the typed response would drop the required "id": null
            self._send_data({"jsonrpc": "2.0", "id": None, "error": {
                "code": JsonRpcParseError.CODE, "message": f"cannot parse message: {error}"}})

    # -- documents go to our store only ----------------------------------------------

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def _leaf_message(err: BaseException) -> str:
    """The innermost message of a cattrs validation error (they nest in exception groups)."""
    path = []
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        note = next(iter(getattr(err.exceptions[0], "__notes__", []) or []), "")
        if note:
            path.append(note)
        err = err.exceptions[0]
    where = f" ({'; '.join(path)})" if path else ""
    return f"{err}{where}"[:300]


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)
