"""An OpenAI-compatible completions server in-process, standing in for vLLM or llama.cpp.

It serves ``GET /v1/models`` and streamed ``POST /v1/completions`` the way the
real engines do (server-sent events, ``data: [DONE]``), and reads the grammar
from the field the configured kind uses (vLLM: ``structured_outputs.grammar``;
llama.cpp: ``grammar``). Behaviours (``engine.mode``), switchable mid-test:

- ``grammar``: a random "model" under the grammar's mask: the grammar is
  compiled over a one-byte-per-token vocabulary (by XGrammar, or by llguidance
  when it is Lark: vLLM's ``guidance`` backend, or llama.cpp's ``%llguidance``)
  and each byte is drawn at random among the allowed ones (a newline or the end
  is preferred when allowed, so lines end). Like a random-weight model behind a
  correct engine.
- ``ignore``: a proxy that strips the grammar: adversarial text (names that
  are not in any Γ, random bytes), except for the connection probe grammar
  ``root ::= "42"`` when ``honour_probe`` is set (a server that fools the probe).
- ``mixed``: each request is ``grammar`` or ``ignore`` at random.
- ``hang``: accepts the request and never answers.
- ``die``: sends a few chunks, then closes the connection (the engine killed mid-request).
- ``error``: answers HTTP 500.
- ``slow``: streams a chunk every ``slow_seconds``; records when the client goes away.

Every request body is kept in ``requests`` for assertions.

``POST /tokenize`` answers as the kind does (vLLM: ``prompt``; llama.cpp: ``content``) when
``special_tokens`` is set: each of its texts is one token, anything else a token per byte;
``special_tokens = None`` is an engine without the route (404).
"""

from __future__ import annotations

import codecs
import json
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import llguidance
import numpy as np
import torch
import xgrammar as xgr

GHOSTS = ["ghost_name", "undefined_thing(ghost)", "os.system('x')", "SELECT nope FROM nowhere", "zz9", "\x00\x01"]
STOP = 0
PROBES = ('root ::= "42"', 'start: "42"', '%llguidance {}\nstart: "42"')  # the grammars gdg-lsp probes an engine with


def is_lark(grammar: str) -> bool:
    """Lark (llguidance's dialect) rather than EBNF/GBNF: how vLLM's guidance backend tells them apart."""
    head = grammar.lstrip()
    return head.startswith("%llguidance") or ("::=" not in grammar and ":" in head.split("\n", 1)[0])


class _ByteGrammars:
    """Grammars over bytes 1..255 plus a stop token (id 0): EBNF/GBNF by XGrammar, Lark by llguidance."""

    def __init__(self) -> None:
        encoded = [b"</s>", *(bytes([b]) for b in range(1, 256))]
        self.info = xgr.TokenizerInfo(encoded, vocab_type=xgr.VocabType.RAW, stop_token_ids=[STOP])
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1)
        self.tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteWrapper(encoded)), n_vocab=256,
                                                eos_token=STOP)
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def compiled(self, text: str):
        with self._lock:
            if text not in self._cache:
                if is_lark(text):
                    matcher = llguidance.LLMatcher(self.tokenizer, text, log_level=0)
                    if matcher.is_error():
                        raise ValueError(matcher.get_error()[:300])
                    self._cache[text] = matcher
                else:
                    self._cache[text] = self.compiler.compile_grammar(xgr.Grammar.from_ebnf(text))
            return self._cache[text]

    def matcher(self, text: str) -> _Matcher:
        compiled = self.compiled(text)
        if isinstance(compiled, llguidance.LLMatcher):
            return _LarkMatcher(compiled.deep_copy())
        return _EbnfMatcher(xgr.GrammarMatcher(compiled))


class _ByteWrapper:
    def __init__(self, tokens: list[bytes]) -> None:
        self.tokens, self.eos_token_id, self.bos_token_id, self.special_token_ids = tokens, STOP, None, [STOP]

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text.encode() if isinstance(text, str) else text)


class _Matcher:
    def allowed(self) -> list[int]: ...
    def accept(self, token: int) -> bool: ...


