"""Decoding a region on a shared engine: the grammar it is sent, and the local re-check of what comes back.

See ``backends/remote.py`` for how the engine is reached. Per region (one
statement) ``RemoteDecoder`` sends one streaming request whose grammar is the
instantiated grammar derived by the text already typed in the region and
prefixed with the healed text, in the engine's dialect, parsed by the local
engine that reads that dialect first; every piece of text that comes back is fed to a local matcher, and a
piece the grammar rejects drops the suggestion.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from gdg_lsp.backends.remote import (
    STOP_REFUSED,
    STOP_REJECTED,
    STOP_UNSENDABLE,
    RemoteBackend,
    RemoteRejectedError,
)
from gdg_lsp.caches import BoundedCache
from gdg_lsp.decoding.engine import (
    NATURAL_STOPS,
    STOP_CANCELLED,
    STOP_EOS,
    STOP_GRAMMAR,
    STOP_MAX_TOKENS,
    STOP_NEWLINE,
    STOP_TIMEOUT,
    DecodeResult,
    DecodeSpec,
)
from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.grammar import continuation, dialects
from gdg_lsp.grammar.engine import Grammar, Matcher, grammar_key, grammar_rules

log = logging.getLogger(__name__)


@dataclass
class _Check:
    """The local matcher fed with what the engine sends, as it arrives."""

    matcher: Matcher | None
    end_marker: str
    last_complete: int | None = None  # chars of generated text where the region could have ended
    failure: str | None = None

    def feed(self, text: str) -> bool:
        if self.matcher is None or not text:
            return True
        if not self.matcher.accept_text(text):
            self.failure = f"the grammar does not allow {text!r} here"
            return False
        return True

    def could_end(self) -> bool:
        return self.matcher is not None and self.matcher.could_end_with(self.end_marker.encode("utf-8"))


class RemoteDecoder:
    """``decode(DecodeSpec) -> DecodeResult`` through the engine (one request per region)."""

    def __init__(self, backend: RemoteBackend, cache_size: int = 16) -> None:
        self.backend = backend
        self.vocab = backend.vocab
        self.dialect = backend.endpoint.dialect
        self._parsed: BoundedCache[str, continuation.Continuations] = BoundedCache("remote.grammars", cache_size)
        self._sent: BoundedCache[tuple, str] = BoundedCache("remote.sent-grammars", 4 * cache_size)
        self._lock = threading.Lock()

    # -- the grammar to send ----------------------------------------------------------------

    def _algebra(self, source: Grammar | None) -> continuation.Continuations:
        key = grammar_key(source) if source is not None else ""
        algebra = self._parsed.get(key)
        if algebra is None or len(algebra.rules) > 50_000:  # bound what one grammar's derivatives hold
            rules = grammar_rules(source) if source is not None else {"root": _ANY_TEXT}
            algebra = self._parsed.put(key, continuation.Continuations(rules))
        return algebra

    def request_grammar(self, source: Grammar | None, typed: str, heal: str, no_blank_start: bool,
                        avoid_start: str = "") -> str:
        """The grammar to send (``continuation.request_grammar``), in the engine's dialect,
        parsed locally first."""
        key = (grammar_key(source) if source is not None else None, typed, heal, no_blank_start, avoid_start)
        with self._lock:
            if (known := self._sent.get(key)) is not None:
                return known
            algebra = self._algebra(source)
            root = algebra.after(typed, heal, no_blank_start, avoid_start)
            text = dialects.render(algebra.grammar(root), self.dialect)  # type: ignore[arg-type]
            dialects.validate(text, self.dialect)
            return self._sent.put(key, text)

    # -- one region -------------------------------------------------------------------------

    def decode(self, spec: DecodeSpec) -> DecodeResult:
        began = time.perf_counter()
        prompt = self.vocab.decode(spec.prompt_ids)
        heal = spec.heal
        outside = spec.heal_outside
        typed = spec.replay + heal[outside:]
        no_blank = not spec.region_may_start_blank and not typed
        try:
            grammar_text = self.request_grammar(spec.grammar.source if spec.grammar is not None else None,
                                                typed, heal, no_blank, spec.avoid_start)
        except GrammarError as err:
            log.error("not sending the grammar to the engine: %s", err)
            return self._empty(STOP_UNSENDABLE, began)
        grammar_seconds = time.perf_counter() - began

        check = _Check(spec.grammar.matcher() if spec.grammar is not None else None, spec.end_marker)
        if check.matcher is not None and not check.feed(typed):
            raise ValueError(f"the grammar does not accept the typed text {typed!r}")

        body = self.backend.request_body(prompt, grammar_text, spec.max_tokens, spec.temperature, spec.seed)
        deadline = spec.deadline if spec.deadline is not None else time.monotonic() + 600.0
        produced = ""  # heal + generated
        stop = STOP_MAX_TOKENS
        chunks = 0
        usage_tokens: int | None = None
        first_at: float | None = None
        check_seconds = 0.0
        request_began = time.perf_counter()
        events = self.backend.client.completion(body, deadline, spec.cancel)
        try:
            for event in events:
                if event[0] == "cancelled":
                    stop = STOP_CANCELLED
                    break
                if event[0] == "timeout":
                    stop = STOP_TIMEOUT
                    break
                _, text, finish, usage = event
                if usage and isinstance(usage.get("completion_tokens"), int):
                    usage_tokens = usage["completion_tokens"]
                if text:
                    if first_at is None:
                        first_at = time.perf_counter()
                    chunks += 1
                    checked = time.perf_counter()
                    before = len(produced)
                    produced += text
                    region_piece, ended = self._region_piece(produced, before, heal, outside)
                    ok = check.feed(region_piece)
                    if ok and len(produced) < len(heal) and not heal.startswith(produced):
                        ok, check.failure = False, f"the answer does not start with the healed text {heal!r}"
                    if ok and len(produced) >= len(heal) and not produced.startswith(heal):
                        ok, check.failure = False, f"the answer does not start with the healed text {heal!r}"
                    if ok and not ended and len(produced) >= len(heal) and check.could_end():
                        check.last_complete = len(produced) - len(heal)
                    check_seconds += time.perf_counter() - checked
                    if not ok:
                        stop = STOP_REJECTED
                        break
                    if ended:
                        stop = STOP_NEWLINE
                        break
                if finish:
                    stop = STOP_MAX_TOKENS if finish == "length" else STOP_EOS
                    break
        except RemoteRejectedError as err:
            log.warning("remote engine refused a request: %s", err)
            return self._empty(STOP_REFUSED, began)
        finally:
            events.close()  # closes the connection: the engine stops generating
        request_seconds = time.perf_counter() - request_began

        generated = produced[len(heal):] if len(produced) >= len(heal) else ""
        if stop == STOP_EOS:
            if check.matcher is not None and not check.matcher.is_complete():
                stop, check.failure = STOP_REJECTED, "the engine stopped where the grammar cannot end"
            elif check.matcher is not None:
                stop = STOP_GRAMMAR
        if stop == STOP_REJECTED:
            log.warning("dropped the remote suggestion %r: %s", produced[:120], check.failure)
            return self._empty(STOP_REJECTED, began, steps=usage_tokens or chunks)
        text, layout = generated, ""
        if stop == STOP_NEWLINE:
            line, rest = generated.split("\n", 1)
            text, layout = line, rest if not rest.strip() else ""
            generated = line + "\n" + layout
        complete_text = None
        if check.matcher is not None and stop not in NATURAL_STOPS:
            complete_text = generated[: check.last_complete] if check.last_complete is not None else ""
        region = spec.replay + (heal + generated)[outside:]
        steps = usage_tokens if usage_tokens is not None else chunks
        self.backend.stats.steps += steps
        self.backend.stats.model_seconds += request_seconds
        return DecodeResult(
            text=text,
            region_text=region,
            stop_reason=stop,
            token_ids=self.vocab.encode(heal + generated).ids,
            free_bits=0.0,  # the engine does not say how many tokens the mask allowed
            logprob=None,  # nor how likely its tokens were (candidates from it rank by the checks alone)
            steps=steps,
            prefill_seconds=(first_at - request_began) if first_at is not None else request_seconds,
            model_seconds=request_seconds,
            mask_seconds=grammar_seconds + check_seconds,
            total_seconds=time.perf_counter() - began,
            trailing_layout=layout,
            line_continues=stop == STOP_NEWLINE and check.matcher is not None and not check.matcher.is_complete(),
            complete_text=complete_text,
        )

    @staticmethod
    def _region_piece(produced: str, before: int, heal: str, outside: int) -> tuple[str, bool]:
        """What of ``produced[before:]`` the local matcher must read, and whether the
        region's line ended in it (a newline after the healed text)."""
        start = max(before, outside)
        piece = produced[start:]
        newline = produced.find("\n", max(before, len(heal)))
        if newline < 0:
            return piece, False
        # read through the blanks after the newline (the next line's indentation) and no further
        end = newline + 1
        while end < len(produced) and produced[end] in " \t\n":
            end += 1
        return produced[start:end], True

    def _empty(self, stop: str, began: float, steps: int = 0) -> DecodeResult:
        seconds = time.perf_counter() - began
        return DecodeResult(text="", region_text="", stop_reason=stop, steps=steps, total_seconds=seconds,
                            complete_text="")


_ANY_TEXT = ebnf.Repeat(ebnf.CharClass("[^\\u0000]"), 0, None)
"""Unconstrained text (the ``none`` arm), still led by the healed text."""
