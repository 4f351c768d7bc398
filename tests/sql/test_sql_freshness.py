"""What the SQL catalog's check at each request costs and sees (the stamps of ``gdg_lsp.stamps``).

The check compares stamps, never reads: with nothing changed it lists no folder and reads no
file, whatever the workspace holds, and its ``stat`` calls are bounded by the folders walked and
the files that define tables (plus a few queries in turn); a change is seen by the next check.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.languages.sql import catalog as sql_catalog
from gdg_lsp.languages.sql import ddl_files
from gdg_lsp.languages.sql.catalog import ROTATING_PER_CHECK, SchemaCatalog


def _workspace(root: Path, databases: int = 30, queries: int = 4, others: int = 200) -> Path:
    for db in range(databases):
        folder = root / f"db{db:02d}"
        folder.mkdir(parents=True)
        (folder / "schema.sql").write_text(f"CREATE TABLE t{db} (id INT);\n")
        for q in range(queries):
            (folder / f"q{q}.sql").write_text(f"SELECT * FROM t{db};\n")
    (root / "docs").mkdir()
    for n in range(others):
        (root / "docs" / f"page{n}.md").write_text("text\n")
    return root


def test_a_check_with_nothing_changed_lists_nothing_reads_nothing_and_stats_a_bounded_number(tmp_path, monkeypatch):
    root = _workspace(tmp_path / "ws")
    catalog = SchemaCatalog([root])
    assert len(catalog.tables()) == 30
    time.sleep(stamps.RACY_S)
    catalog.fresh()  # the stamps taken within the file system's time step, taken again
    calls = {"scandir": 0, "stat": 0, "read": 0}
    real_scandir, real_stat, real_read = os.scandir, os.stat, ddl_files.read

    def scandir(*args, **kwargs):
        calls["scandir"] += 1
        return real_scandir(*args, **kwargs)

    def stat(*args, **kwargs):
        calls["stat"] += 1
        return real_stat(*args, **kwargs)

    def read(*args, **kwargs):
        calls["read"] += 1
        return real_read(*args, **kwargs)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(sql_catalog.sql_ddl_files, "read", read)
    for _ in range(5):
        catalog.tables()
    folders = 1 + 30 + 1  # the root, the databases, docs
    per_check = folders + 30 + ROTATING_PER_CHECK
    assert calls["scandir"] == 0 and calls["read"] == 0, calls
    assert calls["stat"] <= 5 * (per_check + 4), calls  # not one per file of the workspace (330)


def test_a_change_anywhere_is_seen_by_the_next_check(tmp_path):
    root = _workspace(tmp_path / "ws", databases=3, queries=1, others=2)
    catalog = SchemaCatalog([root])
    assert {t.name for t in catalog.tables()} == {"t0", "t1", "t2"}
    (root / "db01" / "schema.sql").write_text("CREATE TABLE u1 (id INT);\n")  # in place, the same size
    (root / "db02" / "schema.sql").unlink()
    (root / "new" / "deep").mkdir(parents=True)  # a folder the walk never listed
    (root / "new" / "deep" / "schema.sql").write_text("CREATE TABLE n1 (id INT);\n")
    assert {t.name for t in catalog.tables()} == {"t0", "u1", "n1"}
    (root / "new" / "deep" / "schema.sql").rename(root / "new" / "deep" / "schema.txt")
    assert {t.name for t in catalog.tables()} == {"t0", "u1"}


def test_a_query_that_gains_a_table_in_place_adds_it_within_a_few_checks(tmp_path):
    root = _workspace(tmp_path / "ws", databases=1, queries=80, others=0)
    catalog = SchemaCatalog([root])
    catalog.tables()
    time.sleep(stamps.RACY_S)
    (root / "db00" / "q57.sql").write_text("CREATE TABLE late (id INT);\n")  # no folder moved
    seen = [("late" in {t.name for t in catalog.tables()}) for _ in range(80 // ROTATING_PER_CHECK + 2)]
    assert any(seen), seen


def test_a_witness_sees_what_a_stamp_of_mtime_and_size_did_not(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("one\n")
    time.sleep(stamps.RACY_S)
    witness = stamps.Witness([path, tmp_path / "absent.txt"])
    assert witness.holds()
    before = path.stat()
    path.write_text("two\n")  # the same size, its mtime put back (touch -r, cp -p)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not witness.holds()  # the ctime moved
    witness = stamps.Witness([tmp_path / "absent.txt"])
    (tmp_path / "absent.txt").write_text("")
    assert not witness.holds()  # a path relied on being absent appeared


def test_a_racy_stamp_never_holds_until_the_file_is_still(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("one\n")
    fresh = stamps.Witness([path])
    assert stamps.racy(stamps.of(path)) and not fresh.holds()  # written a moment ago: not trusted
    time.sleep(stamps.RACY_S)
    settled = stamps.Witness([path])
    assert settled.holds()
