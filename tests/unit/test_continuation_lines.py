"""Lines inside brackets opened on a line above (Python, TileLang): the hole is found, its
line may end where Python lets a line break (the statement goes on below), and the
references on it are still drawn from Γ. The gate uses real continuation lines cut from the
corpus (the bench's ``--holes continuation``) and the compiled grammar the decoder uses."""

from __future__ import annotations

import ast
from pathlib import Path

from gdg_lsp import fragments, languages
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Document
from gdg_lsp.executor import Executor, Prompt, StopReason
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.python import bench as python_bench
from gdg_lsp.languages.python import continued as python_continued
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.languages.tilelang import bench as tilelang_bench

GHOST = "zz_not_in_gamma"


def _hole(language: str, text: str, cursor: int, uri: str = "file:///c.py") -> Hole | NoHole:
    analyzer = languages.analyzer(language, text)
    return analyzer.hole_at(Document(uri, language, 1, text, analyzer.parser()).snapshot(), cursor, WorkspaceContext())


def _references(line: str, hole: Hole) -> list[tuple[int, str]]:
    """(column, name) of the names on ``line`` read as references to Γ, receivers left out
    (the member tests gate what follows a dot)."""
    return [(column, name) for column, name in python_continued.referenced_names(line)
            if name in hole.gamma and not line[column + len(name):].lstrip().startswith(".")]


def _in_comprehension(case) -> bool:
    """The hole's line lies inside a comprehension or lambda of the original file: names there
    may be bound by the comprehension's own ``for`` further on, so the mask leaves them open
    and the analyzer checks them once the statement is complete (``unbound_references``)."""
    tree = ast.parse(Path(case.meta["file"]).read_text(encoding="utf-8"))
    line = case.meta["line"]
    return any(isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda))
               and n.lineno <= line <= n.end_lineno for n in ast.walk(tree))


def test_the_line_may_break_only_inside_brackets_continued_from_above():
    inside = "def f(a, b):\n    items = [a,\n             \n    return items\n"
    hole = _hole("python", inside, inside.index("             \n") + 13)
    assert isinstance(hole, Hole) and hole.context["line_break"] == ["\n"] and hole.typed.startswith("items = [a,")
    fresh = "def f(a, b):\n    \n"
    assert _hole("python", fresh, fresh.index("    \n") + 4).context["line_break"] == []
    backslash = "def f(a, b):\n    x = a + \\\n        \n"
    assert _hole("python", backslash, backslash.index("        \n") + 8).context["line_break"] == []
    # a line hole's grammar is what it was: the break rule disappears with its empty slot
    frag = fragments.fragment("python", "statement")
    gamma = _hole("python", fresh, fresh.index("    \n") + 4).gamma
    assert "BRK" not in fragments.instantiate(frag, "gamma", gamma, dict(_hole("python", fresh, 17).context)).text
    assert "BRK ::=" in fragments.instantiate(frag, "gamma", hole.gamma, dict(hole.context)).text


def _gate(language: str, cases, engine) -> tuple[int, int]:
    accepted = rejected = checked = 0
    for case in cases:
        hole = _hole(language, case.text, case.cursor, case.uri)
        assert isinstance(hole, Hole), (case.case_id, hole)
        assert hole.context["line_break"] == ["\n"], case.case_id
        frag = fragments.fragment(language, hole.fragment)
        choice = fragments.choose(frag, hole.gamma, dict(hole.context), hole.typed, "scope", engine.get,
                                  lambda compiled, text: compiled.matcher().accept_text(text))
        assert choice.rung in ("pin", "ctx", "gamma"), (case.case_id, choice.rung)
        compiled = choice.compiled
        line = case.expected
        matcher = compiled.matcher()
        assert matcher.accept_text(hole.typed + line + "\n"), f"{case.case_id}: positive rejected: {line!r}"
        accepted += 1
        analyzer = languages.analyzer(language, case.text)
        for column, name in ([] if _in_comprehension(case) else _references(line, hole)):
            swapped = line[:column] + GHOST + line[column + len(name):]
            if compiled.matcher().accept_text(hole.typed + swapped + "\n"):
                # the mask left the position open (a comprehension's `for` could still bind it
                # further on): the executor's check of the finished line drops it
                assert GHOST in analyzer.unbound_in_continued(hole.typed + swapped, len(hole.typed), hole, hole.gamma), \
                    f"{case.case_id}: ghost accepted: {swapped!r}"
                checked += 1
            else:
                rejected += 1
            # the real line passes the same check
        assert not analyzer.unbound_in_continued(hole.typed + line, len(hole.typed), hole, hole.gamma) \
            or _in_comprehension(case), case.case_id
    return accepted, rejected + checked


