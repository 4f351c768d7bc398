"""CompletionService: the one place that turns (document, position, settings) into a suggestion.

The LSP server, ``gdg-lsp complete``/``explain`` and the benchmarks all call
it, so what is measured is what users get. It is synchronous and meant to run
on one worker thread: it owns the model backend (and its KV cache).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp import languages
from gdg_lsp.backends.base import ModelBackend, stats_of
from gdg_lsp.backends.lean.batching import SlotPool
from gdg_lsp.decoding import healing
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Execution, Executor, Prompt
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import Analyzer, Hole, NoHole, WorkspaceContext
from gdg_lsp.settings import Settings

WINDOW_QUANTUM = 16
"""The prompt window starts on a multiple of this many lines, so that successive
requests in one region share their prompt prefix (and the model's KV cache)."""


@dataclass
class Suggestion:
    text: str
    start: int
    end: int
    language: str
    constraint: str
    rung: str | None = None
    stop_reason: str = ""
    reason: str | None = None
    """Why there is no suggestion, when ``text`` is empty."""
    hole: Hole | None = None
    execution: Execution | None = None
    prompt_tokens: int = 0
    reused_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def open_positions(self) -> list[str]:
        """Reference positions in the text that no Γ-slot covered (an attribute of a value
        of unknown type, a keyword of an unknown callee)."""
        return self.execution.open_positions if self.execution else []

    @property
    def guaranteed(self) -> bool:
        """Every reference position of the suggestion was a Γ-slot (or checked by the analyzer)."""
        return self.rung in ("pin", "ctx", "gamma") and not self.open_positions

    def coverage(self) -> dict[str, Any]:
        """What the rung covered: counts of slotted and checked reference positions, the open ones."""
        kept = [s.coverage for s in (self.execution.statements if self.execution else []) if s.text and s.coverage]
        return {"slotted": sum(c.slotted for c in kept), "checked": sum(c.checked for c in kept),
                "open": self.open_positions}

    @property
    def tokens(self) -> int:
        return self.execution.tokens if self.execution else 0

    @property
    def free_bits(self) -> float | None:
        """None when the decode did not count the allowed tokens (the default)."""
        return self.execution.free_bits if self.execution else 0.0

    def summary(self) -> dict[str, Any]:
        """The debug data the server and ``--json`` expose."""
        return {
            "text": self.text,
            "language": self.language,
            "constraint": self.constraint,
            "rung": self.rung,
            "guaranteed": self.guaranteed,
            "openPositions": self.open_positions,
            "coverage": self.coverage(),
            "stopReason": self.stop_reason,
            "reason": self.reason,
            "holeSort": self.hole.sort if self.hole else None,
            "gammaSize": len(self.hole.gamma) if self.hole else 0,
            "tokens": self.tokens,
            "freeBits": round(self.free_bits, 2) if self.free_bits is not None else None,
            "promptTokens": self.prompt_tokens,
            "reusedTokens": self.reused_tokens,
            "timingsMs": {k: round(v * 1000, 2) for k, v in self.timings.items()},
        }


def window_start(text: str, cursor: int, floor: int, max_chars: int) -> int:
    """Start of the prompt window: a line start at most ``max_chars`` before the
    cursor, rounded forward to a multiple of WINDOW_QUANTUM lines, never after
    ``floor`` (the start of the hole's first line)."""
    lo = max(0, cursor - max_chars)
    start = 0 if lo == 0 else text.find("\n", lo - 1, cursor) + 1
    if lo and start == 0:  # no line break in reach: the window is the line itself
        start = text.rfind("\n", 0, cursor) + 1
    line_no = text.count("\n", 0, start)
    for _ in range(-(-line_no // WINDOW_QUANTUM) * WINDOW_QUANTUM - line_no):
        nxt = text.find("\n", start, cursor)
        if nxt < 0:
            break
        start = nxt + 1
    return min(start, floor)


class CompletionService:
    def __init__(self, backend: ModelBackend, workspace: WorkspaceContext | None = None, decoder: Any = None) -> None:
        """``decoder``: what runs each region (default: the local masked loop over
        ``backend``); a remote engine passes its own (gdg_lsp.backends.remote)."""
        self.grammars = GrammarCache(backend.vocab)  # shared: it is thread-safe
        self.workspace = workspace or WorkspaceContext()
        self._lock = threading.Lock()
        self._use(backend, decoder)

    def _use(self, backend: ModelBackend, decoder: Any = None) -> None:
        self.backend = backend
        self.vocab = backend.vocab
        # a pool of sequence slots (decoding/batching.py): requests run concurrently, one slot each
        self._pool = backend if decoder is None and isinstance(backend, SlotPool) else None
        self.decoder = decoder if decoder is not None else (None if self._pool is not None else Decoder(backend))
        self._slot_decoders: dict[int, Decoder] = {}  # a Decoder holds per-request buffers: one per slot

    def use_backend(self, backend: ModelBackend) -> None:
        """Decode with ``backend`` from now on (same model, another batching: ``build.rebatch``);
        the compiled grammars are kept. Only while no request runs."""
        self.close()
        self._use(backend)

    @property
    def concurrency(self) -> int:
        """How many ``complete`` calls can decode at once (the decode worker runs that many)."""
        return self._pool.size if self._pool is not None else 1

    @property
    def model(self) -> str:
        return self.backend.name

    @property
    def device(self) -> str:
        return getattr(self.backend, "device", "cpu")

    def model_steps(self) -> int:
        """Model forwards so far: the pool's batched passes, or the backend's steps."""
        return self._pool.passes if self._pool is not None else stats_of(self.backend).steps

    def close(self) -> None:
        """Release the batching threads (requests waiting on a slot end with an error)."""
        if self._pool is not None:
            self._pool.close()

    def analyzer_for(self, snapshot: Snapshot) -> Analyzer:
        return languages.analyzer(snapshot.language_id, snapshot.text)

    def complete(
        self,
        snapshot: Snapshot,
        offset: int,
        settings: Settings,
        cancel: threading.Event | None = None,
        measure_free_bits: bool = False,
    ) -> Suggestion:
        """``measure_free_bits``: count the allowed tokens at every step (a whole
        mask per token: benchmarks and explain); otherwise the model's choice is
        checked first and the mask built only when the grammar refuses it."""
        if self._pool is not None:
            # the document's own slot if it is free: its next request reuses its KV prefix
            with self._pool.lease(snapshot.uri) as slot:
                decoder = self._slot_decoders.get(slot.index)
                if decoder is None:
                    decoder = self._slot_decoders[slot.index] = Decoder(slot)
                return self._complete(snapshot, offset, settings, cancel, measure_free_bits, slot, decoder)
        with self._lock:  # one decode at a time: the backend's KV cache is shared
            return self._complete(snapshot, offset, settings, cancel, measure_free_bits, self.backend, self.decoder)

    def _complete(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: threading.Event | None,
                  measure_free_bits: bool, backend: Any, decoder: Any) -> Suggestion:
        began = time.perf_counter()
        deadline = time.monotonic() + settings.timeout_ms / 1000
        analyzer = self.analyzer_for(snapshot)
        hole = analyzer.hole_at(snapshot, offset, self.workspace)
        analysed = time.perf_counter()
        if isinstance(hole, NoHole):
            return Suggestion("", offset, offset, analyzer.name, settings.constraint, reason=hole.reason,
                              timings={"analysis": analysed - began, "total": analysed - began})
        prompt, prompt_tokens = self._prompt(snapshot, hole, analyzer, settings)
        prompted = time.perf_counter()
        reused_before = stats_of(backend).reused_tokens
        execution = Executor(analyzer, decoder, self.grammars).run(
            hole, prompt, settings.constraint, settings.max_tokens, settings.max_lines, deadline, cancel,
            measure_free_bits=measure_free_bits,
        )
        done = time.perf_counter()
        reused = stats_of(backend).reused_tokens - reused_before
        reason = None
        if not execution.text:
            dropped = [s.dropped for s in execution.statements if s.dropped]
            reason = dropped[0] if dropped else f"the model produced nothing ({execution.stop_reason})"
        return Suggestion(
            text=execution.text, start=hole.cursor, end=hole.replace_end, language=analyzer.name,
            constraint=settings.constraint, rung=execution.rung, stop_reason=execution.stop_reason,
            reason=reason, hole=hole, execution=execution, prompt_tokens=prompt_tokens, reused_tokens=reused,
            timings={"analysis": analysed - began, "prompt": prompted - analysed, "decode": done - prompted,
                     "total": done - began},
        )

    def _prompt(self, snapshot: Snapshot, hole: Hole, analyzer: Analyzer, settings: Settings) -> tuple[Prompt, int]:
        text = snapshot.text
        context = analyzer.prompt_context(snapshot, hole, self.workspace)
        line_start = text.rfind("\n", 0, hole.cursor) + 1
        region_line = text.rfind("\n", 0, hole.region_start) + 1
        budget_chars = settings.context_tokens * 3
        start = window_start(text, hole.cursor, region_line, max(budget_chars - len(context), 256))
        body = text[start : hole.cursor]
        prompt_text = context + body
        encoding = self.vocab.encode(prompt_text)
        while len(encoding.ids) > settings.context_tokens and start < region_line:
            # the character estimate was generous: drop whole quanta of lines
            cut = body.find("\n", 0)
            for _ in range(WINDOW_QUANTUM - 1):
                nxt = body.find("\n", cut + 1)
                if nxt < 0 or start + nxt + 1 > region_line:
                    break
                cut = nxt
            if cut < 0:
                break
            start += cut + 1
            body = text[start : hole.cursor]
            prompt_text = context + body
            encoding = self.vocab.encode(prompt_text)
        region_p = len(context) + hole.region_start - start
        floor = len(context) + line_start - start if hole.region_start < line_start else 0
        split = healing.split(prompt_text, encoding, self.vocab, floor=floor)
        if split.heal_start >= region_p:
            replay = analyzer.replay_text(prompt_text[region_p : split.heal_start])
            outside = 0
        else:
            replay, outside = "", region_p - split.heal_start
        return Prompt(split.ids, split.heal_text, outside, replay), len(split.ids)
