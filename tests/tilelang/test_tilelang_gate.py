"""The grammar gate: every fragment accepts its positives from the corpus (at the
tightest rung π offers there, with the Γ of that line) and rejects each positive with
one reference swapped for a name that is not in Γ, using compiled grammars (each engine's)."""

from __future__ import annotations

import re

import pytest
from tl_helpers import hole_at_line
from tl_refs import references

from gdg_lsp import fragments
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.languages.tilelang import bench as plugin

PER_CATEGORY = 3


def _positives(corpus):
    by_kind: dict[str, list] = {}
    for path in plugin.corpus_files(corpus):
        text = path.read_text(encoding="utf-8")
        for index, line, kind in plugin.kernel_lines(text):
            by_kind.setdefault(kind, []).append((path, text, index, line))
    picked = []
    for kind, items in sorted(by_kind.items()):
        step = max(1, len(items) // PER_CATEGORY)
        picked += [(kind, *item) for item in items[::step][:PER_CATEGORY]]
    return picked


@pytest.fixture(scope="module")
def gate_cases(tl_corpus, tl_analyzer):
    cases = []
    for kind, path, text, index, line in _positives(tl_corpus):
        lines = text.split("\n")
        indent = line[: len(line) - len(line.lstrip())]
        doc = "\n".join(lines[:index] + [indent] + lines[index + 1 :])
        hole = hole_at_line(tl_analyzer, doc, index, path.as_uri())
        cases.append((kind, path.name, index + 1, line.strip(), hole))
    return cases


def test_gate_covers_every_fragment(gate_cases):
    kinds = {kind for kind, *_ in gate_cases}
    assert kinds == set(fragments.load_fragments("tilelang")) - {"statement"}


def test_fragments_accept_corpus_positives_and_reject_swapped_references(gate_cases, byte_engine):
    failures = []
    checked = 0
    for kind, name, line_no, line, hole in gate_cases:
        for fragment_name in (kind, "statement"):
            fragment = fragments.fragment("tilelang", fragment_name)
            choice = fragments.choose(fragment, hole.gamma, hole.context, "", "scope", byte_engine.get,
                                      lambda c, t: True)
            rung = "ctx" if choice.rung == "pin" and fragment_name != kind else choice.rung
            grammar = fragments.instantiate(fragment, rung, hole.gamma, hole.context)
            compiled = byte_engine.get(grammar)
            if choice.rung == "pin" and not full_match(compiled, line + "\n"):
                # a pin that the corpus line does not follow: π climbs when the user types it
                rung = "ctx"
                compiled = byte_engine.get(fragments.instantiate(fragment, rung, hole.gamma, hole.context))
            if rung not in ("pin", "ctx", "gamma"):
                failures.append((name, line_no, fragment_name, f"no guaranteed rung ({choice.explain()})"))
                continue
            if not full_match(compiled, line + "\n"):
                failures.append((name, line_no, fragment_name, rung, "rejects the positive", line))
                continue
            checked += 1
            for start, end, ref in references(line):
                ghost = ref + "_gh0st"
                assert ghost not in hole.gamma
                negative = line[:start] + ghost + line[end:]
                if full_match(compiled, negative + "\n"):
                    failures.append((name, line_no, fragment_name, rung, "accepts a ghost", negative))
            for m in re.finditer(r"\bT\.(\w+)", line):  # a member the API does not have
                negative = line[: m.start(1)] + "block" + line[m.end(1):]
                if full_match(compiled, negative + "\n"):
                    failures.append((name, line_no, fragment_name, rung, "accepts T.block", negative))
    assert not failures, failures
    assert checked >= 2 * len(gate_cases)


def test_tvmscript_spelling_missing_from_the_surface_is_impossible(tl_analyzer, byte_engine):
    from tl_helpers import GEMM_HEAD, GEMM_TAIL

    text = GEMM_HEAD + "with T.Kernel(1, threads=128) as bx:\n            \n" + GEMM_TAIL
    line = text.split("\n").index("            ")
    hole = hole_at_line(tl_analyzer, text, line)
    grammar = fragments.instantiate(fragments.fragment("tilelang", "statement"), "gamma", hole.gamma, hole.context)
    compiled = byte_engine.get(grammar)
    assert full_match(compiled, "x = T.alloc_shared((4, 4), T.float16)\n")
    assert not full_match(compiled, "with T.block('root'):\n")  # T.block: TVMScript, not TileLang 0.1.15
    assert not full_match(compiled, "x = T.alloc_sharedd((4, 4), T.float16)\n")
