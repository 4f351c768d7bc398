"""What happened at a hole, for people: ``gdg-lsp explain`` and the ``gdg/explain`` request.

The report names the hole (sort, region, text typed), Γ grouped by sort, the
rung π chose and why the tighter ones were passed over, the instantiated
grammar, and the timings.
"""

from __future__ import annotations

from typing import Any

from gdg_lsp import fragments, languages
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar import engine as grammar_engines
from gdg_lsp.grammar.engine import GrammarEngine, accepts
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.service.fragment_library import authored_sentence, template_text
from gdg_lsp.service.local import Suggestion
from gdg_lsp.settings import Settings

MAX_NAMES_SHOWN = 40
_LISTED_APART = frozenset({"receivers", "kwargs"})
"""Context entries shown on lines of their own (long lists)."""


byte_grammars = grammar_engines.byte_engine
"""Grammars compiled for a one-byte-per-token vocabulary, per engine (shared with the gate)."""


def grammar_engine_names() -> tuple[str, ...]:
    """The engines ``gdg.grammarEngine`` can name (besides ``auto``)."""
    return grammar_engines.ENGINES


def accepts_text(engine: GrammarEngine, grammar: str, text: str) -> bool:
    """Whether ``grammar`` (template dialect) compiled by ``engine`` matches ``text`` exactly."""
    return grammar_engines.full_match(engine.get(grammar), text)


def _position(text: str, offset: int) -> dict[str, int]:
    line = text.count("\n", 0, offset)
    return {"line": line + 1, "col": offset - (text.rfind("\n", 0, offset) + 1) + 1}


def _hole_report(hole: Hole, text: str) -> dict[str, Any]:
    return {
        "language": hole.language,
        "sort": hole.sort,
        "fragment": hole.fragment,
        "regionStart": _position(text, hole.region_start),
        "cursor": _position(text, hole.cursor),
        "typed": hole.typed,
        "regionPath": list(hole.region_path),
        "context": {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in hole.context.items()},
        "receivers": list(hole.context.get("receivers", ())),
        "gammaSize": len(hole.gamma),
        "gamma": hole.gamma.by_sort(),
    }


def _gamma_lines(gamma_by_sort: dict[str, list[str]]) -> list[str]:
    lines = []
    for sort, names in gamma_by_sort.items():
        shown = ", ".join(names[:MAX_NAMES_SHOWN])
        more = f" … (+{len(names) - MAX_NAMES_SHOWN})" if len(names) > MAX_NAMES_SHOWN else ""
        lines.append(f"  {sort} ({len(names)}): {shown}{more}")
    return lines


def explain_hole(snapshot: Snapshot, offset: int, settings: Settings, workspace: WorkspaceContext,
                 dialect: str = "ebnf") -> dict[str, Any]:
    """The hole, Γ and π's choice, without a model; the grammar in ``dialect``
    (``grammar.engine.DIALECTS``)."""
    analyzer = languages.analyzer(snapshot.language_id, snapshot.text)
    hole = analyzer.hole_at(snapshot, offset, workspace)
    if isinstance(hole, NoHole):
        return {"hole": None, "reason": hole.reason, "text": f"no hole here: {hole.reason}"}
    fragment = fragments.fragment(hole.language, hole.fragment)
    cache = byte_grammars(settings.grammar_engine)
    choice = fragments.choose(fragment, hole.gamma, hole.context, hole.typed, settings.constraint, cache.get, accepts)
    report = {"hole": _hole_report(hole, snapshot.text), "choice": _choice_report(choice, cache.name, dialect)}
    if (written := template_text(hole.language, hole.fragment, choice.rung, hole.typed)) is not None:
        # a user's fragment file: only its Γ slots are a guarantee, not the words its template writes
        report["choice"]["fragmentText"] = written.summary()
        report["choice"]["guaranteed"] = choice.guaranteed and not written.words
    report["text"] = "\n".join(_text_lines(report))
    return report


def _choice_report(choice: fragments.Choice, engine: str, dialect: str = "ebnf") -> dict[str, Any]:
    return {
        "constraint": choice.constraint,
        "rung": choice.rung,
        "guaranteed": choice.guaranteed,
        "attempts": [{"rung": a.rung, "outcome": a.outcome, "detail": a.detail} for a in choice.attempts],
        "grammarEngine": engine,
        "dialect": dialect,
        "grammar": grammar_engines.in_dialect(choice.grammar, dialect) if choice.grammar else None,
        "slots": {k: (list(v) if isinstance(v, tuple) else v) for k, v in choice.grammar.slot_values.items()}
        if choice.grammar else {},
    }


