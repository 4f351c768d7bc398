"""SQL schema files resolve only inside the workspace (and the folders the user's settings name).

The attack: a workspace (a cloned repository) holds ``schema.sql`` and
``app.sqlite`` as symlinks into another folder of the machine, a query file
whose ``-- gdg: schema=`` comment climbs out with ``../``, and a settings entry
with a relative ``ddl`` path that does the same. Before the boundary, the
catalog followed the links: the outside tables appeared in completion and
hover. Now nothing outside is opened (every ``open`` and ``sqlite3.connect``
of the server's process is recorded), no outside name reaches Γ, and the user
is told what was refused and why.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
from pathlib import Path

import pytest

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.settings import from_json

SECRET_NAMES = ("secret_payroll", "salary", "vault_keys", "private_key")


@pytest.fixture
def linked_workspace(tmp_path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.sql").write_text("CREATE TABLE secret_payroll (employee TEXT, salary INT);\n")
    with sqlite3.connect(outside / "vault.sqlite") as db:
        db.execute("CREATE TABLE vault_keys (private_key TEXT)")
    db.close()
    ws = tmp_path / "ws"
    (ws / "reports").mkdir(parents=True)
    (ws / "reports" / "schema.sql").symlink_to(outside / "secret.sql")
    (ws / "reports" / "app.sqlite").symlink_to(outside / "vault.sqlite")
    (ws / "orders").mkdir()
    (ws / "orders" / "schema.sql").write_text("CREATE TABLE orders (id INT, total REAL);\n")
    return ws, outside


def _opened_paths(monkeypatch) -> list[str]:
    """Every file the process opens from now on (text, bytes or SQLite)."""
    opened: list[str] = []
    real_open, real_connect = builtins.open, sqlite3.connect

    def spy_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)):
            opened.append(os.path.realpath(os.fsdecode(file)))
        return real_open(file, *args, **kwargs)

    def spy_connect(target, *args, **kwargs):
        opened.append(str(target))
        return real_connect(target, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (opened.append(os.path.realpath(self)),
                                                                   Path.read_bytes(self).decode(k.get("encoding") or "utf-8", k.get("errors") or "strict"))[1])
    monkeypatch.setattr(sqlite3, "connect", spy_connect)
    return opened


async def test_symlinked_schema_files_leading_outside_are_refused_not_read(linked_workspace, monkeypatch):
    ws, outside = linked_workspace
    opened = _opened_paths(monkeypatch)
    uri = (ws / "reports" / "q.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=ws.as_uri()) as server:
        server.open(uri, "SELECT * FROM ", "sql")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 14}})
        labels = {item["label"] for item in answer["result"]["items"]}
        assert not {name for name in labels for secret in SECRET_NAMES if secret in name}, labels
        server.open(uri, "SELECT salary FROM secret_payroll;\n", "sql", version=2)
        hover = await server.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 22}})
        assert hover["result"] is None
        await server.wait_for(lambda m: m.get("method") == "window/showMessage" and "outside the workspace" in str(m))
        shown = [m for m in server.shown() if "outside the workspace" in m]
        assert any("schema.sql leads to" in m and str(outside) in m for m in shown), shown
    touched = [p for p in opened if str(outside) in p]
    assert touched == [], touched


def test_comments_and_relative_settings_cannot_climb_out(linked_workspace, monkeypatch):
    ws, outside = linked_workspace
    opened = _opened_paths(monkeypatch)
    settings, problems = from_json({"sql": {"sources": [
        {"files": "orders/*.sql", "ddl": ["../outside/*.sql"], "sqlite": "../outside/vault.sqlite"}]}})
    assert problems == []
    workspace = WorkspaceContext([ws], settings)
    sql = analyzer("sql")
    for path, text in [(ws / "orders" / "q.sql", "SELECT "),
                       (ws / "q.sql", "-- gdg: schema=../outside/secret.sql,../outside/vault.sqlite\nSELECT ")]:
        snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse(text.encode()))
        gamma = sql.hole_at(snapshot, len(text), workspace).gamma
        assert not [b.name for b in gamma.bindings() if any(s in b.name for s in SECRET_NAMES)]
        notes = [f.message for f in sql.diagnostics(snapshot, workspace) if f.code == "sql.data-source"]
        assert any("outside the workspace" in n for n in notes), notes
    assert [p for p in opened if str(outside) in p] == []
