"""Workspace Γ sources: DDL files, SQLite files (read-only), and the catalog's refresh."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.catalog import SchemaCatalog
from gdg_lsp.languages.sql.ddl import read_ddl, resolve

HOSTILE_DDL = '''
CREATE TABLE IF NOT EXISTS "Order Details" (
    "a""b" INTEGER PRIMARY KEY,
    [x y] VARCHAR(10, 2) NOT NULL,
    `k` int REFERENCES other(id),
    key TEXT,
    KEY idx (k),
    CONSTRAINT fk FOREIGN KEY (k) REFERENCES "Order Details"("a""b")
);
create view v as select "a""b" as q, t.* from "Order Details" t;
ALTER TABLE "order details" ADD COLUMN z REAL;
CREATE TABLE broken (;
CREATE TABLE c AS SELECT 1 AS one, [x y] FROM "Order Details";
CREATE TABLE "Ünïcödé" ("naïve col" TEXT);
'''


def _by_name(tables):
    return {t.name: t for t in tables}


def test_ddl_keeps_spelling_quotes_and_applies_alter_and_views():
    tables = _by_name(resolve([read_ddl(HOSTILE_DDL, "x.sql")]))
    od = tables['"Order Details"']
    assert [c.name for c in od.columns] == ['"a""b"', "[x y]", "`k`", "key", "z"]
    assert od.columns[1].type == "VARCHAR(10,2)"
    assert {fk.ref_table for fk in od.foreign_keys} == {"other", '"Order Details"'}
    assert "ALTER TABLE" in od.ddl  # the prompt shows the added column's origin
    assert [c.name for c in tables["v"].columns] == ["q", '"a""b"', "[x y]", "`k`", "key", "z"]
    assert [c.name for c in tables["c"].columns] == ["one", "[x y]"]
    assert [c.name for c in tables['"Ünïcödé"'].columns] == ['"naïve col"']
    assert tables["broken"].columns == ()


def test_ddl_from_the_corpus(corpus):
    tables = _by_name(resolve([read_ddl((corpus / "schemas" / "concert_singer" / "schema.sql").read_text(), "s")]))
    assert set(tables) == {"`stadium`", "`singer`", "`concert`", "`singer_in_concert`"}
    assert [c.name for c in tables["`singer_in_concert`"].columns] == ["`concert_ID`", "`Singer_ID`"]
    fks = {(fk.columns, fk.ref_table) for fk in tables["`singer_in_concert`"].foreign_keys}
    assert fks == {(("`Singer_ID`",), "`singer`"), (("`concert_ID`",), "`concert`")}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sqlite_is_read_only_and_keeps_the_ddl_spelling(corpus, tmp_path):
    db = tmp_path / "concert.sqlite"
    db.write_bytes((corpus / "db" / "concert_singer.sqlite").read_bytes())
    before, mtime = _digest(db), db.stat().st_mtime_ns
    schema = sql_sqlite.read(db, Boundary.of([tmp_path]))
    assert not schema.warnings
    tables = _by_name(schema.tables)
    assert "`singer`" in tables and [c.name for c in tables["`singer`"].columns][:2] == ["`Singer_ID`", "`Name`"]
    assert _digest(db) == before and db.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["concert.sqlite"]  # no journal, no -wal
    # the connection mode the source uses refuses writes
    connection = sqlite3.connect(sql_sqlite.read_only_uri(db), uri=True)
    try:
        try:
            connection.execute("CREATE TABLE x (a)")
            raise AssertionError("a read-only connection accepted a write")
        except sqlite3.OperationalError as err:
            assert "readonly" in str(err)
    finally:
        connection.close()


def test_sqlite_views_hostile_names_and_pragma_fallback(tmp_path):
    db = tmp_path / "h.db"
    connection = sqlite3.connect(db)
    connection.executescript('''
        CREATE TABLE "we""ird" ([br acket] INT, `tick` TEXT, plain REAL);
        CREATE VIEW "v w" AS SELECT plain, [br acket] FROM "we""ird";
    ''')
    connection.close()
    tables = _by_name(sql_sqlite.read(db, Boundary.of([tmp_path])).tables)
    assert [c.name for c in tables['"we""ird"'].columns] == ["[br acket]", "`tick`", "plain"]
    assert tables['"v w"'].kind == "view" and [c.name for c in tables['"v w"'].columns] == ["plain", "[br acket]"]


def test_not_a_database_and_unreadable_files_are_warnings(tmp_path):
    (tmp_path / "notes.db").write_text("not sqlite at all")
    (tmp_path / "bad.sql").write_bytes(b"CREATE TABLE \xff\xfe (a INT);\x00\x01 garbage (((")
    catalog = SchemaCatalog([tmp_path])
    tables = catalog.tables()  # no exception
    assert any("not a SQLite database" in w for w in catalog.warnings())
    assert all(t.name for t in tables)


def _bump(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def test_catalog_refreshes_changed_files_only(concert_workspace):
    catalog = SchemaCatalog([concert_workspace], rescan_after=3600)
    assert "`singer`" in _by_name(catalog.tables())
    version = catalog.version
    assert catalog.refresh() is False and catalog.version == version  # nothing changed
    extra = concert_workspace / "more.sql"
    extra.write_text("CREATE TABLE fans (id INT, singer_id INT REFERENCES `singer`(`Singer_ID`));\n"
                     "ALTER TABLE `singer` ADD COLUMN nickname TEXT;")
    assert "fans" in _by_name(catalog.tables())  # at the next request: the folder's stamp moved
    assert catalog.refresh([extra]) is False  # nothing left to read
    tables = _by_name(catalog.tables())
    assert "fans" in tables and "nickname" in [c.name for c in tables["`singer`"].columns]
    extra.write_text("CREATE TABLE fans2 (id INT);")
    _bump(extra)
    catalog.refresh([extra])
    tables = _by_name(catalog.tables())
    assert "fans2" in tables and "fans" not in tables
    extra.unlink()
    catalog.refresh([extra])
    assert "fans2" not in _by_name(catalog.tables())


def test_catalog_rescans_by_mtime(concert_workspace):
    catalog = SchemaCatalog([concert_workspace], rescan_after=0)
    catalog.tables()
    schema = concert_workspace / "schema.sql"
    schema.write_text(schema.read_text() + "\nCREATE TABLE late (x INT);\n")
    _bump(schema)
    assert "late" in _by_name(catalog.tables())


def test_catalog_can_leave_out_the_document_being_edited(concert_workspace):
    doc = concert_workspace / "query.sql"
    doc.write_text("CREATE TABLE scratch (a INT);\nSELECT 1;")
    catalog = SchemaCatalog([concert_workspace])
    assert "scratch" in _by_name(catalog.tables())
    assert "scratch" not in _by_name(catalog.tables(exclude=doc))


def test_duplicate_definitions_merge_first_wins(corpus, tmp_path):
    (tmp_path / "schema.sql").write_text((corpus / "schemas" / "poker_player" / "schema.sql").read_text())
    (tmp_path / "poker.sqlite").write_bytes((corpus / "db" / "poker_player.sqlite").read_bytes())
    tables = SchemaCatalog([tmp_path]).tables()
    names = [t.name for t in tables]
    assert len(names) == len(set(names)) == 2
    assert all(t.source.endswith("schema.sql") for t in tables)
    started = time.perf_counter()
    SchemaCatalog([tmp_path]).tables()
    assert time.perf_counter() - started < 5


def test_periodic_database_refreshes_never_make_a_request_wait(monkeypatch):
    """The first introspection is awaited (bounded by its timeout); later ones run
    in the background and their schema lands when they finish."""
    import threading

    from gdg_lsp.languages.sql import postgres as sql_postgres
    from gdg_lsp.languages.sql.schema import Column, Schema, Table

    release = threading.Event()
    calls = []

    def introspect(dsn, timeout):
        calls.append(dsn)
        if len(calls) > 1:
            release.wait(10)  # a database that has become slow
        return Schema(tables=[Table(f"t{len(calls)}", (Column("id"),))])

    monkeypatch.setattr(sql_postgres, "introspect", introspect)
    catalog = SchemaCatalog([], ["postgresql://db/x"], database_refresh_after=0)
    assert [t.name for t in catalog.tables()] == ["t1"]
    started = time.monotonic()
    assert [t.name for t in catalog.tables()] == ["t1"]  # the last known schema, at once
    assert [t.name for t in catalog.tables()] == ["t1"]  # and no second refresh while one is under way
    assert time.monotonic() - started < 1 and len(calls) == 2
    release.set()
    deadline = time.monotonic() + 10
    while [t.name for t in catalog.tables()] == ["t1"] and time.monotonic() < deadline:
        time.sleep(0.02)
    # a newer schema landed (t2, or a later one: every call may start the next refresh here)
    assert [t.name for t in catalog.tables()] != ["t1"] and len(calls) >= 2


def test_a_database_locked_by_a_writer_is_read_at_once_as_last_committed(tmp_path):
    """A writer holding an exclusive lock (rollback journal, uncommitted change) does not make the
    read fail: the schema is the last committed one, and no file is added beside it."""
    db = tmp_path / "busy.sqlite"
    with sqlite3.connect(db) as setup:
        setup.execute("CREATE TABLE orders (id INTEGER, total REAL)")
    setup.close()
    writer = sqlite3.connect(db, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("CREATE TABLE uncommitted (x INTEGER)")
        schema = sql_sqlite.read(db, Boundary.of([tmp_path]))  # a locking reader would fail with "database is locked"
        assert not schema.warnings and [t.name for t in schema.tables] == ["orders"]
        files = sorted(p.name for p in tmp_path.iterdir())
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert files == ["busy.sqlite", "busy.sqlite-journal"]  # the writer's journal only
