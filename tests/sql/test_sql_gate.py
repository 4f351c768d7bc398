"""Grammar gate on real code: every gold query of the corpus (Spider, 15 databases).

Positives: the query, typed in a document of its database's workspace, is
accepted by the tightest rung (ctx) — or, when it writes a string in double
quotes (an open name to every engine but SQLite), by base. Negatives: the same
text with one column reference replaced by a name that is not in Γ is rejected
by the same compiled grammar object, at ctx and at gamma; with each grammar engine.
"""

from __future__ import annotations

import json

import pytest

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.languages.sql.scope import read_statement
from gdg_lsp.settings import Settings

GHOST = "zz_not_in_gamma"


def _questions(corpus):
    return [json.loads(line) for line in (corpus / "questions.jsonl").read_text().splitlines() if line.strip()]


def _hole(corpus, row, text):
    ws = WorkspaceContext([corpus / "schemas" / row["db_id"]], Settings())
    hole = analyzer("sql").hole_at(Snapshot("file:///gate/q.sql", "sql", 1, text, parse(text.encode())), len(text), ws)
    assert isinstance(hole, Hole), hole
    return hole


def _compiled(hole, rung, engine):
    grammar = fragments.instantiate(fragments.fragment("sql", "statement"), rung, hole.gamma, hole.context)
    return engine.get(grammar)


def _mutations(query: str):
    """The query with one column reference outside FROM/ON replaced by a non-Γ name, for each such reference."""
    statement = read_statement(query, 0, len(query))
    for block in statement.walk():
        for ref in block.refs:
            if ref.clause in ("on",) or ref.star:
                continue
            tok = ref.parts[-1]
            yield query[: tok.start] + GHOST + query[tok.end :]


def test_gold_queries_pass_the_gate(corpus, byte_engine):
    rows = _questions(corpus)
    assert len(rows) >= 100
    positives = negatives = 0
    wrong: list[str] = []
    gamma_checked: set[str] = set()  # the gamma grammar is checked once per database (compile time)
    for row in rows:
        query = row["query"]
        hole = _hole(corpus, row, query + " ")
        choice = fragments.choose(fragments.fragment("sql", "statement"), hole.gamma, hole.context, hole.typed,
                                  "scope", byte_engine.get, accepts)
        expected = "base" if '"' in query else "ctx"
        if choice.rung != expected:
            wrong.append(f"{choice.rung} != {expected}: {query}")
            continue
        positives += 1
        if expected != "ctx":
            continue
        rungs = ["ctx"] if row["db_id"] in gamma_checked else ["ctx", "gamma"]
        gamma_checked.add(row["db_id"])
        for rung in rungs:
            compiled = choice.compiled if rung == "ctx" else _compiled(hole, rung, byte_engine)
            assert accepts(compiled, hole.typed)
            for mutated in _mutations(query):
                replayed = analyzer("sql").replay_text(mutated + " ")
                if accepts(compiled, replayed):
                    wrong.append(f"{rung} accepts a ghost: {mutated}")
                negatives += 1
    assert not wrong, "\n".join(wrong[:20])
    assert positives == len(rows) and negatives > 200


@pytest.mark.parametrize("db_id", ["concert_singer", "college_3", "voter_1"])
def test_compiled_ctx_grammar_is_cached_by_text(corpus, db_id):
    row = next(r for r in _questions(corpus) if r["db_id"] == db_id)
    first = _hole(corpus, row, "-- q\nSELECT ")
    second = _hole(corpus, row, "-- q\nSELECT ")
    a = fragments.instantiate(fragments.fragment("sql", "statement"), "ctx", first.gamma, first.context)
    b = fragments.instantiate(fragments.fragment("sql", "statement"), "ctx", second.gamma, second.context)
    assert a.text == b.text


# -- dialects: the words of the file's engine, and only those ------------------------------------

