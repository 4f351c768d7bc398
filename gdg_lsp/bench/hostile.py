"""Hostile input for the language server, drawn from a ``random.Random``.

The tests hand these functions a ``Random`` that hypothesis controls (so a
failure is reproducible and shrinks); ``gdg-lsp bench stress`` hands them a
seeded one. Three kinds of input:

- ``hostile_message``: one message body: bytes that are not JSON, JSON that is
  not a message, batches, requests with wrong ids, methods and params
  (negative, huge, fractional, textual positions; missing members; lone
  surrogates), notifications with an id, responses nobody asked for;
- ``edit_session``: didOpen/didChange/didClose sequences over texts with
  surrogate pairs, CRLF, lone CR, U+2028, NEL and control characters, with
  positions past the end of lines and documents and inside surrogate pairs,
  reversed ranges, whole-document replacements and edits to unopened documents;
- ``framed_stream``: bodies wrapped in Content-Length frames spelled in the
  ways clients spell them (or with a wrong length, or garbage between frames),
  cut into arbitrary chunks.

Each request carries an id from the caller, and the caller's expectation is
the JSON-RPC rule, decided from the body alone: a JSON object with a
``method`` member and an ``id`` that is a number or a string is a request,
and gets exactly one response with that id.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

REQUESTS = (
    "textDocument/completion", "textDocument/hover", "textDocument/inlineCompletion", "gdg/explain",
    "gdg/status", "gdg/documentText", "textDocument/definition", "textDocument/formatting", "workspace/symbol",
    "$/unknownRequest", "", "initialize",
)
NOTIFICATIONS = (
    "textDocument/didOpen", "textDocument/didChange", "textDocument/didClose", "textDocument/didSave",
    "$/cancelRequest", "$/setTrace", "workspace/didChangeWatchedFiles", "unknown/notification",
)
LANGUAGES = ("python", "sql", "p4", "tilelang", "plaintext", "", "PYTHON")
_INTS = (0, 1, 2, 7, 40, -1, -2**31, 2**31 - 1, 2**31, 2**53, 2**70)
_ODD = (1.5, -0.0, "3", "", None, True, False, [], {}, [1], {"line": 1})
_PIECES = ("a", "b", "x = 1", "def f(", "\n", "\r\n", "\r", "\u2028", "\u0085", "\x0c", "\t", " ", "é", "😀",
           "𝔘", "\x00", "\x1b[31m", "ZWJ\u200d", "\ufeff", "#", "'", '"', "\\", "}", "%name%", "::=")


def unicode_text(rng: random.Random, pieces: int) -> str:
    """Text made of the pieces that break position arithmetic (no lone surrogates)."""
    return "".join(rng.choice(_PIECES) for _ in range(pieces))


def _number(rng: random.Random) -> Any:
    return rng.choice(_INTS) if rng.random() < 0.7 else rng.choice(_ODD)


def _index(rng: random.Random) -> Any:
    return rng.randrange(0, 12) if rng.random() < 0.6 else _number(rng)


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return _number(rng)
    if kind == 3:
        return rng.choice(("", "x", "\ud800", "file:///", "\x00" * 3, "😀" * 5, "a" * rng.randrange(0, 3000)))
    if kind == 4:
        return rng.random() * 10 ** rng.randrange(-5, 300)
    if kind == 5:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ("uri", "position", "textDocument", "line", "character", "id", "method", "jsonrpc", "text", "range")
    return {rng.choice(keys) if rng.random() < 0.7 else unicode_text(rng, 2): _json_value(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def _position(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.75:
        return {"line": _index(rng), "character": _index(rng)}
    if roll < 0.85:
        return {"line": _index(rng)}
    return _json_value(rng)


def _document(rng: random.Random, uris: list[str]) -> Any:
    roll = rng.random()
    if roll < 0.8:
        return {"uri": rng.choice(uris)}
    if roll < 0.9:
        return {"uri": rng.choice((5, None, "", "not a uri", "file:///\ud800.py", "http://example.invalid/x.py"))}
    return _json_value(rng)


def _params(rng: random.Random, method: str, uris: list[str]) -> Any:
    if rng.random() < 0.12:
        return _json_value(rng)
    if method in ("textDocument/completion", "textDocument/hover", "textDocument/definition", "gdg/explain"):
        params = {"textDocument": _document(rng, uris), "position": _position(rng)}
        if method == "gdg/explain":
            params["decode"] = False
        return params
    if method == "textDocument/inlineCompletion":
        return {"textDocument": _document(rng, uris), "position": _position(rng),
                "context": rng.choice(({"triggerKind": 1}, {"triggerKind": 2}, {"triggerKind": 9}, {}, None))}
    if method == "gdg/documentText":
        return {"textDocument": _document(rng, uris), "includeText": rng.random() < 0.3}
    if method == "initialize":
        return {"processId": _json_value(rng), "capabilities": rng.choice(({}, _json_value(rng))),
                "initializationOptions": {"model": "/nonexistent/model.gguf"}}
    if method == "textDocument/didOpen":
        return {"textDocument": {"uri": rng.choice(uris), "languageId": rng.choice(LANGUAGES),
                                 "version": _number(rng), "text": rng.choice((unicode_text(rng, 40), "\ud800x",
                                                                              "\x00" * 100, _json_value(rng)))}}
    if method == "textDocument/didChange":
        change: Any = {"range": {"start": _position(rng), "end": _position(rng)}, "text": unicode_text(rng, 3)}
        if rng.random() < 0.2:
            change = rng.choice(({"text": 5}, {"range": None, "text": "x"}, {"rangeLength": -1, "text": ""}, 7))
        return {"textDocument": {"uri": rng.choice(uris), "version": _number(rng)}, "contentChanges": [change]}
    if method == "textDocument/didClose":
        return {"textDocument": _document(rng, uris)}
    if method == "$/cancelRequest":
        return {"id": _json_value(rng)}
    return _json_value(rng)


@dataclass(frozen=True)
class Message:
    body: bytes
    expected: tuple[Any, ...] = ()
    """The ids that must each get exactly one response."""


def _is_request(obj: Any) -> bool:
    return (isinstance(obj, dict) and "method" in obj and "id" in obj
            and isinstance(obj["id"], (int, str)) and not isinstance(obj["id"], bool))


def _encode(obj: Any) -> bytes:
    return json.dumps(obj).encode("utf-8", "surrogatepass")


def hostile_message(rng: random.Random, next_id: Callable[[], Any], uris: list[str]) -> Message:
    """One hostile message body (see the module's docstring)."""
    roll = rng.random()
    if roll < 0.08:  # not JSON at all
        body = rng.choice((
            lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))),
            lambda: b"{",
            lambda: b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {',
            lambda: b"\xff\xfe{}",
            lambda: b"[" * 5000 + b"]" * 5000,
            lambda: b"NaN",
            lambda: b"1" * 6000,
            lambda: b"",
            lambda: b'{"a": "\\ud800\\udc00\\u0000"',
        ))()
        return Message(body)
    if roll < 0.14:  # JSON, but not one message
        choice = rng.randrange(3)
        if choice == 0:
            batch = [{"jsonrpc": "2.0", "id": next_id(), "method": rng.choice(REQUESTS), "params": {}}
                     for _ in range(rng.randrange(0, 4))] + [_json_value(rng)]
            return Message(_encode(batch), tuple(m["id"] for m in batch if _is_request(m)))
        return Message(_encode(rng.choice((5, "x", None, True, 1.5, _json_value(rng)))))
    if roll < 0.22:  # a response nobody asked for
        return Message(_encode({"jsonrpc": "2.0", "id": rng.choice((next_id(), None, 999999)),
                                rng.choice(("result", "error")): _json_value(rng)}))
    if roll < 0.60:
        method = rng.choice(REQUESTS)
        msg_id = next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    else:
        method = rng.choice(NOTIFICATIONS)
        message = {"jsonrpc": "2.0", "method": method}
        if rng.random() < 0.1:
            message["id"] = next_id()  # a notification sent as a request
    if rng.random() < 0.85:
        message["params"] = _params(rng, method, uris)
    mutation = rng.random()
    if mutation < 0.03:
        message["jsonrpc"] = rng.choice(("1.0", 2, None))
    elif mutation < 0.05:
        message.pop("jsonrpc")
    elif mutation < 0.07:
        message["method"] = rng.choice((5, None, ["textDocument/hover"]))
    elif mutation < 0.09 and "id" in message:
        message["id"] = rng.choice((True, None, 1.5, [1], {"id": 1}))
    elif mutation < 0.11:
        message[unicode_text(rng, 1)] = _json_value(rng)
    return Message(_encode(message), (message["id"],) if _is_request(message) else ())