def explain_suggestion(suggestion: Suggestion, settings: Settings, dialect: str = "ebnf") -> dict[str, Any]:
    """Everything about a finished request (the model ran)."""
    report: dict[str, Any] = {"suggestion": suggestion.summary()}
    if suggestion.hole is None:
        report["hole"] = None
        report["text"] = f"no hole here: {suggestion.reason}"
        return report
    report["hole"] = {**_hole_report(suggestion.hole, ""), "regionStart": None, "cursor": None}
    statements = []
    for trace in suggestion.execution.statements if suggestion.execution else []:
        statements.append({
            "index": trace.index, "text": trace.text, "rung": trace.rung, "fragment": trace.fragment,
            "attempts": [{"rung": a.rung, "outcome": a.outcome, "detail": a.detail} for a in trace.attempts],
            "stopReason": trace.stop_reason, "tokens": trace.tokens, "freeBits": None if trace.free_bits is None else round(trace.free_bits, 2),
            "gammaSize": trace.gamma_size, "declared": trace.declared, "dropped": trace.dropped,
            "timingsMs": {k: round(v * 1000, 2) for k, v in trace.seconds.items()},
            "grammarEngine": trace.engine,
            "dialect": dialect,
            "grammar": grammar_engines.in_dialect(trace.source, dialect) if trace.source is not None else None,
            "coverage": None if trace.coverage is None else {
                "slotted": trace.coverage.slotted, "checked": trace.coverage.checked, "open": trace.coverage.open,
                "declared": trace.coverage.declared},
        })
    report["statements"] = statements
    report["text"] = "\n".join(_text_lines(report))
    return report


def _text_lines(report: dict[str, Any]) -> list[str]:
    hole = report["hole"]
    lines = [f"hole: {hole['language']} {hole['sort']} (fragment {hole['fragment']})"]
    if hole.get("regionStart"):
        lines.append(f"region: from line {hole['regionStart']['line']} col {hole['regionStart']['col']} "
                     f"to the cursor at line {hole['cursor']['line']} col {hole['cursor']['col']}")
    lines.append(f"typed: {hole['typed']!r}")
    lines.append(f"scopes: {' > '.join(hole['regionPath'])}")
    if hole["context"].get("data_source"):  # SQL: which database Γ's tables come from
        lines.append(f"data source: {hole['context']['data_source']}")
    flags = {k: v for k, v in hole["context"].items() if v and k not in _LISTED_APART}
    if flags:
        lines.append(f"context: {flags}")
    if hole["context"].get("kwargs"):
        lines.append(f"keyword names of known callees: {len(hole['context']['kwargs'])}")
    if hole.get("receivers"):
        lines.append("receivers (what may follow their dot):")
        lines += [f"  {line}" for line in hole["receivers"]]
    lines.append(f"Γ: {hole['gammaSize']} names")
    lines += _gamma_lines(hole["gamma"])
    if "choice" in report:
        choice = report["choice"]
        lines.append(f"policy: constraint={choice['constraint']} → rung {choice['rung'] or 'none'}"
                     + (" (every slotted reference drawn from Γ; open positions are named per suggestion)"
                        if choice["guaranteed"] else ""))
        if choice.get("fragmentText"):
            lines.append(f"  {authored_sentence(choice['fragmentText'])}")
        lines += [f"  {a['rung']}: {a['outcome']}" + (f" ({a['detail']})" if a["detail"] else "") for a in choice["attempts"]]
        lines.append(f"grammar engine: {choice['grammarEngine']}")
        if choice["grammar"]:
            lines.append(f"grammar ({choice['dialect']}):")
            lines += ["  " + line for line in choice["grammar"].splitlines()]
    if "statements" in report:
        summary = report["suggestion"]
        lines.append(f"suggestion: {summary['text']!r}")
        lines.append(f"  rung={summary['rung']} guaranteed={summary['guaranteed']} stop={summary['stopReason']} "
                     f"tokens={summary['tokens']} free_bits={summary['freeBits']}")
        if summary.get("fragmentText"):
            lines.append(f"  {authored_sentence(summary['fragmentText'])}")
        if summary.get("reason"):
            lines.append(f"  reason: {summary['reason']}")
        if summary.get("notGuaranteedBecause"):
            lines.append(f"  not guaranteed: {summary['notGuaranteedBecause']}")
        for dropped in summary.get("dropped", []):
            lines.append(f"  not shown: {dropped['text']!r}: {dropped['why']}")
        lines.append(f"  timings (ms): {summary['timingsMs']}; prompt {summary['promptTokens']} tokens "
                     f"({summary['reusedTokens']} reused from the KV cache)")
        lines.append(f"  prompt template: {summary['promptTemplate']}"
                     + (f" ({summary['suffixTokens']} tokens after the cursor)" if summary["suffixTokens"] else ""))
        for st in report["statements"]:
            lines.append(f"statement {st['index'] + 1}: {st['text']!r} fragment={st['fragment']} rung={st['rung']} stop={st['stopReason']} "
                         f"Γ={st['gammaSize']}" + (f" declares {st['declared']}" if st["declared"] else "")
                         + (f" DROPPED: {st['dropped']}" if st["dropped"] else ""))
            lines += [f"  {a['rung']}: {a['outcome']}" + (f" ({a['detail']})" if a["detail"] else "") for a in st["attempts"]]
            if st.get("coverage"):
                cov = st["coverage"]
                lines.append(f"  reference positions: {cov['slotted']} slotted, {cov['checked']} checked, "
                             f"{len(cov['open'])} open" + (f": {'; '.join(cov['open'])}" if cov["open"] else ""))
                if cov.get("declared"):  # declarations, as `x = ...` is: said, not open
                    lines.append(f"  declares: {'; '.join(cov['declared'])}")
            lines.append(f"  timings (ms): {st['timingsMs']}")
        first = report["statements"][0] if report["statements"] else None
        if first and first["grammarEngine"]:
            lines.append(f"grammar engine: {first['grammarEngine']}")
        if first and first["grammar"]:
            lines.append(f"grammar (statement 1, {first['dialect']}):")
            lines += ["  " + line for line in first["grammar"].splitlines()]
    return lines
