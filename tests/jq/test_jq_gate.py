"""Grammar gate on real filters: the programs of jq's own test suite
(corpus/jq/jqlang/jq/tests/jq.test) that read fields of an object input.

Each program is typed into an empty .jq document whose input is the test's
input (the .json of the same name). Positives: every program the filter
fragment's syntax covers (its base rung accepts it) is accepted by the gamma
rung, whose paths are the input's. Negatives: the same program with one field
replaced by a name that is not in the input is rejected by the same compiled
grammar, and so is every program of the suite that itself reads (or assigns)
a field its input lacks (jq's own path listing says which, bench.ghosts)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.jq import bench
from gdg_lsp.languages.jq.analyzer import JqAnalyzer

GHOST = "zz_not_in_gamma"


def _compiled(hole: Hole, rung: str, byte_engine):
    return byte_engine.get(fragments.instantiate(fragments.fragment("jq", "filter"), rung, hole.gamma,
                                                 hole.context))


def test_jq_test_programs_pass_the_gate(tmp_path: Path, byte_engine):
    cases = [c for c in bench.test_cases(bench.test_file(bench.HERE_CORPUS))
             if isinstance(c[2], (dict, list)) and bench._cut(c[1], c[2]) is not None]
    assert len(cases) >= 30
    covered, negatives, wrong = 0, 0, []
    for number, program, data, _ in cases:
        stem = tmp_path / f"case{number}"
        stem.with_suffix(".json").write_text(json.dumps(data))
        hole = JqAnalyzer().hole_at(Snapshot(stem.with_suffix(".jq").as_uri(), "jq", 1, "", None), 0,
                                    WorkspaceContext([tmp_path]))
        assert isinstance(hole, Hole), hole
        if not accepts(_compiled(hole, "base", byte_engine), program + "\n"):
            continue  # syntax the fragment does not cover (destructuring, reduce, ?//, ...)
        if re.search(r"\[[0-9]+\]\.", program):
            continue  # `.foo[2].bar`: the gamma rung writes `[]` steps (an index is typed, never suggested)
        covered += 1
        gamma = _compiled(hole, "gamma", byte_engine)
        if bench.ghosts(program, data):
            # the test itself reads (or creates) a field its input lacks: a real negative
            if accepts(gamma, program + "\n"):
                wrong.append(f"accepts line {number}, which reads a field the input lacks: {program}")
            negatives += 1
            continue
        if not accepts(gamma, program + "\n"):
            wrong.append(f"rejects line {number}: {program}")
            continue
        cut = bench._cut(program, data)
        field = re.match(r"\.[A-Za-z_][A-Za-z0-9_]*", program[cut:]).group()
        mutated = program[:cut] + "." + GHOST + program[cut + len(field):]
        if accepts(gamma, mutated + "\n"):
            wrong.append(f"accepts a ghost (line {number}): {mutated}")
        negatives += 1
    assert not wrong, "\n".join(wrong)
    assert covered >= 15 and negatives >= covered, (covered, negatives)
