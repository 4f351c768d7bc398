"""A SQLite database in WAL mode is read without leaving a file beside it.

The attack (on the user's tree, not on the server): a read-only connection to
a WAL database (``mode=ro``) still creates ``-shm`` and ``-wal`` files next to
it, in the user's repository, and they stay there. The server now opens
databases with ``immutable=1``: no lock, no file. The price is that changes
still in a writer's ``-wal`` are seen once they are checkpointed; the schema is
re-read when the database or its ``-wal`` file changes.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.catalog import SchemaCatalog


def _wal_database(folder: Path) -> Path:
    db = folder / "app.db"
    connection = sqlite3.connect(db)
    assert connection.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    connection.executescript("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL);"
                             "INSERT INTO orders VALUES (1, 9.5), (2, 3.0);")
    connection.close()  # the last connection checkpoints and removes -wal and -shm
    assert sorted(p.name for p in folder.iterdir()) == ["app.db"]
    return db


def _state(folder: Path) -> tuple:
    return sorted(p.name for p in folder.iterdir()), {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


async def test_reading_a_wal_database_creates_no_file_beside_it(tmp_path):
    db = _wal_database(tmp_path)
    before = _state(tmp_path)
    uri = (tmp_path / "q.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, "-- the biggest order\nSELECT * FROM ", "sql")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": 1, "character": 14}})
        assert "orders" in {item["label"] for item in answer["result"]["items"]}
        assert _state(tmp_path) == before  # no -shm, no -wal, the same bytes
        analyzer = server.server.session.analyzer_for("sql")
        doc = server.server.session.documents.find(uri)
        # the example rows of the schema-aware prompt read the database too
        assert "(1, 9.5)" in analyzer.prompt_context(doc.snapshot(), analyzer.hole_at(
            doc.snapshot(), len(doc.text), server.server.session.workspace), server.server.session.workspace)
    assert _state(tmp_path) == before  # no -shm, no -wal, the same bytes
    assert sql_sqlite.read_only_uri(db).endswith("?mode=ro&immutable=1")


def test_a_changed_wal_database_is_read_again(tmp_path):
    db = _wal_database(tmp_path)
    catalog = SchemaCatalog([tmp_path], rescan_after=3600)
    assert {t.name for t in catalog.tables()} == {"orders"}
    writer = sqlite3.connect(db)
    writer.execute("CREATE TABLE refunds (order_id INTEGER, amount REAL)")
    writer.commit()
    writer.close()  # checkpointed into the database file
    assert catalog.refresh([db]) is True
    assert {t.name for t in catalog.tables()} == {"orders", "refunds"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
