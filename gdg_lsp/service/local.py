"""CompletionService: the one place that turns (document, position, settings) into a suggestion.

The LSP server, ``gdg-lsp complete``/``explain`` and the benchmarks all call
it, so what is measured is what users get. It is synchronous and meant to run
on one worker thread: it owns the model backend (and its KV cache).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp import languages, prompt_shapes
from gdg_lsp.backends.base import ModelBackend, stats_of
from gdg_lsp.backends.lean.batching import SlotPool
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Execution, Executor
from gdg_lsp.grammar import engine as grammar_engines
from gdg_lsp.grammar.engine import GrammarEngine
from gdg_lsp.languages.base import Analyzer, Hole, NoHole, WorkspaceContext
from gdg_lsp.service import candidates, suffix
from gdg_lsp.service import prompt as prompts
from gdg_lsp.service.candidates import Candidate
from gdg_lsp.service.fragment_library import Authored, authored
from gdg_lsp.settings import Settings


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
    prompt_template: str = prompt_shapes.PREFIX_ONLY
    """The FIM family whose layout the prompt used, or prefix-only."""
    suffix_tokens: int = 0
    """Tokens of text after the cursor in the prompt (FIM models only)."""
    reused_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    """Every distinct candidate, best first (``text`` is the first one's); one unless ``gdg.candidates`` > 1."""
    authored: Authored | None = None
    """Decoded under a fragment from a user's file: that file, and the words of the suggestion its
    template wrote itself (no Γ slot vouches for them)."""

    @property
    def open_positions(self) -> list[str]:
        """Reference positions in the text that no Γ-slot covered (an attribute of a value
        of unknown type, a keyword of an unknown callee)."""
        return self.execution.open_positions if self.execution else []

    @property
    def guaranteed(self) -> bool:
        """Every reference position of the suggestion was a Γ-slot (or checked by the analyzer), and
        no word of it is a user's fragment file's own text (only Γ slots are a guarantee)."""
        return self.rung in ("pin", "ctx", "gamma") and not self.open_positions and \
            not (self.authored is not None and self.authored.words)

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
            "fragmentText": self.authored.summary() if self.authored is not None else None,
            "coverage": self.coverage(),
            "stopReason": self.stop_reason,
            "reason": self.reason,
            "holeSort": self.hole.sort if self.hole else None,
            "gammaSize": len(self.hole.gamma) if self.hole else 0,
            "tokens": self.tokens,
            "freeBits": round(self.free_bits, 2) if self.free_bits is not None else None,
            "promptTokens": self.prompt_tokens,
            "promptTemplate": self.prompt_template,
            "suffixTokens": self.suffix_tokens,
            "reusedTokens": self.reused_tokens,
            "candidates": [c.summary() for c in self.candidates],
            "timingsMs": {k: round(v * 1000, 2) for k, v in self.timings.items()},
        }


@dataclass(frozen=True)
class Prepared:
    """What working ahead of a request did (``CompletionService.prepare``)."""

    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    """Prompt tokens run through the model now (the rest were in the cache already)."""
    rung: str | None = None
    """The rung whose grammar is compiled for the first statement, or None."""
    reason: str | None = None
    """Why nothing was prepared (no hole there, cancelled)."""
    seconds: float = 0.0


