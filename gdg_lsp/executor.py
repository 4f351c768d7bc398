"""Statement-by-statement decoding with Γ growing as the suggestion declares.

For each statement: π picks the rung against the current Γ, the decoder runs
to the end of the line, and the analyzer says what the statement declared;
those declarations enter Γ before the next statement's grammar is built (a
buffer allocated on one line is usable on the next, and not before). A
statement that opens a scope pushes a frame, popped when the indentation
returns; nesting is capped at 32 frames. A statement may also name the
fragment the next statement is decoded with (TileLang: a line decoded with a
per-operation fragment is followed by whole-line ones).

A statement is kept only if it ended naturally; one cut by the token budget is
cut back to the complete statement the grammar saw, one cut by time to the
longest prefix that ends where a token ended and outside any name (never to
nothing when some decoded prefix qualifies); nothing follows either.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from gdg_lsp import fragments
from gdg_lsp.decoding.engine import (
    STOP_NEWLINE,
    STOP_TIMEOUT,
    Decoder,
    DecodeResult,
    DecodeSpec,
    settle,
)
from gdg_lsp.errors import NestingLimitError
from gdg_lsp.gamma import Gamma
from gdg_lsp.grammar.engine import GrammarEngine, accepts
from gdg_lsp.languages.base import Analyzer, Coverage, Hole


class StopReason(str, Enum):
    """Why a suggestion ended (the values are what ``explain``, the bench and ``gdg/suggestion`` show)."""

    MAX_LINES = "max-lines"
    """As many statements as ``gdg.maxLines`` asked for."""
    MAX_TOKENS = "max-tokens"
    """The token budget ran out (the last statement is cut back to where it could end)."""
    TIMEOUT = "timeout"
    """The time budget ran out (likewise)."""
    CANCELLED = "cancelled"
    """A newer request for the document superseded this one."""
    GRAMMAR_COMPLETE = "grammar-complete"
    """The fragment allows nothing more."""
    MODEL_END = "end-of-text"
    """The model chose to stop."""
    LINE_END = "newline"
    """The model ended the first line without writing anything on it."""
    DEAD_END = "no-allowed-token"
    """The grammar allowed no token of the vocabulary."""
    BLANK_LINE = "blank-line"
    """The model ended the block with an empty line."""
    END_OF_BLOCK = "end-of-block"
    """The next line did not continue the block (blank, or an indentation the block cannot take)."""
    NO_RUNG = "no-rung"
    """No rung of the fragment accepts the text typed so far: nothing is suggested."""
    UNBOUND_NAME = "unbound-name"
    """A finished statement names something bound nowhere (comprehensions, checked after the fact)."""
    NESTING_LIMIT = "nesting-limit"
    """The suggestion opened more nested blocks than Γ's frames allow."""
    CONTINUES = "continues-below"
    """The line ended inside brackets, where the fragment lets a line break (a line that
    continues a statement opened above): the statement goes on below, the suggestion ends."""
    REJECTED = "rejected-by-local-check"
    """A remote engine sent text the local grammar rejects: the statement is dropped."""
    REFUSED = "refused-by-engine"
    """A remote engine refused the request."""
    UNSENDABLE = "grammar-not-sendable"
    """The grammar could not be put in the remote engine's dialect."""

    @property
    def budget(self) -> bool:
        """The suggestion was cut by a budget, not ended by the model or the grammar."""
        return self in (StopReason.MAX_TOKENS, StopReason.TIMEOUT)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Prompt:
    ids: list[int]
    heal: str = ""
    heal_outside: int = 0
    replay: str = ""


@dataclass
class StatementTrace:
    index: int
    text: str
    rung: str | None
    attempts: list[fragments.Attempt]
    stop_reason: str
    tokens: int
    free_bits: float | None
    gamma_size: int
    declared: list[str] = field(default_factory=list)
    source: fragments.Instantiated | None = None
    """The statement's grammar (``grammar`` renders it as text only when asked)."""
    dropped: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    fragment: str | None = None
    coverage: Coverage | None = None
    """How its reference positions were covered (guaranteed rungs only): open ones are named."""
    logprob: float | None = 0.0
    """The model's log-probability of the statement's tokens (None: the engine did not say)."""
    engine: str | None = None
    """The grammar engine that compiled it."""

    @property
    def grammar(self) -> str | None:
        return self.source.text if self.source is not None else None