CONSTRUCTS = {  # a statement after "SELECT " -> the dialects whose engine parses it
    "a FROM t WHERE b GLOB 'x*';": {"sqlite"},
    "a FROM t WHERE b NOT GLOB 'x*';": {"sqlite"},
    "a FROM t WHERE b ILIKE 'x%';": {"postgres"},
    "a::text FROM t;": {"postgres"},
    "EXTRACT(year FROM d) FROM t;": {"postgres"},
    "CAST(a AS TEXT) FROM t;": {"sqlite", "postgres", "ansi"},
    "CURRENT_DATE FROM t;": {"sqlite", "postgres", "ansi"},
    "a FROM t WHERE b LIKE 'x%';": {"sqlite", "postgres", "ansi"},
}
DML = {  # a whole statement -> the dialects that read it
    "DELETE FROM t WHERE a = 1 RETURNING a;": {"sqlite", "postgres"},
    "UPDATE t SET b = 'x' WHERE a = 1 RETURNING *;": {"sqlite", "postgres"},
    "DELETE FROM t WHERE a = 1;": {"sqlite", "postgres", "ansi"},
}


def _dialect_grammar(tmp_path, dialect: str, rung: str = "ctx"):
    from gdg_lsp.languages.sql import dialects

    (tmp_path / "schema.sql").write_text("CREATE TABLE t (a INT, b TEXT, d DATE);\n")
    text = f"-- gdg: dialect={dialect}\n"
    ws = WorkspaceContext([tmp_path], Settings())
    snapshot = Snapshot((tmp_path / "q.sql").as_uri(), "sql", 1, text, parse(text.encode()))
    hole = analyzer("sql").hole_at(snapshot, len(text), ws)
    assert isinstance(hole, Hole) and hole.context["data_source"].endswith(f"{dialects.get(dialect).title})")
    from gdg_lsp.explain import byte_grammars

    return _compiled(hole, rung, byte_grammars())


@pytest.mark.parametrize("dialect", ["sqlite", "postgres", "ansi"])
def test_the_grammar_follows_the_sources_dialect(tmp_path, dialect):
    from gdg_lsp.grammar.engine import full_match
    from gdg_lsp.languages.sql import dialects

    wrong = []
    for rung in ("ctx", "gamma"):
        compiled = _dialect_grammar(tmp_path, dialect, rung)
        for rest, readers in {**{"SELECT " + k: v for k, v in CONSTRUCTS.items()}, **DML}.items():
            if full_match(compiled, rest) != (dialect in readers):
                wrong.append(f"{rung} {dialect}: {rest}")
        for name in sorted(dialects.ALL_FUNCTIONS):
            call = f"SELECT {name}(a) FROM t;"
            if full_match(compiled, call) != (name in dialects.get(dialect).all_functions):
                wrong.append(f"{rung} {dialect}: {call}")
    assert not wrong, "\n".join(wrong)


def test_the_dialect_comes_from_the_source(tmp_path):
    """SQLite file: sqlite; a PostgreSQL-only DDL (SERIAL, JSONB): postgres; plain DDL: the portable core."""
    import sqlite3

    from gdg_lsp.languages.sql import sources

    ws = WorkspaceContext([tmp_path], Settings())
    cases = {"lite": ("db.sqlite", None), "pg": ("schema.sql", "CREATE TABLE t (id SERIAL, doc JSONB);"),
             "plain": ("schema.sql", "CREATE TABLE t (id INT, doc TEXT);")}
    for folder, (name, text) in cases.items():
        (tmp_path / folder).mkdir()
        if text is None:
            sqlite3.connect(tmp_path / folder / name).executescript("CREATE TABLE t (id INTEGER);")
        else:
            (tmp_path / folder / name).write_text(text)
    found = {}
    for folder in cases:
        snapshot = Snapshot((tmp_path / folder / "q.sql").as_uri(), "sql", 1, "SELECT ", parse(b"SELECT "))
        found[folder] = analyzer("sql").resolution(snapshot, ws).dialect.name
    assert found == {"lite": "sqlite", "pg": "postgres", "plain": "ansi"}
    assert sources.header_directives("-- a question\n-- gdg: dialect=postgres source=x\nSELECT 1") == [
        (1, {"dialect": "postgres", "source": "x"})]