class CompletionService:
    def __init__(self, backend: ModelBackend, workspace: WorkspaceContext | None = None, decoder: Any = None) -> None:
        """``decoder``: what runs each region (default: the local masked loop over
        ``backend``); a remote engine passes its own (gdg_lsp.backends.remote)."""
        self._grammar_engines: dict[str, GrammarEngine] = {}  # per engine, shared: each is thread-safe
        self._engines_lock = threading.Lock()
        self.template = prompt_shapes.detect(backend.vocab)
        """The model's fill-in-the-middle layout, or None (prefix-only prompts)."""
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

    def grammars(self, setting: str = "auto") -> GrammarEngine:
        """The grammar engine ``gdg.grammarEngine`` names, made on first use."""
        name = grammar_engines.resolve(setting)
        engine = self._grammar_engines.get(name)
        if engine is None:
            with self._engines_lock:
                engine = self._grammar_engines.get(name)
                if engine is None:
                    # a remote engine's text is checked byte by byte (its prompt vocabulary grows)
                    vocab = getattr(self.backend, "grammar_vocab", self.vocab)
                    engine = self._grammar_engines[name] = grammar_engines.create(name, vocab)
        return engine

    def use_grammars(self, engine: GrammarEngine) -> None:
        """Compile with ``engine`` for its name from now on (benchmarks start from empty caches)."""
        self._grammar_engines[engine.name] = engine

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
        with self._model_for(snapshot.uri) as (backend, decoder):
            return self._complete(snapshot, offset, settings, cancel, measure_free_bits, backend, decoder)

    @contextmanager
    def _model_for(self, uri: str) -> Iterator[tuple[Any, Any]]:
        """(backend, decoder) for one request of document ``uri``, held until the block ends."""
        if self._pool is not None:
            # the document's own slot if it is free: its next request reuses its KV prefix
            with self._pool.lease(uri) as slot:
                decoder = self._slot_decoders.get(slot.index)
                if decoder is None:
                    decoder = self._slot_decoders[slot.index] = Decoder(slot)
                yield slot, decoder
            return
        with self._lock:  # one decode at a time: the backend's KV cache is shared
            yield self.backend, self.decoder

    def prepare(self, snapshot: Snapshot, offset: int, settings: Settings,
                cancel: threading.Event | None = None) -> Prepared:
        """Work ahead of a request at ``offset``: the hole, Γ and the prompt ``complete`` would
        build there, the prompt through the model into the KV cache ``complete`` will use (the
        document's slot) and the first statement's grammar compiled, nothing decoded. A
        ``complete`` at the same place then prefills one token and compiles nothing. Stops
        between prefill chunks once ``cancel`` is set (the chunks that ran stay in the cache)."""
        began = time.perf_counter()
        analyzer = self.analyzer_for(snapshot)
        hole = analyzer.hole_at(snapshot, offset, self.workspace)
        if isinstance(hole, NoHole):
            return Prepared(reason=hole.reason, seconds=time.perf_counter() - began)
        if cancel is not None and cancel.is_set():
            return Prepared(reason="cancelled", seconds=time.perf_counter() - began)
        prompt, _ = prompts.build(self.vocab, self.template, snapshot, hole, analyzer, settings, self.workspace)
        with self._model_for(snapshot.uri) as (backend, decoder):  # the slot the request will use
            return self._prepare(hole, prompt, analyzer, settings, cancel, backend, decoder, began)

    def _prepare(self, hole: Hole, prompt: Any, analyzer: Analyzer, settings: Settings,
                 cancel: threading.Event | None, backend: Any, decoder: Any, began: float) -> Prepared:
        before = stats_of(backend).prefill_tokens
        executor = Executor(analyzer, decoder, self.grammars(settings.grammar_engine))
        rung = executor.prepare(hole, prompt, settings.constraint, cancel)
        return Prepared(prompt_tokens=len(prompt.ids), prefilled_tokens=stats_of(backend).prefill_tokens - before,
                        rung=rung, seconds=time.perf_counter() - began)

    @staticmethod
    def _alternatives(first: Execution, run: Any, snapshot: Snapshot, hole: Hole, analyzer: Analyzer,
                      settings: Settings, deadline: float, cancel: threading.Event | None,
                      workspace: WorkspaceContext | None = None) -> list[Candidate]:
        """The distinct non-empty candidates, ranked: the greedy ``first``, then up to
        ``gdg.candidates - 1`` sampled ones (while time is left), each fitted to the suffix.
        When the greedy one only wrote back the text after the cursor (``)`` at ``f(|)``: the
        model closing the call at once), the model's next choice is decoded greedily with that
        first closer masked, then sampled ones are drawn, even for one candidate: a suggestion
        is possible there, and silence is not one."""
        wanted = settings.candidates
        parser = analyzer.parser() if wanted > 1 else None
        found: list[Candidate] = []
        seen: set[tuple[str, int]] = set()
        only_suffix = False
        closer = suffix.rest_of_line(snapshot.text, hole.cursor).lstrip()[:1]
        next_best_tried = False
        for attempt in range(2 + max(wanted - 1, 1) * candidates.ATTEMPTS_PER_CANDIDATE):
            if attempt and (len(found) >= wanted or time.monotonic() > deadline or (cancel and cancel.is_set())):
                break
            if attempt and wanted == 1 and not only_suffix:
                break  # one candidate: a second decode only when the first just wrote the suffix back
            if attempt == 0:
                execution = first
            elif only_suffix and closer and not next_best_tried:
                # the greedy answer only closed what the suffix closes: its next-best start instead
                next_best_tried = True
                execution = run(avoid_start=closer)
            else:
                execution = run(candidates.SAMPLING_TEMPERATURE, attempt)
            fitted = suffix.fit(execution.text, snapshot.text, hole.cursor, hole.replace_end) if settings.suffix \
                else suffix.Fit(execution.text, hole.replace_end)
            if not fitted.text.strip() or (fitted.text, fitted.end) in seen:
                only_suffix = only_suffix or (attempt == 0 and bool(execution.text.strip()))
                continue
            seen.add((fitted.text, fitted.end))
            parses = candidates.line_parses(parser, snapshot.text, hole.cursor, fitted.end, fitted.text) \
                if wanted > 1 else None
            checked = analyzer.statement_check(snapshot, hole, fitted.end, fitted.text, workspace) \
                if wanted > 1 and workspace is not None else None
            found.append(Candidate(fitted.text, fitted.end, execution, parses, checked))
        return candidates.rank(found) if wanted > 1 else found

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
        prompt, shape = prompts.build(self.vocab, self.template, snapshot, hole, analyzer, settings, self.workspace)
        prompted = time.perf_counter()
        reused_before = stats_of(backend).reused_tokens
        executor = Executor(analyzer, decoder, self.grammars(settings.grammar_engine))

        def run(temperature: float = 0.0, seed: int | None = None, avoid_start: str = "") -> Execution:
            return executor.run(hole, prompt, settings.constraint, settings.max_tokens, settings.max_lines, deadline,
                                cancel, temperature=temperature, seed=seed, measure_free_bits=measure_free_bits,
                                avoid_start=avoid_start)

        execution = run()
        found = self._alternatives(execution, run, snapshot, hole, analyzer, settings, deadline, cancel,
                                   self.workspace)
        done = time.perf_counter()
        reused = stats_of(backend).reused_tokens - reused_before
        best = found[0] if found else None
        reason = None
        if best is None and not execution.text:
            dropped = [s.dropped for s in execution.statements if s.dropped]
            reason = dropped[0] if dropped else f"the model produced nothing ({execution.stop_reason})"
        elif best is None:
            reason = suffix.REPEATS_ONLY
        execution = best.execution if best is not None else execution
        return Suggestion(
            text=best.text if best else "", start=hole.cursor, end=best.end if best else hole.replace_end,
            language=analyzer.name, constraint=settings.constraint, rung=execution.rung,
            stop_reason=execution.stop_reason, reason=reason, hole=hole, execution=execution,
            prompt_tokens=len(prompt.ids), reused_tokens=reused, prompt_template=shape.template,
            suffix_tokens=shape.suffix_tokens, candidates=found,
            authored=authored(hole, execution.statements),
            timings={"analysis": analysed - began, "prompt": prompted - analysed, "decode": done - prompted,
                     "total": done - began},
        )
