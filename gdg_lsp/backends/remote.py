"""A shared inference engine (vLLM, the llama.cpp server): reaching it, streaming from it.

gdg-lsp still derives Γ, picks the fragment and instantiates the grammar here;
the engine applies the mask. Per region (one statement) ``RemoteDecoder``
sends one streaming request to the OpenAI-compatible ``/v1/completions``:

- the prompt as text, cut where token healing cut it;
- the grammar of what may follow, in the engine's dialect: the instantiated
  grammar, derived by the text already typed in the region and prefixed with
  the healed text (``continuation.request_grammar``), so the engine starts
  where the local matcher would be and the continuation re-types the healed
  text first. vLLM reads it from ``"structured_outputs": {"grammar": ...}``
  (the older ``guided_grammar`` field is silently ignored: never used here)
  as XGrammar's EBNF or, with its ``guidance`` backend, as Lark; the llama.cpp
  server from ``"grammar"`` (GBNF, or Lark after a ``%llguidance {}`` line in
  a build with llguidance). ``gdg.remote.dialect`` says which (``auto``: EBNF
  for vLLM, GBNF for llama.cpp).

Every grammar is parsed locally (by the engine that reads its dialect) before it is sent. Every piece of text
that comes back is fed to a local matcher of the instantiated grammar as it
arrives: a piece the grammar rejects stops the request and the suggestion is
dropped (an engine that ignores grammars, or a proxy that strips them, cannot
turn into a ghost). The stream is read on a helper thread; the caller waits
in short slices and closes the socket on cancel or deadline, which makes the
engine abort the request.

Errors: ``RemoteUnavailableError`` (the engine is down, slow, failing or
refusing us: the caller falls back) and ``RemoteRejectedError`` (this request
was refused, e.g. a prompt longer than the engine's context: this suggestion
is dropped, the engine stays in use).
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import queue
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gdg_lsp import consent
from gdg_lsp.backends.base import BackendStats
from gdg_lsp.errors import GdgError
from gdg_lsp.vocab import ByteVocabulary, Encoding, Vocabulary

log = logging.getLogger(__name__)

DIALECT_OF_KIND = {"vllm": "xgrammar", "llamacpp": "gbnf"}
"""The dialect each kind of engine reads when ``gdg.remote.dialect`` is ``auto``."""
STOP_REJECTED = "rejected-by-local-check"
"""The engine sent text the instantiated grammar does not allow: nothing is suggested."""
STOP_REFUSED = "refused-by-engine"
"""The engine refused this request (HTTP 400): nothing is suggested."""
STOP_UNSENDABLE = "grammar-not-sendable"
"""The grammar could not be written in the engine's dialect (or did not parse): never sent."""
POLL_SECONDS = 0.02
"""How often a waiting request looks at its cancel event and deadline."""
READ_IDLE_LIMIT = 120.0
"""A stream silent for this long is dropped even if nobody waits for it any more."""
MAX_RESPONSE_BYTES = 4 << 20
"""The most one answer (a completion's whole stream, or a body) may hold: a statement's
tokens with usage figures on each chunk are tens of KB. Past it the answer is cut, the
connection closed and the request refused (``ResponseTooLarge``): an engine, or a proxy
in front of it, that sent hundreds of MB was read whole into memory."""
PROBE_GRAMMARS = {"xgrammar": 'root ::= "42"', "gbnf": 'root ::= "42"', "lark": 'start: "42"'}


class RemoteError(GdgError):
    pass


class RemoteUnavailableError(RemoteError):
    """The engine is down, too slow, failing, or refuses us (auth, model): fall back."""


class RemoteRejectedError(RemoteError):
    """The engine refused this one request; the next may work."""


