"""JSON-RPC hardening on top of pygls' protocol.

- Every request gets an answer. pygls 2.1 raises ``JsonRpcInvalidParams``
  while deserialising a request whose params fail validation (a negative
  ``character``...) and never replies, so the client waits forever; here such
  a request is answered with an InvalidParams error. A message that is not
  JSON at all gets a ParseError response (id null), as JSON-RPC asks; one that
  is JSON but not a request (an array, a number, a wrong ``jsonrpc`` version,
  an id that is neither a number nor a string, a method that is not a string,
  a notification sent with an id) gets InvalidRequest; a request after
  ``shutdown`` gets InvalidRequest too (pygls drops it silently).
- Bodies arrive from ``gdg_lsp.server.transport`` and are parsed here, once, at
  the top level only (pygls' ``object_hook`` parsing also turned any nested
  object that happened to have a ``jsonrpc`` member into a message).
- A number too long to convert (the interpreter refuses integers of over 4,300
  digits) does not make the whole message unreadable: a request whose id is
  one is answered with InvalidRequest carrying that id, digit for digit; one
  inside params makes them invalid (InvalidParams).
- A didChange whose range holds a number no position can have (negative,
  past 2^31 - 1, a fraction) is clamped, not dropped: the change lands where
  the nearest valid position puts it, the rest of the batch is applied, and a
  warning is logged. A change that cannot be read at all (no text, a range
  that is not positions) is skipped with a warning, the others applied. pygls
  would drop the whole notification, and the editor's text and the server's
  would differ from then on.
- Documents live in the project's own store (``gdg_lsp.documents``): the
  builtin didOpen/didChange/didClose handlers do not also feed pygls'
  workspace (which splits lines on U+2028 and could fail before our handler
  runs, losing the edit).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger(__name__)


class _Malformed:
    """Stands in for a request whose params could not be read."""

    def __init__(self, msg_id: Any, method: str, error: JsonRpcException) -> None:
        self.msg_id = msg_id
        self.method = method
        self.error = error


MAX_INT_DIGITS = 4000
"""Longer integers are not converted (the interpreter's own limit is 4,300 digits)."""
UINTEGER_MAX = 2**31 - 1
"""The largest LSP ``uinteger`` a position may hold."""


class OversizedNumber(str):
    """The digits of a JSON integer too long to convert (kept to be echoed back)."""


def _parse_int(digits: str) -> int | OversizedNumber:
    return OversizedNumber(digits) if len(digits) > MAX_INT_DIGITS else int(digits)


class GdgProtocol(LanguageServerProtocol):
    def receive(self, body: bytes) -> None:
        """Parse one message body and handle it; every request in it gets an answer."""
        try:
            data = json.loads(body, parse_int=_parse_int)
        except Exception as err:  # bad UTF-8, bad JSON, nesting too deep...
            self.report_unreadable(err)
            return
        if isinstance(data, dict) and isinstance(data.get("id"), OversizedNumber):
            self._send_error(data["id"], JsonRpcInvalidRequest,
                             f"a request id must be an integer of at most {MAX_INT_DIGITS} digits or a string")
            return
        if isinstance(data, dict) and data.get("method") == types.TEXT_DOCUMENT_DID_CHANGE:
            data = _readable_did_change(data)
        if isinstance(data, list):  # a JSON-RPC batch: LSP has none; answer each request in it
            requests = [m for m in data if isinstance(m, dict) and "method" in m and _valid_id(m.get("id"))]
            for message in requests:
                self._send_error(message["id"], JsonRpcInvalidRequest, "batches of messages are not supported")
            if not requests:
                self._send_error(None, JsonRpcInvalidRequest, "a JSON array is not a message")
            return
        if not isinstance(data, dict):
            self._send_error(None, JsonRpcInvalidRequest, f"a JSON {type(data).__name__} is not a message")
            return
        if "method" in data and "id" in data and not _valid_id(data["id"]):
            echo = data["id"] if isinstance(data["id"], float) else None
            self._send_error(echo, JsonRpcInvalidRequest, "a request id must be a number or a string")
            return
        if "jsonrpc" in data and data["jsonrpc"] != self.VERSION:
            if "method" in data and "id" in data:
                self._send_error(data["id"], JsonRpcInvalidRequest, f"jsonrpc must be {self.VERSION!r}")
            else:
                log.warning("ignored a message with jsonrpc %r", data["jsonrpc"])
            return
        if "method" in data and not isinstance(data["method"], str):
            if "id" in data:
                self._send_error(data["id"], JsonRpcInvalidRequest, "a method name must be a string")
            else:
                log.warning("ignored a notification whose method is not a string")
            return
        if "method" in data and "id" in data and _is_notification(data["method"]):
            # pygls would structure it as the notification, drop the id and never answer
            self._send_error(data["id"], JsonRpcInvalidRequest,
                             f"{data['method']} is a notification: it takes no id (the message was not acted on)")
            return
        if self._shutdown and "id" in data and "method" in data and data.get("method") != types.EXIT:
            self._send_error(data["id"], JsonRpcInvalidRequest, "the server is shutting down")
            return
        try:
            message = self.structure_message(data)
        except Exception as err:  # not a request (those become _Malformed): nobody waits for an answer
            log.warning("ignored a message that cannot be read: %s", _leaf_message(err.__cause__ or err))
            return
        self.handle_message(message)

    def _send_error(self, msg_id: Any, kind: type[JsonRpcException], message: str) -> None:
        log.warning("answered %.60r with %s: %s", msg_id, kind.__name__, message)
        # written as a plain object: the typed response would drop a null "id"
        error = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": kind.CODE, "message": message}}
        if isinstance(msg_id, OversizedNumber):  # echoed as the number it was, not as a string
            error["id"] = None
            text = json.dumps(error).replace('"id": null', f'"id": {str.__str__(msg_id)}', 1)
            self._write_body(text)
            return
        self._send_data(error)

    def _write_body(self, body: str) -> None:
        """A message body already in JSON, framed as pygls frames its own."""
        if self.writer is None:
            return
        data = f"Content-Length: {len(body)}\r\nContent-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n{body}"
        self.writer.write(data.encode(self.CHARSET))

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

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if not _valid_id(msg_id):  # pygls would hash it: a list or an object raised TypeError
            log.warning("ignored $/cancelRequest for id %.60r (ids are numbers or strings)", msg_id)
            return
        super()._handle_cancel_notification(msg_id)

    def report_unreadable(self, error: Exception | str) -> None:
        """A message could not be read (bad framing, not JSON): answer with a ParseError, id null."""
        text = error if isinstance(error, str) else f"cannot parse message: {str(error)[:200] or type(error).__name__}"
        self._send_error(None, JsonRpcParseError, text)

    on_exit: Callable[[int], None] | None = None
    """Set by the TCP server: ``exit`` ends that client's session, not the process."""
    exit_code = 0
    """What the process ends with (``cli``): after ``exit``, 0 when ``shutdown`` came first and 1
    otherwise (LSP); pygls' own ``sys.exit`` inside the event loop is caught by the stdio loop."""

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args):
        self.exit_code = 0 if self._shutdown else 1
        if self.on_exit is None:
            yield from super().lsp_exit(*args)
            return
        if (handler := self.fm.features.get(types.EXIT)) is not None:
            yield handler, args, None
        self.on_exit(self.exit_code)

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


