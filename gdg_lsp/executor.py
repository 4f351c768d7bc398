"""Statement-by-statement decoding with Γ growing as the suggestion declares.

For each statement: π picks the rung against the current Γ, the decoder runs
to the end of the line, and the analyzer says what the statement declared;
those declarations enter Γ before the next statement's grammar is built (a
buffer allocated on one line is usable on the next, and not before). A
statement that opens a scope pushes a frame, popped when the indentation
returns; nesting is capped at 32 frames. A statement may also name the
fragment the next statement is decoded with (TileLang: a line decoded with a
per-operation fragment is followed by whole-line ones).

A statement is kept only if it ended naturally; one cut by the budget is
trimmed so that it does not end inside a name, and nothing follows it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp import fragments
from gdg_lsp.decoding.engine import STOP_NEWLINE, Decoder, DecodeSpec, settle
from gdg_lsp.errors import NestingLimitError
from gdg_lsp.gamma import Gamma
from gdg_lsp.grammar import xgrammar_engine as grammars
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import Analyzer, Coverage, Hole


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
    grammar: str | None = None
    dropped: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    fragment: str | None = None
    coverage: Coverage | None = None
    """How its reference positions were covered (guaranteed rungs only): open ones are named."""


@dataclass
class Execution:
    text: str
    statements: list[StatementTrace]
    stop_reason: str

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
    def free_bits(self) -> float | None:
        """None unless the decode was asked to measure it (it costs a mask per token)."""
        bits = [s.free_bits for s in self.statements]
        return None if any(b is None for b in bits) else sum(bits)


class Executor:
    def __init__(self, analyzer: Analyzer, decoder: Decoder, cache: GrammarCache) -> None:
        # ``decoder`` is anything with Decoder's ``decode(DecodeSpec) -> DecodeResult``
        # (the local loop, or gdg_lsp.backends.remote.RemoteDecoder)
        self.analyzer = analyzer
        self.decoder = decoder
        self.cache = cache

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
    ) -> Execution:
        # The first statement's prompt goes through the model while π compiles its
        # grammar (a new Γ costs a compile as long as a prefill); the decoders that
        # hand the prompt to another engine have no prefill_ahead.
        ahead = getattr(self.decoder, "prefill_ahead", None)
        prefilled = ahead(prompt.ids) if ahead is not None and constraint != "none" else None
        try:
            fragment = fragments.fragment(hole.language, hole.fragment)
            gamma: Gamma = hole.gamma.overlay()
            context: dict[str, Any] = dict(hole.context)
            frames: list[int] = []  # indentation width of each header that pushed a frame
            indent = hole.indent
            allowed_indents: tuple[str, ...] = (hole.indent,)
            ids = list(prompt.ids)
            heal, heal_outside, replay, layout = prompt.heal, prompt.heal_outside, prompt.replay, ""
            tokens_left = max_tokens
            lines: list[str] = []
            traces: list[StatementTrace] = []
            stop = "max-lines"
            for index in range(max_lines):
                first = index == 0
                policy_text = hole.typed if first else layout
                choice = fragments.choose(
                    fragment, gamma, context, policy_text, constraint, self.cache.get, grammars.accepts
                )
                trace = StatementTrace(index, "", choice.rung, choice.attempts, "", 0, 0.0, len(gamma),
                                       grammar=choice.grammar.text if choice.grammar else None)
                trace.fragment = fragment.name
                traces.append(trace)
                if constraint != "none" and choice.rung is None:
                    trace.dropped = "no rung of the fragment accepts the text typed so far"
                    trace.stop_reason = stop = "no-rung"
                    break
                result = self.decoder.decode(DecodeSpec(
                    prompt_ids=ids, heal=heal, heal_outside=heal_outside,
                    replay=replay if first else layout, grammar=choice.compiled,
                    grammar_text=choice.grammar.text if choice.grammar else None,
                    stop_at_newline=True, region_may_start_blank=not first, max_tokens=tokens_left,
                    deadline=deadline, cancel=cancel, prefilled=prefilled if first else None,
                    temperature=temperature, seed=None if seed is None else seed + index,
                    measure_free_bits=measure_free_bits,
                ))
                tokens_left -= result.steps
                trace.stop_reason, trace.tokens, trace.free_bits = result.stop_reason, result.steps, result.free_bits
                trace.seconds = {"prefill": result.prefill_seconds, "model": result.model_seconds,
                                 "mask": result.mask_seconds, "total": result.total_seconds}
                line = result.text if first else layout + result.text
                if not first:
                    line_indent = line[: len(line) - len(line.lstrip(" \t"))]
                    if not line.strip() or line_indent not in allowed_indents:
                        trace.dropped = "the line does not continue the block (blank or unexpected indentation)"
                        stop = "end-of-block"
                        break
                    while frames and len(line_indent) <= frames[-1]:
                        frames.pop()
                        gamma.pop()
                    indent = line_indent
                if not result.natural:
                    if result.complete_text is not None:  # cut back to a complete statement
                        line = result.complete_text if first else layout + result.complete_text
                    else:  # unconstrained: at least do not end inside a name
                        line = self.analyzer.trim_partial(line, gamma)
                    stop = result.stop_reason
                statement = (hole.typed + line) if first else line.strip()
                if unbound := self.analyzer.unbound_references(statement, gamma):
                    trace.dropped = f"names not bound anywhere: {', '.join(sorted(set(unbound)))}"
                    stop = "unbound-name"
                    break
                if choice.guaranteed and line.strip():
                    trace.coverage = self.analyzer.coverage(statement, gamma)
                    if trace.coverage is not None and trace.coverage.ghosts:
                        trace.dropped = f"references to nothing in Γ: {', '.join(sorted(set(trace.coverage.ghosts)))}"
                        stop = "unbound-name"
                        break
                trace.text = line
                if not line.strip() and first:
                    stop = result.stop_reason
                    break
                lines.append(line)
                if not result.natural or result.stop_reason != STOP_NEWLINE or index + 1 == max_lines:
                    stop = result.stop_reason if result.stop_reason != STOP_NEWLINE else "max-lines"
                    break
                if "\n" in result.trailing_layout:
                    stop = "blank-line"
                    break
                effects = self.analyzer.statement_effects(statement, hole, gamma)
                for binding in effects.declarations:
                    gamma.declare(binding)
                trace.declared = [b.name for b in effects.declarations]
                if effects.opens_block:
                    try:
                        gamma.push(effects.opens_block, effects.block_bindings)
                        frames.append(len(indent))
                    except NestingLimitError as err:
                        trace.dropped = str(err)
                        stop = "nesting-limit"
                        break
                if effects.context is not None:
                    context = dict(effects.context)
                if effects.fragment is not None:
                    fragment = fragments.fragment(hole.language, effects.fragment)
                allowed_indents = tuple(self.analyzer.next_indents(statement, hole, indent))
                ids = ids + result.token_ids
                heal, heal_outside, layout = "", 0, result.trailing_layout
            text = "\n".join(lines)
            return Execution(text, traces, stop)
        finally:
            settle(prefilled)  # the backend is the caller's again only once it is over