class ResponseTooLarge(RemoteRejectedError):
    """An answer over the endpoint's ``max_response_bytes``: cut where the limit fell, nothing of it used."""

    def __init__(self, url: str, limit: int = MAX_RESPONSE_BYTES, declared: int | None = None) -> None:
        shown = f"{limit / 2**20:.0f} MiB" if limit >= 2**20 else f"{limit:,} bytes"
        said = f"declared {declared:,} bytes" if declared is not None else f"sent more than {shown}"
        super().__init__(f"the engine at {url} {said} for one answer, over the limit of {shown} "
                         f"(not read further; nothing of it is used; the bound is gdg.limits.remoteResponseBytes)")


# -- where and how to reach the engine --------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    url: str
    kind: str = "vllm"
    model: str = ""
    api_key: str | None = field(default=None, repr=False)
    connect_timeout: float = 1.0
    first_token_timeout: float = 3.0
    retries: int = 1
    grammar_dialect: str = "auto"
    max_response_bytes: int = MAX_RESPONSE_BYTES
    """The most one answer may hold (``gdg.limits.remoteResponseBytes``)."""

    @property
    def dialect(self) -> str:
        return DIALECT_OF_KIND[self.kind] if self.grammar_dialect == "auto" else self.grammar_dialect

    @classmethod
    def from_settings(cls, remote: Any, max_response_bytes: int = MAX_RESPONSE_BYTES) -> Endpoint:
        """From ``Settings.remote`` (and ``gdg.limits.remoteResponseBytes``); the API key is read from
        the variable it names. Settings the user did not consent to outside the workspace
        (``gdg_lsp.consent``) are refused."""
        url = (remote.url or "").strip().rstrip("/")
        if not url:
            raise RemoteUnavailableError("gdg.backend is remote but gdg.remote.url is empty (set it to the engine's base URL, e.g. http://gpu-box:8000)")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RemoteUnavailableError(f"gdg.remote.url {url!r} is not an http(s) URL")
        if (why := consent.remote_refusal(url, remote.api_key_env)) is not None:
            raise RemoteUnavailableError(why)  # before any connection, before the key is read
        key = os.environ.get(remote.api_key_env) if remote.api_key_env else None
        return cls(url, remote.kind, remote.model, key or None, remote.connect_timeout_ms / 1000,
                   remote.timeout_ms / 1000, remote.retries, remote.dialect, max_response_bytes)


# -- the prompt's vocabulary -----------------------------------------------------------------

_PIECE = re.compile(r" ?[^\W\d]+| ?\d{1,3}| ?[^\w\s]+|\n[ \t]*|[ \t]+|\s", re.UNICODE)
MAX_PIECE_CHARS = 4
MAX_PIECES = 200_000


class TextVocabulary(Vocabulary):
    """Text split into pieces that approximate a code tokenizer's tokens.

    The engine tokenizes the prompt itself; here pieces only measure the prompt
    budget and give token healing its boundaries (the trailing blanks and the
    partial word). Words are split every 4 characters, so the count errs on
    the long side. Pieces are interned on first sight (ids 0-255 are single
    bytes, used once the table is full), so ids decode back to the exact text.

    ``specials``: the marker tokens the engine's tokenizer has (``fim_support``), each one
    id here, so ``prompt_shapes.detect`` finds the same FIM layout a local tokenizer would;
    the prompt is sent as text, and the engine reads the markers back as its special tokens.
    """

    def __init__(self, specials: tuple[str, ...] = ()) -> None:
        self.token_bytes = [bytes([b]) for b in range(256)]
        self.stop_ids = frozenset()
        self.special_ids = frozenset()
        self._ids: dict[str, int] = {}
        self._lock = threading.Lock()
        self.specials = specials

    def token_id(self, name: str) -> int | None:
        return self._intern(name) if name in self.specials else None

    def encode(self, text: str) -> Encoding:
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        for m in _PIECE.finditer(text):
            start = m.start()
            word = m.group()
            for k in range(0, len(word), MAX_PIECE_CHARS):
                piece = word[k : k + MAX_PIECE_CHARS]
                lo = start + k
                ids_piece = self._intern(piece)
                if ids_piece is not None:
                    ids.append(ids_piece)
                    offsets.append((lo, lo + len(piece)))
                    continue
                for i, ch in enumerate(piece):  # the table is full: one id per byte
                    raw = ch.encode("utf-8")
                    ids.extend(raw)
                    offsets.extend([(lo + i, lo + i)] * (len(raw) - 1) + [(lo + i, lo + i + 1)])
        covered = sum(hi - lo for lo, hi in offsets)
        if covered != len(text):  # the pattern covers every character; keep it honest
            raise ValueError("TextVocabulary lost characters while encoding")
        return Encoding(ids, offsets)

    def _intern(self, piece: str) -> int | None:
        if (known := self._ids.get(piece)) is not None:
            return known
        with self._lock:
            if (known := self._ids.get(piece)) is not None:
                return known
            if len(self.token_bytes) >= MAX_PIECES:
                return None
            self._ids[piece] = len(self.token_bytes)
            self.token_bytes.append(piece.encode("utf-8"))
            return self._ids[piece]