# -- edit sequences -------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """One notification of an edit session, and what it means to the text model."""

    method: str
    params: dict[str, Any]
    uri: str
    version: int = 0
    text: str | None = None
    """didOpen: the text; didChange: None."""
    changes: tuple[tuple[tuple[int, int, int, int] | None, str], ...] = ()


def edit_session(rng: random.Random, uris: list[str], steps: int, model_lines) -> Iterator[Edit]:
    """Edits over ``uris``; ``model_lines(uri)`` gives each line's length in code units now
    (None when the document is not open), so positions land near, at and past the ends."""
    versions = dict.fromkeys(uris, 0)
    for _ in range(steps):
        uri = rng.choice(uris)
        lines = model_lines(uri)
        versions[uri] += 1
        version = versions[uri]
        roll = rng.random()
        if lines is None and roll < 0.7 or roll < 0.04:
            size = rng.choice((0, 1, 10, 60, 300))
            text = unicode_text(rng, size)
            yield Edit("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": rng.choice(("python", "python", "sql", "p4", "plaintext")),
                "version": version, "text": text}}, uri, version, text)
            continue
        if roll < 0.07:
            yield Edit("textDocument/didClose", {"textDocument": {"uri": uri}}, uri)
            continue
        changes = []
        wire = []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            if rng.random() < 0.05:
                new = unicode_text(rng, rng.randrange(0, 30))
                changes.append((None, new))
                wire.append({"text": new})
                continue
            known = lines or [0]
            rng_points = [_edit_point(rng, known) for _ in range(2)]
            if rng.random() < 0.8:
                rng_points.sort()
            (sl, sc), (el, ec) = rng_points
            new = unicode_text(rng, rng.choice((0, 1, 1, 2, 5)))
            changes.append(((sl, sc, el, ec), new))
            wire.append({"range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}},
                         "text": new})
        yield Edit("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                              "contentChanges": wire}, uri, version, None, tuple(changes))


def _edit_point(rng: random.Random, lines: list[int]) -> tuple[int, int]:
    roll = rng.random()
    if roll < 0.03:  # numbers no position can hold: the server clamps them, as editors do
        return rng.choice(((-1, 0), (0, -3), (-2**40, 2**40), (2**31 + 7, 1), (0, 1.5),
                           (rng.randrange(len(lines)), 2**31)))
    if roll < 0.05:
        return len(lines) + rng.randrange(0, 3), rng.randrange(0, 5)  # past the last line
    line = rng.randrange(len(lines))
    if roll < 0.15:
        return line, lines[line] + rng.randrange(1, 5)  # past the end of the line
    return line, rng.randrange(lines[line] + 1)  # anywhere on it, inside a surrogate pair included


# -- framing ----------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    chunks: list[bytes]
    bodies: list[bytes]
    """Every body, in order."""
    intact: list[bool]
    """Whether the reader must give back each body exactly (its length was right or too long)."""
    garbage: bool


def framed_stream(rng: random.Random, bodies: list[bytes], hostile: bool) -> Stream:
    junks = [rng.choice((b"garbage", b"\x00\xff", b"{}", b"Content-Type: x\r\n", b"HTTP/1.1 200 OK\r\n",
                         b"content-lenth: 3\r\n\r\nabc", b"\r\n\r\nxyz"))
             if hostile and rng.random() < 0.2 else b"" for _ in bodies]
    out = bytearray()
    intact = []
    for i, body in enumerate(bodies):
        out += junks[i]  # bytes between frames: never spelling a header, never blank only
        length = len(body)
        exact = True
        if hostile and rng.random() < 0.1:
            delta = rng.choice((-3, -1, 1, 7, 1000))
            length = max(0, length + delta)
            # too long: the body still ends where the next header starts, unless junk comes first
            exact = delta > 0 and (i + 1 == len(bodies) or not junks[i + 1])
        name = rng.choice((b"Content-Length", b"content-length", b"CONTENT-LENGTH", b"Content-length"))
        eol = rng.choice((b"\r\n", b"\n")) if hostile else b"\r\n"
        headers = name + rng.choice((b": ", b":", b" : ", b":\t")) + str(length).encode() + eol
        if rng.random() < 0.3:
            headers += b"Content-Type: application/vscode-jsonrpc; charset=utf-8" + eol
        out += headers + eol + body
        intact.append(exact)
    garbage = any(junks)
    chunks = []
    pos = 0
    while pos < len(out):
        size = rng.choice((1, 2, 7, 64, 1000, 1 << 16))
        chunks.append(bytes(out[pos : pos + size]))
        pos += size
    return Stream(chunks, bodies, intact, garbage)