@dataclass
class Execution:
    text: str
    statements: list[StatementTrace]
    stop_reason: StopReason

    @property
    def rung(self) -> str | None:
        return self.statements[0].rung if self.statements else None

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.statements)

    @property
    def open_positions(self) -> list[str]:
        """Reference positions of the kept statements that no Γ-slot or check covered."""
        return [p for s in self.statements if s.text and s.coverage is not None for p in s.coverage.open]

    @property
    def logprob(self) -> float | None:
        """The model's log-probability of the kept statements' tokens, all together (None when
        an engine did not say): how likely the whole suggestion was, length included."""
        kept = [s for s in self.statements if s.text]
        if not kept or any(s.logprob is None for s in kept):
            return None
        return sum(s.logprob for s in kept)

    @property
    def mean_logprob(self) -> float | None:
        """Mean log-probability per token of the kept statements (None when an engine did not say)."""
        total = self.logprob
        if total is None:
            return None
        return total / max(1, sum(s.tokens for s in self.statements if s.text))

    @property
    def free_bits(self) -> float | None:
        """None unless the decode was asked to measure it (it costs a mask per token)."""
        bits = [s.free_bits for s in self.statements]
        return None if any(b is None for b in bits) else sum(bits)


class _Stop(Exception):
    """Ends the execution after the current statement (with its trace already recorded)."""

    def __init__(self, reason: StopReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass
class _Progress:
    """What one statement hands to the next."""

    fragment: fragments.Fragment
    gamma: Gamma
    context: dict[str, Any]
    ids: list[int]
    heal: str
    heal_outside: int
    tokens_left: int
    indent: str
    allowed_indents: tuple[str, ...]
    frames: list[int] = field(default_factory=list)
    """Indentation width of each header that pushed a frame."""
    layout: str = ""
    """Blanks the previous statement's last token carried after its newline."""
    lines: list[str] = field(default_factory=list)
    traces: list[StatementTrace] = field(default_factory=list)


class Executor:
    def __init__(self, analyzer: Analyzer, decoder: Decoder, grammars: GrammarEngine) -> None:
        # ``decoder`` is anything with Decoder's ``decode(DecodeSpec) -> DecodeResult``
        # (the local loop, or gdg_lsp.decoding.remote.RemoteDecoder)
        self.analyzer = analyzer
        self.decoder = decoder
        self.grammars = grammars

    def run(
        self,
        hole: Hole,
        prompt: Prompt,
        constraint: str,
        max_tokens: int,
        max_lines: int,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        measure_free_bits: bool = False,
        avoid_start: str = "",
    ) -> Execution:
        # The first statement's prompt goes through the model while π compiles its
        # grammar (a new Γ costs a compile as long as a prefill); the decoders that
        # hand the prompt to another engine have no prefill_ahead.
        ahead = getattr(self.decoder, "prefill_ahead", None)
        prefilled = ahead(prompt.ids, cancel, deadline) if ahead is not None and constraint != "none" else None
        try:
            state = self._first(hole, prompt, max_tokens)
            stop = StopReason.MAX_LINES
            for index in range(max_lines):
                spec = _StatementSpec(index, index + 1 == max_lines, constraint, deadline, cancel, temperature,
                                      seed, measure_free_bits, prefilled if index == 0 else None,
                                      avoid_start if index == 0 else "")
                try:
                    self._statement(hole, prompt, state, spec)
                except _Stop as ended:
                    stop = ended.reason
                    break
            return Execution("\n".join(state.lines), state.traces, stop)
        finally:
            settle(prefilled)  # the backend is the caller's again only once it is over

    def first_choice(self, hole: Hole, prompt: Prompt, constraint: str) -> str | None:
        """π's rung for the first statement, its grammar compiled (the engine's cache keeps it, and
        a ``run`` meanwhile waits for this compile rather than starting its own); no model, so
        the executor may have no decoder. The rung, or None (``none``, or no rung accepts the
        typed text). A request's plan (``service.local.CompletionService.plan``)."""
        if constraint == "none":
            return None
        return self._choose(self._first(hole, prompt, 0), hole.typed, constraint).rung

    def prefill(self, prompt: Prompt, cancel: threading.Event | None = None) -> None:
        """The prompt through the model and nothing more: its KV cache keeps it (``run`` with the same
        prompt prefills only its last token). Stops between chunks once ``cancel`` is set (the
        chunks that ran stay). Work ahead of a request (``CompletionService.prefill``); decoders
        that hand the prompt to another engine have nothing to prefill."""
        ahead = getattr(self.decoder, "prefill_ahead", None)
        if ahead is not None:
            settle(ahead(prompt.ids, cancel))

    @staticmethod
    def _first(hole: Hole, prompt: Prompt, max_tokens: int) -> _Progress:
        """What the first statement starts from (``run`` and ``prepare`` alike: the grammar work
        ahead compiles is the one ``run`` then finds in the engine's cache)."""
        return _Progress(
            fragment=fragments.fragment(hole.language, hole.fragment), gamma=hole.gamma.overlay(),
            context=dict(hole.context), ids=list(prompt.ids), heal=prompt.heal,
            heal_outside=prompt.heal_outside, tokens_left=max_tokens, indent=hole.indent,
            allowed_indents=(hole.indent,))

    def _choose(self, state: _Progress, typed: str, constraint: str) -> fragments.Choice:
        """π's rung and grammar for the next statement, ``typed`` already in it."""
        return fragments.choose(state.fragment, state.gamma, state.context, typed, constraint,
                                self.grammars.get, accepts)

    # -- one statement ------------------------------------------------------------------------

    def _statement(self, hole: Hole, prompt: Prompt, state: _Progress, spec: _StatementSpec) -> None:
        """Choose the rung, decode the statement, check it, and carry its effects to the next
        one; raises ``_Stop`` when the suggestion ends here (after recording this statement)."""
        first = spec.index == 0
        if spec.cancel is not None and spec.cancel.is_set():  # superseded: compile nothing more
            raise _Stop(StopReason.CANCELLED)
        choosing = time.perf_counter()
        choice = self._choose(state, hole.typed if first else state.layout, spec.constraint)
        chosen = time.perf_counter() - choosing
        trace = StatementTrace(spec.index, "", choice.rung, choice.attempts, "", 0, 0.0, len(state.gamma),
                               source=choice.grammar, fragment=state.fragment.name, engine=self.grammars.name)
        trace.seconds = {"compile": chosen}
        state.traces.append(trace)
        if spec.constraint != "none" and choice.rung is None:
            trace.dropped = "no rung of the fragment accepts the text typed so far"
            trace.stop_reason = StopReason.NO_RUNG.value
            raise _Stop(StopReason.NO_RUNG)
        result = self._decode(prompt if first else None, state, choice, spec, hole)
        trace.stop_reason, trace.tokens, trace.free_bits = result.stop_reason, result.steps, result.free_bits
        trace.logprob = result.logprob
        trace.seconds = {"compile": chosen, "prefill": result.prefill_seconds, "model": result.model_seconds,
                         "mask": result.mask_seconds, "total": result.total_seconds}
        line = self._line(result, state, trace, first, hole, choice)
        statement = (hole.typed + line) if first else line.strip()
        refused, trace.coverage = self._refusal(statement, line, state, choice)
        if refused and first and hole.suffix and line.strip():
            # a middle is read with the rest of its line: the FROM after a select list binds its columns
            refused, trace.coverage = self._refusal(statement + self.analyzer.replay_text(hole.suffix), line,
                                                    state, choice)
        if refused:
            trace.dropped = refused
            raise _Stop(StopReason.UNBOUND_NAME)
        if result.line_continues and (missing := self.analyzer.unbound_in_continued(
                statement, len(hole.typed) if first else 0, hole, state.gamma)):
            trace.dropped = f"names not bound anywhere: {', '.join(sorted(set(missing)))}"
            raise _Stop(StopReason.UNBOUND_NAME)
        trace.text = line
        if not line.strip() and first:
            raise _Stop(StopReason(result.stop_reason))
        state.lines.append(line)
        if first and hole.suffix:  # a mid-line middle is all there is: the line goes on after it
            raise _Stop(StopReason(result.stop_reason))
        if result.line_continues:
            raise _Stop(StopReason.CONTINUES)
        if not result.natural or result.stop_reason != STOP_NEWLINE:
            raise _Stop(StopReason(result.stop_reason))
        if spec.last:
            raise _Stop(StopReason.MAX_LINES)
        if "\n" in result.trailing_layout:
            raise _Stop(StopReason.BLANK_LINE)
        self._carry(hole, statement, result, state, trace)

    def _decode(self, prompt: Prompt | None, state: _Progress, choice: fragments.Choice,
                spec: _StatementSpec, hole: Hole) -> DecodeResult:
        # a mid-line middle under a grammar ends only where it fits before the rest of the line
        # (unconstrained, it ends where the model stops, as a plain FIM decode does)
        mid_line = prompt is not None and bool(hole.suffix) and choice.compiled is not None
        result = self.decoder.decode(DecodeSpec(
            prompt_ids=state.ids, heal=state.heal, heal_outside=state.heal_outside,
            replay=prompt.replay if prompt is not None else state.layout, grammar=choice.compiled,
            stop_at_newline=True, region_may_start_blank=prompt is None, max_tokens=state.tokens_left,
            deadline=spec.deadline, cancel=spec.cancel, prefilled=spec.prefilled,
            temperature=spec.temperature, seed=None if spec.seed is None else spec.seed + spec.index,
            measure_free_bits=spec.measure_free_bits, avoid_start=spec.avoid_start,
            end_check=functools.partial(self.analyzer.middle_fits, hole) if mid_line else None,
            suffix=self.analyzer.replay_text(hole.suffix).rstrip() if mid_line else "",
        ))
        state.tokens_left -= result.steps
        return result

    def _refusal(self, statement: str, line: str, state: _Progress,
                 choice: fragments.Choice) -> tuple[str | None, Coverage | None]:
        """Why the analyzer refuses a statement (a name bound nowhere, a reference to nothing
        in Γ), or None; and the coverage of its reference positions at a guaranteed rung."""
        if unbound := self.analyzer.unbound_references(statement, state.gamma):
            return f"names not bound anywhere: {', '.join(sorted(set(unbound)))}", None
        coverage = None
        if choice.guaranteed and line.strip():
            coverage = self.analyzer.coverage(statement, state.gamma)
            if coverage is not None and coverage.ghosts:
                return f"references to nothing in Γ: {', '.join(sorted(set(coverage.ghosts)))}", coverage
        return None, coverage

    def _budget_cut(self, result: DecodeResult, state: _Progress, first: bool, hole: Hole,
                    choice: fragments.Choice) -> str:
        """The region's text to show when a budget cut it. Cut by the token budget (``maxTokens``,
        the user's choice of length): the complete statement the grammar saw, if any. Cut by
        time (never empty for lack of time): the longest prefix that ends where
        a token ended, not inside a word the decode went on with, whose last word is a name
        in Γ or a keyword, whose names all stand on their own, and that the analyzer does not
        refuse, or the complete statement the grammar saw (``complete_text``) when that is
        longer; else nothing. Every one is a prefix the grammar accepted, so it is a valid
        prefix under the fragment."""
        complete = result.complete_text or ""
        for prefix in result.token_prefixes():
            if prefix == complete:  # a statement the grammar saw complete, not cut inside a word
                return prefix
            if result.stop_reason != STOP_TIMEOUT:  # the token budget: complete statements only
                continue
            if not prefix.strip() or self.analyzer.trim_partial(prefix, state.gamma) != prefix:
                continue
            line = prefix if first else state.layout + prefix
            statement = (hole.typed + line) if first else line.strip()
            if self._names_unknown(prefix, statement, hole, state):
                continue
            if self._refusal(statement, line, state, choice)[0] is None:
                return prefix
        return ""

    def _names_unknown(self, prefix: str, statement: str, hole: Hole, state: _Progress) -> bool:
        """True when a word of ``prefix`` is neither in Γ, nor a keyword, nor declared by the
        statement as the analyzer reads it. A cut statement may read differently from how the
        grammar read it (``a, b = c, d = 0`` cut after ``c,`` makes ``c`` a reference): only a
        prefix whose every name stands on its own is shown."""
        analyzer = self.analyzer
        words = {w for w in _WORD.findall(prefix)
                 if w not in state.gamma and (w not in analyzer.keywords or w in analyzer.names_too)}
        if not words:
            return False
        try:
            declared = {b.name for b in self.analyzer.statement_effects(statement, hole, state.gamma.overlay()).declarations}
        except Exception:  # a cut statement the analyzer cannot read declares nothing
            declared = set()
        return bool(words - declared)

    def _line(self, result: DecodeResult, state: _Progress, trace: StatementTrace, first: bool, hole: Hole,
              choice: fragments.Choice) -> str:
        """The statement's line as it will be shown: laid out under the block (frames popped
        where the indentation returns), and cut back after a budget to the longest prefix
        that ends outside any name (``_budget_cut``)."""
        line = result.text if first else state.layout + result.text
        if not first:
            line_indent = line[: len(line) - len(line.lstrip(" \t"))]
            if not line.strip() or line_indent not in state.allowed_indents:
                trace.dropped = "the line does not continue the block (blank or unexpected indentation)"
                raise _Stop(StopReason.END_OF_BLOCK)
            while state.frames and len(line_indent) <= state.frames[-1]:
                state.frames.pop()
                state.gamma.pop()
            state.indent = line_indent
        if first and hole.suffix and result.complete_text is not None:
            line = result.complete_text  # a middle the model did not end where it fits: where it first did
        elif not result.natural:
            if result.complete_text is not None:  # cut back to a valid prefix outside any name
                cut = self._budget_cut(result, state, first, hole, choice)
                line = cut if first else state.layout + cut
            else:  # unconstrained: at least do not end inside a name
                line = self.analyzer.trim_partial(line, state.gamma)
        return line

    def _carry(self, hole: Hole, statement: str, result: DecodeResult, state: _Progress,
               trace: StatementTrace) -> None:
        """Γ grows by what the statement declared; a header opens a frame; the next
        statement's fragment, context, indentation and prompt follow from it."""
        effects = self.analyzer.statement_effects(statement, hole, state.gamma)
        for binding in effects.declarations:
            state.gamma.declare(binding)
        trace.declared = [b.name for b in effects.declarations]
        if effects.opens_block:
            try:
                state.gamma.push(effects.opens_block, effects.block_bindings)
                state.frames.append(len(state.indent))
            except NestingLimitError as err:
                trace.dropped = str(err)
                raise _Stop(StopReason.NESTING_LIMIT) from None
        if effects.context is not None:
            state.context = dict(effects.context)
        if effects.fragment is not None:
            state.fragment = fragments.fragment(hole.language, effects.fragment)
        state.allowed_indents = tuple(self.analyzer.next_indents(statement, hole, state.indent))
        state.ids = state.ids + result.token_ids
        state.heal, state.heal_outside, state.layout = "", 0, result.trailing_layout


_WORD = re.compile(r"(?<!\w)[^\W\d]\w*")
"""A name-like word (not the exponent of ``1E9``; a member after a dot counts)."""


@dataclass(frozen=True)
class _StatementSpec:
    """The request's settings as one statement sees them."""

    index: int
    last: bool
    constraint: str
    deadline: float | None
    cancel: threading.Event | None
    temperature: float
    seed: int | None
    measure_free_bits: bool
    prefilled: Any
    avoid_start: str = ""
    """What the statement's generated text may not start with (``DecodeSpec.avoid_start``)."""