def _readable_did_change(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each content change made readable (numbers clamped) or left out, and the
    version clamped to an LSP ``integer`` (with a warning for each)."""
    params = data.get("params")
    changes = params.get("contentChanges") if isinstance(params, dict) else None
    if not isinstance(changes, list):
        return data  # nothing to apply: pygls reports it
    document = params.get("textDocument")
    uri = document.get("uri") if isinstance(document, dict) else None
    version = document.get("version") if isinstance(document, dict) else None
    if isinstance(version, (int, float, OversizedNumber)) and not isinstance(version, bool):
        fixed_version = _clamp(version, low=-UINTEGER_MAX - 1)
        if fixed_version != version:
            log.warning("didChange %.200s: version %.40s clamped to %d", uri, version, fixed_version)
            params = {**params, "textDocument": {**document, "version": fixed_version}}
    kept = []
    for index, change in enumerate(changes):
        fixed, problem = _readable_change(change)
        if problem:
            log.warning("didChange %.200s, change %d: %s", uri, index, problem)
        if fixed is not None:
            kept.append(fixed)
    return {**data, "params": {**params, "contentChanges": kept}}


def _readable_change(change: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(the change, clamped where needed, or None when it cannot be read; what was wrong)."""
    if not isinstance(change, dict) or not isinstance(change.get("text"), str):
        return None, "not a change with a text (skipped)"
    if "range" not in change:
        return {"text": change["text"]}, None  # the whole document
    rng = change["range"]
    fixed: dict[str, dict[str, int]] = {}
    clamped = []
    for end in ("start", "end"):
        point = rng.get(end) if isinstance(rng, dict) else None
        if not isinstance(point, dict):
            return None, f"its range has no {end} position (skipped)"
        fixed[end] = {}
        for field in ("line", "character"):
            value = point.get(field)
            if isinstance(value, bool) or not isinstance(value, (int, float, OversizedNumber)):
                return None, f"range.{end}.{field} is {value!r:.40}, not a number (skipped)"
            number = _clamp(value)
            if number != value:
                clamped.append(f"range.{end}.{field} {str(value)[:40]} -> {number}")
            fixed[end][field] = number
    problem = f"clamped {', '.join(clamped)} (the change was applied there)" if clamped else None
    return {"range": fixed, "text": change["text"]}, problem


def _clamp(value: int | float | OversizedNumber, low: int = 0) -> int:
    """The nearest integer in [low, 2^31 - 1] (a fraction is cut; NaN is ``low``)."""
    if isinstance(value, OversizedNumber):
        return low if value.startswith("-") else UINTEGER_MAX
    if isinstance(value, float):
        value = low if value != value else int(max(low - 1.0, min(float(UINTEGER_MAX), value)))
    return max(low, min(UINTEGER_MAX, value))


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


def _is_notification(method: str) -> bool:
    """True for the LSP methods that are notifications (they have no response type)."""
    entry = types.METHOD_TO_TYPES.get(method)
    return entry is not None and entry[1] is None


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)