class _EbnfMatcher(_Matcher):
    def __init__(self, matcher: xgr.GrammarMatcher) -> None:
        self.m = matcher
        self.bitmask = xgr.allocate_token_bitmask(1, 256)

    def allowed(self) -> list[int]:
        self.m.fill_next_token_bitmask(self.bitmask)
        return np.flatnonzero(np.unpackbits(self.bitmask.numpy().view(np.uint8), bitorder="little")[:256]).tolist()

    def accept(self, token: int) -> bool:
        return self.m.accept_token(token)


class _LarkMatcher(_Matcher):
    def __init__(self, matcher: llguidance.LLMatcher) -> None:
        self.m = matcher
        self.bitmask = torch.zeros((1, 8), dtype=torch.int32)

    def allowed(self) -> list[int]:
        if self.m.is_stopped():
            return [STOP] if self.m.is_accepting() else []
        self.m.unsafe_compute_mask_ptr(self.bitmask.data_ptr(), 32)
        if self.m.is_error():  # no byte extends the text
            return [STOP] if self.m.is_accepting() else []
        return np.flatnonzero(np.unpackbits(self.bitmask.numpy().view(np.uint8), bitorder="little")[:256]).tolist()

    def accept(self, token: int) -> bool:
        return self.m.consume_token(token)


def matches(grammar: str, text: str, complete: bool) -> bool:
    """Whether ``text`` is a string (``complete``) or a prefix of one of ``grammar``, as the engine reads it."""
    matcher = BYTE_GRAMMARS.matcher(grammar)
    for byte in text.encode():
        if byte not in matcher.allowed() or not matcher.accept(byte):
            return False
    return not complete or STOP in matcher.allowed()