def test_gate_python_continuation_lines(corpus, smol_engine):
    cases = python_bench.cut_continuation_holes(corpus, 12, seed=0)
    accepted, rejected = _gate("python", cases, smol_engine)
    assert accepted == len(cases) >= 10 and rejected >= 5


def test_gate_tilelang_continuation_lines(corpus, smol_engine):
    cases = tilelang_bench.cut_continuation_holes(corpus, 12, seed=0)
    accepted, rejected = _gate("tilelang", cases, smol_engine)
    assert accepted == len(cases) >= 10 and rejected >= 5


def test_a_continuation_line_answers_one_line_and_stays_in_gamma(random_backend, tiny_vocab):
    """Whatever the model writes at a line inside brackets: one line, a prefix of the statement
    the grammar reads, every reference in Γ; and the line may end before the statement does."""
    code = "def f(ab, xy):\n    total = len([ab,\n                 "
    analyzer = PythonAnalyzer()
    doc = Document("file:///c.py", "python", 1, code, parse)
    hole = analyzer.hole_at(doc.snapshot(), len(code), WorkspaceContext())
    assert isinstance(hole, Hole) and hole.context["line_break"] == ["\n"]
    cache = GrammarCache(tiny_vocab)
    stops = set()
    for seed in range(40):
        execution = Executor(analyzer, Decoder(random_backend), cache).run(
            hole, Prompt(tiny_vocab.encode(code).ids), "scope", max_tokens=24, max_lines=3, temperature=1.0, seed=seed)
        stops.add(execution.stop_reason)
        if execution.stop_reason == StopReason.CONTINUES:
            assert "\n" not in execution.text and len(execution.statements) == 1
        coverage = analyzer.coverage(hole.typed + execution.text.split("\n")[0], hole.gamma)
        assert coverage is None or not coverage.ghosts, (seed, execution.text)
    assert StopReason.CONTINUES in stops, stops


def test_names_a_line_leaves_to_the_statement_below_are_checked():
    gamma = {"pairs", "len", "total"}
    statement = "total = sum(x * y\n for x, y in pairs)"
    assert python_continued.unbound_on_line("x * y", statement, gamma) == []  # bound by the `for` below
    assert python_continued.unbound_on_line("x * zz", statement, gamma) == ["zz"]
    assert python_continued.unbound_on_line("len(s), key=f,", "f(len(s), key=f,\n)", gamma) == ["s", "f"]
    assert python_continued.unbound_on_line("'zz' + total.zz", "x = ('zz' + total.zz\n)", gamma) == []
    assert python_continued.unbound_on_line("(n := 3) + n", "y = [(n := 3) + n\n]", gamma) == []


def test_comments_of_the_lines_above_are_not_replayed():
    text = ("def f(a, b):\n    items = [a,  # first\n             'x#y',  # second\n             \n"
            "             b,\n    ]\n    return items\n")
    hole = _hole("python", text, text.index("             \n") + 13)
    assert isinstance(hole, Hole) and hole.typed == "items = [a,   'x#y',   "  # the blanks before a comment stay
