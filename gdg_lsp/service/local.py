"""CompletionService: the one place that turns (document, position, settings) into a suggestion.

The LSP server, ``gdg-lsp complete``/``explain`` and the benchmarks all call
it, so what is measured is what users get. It is synchronous and meant to run
on one worker thread: it owns the model backend (and its KV cache).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
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
from gdg_lsp.service import candidates, confidence, suffix
from gdg_lsp.service import prompt as prompts
from gdg_lsp.service.candidates import Candidate
from gdg_lsp.service.fragment_library import Authored, authored
from gdg_lsp.service.plan import Analysis, Plan, analyse
from gdg_lsp.settings import Settings

GUARANTEED_RUNGS = ("pin", "ctx", "gamma")
"""Rungs whose slots are Γ-slots (``fragments.Choice.guaranteed``)."""


def is_guaranteed(rung: str | None, open_positions: list[str], written: Authored | None) -> bool:
    """Every reference position was a Γ-slot (or checked by the analyzer), and no word is a user's
    fragment file's own text (only Γ slots are a guarantee)."""
    return rung in GUARANTEED_RUNGS and not open_positions and not (written is not None and written.words)


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
    """Seconds: ``analysis``, ``prompt``, ``grammar`` (the plan's parts), ``queued`` (from the plan
    to the model slot), ``decode`` (from the slot to the end) and within it ``compile`` (π's
    grammars, waiting for a compile in flight included), ``prefill``, ``model`` (the model's
    steps), ``mask``; ``total`` from the plan's start."""
    hole_digest: str | None = None
    """``suggestion_reuse.hole_key`` of ``hole``, made with the plan (not where it is served)."""
    candidates: list[Candidate] = field(default_factory=list)
    """Every distinct candidate, best first (``text`` is the first one's); one unless ``gdg.candidates`` > 1."""
    authored: Authored | None = None
    """Decoded under a fragment from a user's file: that file, and the words of the suggestion its
    template wrote itself (no Γ slot vouches for them)."""
    dropped: list[dict[str, str]] = field(default_factory=list)
    """Candidates decoded and not shown (``gdg.showUnguaranteed``), each ``{text, why}``."""
    alternatives: dict[str, Any] = field(default_factory=dict)
    """How the search for ``gdg.candidates`` went: ``wanted``, ``found``, ``cut`` (``time``,
    ``cancelled``, ``attempts``: the model gave no more distinct ones; None) and ``pending``
    (the rest comes in a time slice of its own: ``CompletionService.more_candidates``)."""
    more: Any = field(default=None, repr=False)
    """What ``more_candidates`` continues from (the search so far, its hole and prompt)."""

    @property
    def open_positions(self) -> list[str]:
        """Reference positions in the text that no Γ-slot covered (an attribute of a value
        of unknown type, a keyword of an unknown callee)."""
        return self.execution.open_positions if self.execution else []

    @property
    def guaranteed(self) -> bool:
        """Every reference position of the suggestion was a Γ-slot (or checked by the analyzer), and
        no word of it is a user's fragment file's own text (only Γ slots are a guarantee)."""
        return is_guaranteed(self.rung, self.open_positions, self.authored)

    def unguaranteed_because(self) -> str | None:
        """Why a suggestion shown is not guaranteed, in words an editor may show beside it (None: it is)."""
        if not self.text or self.guaranteed:
            return None
        if self.rung not in GUARANTEED_RUNGS:
            if self.rung is not None and self.hole is not None and self.hole.context.get("open_reason"):
                # the analyzer's own word for why its names are open here (jq: no input known)
                return f"rung {self.rung}: {self.hole.context['open_reason']}"
            checked = "; the diagnostics find no name in it that does not exist" \
                if self.hole is not None and self.constraint == "scope" else ""
            return f"rung {self.rung or 'none'}: its names are not drawn from Γ{checked}"
        if self.open_positions:
            return f"open positions, not checked against Γ: {'; '.join(self.open_positions)}"
        return "words of a user's fragment file, not drawn from Γ"

    def coverage(self) -> dict[str, Any]:
        """What the rung covered: counts of slotted and checked reference positions, the open ones."""
        kept = [s.coverage for s in (self.execution.statements if self.execution else []) if s.text and s.coverage]
        return {"slotted": sum(c.slotted for c in kept), "checked": sum(c.checked for c in kept),
                "open": self.open_positions,
                # new attributes it writes where they may be declared (as `x = ...`: said, not open)
                "declared": [d for c in kept for d in c.declared]}

    def candidate_summary(self, candidate: Candidate) -> dict[str, Any]:
        """One candidate's ``gdg/suggestion`` entry, with why it is not guaranteed in the words
        ``notGuaranteedBecause`` has for the whole (an editor marks the alternative it shows)."""
        if candidate.guaranteed:
            because = None
        elif self.execution is candidate.execution:
            because = self.unguaranteed_because()
        else:
            alone = dataclasses.replace(
                self, text=candidate.text, end=candidate.end, rung=candidate.execution.rung,
                execution=candidate.execution, candidates=[],
                authored=authored(self.hole, candidate.execution.statements) if self.hole is not None else None)
            because = alone.unguaranteed_because()
        return {**candidate.summary(), "notGuaranteedBecause": because}

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
            "candidates": [self.candidate_summary(c) for c in self.candidates],
            "notGuaranteedBecause": self.unguaranteed_because(),
            "dropped": list(self.dropped),
            "alternatives": dict(self.alternatives),
            "timingsMs": {k: round(v * 1000, 2) for k, v in self.timings.items()},
        }


