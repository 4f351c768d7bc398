"""The PostgreSQL source against a real server (`source .ci/setup.d/postgres.sh` starts one).

The schema is created through a separate admin connection; the source under
test only reads the catalog, inside a READ ONLY transaction, and the tests
check that nothing changed and that a write in that transaction is refused.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql.catalog import SchemaCatalog


def admin_connection(dsn: str, database: str | None = None):
    """A separate connection for setting up and checking (not the code under test)."""
    import pg8000.native

    params = sql_postgres.parse_dsn(dsn).kwargs()
    if database is not None:
        params["database"] = database
    return pg8000.native.Connection(timeout=10, **params)


def dsn_for(dsn: str, database: str) -> str:
    return dsn.rsplit("/", 1)[0] + "/" + database

SCHEMA = [
    'CREATE TABLE singer (id int PRIMARY KEY, "Name" text, "order details" text, age int)',
    "CREATE TABLE concert (id int PRIMARY KEY, singer_id int REFERENCES singer(id), theme text)",
    'CREATE SCHEMA sales',
    'CREATE TABLE sales."Orders" (id int, singer_id int, CONSTRAINT fk FOREIGN KEY (singer_id) REFERENCES singer(id))',
    'CREATE VIEW adults AS SELECT id, "Name" FROM singer WHERE age >= 18',
    "INSERT INTO singer VALUES (1, 'A', 'x', 30), (2, 'B', 'y', 12)",
]


@pytest.fixture(scope="module")
def database(pg_dsn):
    name = f"gdg_sql_test_{os.getpid()}"
    admin = admin_connection(pg_dsn)
    admin.run(f"DROP DATABASE IF EXISTS {name}")
    admin.run(f"CREATE DATABASE {name}")
    admin.close()
    setup = admin_connection(pg_dsn, name)
    for statement in SCHEMA:
        setup.run(statement)
    setup.close()
    yield dsn_for(pg_dsn, name)
    admin = admin_connection(pg_dsn)
    admin.run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin.close()


def _fingerprint(dsn: str) -> tuple:
    """Row counts, tuple statistics and the catalog's relations: what a write would change."""
    connection = admin_connection(dsn, dsn.rsplit("/", 1)[1])
    try:
        rows = connection.run("SELECT count(*), sum(age) FROM singer")
        stats = connection.run(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables ORDER BY relname")
        relations = connection.run(
            "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1")
        return repr(rows), repr(stats), repr(relations)
    finally:
        connection.close()


def test_introspection_reads_tables_views_schemas_and_foreign_keys(database):
    schema = sql_postgres.introspect(database, timeout=5)
    assert schema.warnings == []
    tables = {t.name: t for t in schema.tables}
    assert set(tables) == {"singer", "concert", 'sales."Orders"', "adults"}
    assert [c.name for c in tables["singer"].columns] == ["id", '"Name"', '"order details"', "age"]
    assert tables["adults"].kind == "view" and [c.name for c in tables["adults"].columns] == ["id", '"Name"']
    assert [(fk.columns, fk.ref_table, fk.ref_columns) for fk in tables['sales."Orders"'].foreign_keys] == [
        (("singer_id",), "singer", ("id",))]
    assert tables["concert"].source.startswith("postgres:")


def test_introspection_writes_nothing(database):
    before = _fingerprint(database)
    for _ in range(3):
        assert not sql_postgres.introspect(database, timeout=5).warnings
    time.sleep(0.7)  # statistics are flushed asynchronously
    assert _fingerprint(database) == before


def test_the_introspection_transaction_refuses_writes(database, monkeypatch):
    # the same code path, with a write in place of the catalog query: the server must refuse it
    monkeypatch.setattr(sql_postgres, "_RELATIONS", "CREATE TABLE gdg_write_probe (x int)")
    schema = sql_postgres.introspect(database, timeout=5)
    assert schema.warnings and "read-only transaction" in schema.warnings[0]
    monkeypatch.undo()
    names = {t.name for t in sql_postgres.introspect(database, timeout=5).tables}
    assert "gdg_write_probe" not in names


def test_password_never_appears_in_messages():
    schema = sql_postgres.introspect("postgresql://me:s3cr3t-pw@127.0.0.1:1/db", timeout=1)
    assert schema.warnings and "s3cr3t-pw" not in schema.warnings[0] and "***" in schema.warnings[0]
    schema = sql_postgres.introspect("host=127.0.0.1 port=1 user=me password=s3cr3t-pw", timeout=1)
    assert schema.warnings and "s3cr3t-pw" not in schema.warnings[0]


class _Proxy:
    """A TCP forwarder to the real server that can be switched to swallow everything (a hung server)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.hang = False
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        self.port = self.server.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.hang:
                continue  # accept, then never answer
            upstream = socket.create_connection(self.target)
            self.sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


def test_a_database_that_hangs_or_goes_down_keeps_the_last_known_schema(database):
    params = sql_postgres.parse_dsn(database)
    proxy = _Proxy(params.host, params.port)
    try:
        via_proxy = f"postgresql://{params.user}@127.0.0.1:{proxy.port}/{params.database}"
        catalog = SchemaCatalog([], [via_proxy], database_timeout=1.0)
        assert "singer" in {t.name for t in catalog.tables()}
        proxy.hang = True
        started = time.monotonic()
        catalog.refresh(databases=True)
        assert time.monotonic() - started < 5
        assert "singer" in {t.name for t in catalog.tables()}
        assert any("last known schema" in w for w in catalog.warnings())
        proxy.close()  # now down: connection refused
        catalog.refresh(databases=True)
        assert "singer" in {t.name for t in catalog.tables()}
        assert catalog.warnings()
    finally:
        proxy.close()


def test_connections_come_from_settings(database, tmp_path):
    from gdg_lsp.languages.sql.catalog import catalog_for
    from gdg_lsp.settings import from_json

    settings, problems = from_json({"gdg": {"sql": {"connections": [database]}}})
    assert problems == []
    assert "singer" in {t.name for t in catalog_for([tmp_path], settings).tables()}


@pytest.mark.parametrize("dsn, expected", [
    ("postgresql://u:p%40ss@db.example:6543/app?sslmode=disable",
     {"host": "db.example", "port": 6543, "user": "u", "password": "p@ss", "database": "app"}),
    ("host=/var/run/postgresql port=5433 dbname=app user=u",
     {"unix_sock": "/var/run/postgresql/.s.PGSQL.5433", "database": "app", "user": "u"}),
    ("dbname='my db' user=u password='it''s'", {"database": "my db", "user": "u"}),
])
def test_dsn_forms(dsn, expected):
    params = sql_postgres.parse_dsn(dsn)
    for key, value in expected.items():
        assert getattr(params, key) == value


def test_a_postgres_data_source_serves_only_its_files(database, tmp_path):
    """A gdg.sql.sources entry naming a connection by its database: the files it claims see that
    database (PostgreSQL dialect); a folder beside them with its own schema keeps its own."""
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.languages import analyzer
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.sql.analyzer import parse
    from gdg_lsp.settings import from_json

    name = database.rsplit("/", 1)[1]
    (tmp_path / "reports").mkdir()
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "schema.sql").write_text("CREATE TABLE singer (id INT, nickname TEXT);\n")
    settings, problems = from_json({"sql": {"connections": [database],
                                            "sources": [{"files": "reports/**", "postgres": name}]}})
    assert problems == []
    ws = WorkspaceContext([tmp_path], settings)
    sql = analyzer("sql")

    def seen(path, text="SELECT "):
        snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse(text.encode()))
        hole = sql.hole_at(snapshot, len(text), ws)
        columns = {b.attrs["column"] for b in hole.gamma.bindings("Column") if b.attrs["table"] == "singer"}
        return sql.resolution(snapshot, ws), columns

    resolution, columns = seen(tmp_path / "reports" / "q.sql")
    assert resolution.source.rule == "setting" and resolution.dialect.name == "postgres"
    assert columns == {"id", '"Name"', '"order details"', "age"}
    resolution, columns = seen(tmp_path / "local" / "q.sql")
    assert resolution.source.rule == "folder" and columns == {"id", "nickname"}
    # and by the comment, naming the connection's database
    resolution, columns = seen(tmp_path / "local" / "other.sql", f"-- gdg: source={name}\nSELECT ")
    assert resolution.source.rule == "comment" and columns == {"id", '"Name"', '"order details"', "age"}