# -- HTTP -------------------------------------------------------------------------------------


class _Stream:
    """One POST whose answer is read on a helper thread, event by event.

    Events: ("chunk", dict) per server-sent event, ("done",) at ``[DONE]`` or
    the end of a non-streamed body, ("http", status, body) for a non-200
    answer, ("error", exception) for a failure. ``close`` shuts the socket:
    the reader stops and the engine sees the client go away.
    """

    def __init__(self, endpoint: Endpoint, path: str, body: dict[str, Any] | None, method: str = "POST") -> None:
        self.endpoint = endpoint
        self.events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._conn: http.client.HTTPConnection | None = None
        self._sock: socket.socket | None = None
        """Held apart from the connection: http.client hands the socket to the response
        (and forgets it) when the server says ``Connection: close``."""
        self._thread = threading.Thread(target=self._run, args=(path, body, method), daemon=True,
                                        name="gdg-remote-stream")
        self._thread.start()

    def _connection(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.endpoint.url)
        timeout = self.endpoint.connect_timeout
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)

    def _run(self, path: str, body: dict[str, Any] | None, method: str) -> None:
        try:
            conn = self._connection()
            conn.connect()
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._conn, self._sock = conn, conn.sock
            conn.sock.settimeout(READ_IDLE_LIMIT)
            prefix = urlsplit(self.endpoint.url).path.rstrip("/")
            headers = {"Content-Type": "application/json", "Accept": "text/event-stream, application/json"}
            if self.endpoint.api_key:
                headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
            payload = json.dumps(body).encode("utf-8") if body is not None else None
            conn.request(method, prefix + path, body=payload, headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                self.events.put(("http", response.status, response.read(8192).decode("utf-8", "replace")))
                return
            declared = response.getheader("Content-Length") or ""
            limit = self.endpoint.max_response_bytes
            if declared.isdigit() and int(declared) > limit:
                raise ResponseTooLarge(self.endpoint.url, limit, int(declared))
            if "text/event-stream" not in (response.getheader("Content-Type") or ""):
                body = response.read(limit + 1)
                if len(body) > limit:
                    raise ResponseTooLarge(self.endpoint.url, limit)
                self.events.put(("chunk", json.loads(body or b"null")))
                self.events.put(("done",))
                return
            left = limit  # for the whole stream: lines and their count alike
            while True:
                line = response.readline(left + 1)
                left -= len(line)
                if left < 0:
                    raise ResponseTooLarge(self.endpoint.url, limit)
                if not line:
                    self.events.put(("error", ConnectionError("the engine closed the stream before it ended")))
                    return
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # blank separators, comments, event names
                data = line[5:].strip()
                if data == b"[DONE]":
                    self.events.put(("done",))
                    return
                self.events.put(("chunk", json.loads(data)))
        except Exception as err:  # noqa: BLE001 - reported to the waiting side
            if not self._closed:
                self.events.put(("error", err))
        finally:
            self.close()

    def next(self, timeout: float) -> tuple | None:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            sock, self._sock = self._sock, None
        if conn is None:
            return
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            conn.close()
        except OSError:
            pass


def _describe(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "connection refused"
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "connection timed out"
    if isinstance(err, socket.gaierror):
        return f"unknown host ({err})"
    return str(err) or type(err).__name__


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:300]
        if "detail" in data:
            return str(data["detail"])[:300]
        return str(error)[:300]
    return str(data)[:300]


def _classify_http(endpoint: Endpoint, status: int, body: str) -> RemoteError:
    message = _error_message(body)
    where = f"the engine at {endpoint.url}"
    if status in (401, 403):
        return RemoteUnavailableError(f"{where} refused the API key (HTTP {status}); set the key in the variable named by gdg.remote.apiKeyEnv")
    if status == 404:
        return RemoteUnavailableError(f"{where} answered 404 ({message}); check gdg.remote.url and gdg.remote.model")
    if 400 <= status < 500 and status != 429:
        return RemoteRejectedError(f"{where} refused the request (HTTP {status}): {message}")
    return RemoteUnavailableError(f"{where} failed (HTTP {status}): {message}")


class EngineClient:
    """The few calls gdg-lsp makes: list models, stream a completion."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def _open(self, path: str, body: dict[str, Any] | None, deadline: float, cancel: threading.Event | None,
              method: str = "POST") -> tuple[_Stream, tuple]:
        """Send, with retries while nothing has arrived; returns the stream and its first event."""
        attempt = 0
        while True:
            stream = _Stream(self.endpoint, path, body, method)
            sent = time.monotonic()
            event = None
            while event is None:
                if cancel is not None and cancel.is_set():
                    stream.close()
                    return stream, ("cancelled",)
                now = time.monotonic()
                if now - sent > self.endpoint.first_token_timeout:
                    stream.close()
                    raise RemoteUnavailableError(
                        f"the engine at {self.endpoint.url} sent nothing within "
                        f"{self.endpoint.first_token_timeout * 1000:.0f} ms (busy or stalled)")
                if now > deadline:  # the request's own budget ran out first: not the engine's fault
                    stream.close()
                    return stream, ("timeout",)
                event = stream.next(POLL_SECONDS)
            error: RemoteError | None = None
            if event[0] == "error" and isinstance(event[1], RemoteError):
                error = event[1]
            elif event[0] == "error":
                error = RemoteUnavailableError(f"cannot reach the engine at {self.endpoint.url}: {_describe(event[1])}")
            elif event[0] == "http":
                error = _classify_http(self.endpoint, event[1], event[2])
            if error is None:
                return stream, event
            retryable = isinstance(error, RemoteUnavailableError) and (event[0] == "error" or event[1] >= 500 or event[1] == 429)
            backoff = 0.1 * 2 ** attempt
            if not retryable or attempt >= self.endpoint.retries or time.monotonic() + backoff > deadline:
                raise error
            log.info("remote engine: %s; retrying in %.1f s", error, backoff)
            attempt += 1
            if cancel is not None and cancel.wait(backoff):
                return stream, ("cancelled",)
            if cancel is None:
                time.sleep(backoff)

    def tokenize(self, text: str, model: str) -> list[int]:
        """The engine's tokens of ``text``, special tokens parsed (vLLM's and llama.cpp's
        ``/tokenize``); ``RemoteError`` when the engine cannot say."""
        if self.endpoint.kind == "vllm":
            body: dict[str, Any] = {"model": model, "prompt": text, "add_special_tokens": False}
        else:
            body = {"content": text, "add_special": False, "parse_special": True}
        deadline = time.monotonic() + self.endpoint.connect_timeout + self.endpoint.first_token_timeout
        stream, event = self._open("/tokenize", body, deadline, None)
        stream.close()
        tokens = event[1].get("tokens") if event[0] == "chunk" and isinstance(event[1], dict) else None
        if not isinstance(tokens, list):
            raise RemoteUnavailableError(f"{self.endpoint.url}/tokenize did not answer with tokens")
        return tokens

    def models(self) -> list[str]:
        deadline = time.monotonic() + self.endpoint.connect_timeout + self.endpoint.first_token_timeout
        stream, event = self._open("/v1/models", None, deadline, None, method="GET")
        stream.close()
        data = event[1] if event[0] == "chunk" else None
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            raise RemoteUnavailableError(f"{self.endpoint.url}/v1/models did not answer with a model list")
        return [str(m.get("id")) for m in data["data"] if isinstance(m, dict) and m.get("id")]

    def completion(self, body: dict[str, Any], deadline: float, cancel: threading.Event | None) -> Iterator[tuple]:
        """Stream one completion: yields ("text", str, finish_reason, usage) per chunk,
        then ends; ("cancelled",) or ("timeout",) when it was cut here.

        Closing the generator closes the connection (the engine aborts the request).
        """
        stream, event = self._open("/v1/completions", body, deadline, cancel)
        try:
            while True:
                if event is None:
                    if cancel is not None and cancel.is_set():
                        yield ("cancelled",)
                        return
                    if time.monotonic() > deadline:
                        yield ("timeout",)
                        return
                    event = stream.next(POLL_SECONDS)
                    continue
                kind = event[0]
                if kind in ("cancelled", "timeout"):
                    yield event
                    return
                if kind == "done":
                    return
                if kind == "error" and isinstance(event[1], RemoteError):
                    raise event[1]
                if kind == "error":
                    raise RemoteUnavailableError(
                        f"the engine at {self.endpoint.url} stopped answering mid-request: {_describe(event[1])}")
                if kind == "http":  # cannot happen after the first event; be explicit anyway
                    raise _classify_http(self.endpoint, event[1], event[2])
                data = event[1]
                if isinstance(data, dict) and "error" in data:
                    raise RemoteRejectedError(f"the engine at {self.endpoint.url} reported: {_error_message(json.dumps(data))}")
                choices = data.get("choices") if isinstance(data, dict) else None
                usage = data.get("usage") if isinstance(data, dict) else None
                if choices:
                    choice = choices[0]
                    yield ("text", choice.get("text") or "", choice.get("finish_reason"), usage)
                elif usage:
                    yield ("text", "", None, usage)
                event = None
        finally:
            stream.close()


# -- the backend and the decoder ---------------------------------------------------------------


class RemoteBackend:
    """A served model on an engine: its name, a text vocabulary for prompts, the client, and
    the request body in the engine's dialect. It decodes whole regions (``decoding/remote``),
    never token by token, so it is not a ``ModelBackend``."""

    device = "remote"

    def __init__(self, endpoint: Endpoint, model: str) -> None:
        self.endpoint = endpoint
        self.client = EngineClient(endpoint)
        self.model = model
        self.name = f"{model} on {endpoint.kind} at {endpoint.url}"
        self.vocab = TextVocabulary()
        self.fim_note = "prefix-only prompts (the engine's tokenizer was not asked)"
        """How the prompt is laid out for the served model, and why (``fim_support``)."""
        self.grammar_vocab = ByteVocabulary()
        """What local grammars are compiled for: they only check the text that comes back."""
        self.stats = BackendStats()

    def request_body(self, prompt: str, grammar: str | None, max_tokens: int, temperature: float,
                     seed: int | None) -> dict[str, Any]:
        endpoint = self.endpoint
        body: dict[str, Any] = {
            "model": self.model, "prompt": prompt, "max_tokens": max_tokens,
            "temperature": temperature, "stream": True,
        }
        if seed is not None:
            body["seed"] = seed
        if endpoint.kind == "vllm":
            body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
            body["add_special_tokens"] = False  # as the local prompt: no BOS in front of the code
            if grammar is not None:
                body["structured_outputs"] = {"grammar": grammar}
        else:
            body["repeat_penalty"] = 1.0  # llama.cpp's default penalises repeats; greedy means greedy
            body["top_k"] = 0 if temperature > 0 else 1
            if grammar is not None:
                # llama.cpp reads GBNF unless the text opens with %llguidance (a build with llguidance)
                body["grammar"] = f"%llguidance {{}}\n{grammar}" if endpoint.dialect == "lark" else grammar
        return body


@dataclass(frozen=True)
class FimSupport:
    """Which FIM markers the served model has, and how that was learnt (said at connect)."""

    markers: tuple[str, ...]
    note: str


class _EngineMarkers(Vocabulary):
    """A vocabulary that knows a token text when the engine's tokenizer makes one token of it,
    for ``prompt_shapes.detect`` to read the family from (asked on use, once per text)."""

    def __init__(self, client: EngineClient, model: str) -> None:
        self.client, self.model = client, model
        self.found: dict[str, int | None] = {}

    def token_id(self, name: str) -> int | None:
        if name not in self.found:
            tokens = self.client.tokenize(name, self.model)
            self.found[name] = int(tokens[0]) if len(tokens) == 1 and isinstance(tokens[0], int) else None
        return self.found[name]


def fim_support(client: EngineClient, model: str) -> FimSupport:
    """The served model's FIM markers: from the engine's own tokenizer (``/tokenize``: each
    marker must be one token), else from the served model's name, else none (prefix-only)."""
    from gdg_lsp import prompt_shapes

    asked = _EngineMarkers(client, model)
    try:
        template = prompt_shapes.detect(asked)
    except RemoteError as err:
        family = prompt_shapes.family_for_model_name(model)
        if family is None:
            return FimSupport((), f"prefix-only prompts: the engine's tokenizer could not be asked ({err}) and "
                                  f"the name {model!r} is of no known fill-in-the-middle family")
        return FimSupport(prompt_shapes.marker_texts(family),
                          f"fill-in-the-middle as {family.name}, from the served model's name {model!r} (the "
                          f"engine's tokenizer could not be asked: {err})")
    if template is None:
        return FimSupport((), "prefix-only prompts: the engine's tokenizer has no fill-in-the-middle tokens")
    markers = tuple(name for name, token in asked.found.items() if token is not None)
    return FimSupport(markers, f"fill-in-the-middle as {template.family}, from the engine's tokenizer")


