"""One byte engine per kind, shared by explain, the fragment gate and the tests: answers must
not depend on which grammars it compiled before (issue 19: an earlier shared engine made the
SQL gate's llguidance run depend on test order).

Two grammars that share their template part and differ in Γ (two SQL databases' ctx rungs),
and a third with another template (Python's statement), are compiled in both orders, each
order on a fresh engine with the module-level caches emptied, and must answer every text the
same; the process's shared engine (``auto``, what the gate uses) must answer as they do.
"""

from __future__ import annotations

import pytest

from gdg_lsp import fragments, languages
from gdg_lsp.documents import Snapshot
from gdg_lsp.explain import byte_grammars
from gdg_lsp.grammar import engine as grammar_engine
from gdg_lsp.grammar import fragment_engine
from gdg_lsp.grammar.engine import accepts, full_match
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.settings import Settings
from gdg_lsp.vocab import ByteVocabulary

SCHEMAS = {
    "shop": "CREATE TABLE orders (id INT, total REAL, customer TEXT);",
    "school": "CREATE TABLE pupils (id INT, name TEXT, grade INT);\nCREATE TABLE orders (id INT, room TEXT);",
}
TEXTS = [
    "SELECT total FROM orders;", "SELECT room FROM orders;", "SELECT name FROM pupils;",
    "SELECT customer FROM orders WHERE total > 3;", "SELECT grade FROM pupils WHERE name = 'x';",
    "SELECT totl FROM orders;", "x = 1\n", "self.size = len(x)\n",
]


def _sql_grammar(tmp_path, name: str) -> fragments.Instantiated:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "schema.sql").write_text(SCHEMAS[name], encoding="utf-8")
    text = "SELECT "
    snapshot = Snapshot((folder / "q.sql").as_uri(), "sql", 1, text, None)
    hole = languages.analyzer("sql", text).hole_at(snapshot, len(text), WorkspaceContext([folder], Settings()))
    assert isinstance(hole, Hole), hole
    return fragments.instantiate(fragments.fragment("sql", "statement"), "ctx", hole.gamma, hole.context)


def _python_grammar() -> fragments.Instantiated:
    text = "class A:\n    def f(self, x):\n        self.size = 1\n        "
    hole = languages.analyzer("python", text).hole_at(Snapshot("file:///a.py", "python", 1, text, None), len(text),
                                                       WorkspaceContext([]))
    assert isinstance(hole, Hole), hole
    return fragments.instantiate(fragments.fragment("python", "statement"), "gamma", hole.gamma, hole.context)


def _answers(engine: grammar_engine.GrammarEngine, grammars) -> dict:
    out = {}
    for name, grammar in grammars:
        compiled = engine.get(grammar)
        out[name] = tuple((full_match(compiled, t), accepts(compiled, t[:-1])) for t in TEXTS)
    return out


def _fresh(name: str) -> grammar_engine.GrammarEngine:
    if name == "llguidance":
        from gdg_lsp.grammar import llguidance_engine

        llguidance_engine._STATIC.clear()  # the Lark of template parts, kept across engines
    return grammar_engine.create(name, ByteVocabulary(), max_bytes=64 * 1024 * 1024)


@pytest.mark.parametrize("name", grammar_engine.ENGINES)
def test_answers_do_not_depend_on_the_order_grammars_were_compiled_in(tmp_path, name):
    grammars = [("shop", _sql_grammar(tmp_path, "shop")), ("school", _sql_grammar(tmp_path, "school")),
                ("python", _python_grammar())]
    forward = _answers(_fresh(name), grammars)
    backward = _answers(_fresh(name), grammars[::-1])
    assert forward == backward
    shared = _answers(byte_grammars(name), grammars)
    assert shared == forward
    # the grammars do tell the texts apart: a column of one database only, a ghost, Python
    assert forward["shop"][0][0] and not forward["school"][0][0]
    assert forward["school"][1][0] and not forward["shop"][1][0]
    assert not any(full for full, _ in (forward["shop"][5], forward["school"][5]))
    assert forward["python"][7][0] and not forward["shop"][7][1]


def test_one_byte_engine_per_kind_is_shared():
    assert byte_grammars("auto") is byte_grammars(grammar_engine.resolve("auto"))
    assert fragment_engine.byte_engine().cache is byte_grammars("auto")
