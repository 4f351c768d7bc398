"""The project's own TileLang T.gemm / T.copy fragments re-induced from the TileLang corpus and
compared with the hand-written ones on the same positives and mined ghosts, at the gamma rung
(the ctx rung of the hand-written ones reads the hole's context, which a bare region lacks)."""

from __future__ import annotations

from collections import Counter

import pytest

from gdg_lsp import fragments, languages
from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.fragments import gate, induce
from gdg_lsp.fragments.instantiate import instantiate
from gdg_lsp.grammar.fragment_engine import byte_engine
from gdg_lsp.service import induction

from tests.conftest import CORPUS as SHARED

CORPUS = SHARED / "tilelang"


def _verdicts(fragment, positives, negatives, end=""):
    """(accepted per positive, rejected per negative) at gamma; ``end``: what the fragment's
    line needs after the region (the hand-written ones are whole lines)."""
    engine = byte_engine()
    compiled = []
    for p in positives:
        try:
            compiled.append(engine.compile(instantiate(fragment, "gamma", p.gamma, p.context).text))
        except (GammaEmptyError, GrammarError):
            compiled.append(None)
    accepted = [c is not None and engine.full_match(c, p.text + end) for c, p in zip(compiled, positives)]
    rejected = [not (compiled[n.positive] is not None and engine.full_match(compiled[n.positive], n.text + end))
                for n in negatives]
    return accepted, rejected


@pytest.mark.parametrize("operation, files", [("gemm", None), ("copy", 6)])
def test_reinduced_fragment_agrees_with_the_hand_written_one(operation, files):
    if not CORPUS.is_dir():
        pytest.fail(f"TileLang corpus not found at {CORPUS} (set GDG_CORPUS)")
    paths = induction.corpus_files([CORPUS], "tilelang")[:files]
    regions = induction.collect(paths, "tilelang", f"call:T.{operation}(")
    syntax = induction.syntax_for(languages.analyzer("tilelang"))
    ind = induce.induce(regions.sites, syntax, induce.Options("tilelang", f"{operation}_induced", f"call:T.{operation}("))
    positives = induction.positives(regions, ind.reference_contexts, syntax, keep=lambda i: i not in ind.unresolved)
    negatives = gate.mine(positives, syntax.keywords)
    assert len(positives) >= 20 and len(negatives) > 200

    induced_acc, induced_rej = _verdicts(ind.file.fragment, positives, negatives)
    hand_acc, hand_rej = _verdicts(fragments.fragment("tilelang", operation), positives, negatives, end="\n")
    # the same positives accepted: all of them
    assert induced_acc == hand_acc == [True] * len(positives)
    # the same ghosts rejected, except names of another sort, which the induced fragment (whose gamma
    # rung reads only the sorts its corpus used at each position) rejects and the hand-written one's
    # gamma rung (index expressions over any name) lets through
    differ = Counter(n.kind for n, a, b in zip(negatives, induced_rej, hand_rej) if a != b)
    assert set(differ) <= {"wrong-sort"}, differ
    assert all(induced_rej)
    assert all(r for n, r in zip(negatives, hand_rej) if n.kind != "wrong-sort")