def connect(endpoint: Endpoint, probe: bool = True) -> RemoteBackend:
    """Check the engine before using it: it answers, serves the model, and applies grammars.

    The probe asks for a completion under a grammar that allows only ``42``:
    an engine (or a proxy) that ignores grammars answers something else and is
    not used.
    """
    served = EngineClient(endpoint).models()
    model = endpoint.model or (served[0] if served else "")
    if not model:
        raise RemoteUnavailableError(f"the engine at {endpoint.url} serves no model")
    if endpoint.model and endpoint.model not in served:
        raise RemoteUnavailableError(
            f"the engine at {endpoint.url} does not serve {endpoint.model!r} (it serves {', '.join(served) or 'nothing'})")
    backend = RemoteBackend(endpoint, model)
    if probe:
        body = backend.request_body("The answer is ", PROBE_GRAMMARS[endpoint.dialect], max_tokens=8, temperature=0.0,
                                    seed=None)
        deadline = time.monotonic() + endpoint.connect_timeout + endpoint.first_token_timeout + 5.0
        text, finish = "", None
        for event in backend.client.completion(body, deadline, None):
            if event[0] != "text":
                break
            text += event[1]
            finish = event[2] or finish
        if text != "42":
            raise RemoteUnavailableError(
                f"the engine at {endpoint.url} does not apply grammars: under a grammar that allows only '42' it "
                f"answered {text[:40]!r}. Run vLLM with --structured-outputs-config.backend xgrammar or guidance (or "
                f"the llama.cpp server) and set gdg.remote.kind and gdg.remote.dialect to match ({endpoint.kind!r}, "
                f"{endpoint.grammar_dialect!r} now)")
    support = fim_support(backend.client, model)
    backend.vocab, backend.fim_note = TextVocabulary(support.markers), support.note
    log.info("remote engine %s: %s", backend.name, support.note)
    return backend
