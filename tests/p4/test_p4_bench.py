"""The P4 benchmark plug-in: holes are deterministic and many enough, and the
checker, which shares no code with Γ, finds no ghost in the original lines and
finds the ones planted."""

from __future__ import annotations

import ast
import inspect

from gdg_lsp.languages.p4 import bench


def test_holes_are_deterministic_and_many(p4_corpus):
    first = bench.cut_holes(p4_corpus.parent, 60, seed=3)
    again = bench.cut_holes(p4_corpus.parent, 60, seed=3)
    assert [c.case_id for c in first] == [c.case_id for c in again]
    assert len(first) == 60 and len({c.case_id for c in first}) == 60
    assert len({c.meta["file"] for c in first}) >= 30  # spread over the programs
    for case in first:
        line_start = case.text.rfind("\n", 0, case.cursor) + 1
        assert case.text[line_start:case.cursor].strip() == ""  # the cursor after the indentation
        assert case.expected.endswith(";") and case.expected not in case.text[case.cursor:case.cursor + len(case.expected)]


def test_original_lines_have_no_ghosts(p4_corpus):
    cases = bench.cut_holes(p4_corpus, 80, seed=0)
    for case in cases:
        verdict = bench.check(case, case.expected)
        assert verdict.parsed and verdict.ghosts == [] and verdict.passed, (case.case_id, case.expected, verdict)


def test_planted_ghosts_are_found(p4_corpus):
    case = bench.cut_holes(p4_corpus, 1, seed=0)[0]
    verdict = bench.check(case, "hdr.zz_nosuch = zz_other(8w0x1f) + error.NoError;")
    assert verdict.ghosts == ["zz_nosuch", "zz_other"] and not verdict.passed
    assert bench.check(case, "return zz_nosuch;").ghosts == ["zz_nosuch"]  # `return x;` declares nothing
    declared_here = bench.check(case, "bit<8> zz_fresh = 1;")
    assert declared_here.ghosts == []  # a suggestion may declare a new local


def test_checker_is_independent_of_the_analyzer():
    """check() and its helpers import nothing from the analyzer's Γ code."""
    tree = ast.parse(inspect.getsource(bench))
    checker_functions = {"check", "declared_names", "identifiers", "_includes", "_code"}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in checker_functions:
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    raise AssertionError(f"{node.name} imports {ast.dump(inner)}")
    top_imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    # the bench case types live beside the languages (gdg_lsp.languages.cases); nothing else of them
    modules = [getattr(n, "module", "") or "" for n in top_imports]
    assert not any("languages" in m for m in modules if m != "gdg_lsp.languages.cases")