class FakeEngine:
    def __init__(self, kind: str = "vllm", mode: str = "grammar", model: str = "fake-model", seed: int = 0,
                 api_key: str | None = None) -> None:
        self.kind = kind
        self.mode = mode
        self.model = model
        self.api_key = api_key
        self.honour_probe = True
        self.llguidance_build = True  # a llama.cpp built with -DLLAMA_LLGUIDANCE=ON
        self.slow_seconds = 0.2
        self.delay = 0.0  # seconds between chunks in the other modes
        self.in_flight = 0
        self.max_in_flight = 0
        self._count = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.client_gone = threading.Event()
        self.rng = random.Random(seed)
        self.grammars = BYTE_GRAMMARS
        self.grammar_errors: list[str] = []
        self.special_tokens: tuple[str, ...] | None = None
        self.tokenized: list[dict[str, Any]] = []
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                return None

            def do_GET(self) -> None:
                if not engine._authorised(self):
                    return
                if self.path.rstrip("/") == "/v1/models":
                    engine._json(self, 200, {"object": "list", "data": [{"id": engine.model, "object": "model"}]})
                else:
                    engine._json(self, 404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not engine._authorised(self):
                    return
                if self.path.rstrip("/") == "/tokenize" and engine.special_tokens is not None:
                    engine.tokenized.append(body)
                    engine._json(self, 200, engine._tokenize(body))
                    return
                if self.path.rstrip("/") != "/v1/completions":
                    engine._json(self, 404, {"error": {"message": f"no route {self.path}"}})
                    return
                engine.requests.append(body)
                with engine._count:
                    engine.in_flight += 1
                    engine.max_in_flight = max(engine.max_in_flight, engine.in_flight)
                try:
                    engine._complete(self, body)
                finally:
                    with engine._count:
                        engine.in_flight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # -- lifecycle ---------------------------------------------------------------------------

    def stop(self) -> None:
        """The engine goes away: the listening socket closes (later connections are refused)."""
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeEngine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- answers -----------------------------------------------------------------------------

    def _authorised(self, handler: BaseHTTPRequestHandler) -> bool:
        if self.api_key is None or handler.headers.get("Authorization") == f"Bearer {self.api_key}":
            return True
        self._json(handler, 401, {"error": {"message": "invalid API key"}})
        return False

    @staticmethod
    def _json(handler: BaseHTTPRequestHandler, status: int, data: Any) -> None:
        payload = json.dumps(data).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def _tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        text = str(body.get("prompt" if self.kind == "vllm" else "content") or "")
        specials = self.special_tokens or ()
        tokens = [1000 + specials.index(text)] if text in specials else list(text.encode())
        return {"count": len(tokens), "tokens": tokens} if self.kind == "vllm" else {"tokens": tokens}

    def grammar_of(self, body: dict[str, Any]) -> str | None:
        if self.kind == "vllm":
            return (body.get("structured_outputs") or {}).get("grammar")
        return body.get("grammar")

    def _complete(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        mode = self.mode
        if mode == "mixed":
            mode = self.rng.choice(["grammar", "ignore"])
        if mode == "error":
            self._json(handler, 500, {"error": {"message": "engine exploded"}})
            return
        if mode == "hang":
            time.sleep(30)
            return
        grammar = self.grammar_of(body)
        if self.kind == "llamacpp" and (grammar or "").startswith("%llguidance") and not self.llguidance_build:
            self._json(handler, 400, {"error": {"message": "failed to parse grammar (built without llguidance)"}})
            return
        max_tokens = int(body.get("max_tokens") or 16)
        if mode == "slow":  # a long generation that streams at once, slowly (its text does not matter)
            pieces: list[tuple[str, str | None]] = [("", None)] * 50 + [("", "length")]
        elif mode == "ignore" and not (self.honour_probe and (grammar or "").strip() in PROBES):
            pieces = self._adversarial(max_tokens)
        else:
            try:
                pieces = self._sample(grammar, max_tokens)
            except Exception as err:  # noqa: BLE001 - a real engine answers 400 to a bad grammar
                self.grammar_errors.append(str(err))
                self._json(handler, 400, {"error": {"message": f"invalid grammar: {err}"}})
                return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            for index, (text, finish) in enumerate(pieces):
                if mode == "die" and index == 2:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    return
                time.sleep(self.slow_seconds if mode == "slow" else self.delay)
                chunk = {"id": "cmpl-fake", "object": "text_completion", "model": self.model,
                         "choices": [{"index": 0, "text": text, "finish_reason": finish}]}
                handler.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                handler.wfile.flush()
            handler.wfile.write(b"data: [DONE]\n\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.client_gone.set()
        handler.close_connection = True

    def _adversarial(self, max_tokens: int) -> list[tuple[str, str | None]]:
        text = self.rng.choice(GHOSTS) + self.rng.choice([" = ", "(", "\n", ""]) + self.rng.choice(GHOSTS)
        text += "".join(chr(self.rng.randrange(32, 127)) for _ in range(self.rng.randrange(0, 6)))
        text = text[: max(max_tokens, 1)]
        return [(text[i : i + 3], None) for i in range(0, len(text), 3)] + [("", "stop")]

    def _sample(self, grammar: str | None, max_tokens: int) -> list[tuple[str, str | None]]:
        """Random bytes under the grammar's mask, streamed three characters at a time."""
        if grammar is None:
            return [("".join(self.rng.choice("abc xyz()=\n") for _ in range(max_tokens)), "length")]
        text, completed = sample(self.grammars, grammar, self.rng, max_tokens)
        return [(text[i : i + 3], None) for i in range(0, len(text), 3)] + [("", "stop" if completed else "length")]


BYTE_GRAMMARS = _ByteGrammars()


def sample(grammars: _ByteGrammars, grammar: str, rng: random.Random, max_bytes: int,
           newline_bias: float = 0.3, stop_bias: float = 0.4, closers: str = ";)*") -> tuple[str, bool]:
    """A random string under ``grammar``: (text, True) when the grammar ended it, (text, False)
    when ``max_bytes`` ran out first (a character cut there is held back, as engines'
    detokenizers do). Like a model that likes to finish, it picks one of ``closers``
    half the time when the grammar allows one."""
    closing = {ord(c) for c in closers}
    matcher = grammars.matcher(grammar)
    decoder = codecs.getincrementaldecoder("utf-8")()
    text = ""
    for _ in range(max_bytes):
        allowed = matcher.allowed()
        if not allowed or (STOP in allowed and (allowed == [STOP] or rng.random() < stop_bias)):
            return text, True
        if 10 in allowed and rng.random() < newline_bias:
            token = 10
        elif closing.intersection(allowed) and rng.random() < 0.5:
            token = rng.choice(sorted(closing.intersection(allowed)))
        else:
            # 0xED leads UTF-8 surrogates, which XGrammar's negated classes allow and no text holds
            choices = [t for t in allowed if t not in (STOP, 0xED)]
            if not choices:
                return text, False
            token = rng.choice(choices)
        if not matcher.accept(token):
            raise AssertionError("the engine refused a token its own mask allowed")
        text += decoder.decode(bytes([token]))  # token t is the byte t
    return text, False
