"""The grammar gate for P4: lines of real programs are accepted by the fragment the
hole classifier picks, at the rung π picks and at gamma, and the same line with
one reference swapped for a name outside Γ is rejected there (while the open
base rung still accepts it, so the rejection is Γ's doing, not the syntax's).
Grammars are compiled for the default model's vocabulary, as the decoder uses them, by each engine."""

from __future__ import annotations

import random
import re

from p4_helpers import corpus_programs, snapshot, workspace

from gdg_lsp import fragments
from gdg_lsp.grammar.engine import accepts, full_match
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.p4.analyzer import KEYWORDS
from gdg_lsp.languages.p4.blocks import block_context
from gdg_lsp.languages.p4.preprocess import preprocess

PER_FRAGMENT = {"statement": 30, "select_case": 10, "key_entry": 10, "action_ref": 10, "table_property": 10}
KIND_TO_FRAGMENT = {"action": "statement", "apply": "statement", "block": "statement", "state": "statement",
                    "function": "statement", "case": "statement", "select": "select_case", "key": "key_entry",
                    "actions": "action_ref", "table": "table_property"}
GHOST = "zz_ghost"
_LINE = re.compile(r"^([ \t]+)(\S[^\n]*[;{])[ \t]*$")
_DECLARED_NAME = re.compile(r"^(?:const\s+)?(?:(?:bit|int|varbit)\s*<\d+>|[A-Za-z_]\w*)\s+([A-Za-z_]\w*)\s*[=;]")


def _positives():
    rng = random.Random(11)
    found: dict[str, list] = {name: [] for name in PER_FRAGMENT}
    for path in corpus_programs():
        text = path.read_text()
        code = preprocess(text).code
        pos = 0
        for line in text.splitlines(keepends=True):
            m = _LINE.match(line.rstrip("\n"))
            if m and code[pos:pos + len(line)].strip() == line.strip() and m.group(2).count("(") == m.group(2).count(")"):
                inner = block_context(code, pos + len(m.group(1))).innermost
                fragment = KIND_TO_FRAGMENT.get(inner.kind) if inner else None
                if fragment and "{" not in m.group(2)[:-1]:
                    found[fragment].append((path, text, pos, m.group(1), m.group(2)))
            pos += len(line)
    for name, cases in found.items():
        rng.shuffle(cases)
        yield from ((name, case) for case in cases[: PER_FRAGMENT[name]])


def _references(line: str) -> list[tuple[int, int]]:
    """Spans of identifiers that refer to something (not keywords, numbers,
    strings, annotations, or the name a declaration introduces)."""
    masked = re.sub(r'"[^"]*"|@\w+(\([^)]*\))?', lambda m: " " * len(m.group()), line)
    masked = re.sub(r"\b(\d+[ws])?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*)\b", lambda m: " " * len(m.group()), masked)
    declared = _DECLARED_NAME.match(line)
    spans = []
    for m in re.finditer(r"[A-Za-z_]\w*", masked):
        if m.group() in KEYWORDS or m.group() in ("bit", "int", "varbit", "default", "true", "false", "select"):
            continue
        if declared and m.start() == declared.start(1):
            continue
        spans.append(m.span())
    return spans


def test_gate(p4, p4_corpus, smol_engine):
    rng = random.Random(5)
    counts = {name: [0, 0] for name in PER_FRAGMENT}
    for fragment_name, (path, text, line_start, indent, stmt) in _positives():
        cursor = line_start + len(indent)
        line_end = text.index("\n", cursor)
        doc = text[:cursor] + text[line_end:]
        hole = p4.hole_at(snapshot(p4, doc, path.as_uri()), cursor, workspace())
        assert isinstance(hole, Hole) and hole.fragment == fragment_name, (path.name, stmt, hole)
        frag = fragments.fragment("p4", hole.fragment)
        choice = fragments.choose(frag, hole.gamma, hole.context, hole.typed, "scope", smol_engine.get, accepts)
        assert choice.rung is not None, (path.name, stmt, choice.explain())
        rungs = [choice.rung] + (["gamma"] if choice.rung != "gamma" else [])
        compiled = {rung: smol_engine.get(fragments.instantiate(frag, rung, hole.gamma, hole.context)) for rung in rungs}
        for rung, grammar in compiled.items():
            assert full_match(grammar, stmt + "\n"), f"{path.name}: {fragment_name}/{rung} rejects {stmt!r}"
        counts[fragment_name][0] += 1
        spans = [s for s in _references(stmt)]
        if not spans:
            continue
        start, end = rng.choice(spans)
        negative = stmt[:start] + GHOST + stmt[end:]
        base = smol_engine.get(fragments.instantiate(frag, "base", hole.gamma, hole.context))
        assert full_match(base, negative + "\n"), f"{path.name}: base rejects the swapped line {negative!r}"
        for rung, grammar in compiled.items():
            assert not full_match(grammar, negative + "\n"), f"{path.name}: {fragment_name}/{rung} accepts {negative!r}"
        counts[fragment_name][1] += 1
    for name, (positives, negatives) in counts.items():
        assert positives >= min(PER_FRAGMENT[name], 8), (name, counts)
        assert negatives >= 3, (name, counts)  # (table properties such as `size = 1024;` name nothing)