@dataclass(frozen=True)
class Prepared:
    """What working ahead of a request did (``CompletionService.prefill``)."""

    prompt_tokens: int = 0
    prefilled_tokens: int = 0
    """Prompt tokens run through the model now (the rest were in the cache already)."""
    rung: str | None = None
    """The rung whose grammar is compiled for the first statement, or None."""
    reason: str | None = None
    """Why nothing was prepared (no hole there, cancelled)."""
    seconds: float = 0.0


def no_suggestion(plan: Plan, settings: Settings | None = None) -> Suggestion:
    """The answer of a plan with nothing to decode (no hole there: its reason), made without the model."""
    analysis = plan.analysis
    settings = settings or plan.settings
    return Suggestion("", analysis.offset, analysis.offset, analysis.analyzer.name, settings.constraint,
                      reason=plan.reason, hole=analysis.hole if isinstance(analysis.hole, Hole) else None,
                      hole_digest=analysis.digest,
                      timings={**plan.timings, "total": time.perf_counter() - analysis.began})


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

    # -- stage one: the plan (no model) ---------------------------------------------------------

    def plan(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None,
             analysis: Analysis | None = None, on_prompt: Callable[[Plan], None] | None = None,
             compile_grammar: bool = True) -> Plan:
        """The plan at ``offset`` (see ``Plan``), from ``analysis`` when it was made already. It
        leases no model slot: any thread may run it, and the server runs it on the document's
        analysis lane. ``on_prompt`` hears the plan once its prompt is made, before the grammar
        compile: a decode started then prefills while the grammar compiles (its π waits for
        this compile, ``GrammarEngine.get``). Stops before the prompt and before the compile
        once ``cancel`` is set (``reason`` "cancelled"). ``compile_grammar`` False: the decode that
        follows on this thread compiles it while its prompt is prefilled (``complete``)."""
        if analysis is None:
            analysis = analyse(snapshot, offset, self.workspace)
        plan = Plan(analysis, settings, timings={"analysis": analysis.seconds}, made_by=self)
        hole = analysis.hole
        if isinstance(hole, NoHole):
            plan.reason, plan.ended = hole.reason, time.perf_counter()
            return plan
        if cancel is not None and cancel.is_set():
            plan.reason, plan.ended = "cancelled", time.perf_counter()
            return plan
        if hole.suffix and (off := self.mid_line_off(settings)) is not None:
            plan.reason, plan.ended = off, time.perf_counter()
            return plan
        began = time.perf_counter()
        plan.prompt, plan.shape = prompts.build(self.vocab, self.template, analysis.snapshot, hole, analysis.analyzer,
                                                settings, analysis.workspace)
        compiling = time.perf_counter()
        plan.timings["prompt"] = compiling - began
        if on_prompt is not None:
            on_prompt(plan)
        if compile_grammar and (cancel is None or not cancel.is_set()):
            executor = Executor(analysis.analyzer, None, self.grammars(settings.grammar_engine))
            plan.rung = executor.first_choice(hole, plan.prompt, settings.constraint)
            plan.timings["grammar"] = time.perf_counter() - compiling
        plan.ended = time.perf_counter()
        return plan

    def mid_line_off(self, settings: Settings) -> str | None:
        """Why holes with text after the cursor on their line get nothing here, or None. The middle
        is written for the text after it only by a model that reads that text (fill-in-the-middle),
        and ended where it fits only by the local decoding loop."""
        if self.decoder is not None and not getattr(self.decoder, "fits_mid_line", False):
            return ("mid-line holes are off with a remote engine: where the middle may end is checked "
                    "token by token in the local decoding loop")
        if self.template is None:
            return (f"mid-line holes are off: the model ({self.model}) has no fill-in-the-middle tokens and "
                    "never reads the text after the cursor (a code model has: gdg.model qwen2.5-coder-0.5b)")
        if not settings.suffix:
            return "mid-line holes are off: gdg.suffix is false, so the model never reads the text after the cursor"
        return None

    def _own(self, plan: Plan, cancel: Any) -> Plan:
        """``plan`` if this service made it with a prompt, else this service's plan from its analysis."""
        if plan.made_by is self or plan.reason is not None:
            return plan
        remade = self.plan(plan.snapshot, plan.analysis.offset, plan.settings, cancel, plan.analysis)
        remade.timings = {**plan.timings, **{k: v for k, v in remade.timings.items() if k != "analysis"}}
        return remade

    # -- stage two: the model -------------------------------------------------------------------

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

    def prefill(self, plan: Plan, cancel: Any = None) -> Prepared:
        """Work ahead of a request from its ``plan``: the prompt through the model into the KV cache
        the request will use (the document's slot), nothing decoded; the request at the same place
        then prefills one token and finds its grammar compiled. Stops between prefill chunks once
        ``cancel`` is set (the chunks that ran stay in the cache)."""
        began = time.perf_counter()
        plan = self._own(plan, cancel)
        if not plan.ready:
            return Prepared(reason=plan.reason or "no prompt", seconds=time.perf_counter() - began)
        assert plan.prompt is not None
        with self._model_for(plan.snapshot.uri) as (backend, decoder):  # the slot the request will use
            before = stats_of(backend).prefill_tokens
            Executor(plan.analysis.analyzer, decoder, self.grammars(plan.settings.grammar_engine)).prefill(
                plan.prompt, cancel)
            prefilled = stats_of(backend).prefill_tokens - before
        return Prepared(prompt_tokens=len(plan.prompt.ids), prefilled_tokens=prefilled, rung=plan.rung,
                        seconds=time.perf_counter() - began)

    def decode(self, plan: Plan, settings: Settings | None = None, cancel: Any = None,
               measure_free_bits: bool = False, first_only: bool = False,
               deadline: float | None = None) -> Suggestion:
        """The suggestion from ``plan``: the model slot leased for the prefill and the decode only.
        ``settings``: the plan's unless given (the server passes the budget left to the request);
        ``deadline`` (``time.monotonic``): ``gdg.timeoutMs`` from now unless given.
        ``measure_free_bits``: count the allowed tokens at every step (a whole mask per token:
        benchmarks and explain); otherwise the model's choice is checked first and the mask built
        only when the grammar refuses it. ``first_only``: decode the first candidate only (the
        editor gets it at once); the others of ``gdg.candidates`` come from ``more_candidates`` in a
        time slice of their own."""
        settings = settings or plan.settings
        if deadline is None:
            deadline = time.monotonic() + settings.timeout_ms / 1000
        plan = self._own(plan, cancel)
        if not plan.ready:
            return no_suggestion(plan, settings)
        queued = time.perf_counter()
        with self._model_for(plan.snapshot.uri) as (backend, decoder):
            leased = time.perf_counter()
            return self._decode(plan, settings, cancel, measure_free_bits, backend, decoder, first_only, deadline,
                                {"queued": leased - queued})

    def complete(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None,
                 measure_free_bits: bool = False, first_only: bool = False) -> Suggestion:
        """``plan`` then ``decode`` at ``offset``, within ``gdg.timeoutMs`` from this call (the CLI,
        explain and the benchmarks; the server runs the two stages on their own threads)."""
        deadline = time.monotonic() + settings.timeout_ms / 1000
        plan = self.plan(snapshot, offset, settings, cancel, compile_grammar=False)
        return self.decode(plan, settings, cancel, measure_free_bits, first_only, deadline)

    def prepare(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None) -> Prepared:
        """``plan`` then ``prefill`` at ``offset``: work ahead of a request there."""
        began = time.perf_counter()
        prepared = self.prefill(self.plan(snapshot, offset, settings, cancel), cancel)
        return dataclasses.replace(prepared, seconds=time.perf_counter() - began)

    @staticmethod
    def _alternatives(first: Execution, run: Any, snapshot: Snapshot, hole: Hole, analyzer: Analyzer,
                      settings: Settings, deadline: float, cancel: threading.Event | None,
                      workspace: WorkspaceContext | None = None) -> list[Candidate]:
        """The candidates ``gdg.candidates`` asks for in one time slice, shown ones only, ranked
        (``_Search``)."""
        search = _Search(first, snapshot, hole, analyzer, settings, workspace)
        search.extend(run, settings.candidates, deadline, cancel)
        return search.ranked(settings.candidates)[0]

    def more_candidates(self, suggestion: Suggestion, snapshot: Snapshot, settings: Settings,
                        cancel: threading.Event | None = None) -> Suggestion:
        """``suggestion`` (made with ``first_only``) with the rest of its ``gdg.candidates``, decoded
        now in a time slice of their own (``gdg.timeoutMs`` from this call), all ranked together."""
        began = time.perf_counter()
        more = suggestion.more
        if more is None or settings.candidates <= 1:
            return suggestion
        search, prompt = more
        deadline = time.monotonic() + settings.timeout_ms / 1000
        with self._model_for(snapshot.uri) as (backend, decoder):
            executor = Executor(search.analyzer, decoder, self.grammars(settings.grammar_engine))

            def run(temperature: float = 0.0, seed: int | None = None, avoid_start: str = "") -> Execution:
                return executor.run(search.hole, prompt, settings.constraint, settings.max_tokens, settings.max_lines,
                                    deadline, cancel, temperature=temperature, seed=seed, avoid_start=avoid_start)

            search.extend(run, settings.candidates, deadline, cancel)
        found, dropped = search.ranked(settings.candidates)
        timings = {**suggestion.timings, "alternatives": time.perf_counter() - began}
        return self._suggestion(suggestion.execution, search, settings.candidates, found, dropped, settings, prompt,
                                suggestion, timings)

    def _decode(self, plan: Plan, settings: Settings, cancel: Any, measure_free_bits: bool, backend: Any,
                decoder: Any, first_only: bool, deadline: float, timings: dict[str, float]) -> Suggestion:
        began = time.perf_counter()
        analysis, prompt, shape = plan.analysis, plan.prompt, plan.shape
        assert prompt is not None and isinstance(analysis.hole, Hole)
        hole, analyzer, snapshot = analysis.hole, analysis.analyzer, analysis.snapshot
        reused_before = stats_of(backend).reused_tokens
        executor = Executor(analyzer, decoder, self.grammars(settings.grammar_engine))

        def run(temperature: float = 0.0, seed: int | None = None, avoid_start: str = "") -> Execution:
            return executor.run(hole, prompt, settings.constraint, settings.max_tokens, settings.max_lines, deadline,
                                cancel, temperature=temperature, seed=seed, measure_free_bits=measure_free_bits,
                                avoid_start=avoid_start)

        execution = run()
        search = _Search(execution, snapshot, hole, analyzer, settings, analysis.workspace, getattr(backend, "name", None))
        wanted = 1 if first_only else settings.candidates
        search.extend(run, wanted, deadline, cancel)
        found, dropped = search.ranked(wanted)
        done = time.perf_counter()
        base = Suggestion("", hole.cursor, hole.replace_end, analyzer.name, settings.constraint, hole=hole,
                          prompt_tokens=len(prompt.ids), reused_tokens=stats_of(backend).reused_tokens - reused_before,
                          prompt_template=shape.template, suffix_tokens=shape.suffix_tokens,
                          hole_digest=analysis.digest)
        timings = {**plan.timings, **timings, **_phases(execution), "decode": done - began,
                   "total": done - analysis.began}
        return self._suggestion(execution, search, wanted, found, dropped, settings, prompt, base, timings)

    @staticmethod
    def _suggestion(first: Execution, search: _Search, wanted: int, found: list[Candidate],
                    dropped: list[dict[str, str]], settings: Settings, prompt: Any, base: Suggestion,
                    timings: dict[str, float]) -> Suggestion:
        """``base`` (the request's hole and prompt figures) with the best of ``found`` as its text."""
        best = found[0] if found else None
        reason = None
        if best is None and dropped:
            why = dropped[0]["why"]  # low-confidence leads its own reason: the editors match on it
            reason = why if why.startswith(confidence.LOW_CONFIDENCE) else f"not shown: {why}"
        elif best is None and not first.text:
            failed = [s.dropped for s in first.statements if s.dropped]
            reason = failed[0] if failed else f"the model produced nothing ({first.stop_reason})"
        elif best is None:
            reason = suffix.REPEATS_ONLY
        execution = best.execution if best is not None else first
        pending = wanted < settings.candidates and search.cut is None and not search.exhausted
        return dataclasses.replace(
            base, text=best.text if best else "", end=best.end if best else search.hole.replace_end,
            rung=execution.rung, stop_reason=execution.stop_reason, reason=reason, execution=execution,
            candidates=found, dropped=dropped, authored=authored(search.hole, execution.statements),
            alternatives={"wanted": settings.candidates, "found": len(found), "cut": search.cut,
                          "pending": pending},
            more=(search, prompt) if pending else None, timings=timings)


