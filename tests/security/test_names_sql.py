"""Attacks through the identifiers of a workspace's schema: a cloned repository's
schema.sql, a SQLite file, or a PostgreSQL catalog names the tables and columns Γ
offers. SQL lets a quoted identifier hold anything, a line break and ``; DROP TABLE``
included. Such a name must not reach Γ, the grammar, completion items, hover or the
prompt; a name that is valid but must be quoted is offered only quoted."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from gdg_lsp import fragments, words
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql.analyzer import SqlAnalyzer, parse
from gdg_lsp.languages.sql.catalog import SchemaCatalog
from gdg_lsp.settings import Settings, SqlSettings
from tests.sql.conftest import pg_dsn  # noqa: F401  (the PostgreSQL server fixture)
from tests.sql.test_sql_postgres import admin_connection, dsn_for

SCHEMA_SQL = (
    'CREATE TABLE "evil\nDROP TABLE users; --" (id int, secret int);\n'
    'CREATE TABLE orders (id int, "x; DROP TABLE users" int, "RTLCOL\u202e" int, total int);\n'
    'CREATE TABLE "weird name" (id int, "odd col" text, "Mixed" int);\n'
)
MARKERS = ("DROP TABLE", "evil", "RTLCOL", "LITETAB", "CTRLCOL", "secret")


def _workspace(root: Path) -> None:
    (root / "schema.sql").write_text(SCHEMA_SQL)
    connection = sqlite3.connect(root / "data.db")
    connection.execute('CREATE TABLE "LITETAB\nimport os" (a int, b int)')
    connection.execute('CREATE TABLE plain (id int, "CTRLCOL\x1b[2J" int, name text)')
    connection.execute("INSERT INTO plain VALUES (1, 2, 'x')")
    connection.commit()
    connection.close()


def _hole(root: Path, text: str) -> tuple[SqlAnalyzer, Snapshot, Hole]:
    analyzer = SqlAnalyzer()
    snapshot = Snapshot((root / "q.sql").as_uri(), "sql", 1, text, parse(text.encode()))
    hole = analyzer.hole_at(snapshot, len(text), WorkspaceContext([root], Settings()))
    assert isinstance(hole, Hole), hole
    return analyzer, snapshot, hole


def _grammar(hole: Hole, rung: str, byte_engine):
    return byte_engine.get(fragments.instantiate(fragments.fragment("sql", "statement"), rung, hole.gamma,
                                                 hole.context))


def test_identifiers_with_control_characters_or_semicolons_never_reach_gamma_or_the_prompt(tmp_path: Path):
    _workspace(tmp_path)
    analyzer, snapshot, hole = _hole(tmp_path, "SELECT ")
    names = [b.name for b in hole.gamma.bindings()]
    assert {"orders", "orders.total", '"weird name"', '"weird name"."odd col"', "plain", "plain.name"} <= set(names)
    prompt = analyzer.prompt_context(snapshot, hole, WorkspaceContext([tmp_path], Settings()))
    said = repr(names) + repr(dict(hole.context)) + prompt
    for marker in MARKERS:
        assert marker not in said, marker
    assert all(line.startswith(("--", "CREATE", "SELECT")) or not line for line in prompt.split("\n")), prompt
    rejected = {(r.source, r.name) for r in words.REJECTIONS.all()}
    assert (str(tmp_path / "schema.sql"), '"evil\nDROP TABLE users; --"') in rejected
    assert (str(tmp_path / "schema.sql"), '"x; DROP TABLE users"') in rejected
    assert (f"sqlite:{tmp_path / 'data.db'}", '"LITETAB\nimport os"') in rejected


def test_the_grammar_admits_no_rejected_name_and_quoted_names_only_quoted(tmp_path: Path, byte_engine):
    _workspace(tmp_path)
    for rung in ("ctx", "gamma"):
        _, _, hole = _hole(tmp_path, "SELECT * FROM ")
        grammar = _grammar(hole, rung, byte_engine)
        assert accepts(grammar, 'SELECT * FROM "weird name"'), rung
        assert not accepts(grammar, "SELECT * FROM weird name"), rung
        for payload in ('"evil', '"LITETAB'):
            assert not accepts(grammar, "SELECT * FROM " + payload), (rung, payload)
        _, _, hole = _hole(tmp_path, "SELECT ")
        grammar = _grammar(hole, rung, byte_engine)
        assert accepts(grammar, 'SELECT total FROM orders'), rung
        assert not accepts(grammar, 'SELECT "x;'), rung
        assert not accepts(grammar, 'SELECT "RTLCOL'), rung
        assert not accepts(grammar, 'SELECT "CTRLCOL'), rung
        assert accepts(grammar, 'SELECT "odd col" FROM "weird name"'), rung
        assert not accepts(grammar, 'SELECT odd col FROM "weird name"'), rung


def test_a_rejected_column_leaves_its_table_without_it_in_every_prompt_form(tmp_path: Path):
    """The prompt shows a table's DDL as written; a table that lost a column shows the DDL
    of what is left (its own text holds the rejected name)."""
    _workspace(tmp_path)
    for prompt_form in ("schema", "plain"):
        settings = Settings(sql=SqlSettings(prompt=prompt_form))
        analyzer = SqlAnalyzer()
        text = "SELECT * FROM orders WHERE "
        snapshot = Snapshot((tmp_path / "q.sql").as_uri(), "sql", 1, text, parse(text.encode()))
        hole = analyzer.hole_at(snapshot, len(text), WorkspaceContext([tmp_path], settings))
        assert isinstance(hole, Hole), hole
        [orders] = [b for b in hole.gamma.bindings("Table") if b.name == "orders"]
        assert orders.attrs["columns"] == ("id", "total")
        prompt = analyzer.prompt_context(snapshot, hole, WorkspaceContext([tmp_path], settings))
        assert "orders" in prompt, prompt
        for marker in MARKERS:
            assert marker not in prompt, (prompt_form, marker, prompt)


async def test_completion_items_never_show_a_rejected_identifier(tmp_path: Path):
    _workspace(tmp_path)
    uri = (tmp_path / "q.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"},
                               root_uri=tmp_path.as_uri()) as server:
        for text in ("SELECT * FROM ", "SELECT * FROM orders WHERE "):
            server.open(uri, text, "sql", version=len(text))
            answer = await server.request("textDocument/completion", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": len(text)}})
            shown = json.dumps(answer["result"])
            assert "orders" in shown and '\\"weird name\\"' in shown, shown
            for marker in MARKERS:
                assert marker not in shown, (marker, shown)


def test_a_postgres_catalog_name_with_a_line_break_is_left_out(pg_dsn, tmp_path: Path):  # noqa: F811
    name = f"gdg_names_test_{os.getpid()}"
    admin = admin_connection(pg_dsn)
    admin.run(f"DROP DATABASE IF EXISTS {name}")
    admin.run(f"CREATE DATABASE {name}")
    admin.close()
    try:
        setup = admin_connection(pg_dsn, name)
        setup.run('CREATE TABLE "pg\nDROP TABLE users; --" (id int)')
        setup.run('CREATE TABLE kept (id int, "PGCOL\u0085x" int, "Odd Name" int)')
        setup.close()
        dsn = dsn_for(pg_dsn, name)
        loaded = SchemaCatalog([tmp_path], [dsn]).load([], [], [dsn])
        tables = {t.name: [c.name for c in t.columns] for t in loaded.tables}
        assert tables == {"kept": ["id", '"Odd Name"']}, tables
        assert any(r.name == '"pg\nDROP TABLE users; --"' and r.source.startswith("postgres:")
                   for r in words.REJECTIONS.all())
    finally:
        admin = admin_connection(pg_dsn)
        admin.run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()
