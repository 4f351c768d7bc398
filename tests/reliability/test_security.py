"""Security: the workspace is read, never imported or run; databases are read-only;
no network connection except to the configured databases.

- A workspace full of files that write a marker when imported or run (a module,
  a package, sitecustomize, conftest, setup.py, a P4 include, a TileLang kernel)
  goes through every feature (completion, hover, inline completion with a
  random-weight model, diagnostics, explain); the marker never appears, none of
  them is in ``sys.modules``, and no process is started.
- SQLite: the file's bytes and its folder are unchanged, and the URI the server
  opened it with refuses a write.
- PostgreSQL: against a real server, the statements the server sent are a
  READ ONLY transaction that is rolled back, the table's rows are unchanged and
  no transaction id was assigned (a write would take one).
- Sockets: every ``socket.connect`` in the server's process is recorded; the
  only address is the configured database. A stdio server's process holds no
  internet socket at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.lsp_client import StdioClient
from gdg_lsp.bench.stress import slow_random_resolver
from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.server import create_server

EVIL_MODULES = ("evil", "evilpkg", "sitecustomize_gdg", "conftest_gdg")


def _write_trap_workspace(root: Path, marker: Path) -> None:
    trap = f"import pathlib; pathlib.Path({str(marker)!r}).write_text(__name__ + ' ran')\n"
    (root / "evil.py").write_text(trap + "def helper(x):\n    return x\n")
    (root / "evilpkg").mkdir()
    (root / "evilpkg" / "__init__.py").write_text(trap + "thing = 1\n")
    (root / "sitecustomize.py").write_text(trap)
    (root / "conftest.py").write_text(trap)
    (root / "setup.py").write_text(trap)
    (root / "__main__.py").write_text(trap)
    (root / "main.py").write_text("import evil\nfrom evilpkg import thing\nresult = evil.helper(thing)\nres")
    (root / "kernel.py").write_text("import tilelang\nimport tilelang.language as T\nimport evil\n\n"
                                    "@tilelang.jit\ndef k(A):\n    @T.prim_func\n    def main(A: T.Tensor((8,), 'float32')):\n"
                                    "        with T.Kernel(1) as bx:\n            A[bx] = 0\n    return main\n")
    (root / "lib.p4").write_text("header evil_t { bit<8> f; }\n")
    (root / "prog.p4").write_text('#include "lib.p4"\ncontrol C(inout evil_t h) {\n  apply {\n    \n  }\n}\n')
    (root / "schema.sql").write_text("CREATE TABLE t (a INTEGER);\n")
    (root / "q.sql").write_text("SELECT  FROM t;\n")


class _Spawns:
    """Records every process the server tries to start (there must be none)."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[str] = []
        real_popen_init = subprocess.Popen.__init__

        def popen_init(popen, args, *rest, **kwargs):
            self.calls.append(f"Popen {args!r}")
            return real_popen_init(popen, args, *rest, **kwargs)

        monkeypatch.setattr(subprocess.Popen, "__init__", popen_init)
        monkeypatch.setattr(os, "system", lambda command: self.calls.append(f"system {command!r}") or 1)