class _Search:
    """The candidates of one request (``gdg.candidates``), found in one time slice or two: the
    greedy ``first``, then sampled ones under the same mask, each fitted to the suffix, distinct.
    When the greedy one only wrote back the text after the cursor (``)`` at ``f(|)``: the model
    closing the call at once), the model's next choice is decoded greedily with that first
    closer masked, then sampled ones are drawn, even for one candidate: a suggestion is possible
    there, and silence is not one."""

    def __init__(self, first: Execution, snapshot: Snapshot, hole: Hole, analyzer: Analyzer, settings: Settings,
                 workspace: WorkspaceContext | None, model: str | None = None) -> None:
        self.first, self.snapshot, self.hole, self.analyzer = first, snapshot, hole, analyzer
        self.settings, self.workspace = settings, workspace
        self.model = model
        """The name of the weights that decode (``gdg.showThreshold`` auto is theirs)."""
        self.found: list[Candidate] = []
        self._seen: set[tuple[str, int]] = set()
        self._only_suffix = False
        self._closer = suffix.rest_of_line(snapshot.text, hole.cursor).lstrip()[:1]
        self._next_best_tried = False
        self._attempt = 0
        self.cut: str | None = None
        """Why fewer than wanted were found: ``time``, ``cancelled``, ``attempts`` (None: not cut)."""
        self.exhausted = False
        """Every attempt the candidates wanted allow was made."""
        self._guarded = 0  # found[:_guarded] have their guarantee labels
        self._parsed = 0  # found[:_parsed] have their parse and statement checks

    def extend(self, run: Any, wanted: int, deadline: float, cancel: threading.Event | None) -> None:
        """Decode until ``wanted`` candidates are found, the time or the attempts ``gdg.candidates``
        allows run out, or ``cancel``. A first slice (``wanted`` 1 of several) samples on while the
        greedy decode gave nothing to show."""
        limit = 2 + max(self.settings.candidates - 1, 1) * candidates.ATTEMPTS_PER_CANDIDATE
        self.cut = None
        while self._attempt < limit:
            attempt = self._attempt
            if attempt and len(self.found) >= wanted:
                return
            if attempt and cancel is not None and cancel.is_set():
                self.cut = "cancelled"
                return
            if attempt and time.monotonic() > deadline:
                self.cut = "time"
                return
            if attempt and self.settings.candidates == 1 and not self._only_suffix:
                return  # one candidate: a second decode only when the first just wrote the suffix back
            self._attempt += 1
            if attempt == 0:
                execution = self.first
            elif self._only_suffix and self._closer and not self._next_best_tried:
                # the greedy answer only closed what the suffix closes: its next-best start instead
                self._next_best_tried = True
                execution = run(avoid_start=self._closer)
            else:
                execution = run(candidates.SAMPLING_TEMPERATURE, attempt)
            hole, text = self.hole, self.snapshot.text
            if hole.suffix and execution.rung is not None:  # a middle ended where it fits before the suffix
                fitted = suffix.Fit(execution.text, hole.cursor)
            elif self.settings.suffix:
                fitted = suffix.fit(execution.text, text, hole.cursor, hole.replace_end)
            else:
                fitted = suffix.Fit(execution.text, hole.replace_end)
            if not fitted.text.strip() or (fitted.text, fitted.end) in self._seen:
                self._only_suffix = self._only_suffix or (attempt == 0 and bool(execution.text.strip()))
                continue
            self._seen.add((fitted.text, fitted.end))
            self.found.append(Candidate(fitted.text, fitted.end, execution))
        self.exhausted = True
        if len(self.found) < wanted:
            self.cut = "attempts"

    def ranked(self, wanted: int) -> tuple[list[Candidate], list[dict[str, str]]]:
        """(the candidates that may be shown, ranked when more than one is wanted; the others, with
        why not). A candidate Γ does not vouch for is checked with the diagnostics first."""
        policy = self.settings.show_unguaranteed if self.settings.constraint == "scope" else "always"
        snapshot, hole, analyzer = self.snapshot, self.hole, self.analyzer
        for candidate in self.found[self._guarded:]:
            execution = candidate.execution
            candidate.guaranteed = is_guaranteed(execution.rung, execution.open_positions,
                                                 authored(hole, execution.statements))
            if not candidate.guaranteed and policy == "noInventedNames":
                candidate.invented = candidates.invented_names(analyzer, snapshot, hole, candidate.end,
                                                               candidate.text, self.workspace or WorkspaceContext())
        self._guarded = len(self.found)
        if wanted > 1:
            parser = analyzer.parser()
            for candidate in self.found[self._parsed:]:
                candidate.parses = candidates.line_parses(parser, snapshot.text, hole.cursor, candidate.end,
                                                          candidate.text)
                candidate.checked = analyzer.statement_check(snapshot, hole, candidate.end, candidate.text,
                                                             self.workspace) if self.workspace is not None else None
            self._parsed = len(self.found)
        shown, dropped = [], []
        threshold = confidence.threshold(self.settings, analyzer.name, hole, self.model)
        for candidate in self.found:
            why = candidates.unshown_because(candidate, policy, threshold)
            if why is None:
                shown.append(candidate)
            else:
                dropped.append({"text": candidate.text, "why": why})
        return (candidates.rank(shown) if wanted > 1 else shown), dropped


def _phases(execution: Execution) -> dict[str, float]:
    """Where a decode's time went, summed over its statements (``StatementTrace.seconds``)."""
    phases = {"compile": 0.0, "prefill": 0.0, "model": 0.0, "mask": 0.0}
    for statement in execution.statements:
        for phase in phases:
            phases[phase] += statement.seconds.get(phase, 0.0)
    return phases
