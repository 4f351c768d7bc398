"""Attack: the folders a ``gdg.sql.sources`` glob walks are the workspace's. A cloned repository
puts two links back to their own folder under ``db/``: ``glob.glob('db/**/*.sql')`` followed
every link to a folder, so each level doubled the folders listed (past a minute for one data
source, on the analysis thread), and a link to a folder outside the workspace was listed too.

The glob is asked through the real path (the SQL analyzer's hole for a file the entry serves)
on a thread with a deadline; its tables come from the files inside, once each."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from gdg_lsp.boundary import Boundary
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql import sources as sql_sources
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.settings import from_json

DEADLINE_S = 20.0


def _hole(root: Path, settings) -> Hole:
    path, text = root / "q.sql", "SELECT * FROM "
    snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse(text.encode()))
    hole = analyzer("sql").hole_at(snapshot, len(text), WorkspaceContext([root], settings))
    assert isinstance(hole, Hole), hole
    return hole


def test_a_ddl_glob_over_folders_linked_back_to_themselves_is_walked_once(tmp_path: Path, monkeypatch):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "db" / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "db" / "sub" / "orders.sql").write_text("CREATE TABLE orders (id INT);\n")
    (outside / "secret.sql").write_text("CREATE TABLE secret_payroll (salary INT);\n")
    for name in ("a", "b"):
        os.symlink(root / "db", root / "db" / name)
    os.symlink(outside, root / "db" / "out")
    listed: list[str] = []
    scandir = os.scandir

    def spy(folder=".", *args):
        listed.append(os.path.realpath(folder))
        return scandir(folder, *args)

    settings, problems = from_json({"sql": {"sources": [{"files": "q.sql", "ddl": ["db/**/*.sql"]}]}})
    assert problems == []
    monkeypatch.setattr(os, "scandir", spy)  # the walk's listings, whichever module makes them
    found: list[Hole] = []
    started = time.monotonic()
    walking = threading.Thread(target=lambda: found.append(_hole(root, settings)), daemon=True)
    walking.start()
    walking.join(DEADLINE_S)
    elapsed = time.monotonic() - started
    assert found, f"the glob was still being walked after {DEADLINE_S:.0f} s"
    hole = found[0]
    tables = {b.name for b in hole.gamma.bindings("Table")}
    assert "orders" in tables and "secret_payroll" not in tables
    assert elapsed < 5, f"{elapsed:.1f} s for one glob"
    assert str(outside) not in listed  # the link out is not followed, so the folder is never listed
    assert sql_sources.expand("db/**/*.sql", [root], Boundary.of([root])) == \
        [root / "db" / "sub" / "orders.sql"]  # found once, by the path the glob spells