async def test_nothing_in_the_workspace_is_imported_or_run(tmp_path, monkeypatch):
    control, control_marker = tmp_path / "control", tmp_path / "CONTROL"
    control.mkdir()
    _write_trap_workspace(control, control_marker)
    subprocess.run([sys.executable, "-c", "import evil"], cwd=control, check=True)
    assert control_marker.exists()  # the trap works: importing the module does write its marker

    root = tmp_path / "ws"
    root.mkdir()
    marker = tmp_path / "MARKER"
    _write_trap_workspace(root, marker)
    spawns = _Spawns(monkeypatch)
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0)
    async with InProcessServer(server=server_obj, root_uri=root.as_uri(), initialization_options={"maxTokens": 8}) as server:
        assert await server.wait_model() == "ready"
        docs = {"main.py": ("python", 3, 3), "kernel.py": ("tilelang", 10, 20), "prog.p4": ("p4", 3, 4),
                "q.sql": ("sql", 0, 7), "evil.py": ("python", 2, 4), "setup.py": ("python", 0, 5)}
        for name, (language, line, col) in docs.items():
            uri = (root / name).as_uri()
            server.open(uri, (root / name).read_text(), language)
            position = {"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}
            for method in ("textDocument/completion", "textDocument/hover", "textDocument/inlineCompletion"):
                answer = await server.request(method, {**position, "context": {"triggerKind": 1}}, timeout=60)
                assert "result" in answer, (name, method, answer)
            explained = await server.request("gdg/explain", {**position, "decode": True}, timeout=60)
            assert "result" in explained
        await asyncio.sleep(0.6)  # the debounced diagnostics run too
        published = [m for m in server.messages if m.get("method") == "textDocument/publishDiagnostics"]
        assert published
    assert not marker.exists(), marker.read_text()
    assert not set(EVIL_MODULES) & set(sys.modules)
    assert spawns.calls == []


# -- SQLite ---------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_sqlite_is_opened_read_only(tmp_path, monkeypatch):
    db = tmp_path / "shop.sqlite"
    with sqlite3.connect(db) as setup:
        setup.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        setup.execute("INSERT INTO orders VALUES (1, 9.5)")
    setup.close()
    before = (_digest(db), db.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    opened: list[str] = []
    real_connect = sqlite3.connect

    def connect(target, *args, **kwargs):
        opened.append(str(target))
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    uri = (tmp_path / "q.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, "SELECT * FROM ", "sql")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}})
        assert "orders" in {item["label"] for item in answer["result"]["items"]}
    after = (_digest(db), db.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    assert after == before  # same bytes, same time, no journal or WAL file left behind
    assert opened and all(target == sql_sqlite.read_only_uri(db) for target in opened), opened
    with real_connect(opened[0], uri=True) as check:  # and that URI refuses writes
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            check.execute("INSERT INTO orders VALUES (2, 1.0)")
    check.close()


# -- PostgreSQL ----------------------------------------------------------------------


def _admin(dsn: str, database: str | None = None):
    import pg8000.native

    params = sql_postgres.parse_dsn(dsn).kwargs()
    if database is not None:
        params["database"] = database
    return pg8000.native.Connection(timeout=10, **params)


@pytest.fixture
def pg_database(pg_dsn):
    name = f"gdg_security_{os.getpid()}"
    admin = _admin(pg_dsn)
    admin.run(f"DROP DATABASE IF EXISTS {name}")
    admin.run(f"CREATE DATABASE {name}")
    admin.close()
    setup = _admin(pg_dsn, name)
    setup.run("CREATE TABLE accounts (id int PRIMARY KEY, balance numeric)")
    setup.run("INSERT INTO accounts VALUES (1, 100), (2, 250)")
    setup.close()
    yield pg_dsn.rsplit("/", 1)[0] + "/" + name, name
    admin = _admin(pg_dsn)
    admin.run(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin.close()


async def test_postgres_is_introspected_read_only_and_is_the_only_connection(pg_database, tmp_path, monkeypatch):
    dsn, name = pg_database
    import pg8000.native

    statements: list[str] = []
    real_run = pg8000.native.Connection.run

    def run(connection, sql, *args, **kwargs):
        statements.append(" ".join(sql.split()))
        return real_run(connection, sql, *args, **kwargs)

    monkeypatch.setattr(pg8000.native.Connection, "run", run)
    connects: list[object] = []
    real_connect = socket.socket.connect

    def connect(sock, address):
        connects.append(address)
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", lambda sock, address: connects.append(address) or real_connect(sock, address))

    checker = _admin(dsn, name)
    rows_before = checker.run("SELECT * FROM accounts ORDER BY id")
    xmax_before = checker.run("SELECT txid_snapshot_xmax(txid_current_snapshot())")[0][0]
    connects.clear()  # the checker's own connection is not the server's
    statements.clear()

    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0)
    uri = (tmp_path / "q.sql").as_uri()
    async with InProcessServer(server=server_obj, root_uri=tmp_path.as_uri(),
                               initialization_options={"maxTokens": 8, "sql": {"connections": [dsn]}}) as server:
        assert await server.wait_model() == "ready"
        server.open(uri, "SELECT * FROM ", "sql")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}}, timeout=30)
        assert "accounts" in {item["label"] for item in answer["result"]["items"]}
        py = (tmp_path / "m.py").as_uri()
        server.open(py, "import os\nx = os.getcwd()\n")
        for method in ("textDocument/completion", "textDocument/hover", "textDocument/inlineCompletion"):
            await server.request(method, {"textDocument": {"uri": py}, "position": {"line": 1, "character": 4},
                                          "context": {"triggerKind": 1}}, timeout=60)
        await server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}, "context": {"triggerKind": 1}}, timeout=60)
    server_statements = list(statements)
    server_connects = list(connects)

    assert server_statements, "the server never introspected the database"
    assert server_statements[0] == "START TRANSACTION READ ONLY"
    assert server_statements[-1] == "ROLLBACK"
    assert all(s.startswith(("SELECT", "SET LOCAL statement_timeout", "START TRANSACTION READ ONLY", "ROLLBACK"))
               for s in server_statements), server_statements
    assert checker.run("SELECT * FROM accounts ORDER BY id") == rows_before
    assert checker.run("SELECT txid_snapshot_xmax(txid_current_snapshot())")[0][0] == xmax_before  # no write took an id
    checker.close()

    params = sql_postgres.parse_dsn(dsn)
    allowed = {(params.host, params.port), ("localhost", params.port)}
    assert server_connects and all(tuple(a[:2]) in allowed for a in server_connects if isinstance(a, tuple)), server_connects
    assert not [a for a in server_connects if not isinstance(a, tuple)], server_connects


def test_a_stdio_server_holds_no_internet_socket(tmp_path):
    client = StdioClient("--dev", stderr=tmp_path / "server.log")
    try:
        client.initialize(options={"model": "/nonexistent/m.gguf"}, root=tmp_path.as_uri())
        uri = (tmp_path / "a.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": "import json\nx = json.dumps(1)\n"}})
        for n, method in enumerate(("textDocument/completion", "textDocument/hover", "textDocument/inlineCompletion")):
            client.request(f"r{n}", method, {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 5},
                                             "context": {"triggerKind": 1}})
        inodes = _socket_inodes(client.proc.pid)
        internet = _internet_inodes(client.proc.pid)
        assert not inodes & internet, f"the server holds internet sockets: {sorted(inodes & internet)}"
    finally:
        assert client.close() == 0


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    return inodes


def _internet_inodes(pid: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6", "udp", "udp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if path.exists():
            for row in path.read_text().splitlines()[1:]:
                fields = row.split()
                if len(fields) > 9:
                    inodes.add(fields[9])
    return inodes
