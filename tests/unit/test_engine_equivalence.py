"""Differential test of the two grammar engines: same grammars, same answers (issue 19).

Both engines compile the same instantiated fragments, XGrammar from the
template dialect and llguidance from the Lark that ``lark_emitter`` prints.
Holes are cut from the corpus of every language by its bench plug-in (Γ as
the analyzer derives it there), and for each grammar both engines must agree:

- on corpus positives: the hole's own line at the rung π picks and at the
  open base rung, and every corpus line of the language at the base rung of a
  hole of its kind (at least 1,000 strings accepted by both);
- on mined ghosts: the hole's line with a reference to a name of Γ replaced by
  a near miss (one character off) or by a name of another hole's Γ, at the rung
  π picks (at least 1,000 rejected by both);
- on next tokens: after sampled prefixes of the hole's line, with the default
  model's tokenizer, both masks allow the same tokens (special tokens aside:
  the decoder never picks them).

Any disagreement fails with the string (and for masks, the tokens) it is about: the
engines are equivalent on all of them, which is what lets ``auto`` pick either.
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from gdg_lsp import fragments, languages
from gdg_lsp.explain import byte_grammars
from gdg_lsp.grammar import engine as grammar_engine
from gdg_lsp.grammar.engine import accepts, full_match
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.p4.bench import _statement_lines as p4_statement_lines
from gdg_lsp.languages.python.bench import corpus_files as python_files
from gdg_lsp.languages.jq import bench as jq_bench
from gdg_lsp.languages.jq.analyzer import JqAnalyzer
from gdg_lsp.languages.shell import bench as shell_bench
from gdg_lsp.languages.tilelang.bench import corpus_files as tilelang_files
from gdg_lsp.languages.tilelang.bench import kernel_lines
from gdg_lsp.settings import Settings

ENGINES = ("xgrammar", "llguidance")
HOLES = {"python": 40, "sql": 40, "p4": 40, "tilelang": 24, "shell": 22, "jq": 24}
"""Holes per language (each compiled by both engines at two rungs)."""
LINE_FRAGMENTS = {"python": "statement", "tilelang": "statement", "p4": "statement", "shell": "command"}
"""The fragment whose base rung reads each corpus line of a language (SQL's queries are their
holes' own lines; jq's programs are read from the start of an empty filter, ``_jq_start``)."""
MASK_HOLES, MASK_PREFIXES = 3, 6
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Case:
    language: str
    hole: Hole
    line: str
    """What the hole's line holds after the typed text, with the language's end."""
    rung: str | None
    grammar: fragments.Instantiated | None


def _ends(language: str) -> tuple[str, ...]:
    return ("\n", ";") if language == "sql" else ("\n",)


@cache
def _cases(corpus: Path, language: str) -> tuple[Case, ...]:
    plugin = languages.bench_plugin(language)
    workspace_for = getattr(plugin, "workspace_for", None)
    settings_for = getattr(plugin, "settings_for", None)
    xgrammar = byte_grammars("xgrammar")
    out = []
    for case in plugin.cut_holes(corpus, HOLES[language], 1):
        workspace = workspace_for(case) if workspace_for else WorkspaceContext(roots=[corpus])
        workspace.settings = settings_for(case, Settings()) if settings_for else Settings()
        hole = languages.analyzer(language, case.text).hole_at(case.document().snapshot(), case.cursor, workspace)
        if not isinstance(hole, Hole):
            continue
        fragment = fragments.fragment(hole.language, hole.fragment)
        choice = fragments.choose(fragment, hole.gamma, hole.context, hole.typed, "scope", xgrammar.get, accepts)
        out.append(Case(language, hole, hole.typed + case.expected, choice.rung, choice.grammar))
    return tuple(out)


def _base(case: Case) -> fragments.Instantiated:
    fragment = fragments.fragment(case.hole.language, case.hole.fragment)
    return fragments.instantiate(fragment, "base", case.hole.gamma, case.hole.context)


def _answers(grammar, text: str, complete: bool = True) -> tuple[bool, ...]:
    check = full_match if complete else accepts
    return tuple(check(byte_grammars(name).get(grammar), text) for name in ENGINES)


def _corpus_lines(corpus: Path, language: str) -> list[str]:
    """Lines of the language's corpus that a statement fragment's base rung reads."""
    if language == "python":
        lines = []
        for path in python_files(corpus)[:12]:
            text = path.read_text(encoding="utf-8")
            source = text.split("\n")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.stmt) and node.lineno == node.end_lineno and not hasattr(node, "body"):
                    lines.append(source[node.lineno - 1].strip())
        return sorted(set(lines))
    if language == "tilelang":
        return sorted({line.strip() for path in tilelang_files(corpus)
                       for _, line, _ in kernel_lines(path.read_text(encoding="utf-8"))})
    if language == "p4":
        lines = set()
        for path in sorted((corpus / "p4").rglob("*.p4")):
            lines |= {stmt.strip() for *_, stmt in p4_statement_lines(path.read_text(encoding="utf-8"))}
        return sorted(lines)
    if language == "shell":
        lines = set()
        for path in sorted(shell_bench.corpus_root(corpus).rglob("*.sh")):
            text = path.read_text(encoding="utf-8", errors="replace")
            lines |= {line.strip() for line in text.split("\n")
                      if line.strip() and not line.strip().startswith("#") and not line.rstrip().endswith("\\")}
        return sorted(lines)
    if language == "jq":
        return sorted({program for _, program, *_ in jq_bench.test_cases(jq_bench.test_file(corpus))
                       if "\n" not in program})
    return []  # SQL: each gold query is its own hole's line


def _jq_start(folder: Path) -> fragments.Instantiated:
    """The base rung of the filter fragment at the start of an empty .jq document."""
    (folder / "start.json").write_text("{}", encoding="utf-8")
    hole = JqAnalyzer().hole_at(Snapshot((folder / "start.jq").as_uri(), "jq", 1, "", None), 0, WorkspaceContext([folder]))
    assert isinstance(hole, Hole), hole
    return fragments.instantiate(fragments.fragment("jq", "filter"), "base", hole.gamma, hole.context)


def test_both_engines_accept_the_same_corpus_positives(corpus, tmp_path):
    agreed: dict[str, int] = {}
    disagreements = []
    for language in HOLES:
        cases = [c for c in _cases(corpus, language) if c.grammar is not None]
        accepted = 0
        bases: dict[str, fragments.Instantiated] = {}
        for case in cases:
            base = _base(case)
            bases.setdefault(case.hole.fragment, base)
            for grammar in (case.grammar, base):
                for end in _ends(language):
                    answers = _answers(grammar, case.line + end)
                    if len(set(answers)) > 1:
                        disagreements.append((language, grammar.rung, case.line + end, answers))
                    if all(answers):
                        accepted += 1
                        break
        base = _jq_start(tmp_path) if language == "jq" else bases.get(LINE_FRAGMENTS.get(language, ""))
        for line in _corpus_lines(corpus, language) if base is not None else ():
            answers = _answers(base, line + "\n")
            if len(set(answers)) > 1:
                disagreements.append((language, "base", line, answers))
            accepted += all(answers)
        agreed[language] = accepted
    assert not disagreements, disagreements[:10]
    assert sum(agreed.values()) >= 1000, agreed
    assert all(count >= 30 for count in agreed.values()), str(agreed)


def _near_misses(name: str, rng: random.Random) -> list[str]:
    """One character off: the last dropped, one doubled, two swapped, one replaced."""
    out = [name[:-1], name + name[-1]]
    if len(name) > 2:
        i = rng.randrange(len(name) - 1)
        out.append(name[:i] + name[i + 1] + name[i] + name[i + 2:])
    i = rng.randrange(len(name))
    out.append(name[:i] + ("q" if name[i] != "q" else "z") + name[i + 1:])
    return [n for n in out if n and WORD.fullmatch(n)]


def test_both_engines_reject_the_same_ghosts(corpus):
    rng = random.Random(7)
    rejected = 0
    disagreements = []
    for language in HOLES:
        cases = [c for c in _cases(corpus, language) if c.grammar is not None and c.rung in ("pin", "ctx", "gamma")]
        others = sorted({n for c in cases for names in c.grammar.sets.values() for n in names if WORD.fullmatch(n)})
        for case in cases:
            gamma = set(case.hole.gamma.names()) | {n for names in case.grammar.sets.values() for n in names}
            typed = len(case.hole.typed)
            refs = [m for m in WORD.finditer(case.line) if m.start() >= typed and m.group() in gamma]
            strangers = [n for n in others if n not in gamma]
            for m in refs:
                ghosts = _near_misses(m.group(), rng) + rng.sample(strangers, min(2, len(strangers)))
                for ghost in ghosts:
                    if ghost in gamma:
                        continue
                    text = case.line[: m.start()] + ghost + case.line[m.end():]
                    answers = tuple(any(a) for a in zip(*(_answers(case.grammar, text + end) for end in _ends(language))))
                    if len(set(answers)) > 1:
                        disagreements.append((language, case.rung, text, answers))
                    rejected += not any(answers)
    assert not disagreements, disagreements[:10]
    assert rejected >= 1000, rejected


@pytest.fixture(scope="module")
def smol_engines(smol_vocab):
    return {name: grammar_engine.create(name, smol_vocab) for name in ENGINES}


def test_both_engines_allow_the_same_next_tokens(corpus, smol_vocab, smol_engines):
    vocab = smol_vocab
    special = np.zeros(vocab.size, dtype=bool)
    special[[i for i in vocab.special_ids if i < vocab.size]] = True
    bitmask = grammar_engine.allocate_bitmask(vocab.size)

    def mask(matcher) -> np.ndarray:
        bitmask.fill_(-1)
        matcher.fill_mask(bitmask)
        return np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")[: vocab.size].astype(bool) & ~special

    rng = random.Random(3)
    compared = 0
    differences = []
    for language in HOLES:
        cases = [c for c in _cases(corpus, language) if c.grammar is not None][:MASK_HOLES]
        for case in cases:
            compiled = [smol_engines[name].get(case.grammar) for name in ENGINES]
            typed = case.hole.typed
            ids = vocab.encode(case.line[len(typed):] + "\n").ids
            for cut in sorted(rng.sample(range(len(ids)), min(MASK_PREFIXES, len(ids)))):
                prefix = typed + vocab.decode(ids[:cut])
                matchers = [c.matcher() for c in compiled]
                replayed = [m.accept_text(prefix) for m in matchers]
                assert len(set(replayed)) == 1, (language, prefix, replayed)
                if not replayed[0]:
                    continue
                first, second = (mask(m) for m in matchers)
                compared += 1
                if (first != second).any():
                    only = [[vocab.token_bytes[i] for i in np.nonzero(a & ~b)[0][:8]] for a, b in ((first, second), (second, first))]
                    differences.append((language, case.rung, prefix, dict(zip(ENGINES, only))))
    assert not differences, differences[:5]
    assert compared >= 40, compared
