"""SQL alternatives are ranked by whether the statement prepares on the file's SQLite source
(read-only, never executed), on a copy of a corpus Spider database."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from gdg_lsp.boundary import Boundary
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Execution, StopReason
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.service import candidates as cands
from gdg_lsp.settings import Settings

QUERY = "SELECT Name, Country FROM singer WHERE "


@pytest.fixture
def concert(tmp_path, corpus) -> Path:
    """A folder with a copy of the Spider ``concert_singer`` database beside a query file."""
    source = corpus / "db" / "concert_singer.sqlite"  # the SQL tests' corpus fixture is corpus/sql
    assert source.is_file(), source
    shutil.copy(source, tmp_path / "concert_singer.sqlite")
    (tmp_path / "query.sql").write_text(QUERY)
    return tmp_path


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _check(folder: Path, text: str, inserted: str):
    sql = analyzer("sql", text)
    path = folder / "query.sql"
    snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse(text.encode()))
    workspace = WorkspaceContext(roots=[folder], settings=Settings())
    hole = sql.hole_at(snapshot, len(text), workspace)
    assert isinstance(hole, Hole), hole
    return sql.statement_check(snapshot, hole, len(text), inserted, workspace)


def test_a_statement_that_prepares_passes_and_one_sqlite_refuses_fails(concert):
    before = _digest(concert)
    assert _check(concert, QUERY, "Age > 30") is True
    assert _check(concert, QUERY, "Age >") is False  # a syntax error
    assert _check(concert, QUERY, "Age > 30 GROUP BY") is False
    assert _check(concert, QUERY, "count(*) > 1") is False  # an aggregate in WHERE: prepare refuses it
    # nothing written beside the database, the database unchanged (no journal, no -wal/-shm)
    assert _digest(concert) == before


def test_a_statement_that_writes_is_only_prepared_never_run(concert):
    db = concert / "concert_singer.sqlite"
    rows = sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT count(*) FROM singer").fetchone()[0]
    before = _digest(concert)
    # the text after the cursor makes the statement a DELETE: judged, not executed
    assert sql_sqlite.prepares(db, Boundary.of([concert]), "DELETE FROM singer") is True
    assert sql_sqlite.prepares(db, Boundary.of([concert]), "DROP TABLE singer") is True
    assert sql_sqlite.prepares(db, Boundary.of([concert]), "SELECT 1; DELETE FROM singer") is None  # not one statement
    assert sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT count(*) FROM singer").fetchone()[0] == rows
    assert _digest(concert) == before


def test_no_verdict_where_the_database_is_not_the_whole_source(concert):
    # the document creates a table above the query: the database does not have it
    text = "CREATE TABLE extra (x INT);\n" + QUERY
    assert _check(concert, text, "Age > 30") is None
    # a DDL file beside the database: its tables are in Γ but not in the database
    other = concert / "with_ddl"
    other.mkdir()
    shutil.copy(concert / "concert_singer.sqlite", other / "concert_singer.sqlite")
    (other / "more.sql").write_text("CREATE TABLE more_singers (Name TEXT);\n")
    (other / "query.sql").write_text(QUERY)
    assert _check(other, QUERY, "Age > 30") is None


def _candidate(text: str, logprob: float, parses: bool | None, checked: bool | None) -> cands.Candidate:
    execution = Execution(text, [], StopReason.MAX_LINES)
    candidate = cands.Candidate(text, 0, execution, parses, checked)
    object.__setattr__(candidate, "_lp", logprob)
    return candidate


def test_candidates_that_prepare_rank_before_likelier_ones_that_do_not(monkeypatch):
    monkeypatch.setattr(cands.Candidate, "mean_logprob", property(lambda c: c._lp))
    likely_bad = _candidate("count(*) > 1", -0.1, True, False)
    unknown = _candidate("Age > 40", -0.3, True, None)
    good = _candidate("Age > 30", -0.5, True, True)
    broken = _candidate("Age >", -0.05, False, True)
    ranked = cands.rank([likely_bad, broken, unknown, good])
    assert [c.text for c in ranked] == ["Age > 30", "Age > 40", "count(*) > 1", "Age >"]
    assert good.summary()["checked"] is True and likely_bad.summary()["checked"] is False
