"""Data sources: in a workspace of several databases, each SQL file's Γ is its own database's.

The fixture is a monorepo whose folders hold different databases with the
same table name (``users``) and different columns; each rule of
``languages/sql/sources.py`` is made to win in its turn (the mapping setting,
the ``-- gdg:`` comment, the nearest folder, the workspace union), and each
kind of bad input (a glob that matches nothing, a database that cannot be
read, a server that refuses, two entries claiming a file, an unknown name)
gives a diagnostic naming the setting while the file falls back to the next rule.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql import migrations
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.settings import from_json

BILLING = "CREATE TABLE users (id INT, plan TEXT, card_last4 TEXT);\nCREATE TABLE invoices (id INT, user_id INT REFERENCES users(id), amount REAL);\n"
AUTH = "CREATE TABLE users (id INT, email TEXT, password_hash TEXT);\nCREATE TABLE sessions (token TEXT, user_id INT);\n"


@pytest.fixture
def monorepo(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "schema.sql").write_text(BILLING)
    (root / "auth" / "queries").mkdir(parents=True)
    (root / "auth" / "schema.sql").write_text(AUTH)
    (root / "shop").mkdir()
    with sqlite3.connect(root / "shop" / "shop.sqlite") as db:
        db.executescript("CREATE TABLE users (id INTEGER PRIMARY KEY, nickname TEXT);"
                         "INSERT INTO users VALUES (1, 'ada'), (2, 'brian');")
    db.close()
    (root / "analytics" / "migrations").mkdir(parents=True)
    (root / "analytics" / "migrations" / "V1__init.sql").write_text("CREATE TABLE events (id INT, kind TEXT, legacy TEXT);\n")
    (root / "analytics" / "migrations" / "V2__drop_legacy.sql").write_text(
        "ALTER TABLE events DROP COLUMN legacy;\nALTER TABLE events ADD COLUMN at TIMESTAMP;\n")
    (root / "analytics" / "migrations" / "V10__rename.sql").write_text("ALTER TABLE events RENAME COLUMN kind TO event_kind;\n")
    (root / "analytics" / "migrations" / "V10__rename.down.sql").write_text("ALTER TABLE events RENAME COLUMN event_kind TO kind;\n")
    return root


def _workspace(root: Path, settings: dict | None = None) -> WorkspaceContext:
    parsed, problems = from_json(settings or {})
    assert problems == []
    return WorkspaceContext([root], parsed)


def _snapshot(path: Path, text: str) -> Snapshot:
    return Snapshot(path.as_uri(), "sql", 1, text, parse(text.encode()))


def _resolution(ws: WorkspaceContext, path: Path, text: str = "SELECT "):
    return analyzer("sql").resolution(_snapshot(path, text), ws)


def _columns(ws: WorkspaceContext, path: Path, table: str, text: str = "SELECT ") -> set[str]:
    hole = analyzer("sql").hole_at(_snapshot(path, text), len(text), ws)
    assert isinstance(hole, Hole), hole
    return {b.attrs["column"] for b in hole.gamma.bindings("Column") if b.attrs["table"] == table}


def _tables(ws: WorkspaceContext, path: Path, text: str = "SELECT ") -> set[str]:
    hole = analyzer("sql").hole_at(_snapshot(path, text), len(text), ws)
    return {b.name for b in hole.gamma.bindings("Table")}


def _findings(ws: WorkspaceContext, path: Path, text: str) -> list:
    return [f for f in analyzer("sql").diagnostics(_snapshot(path, text), ws) if f.code == "sql.data-source"]


# -- the nearest folder -------------------------------------------------------------------------


def test_each_file_sees_its_own_folders_database(monorepo):
    ws = _workspace(monorepo)
    assert _columns(ws, monorepo / "billing" / "report.sql", "users") == {"id", "plan", "card_last4"}
    assert _tables(ws, monorepo / "billing" / "report.sql") == {"users", "invoices"}
    # a file in a subfolder without schema files: the closest folder above that has some
    assert _columns(ws, monorepo / "auth" / "queries" / "login.sql", "users") == {"id", "email", "password_hash"}
    assert _tables(ws, monorepo / "auth" / "queries" / "login.sql") == {"users", "sessions"}
    assert _columns(ws, monorepo / "shop" / "q.sql", "users") == {"id", "nickname"}
    resolution = _resolution(ws, monorepo / "shop" / "q.sql")
    assert (resolution.source.rule, resolution.dialect.name) == ("folder", "sqlite")


def test_a_query_naming_another_folders_table_is_flagged(monorepo):
    ws = _workspace(monorepo)
    text = "SELECT email FROM users;\nSELECT amount FROM invoices;\n"
    messages = [f.message for f in analyzer("sql").diagnostics(_snapshot(monorepo / "billing" / "q.sql", text), ws)]
    assert any("unknown column email" in m for m in messages)
    assert not any("invoices" in m for m in messages)
    messages = [f.message for f in analyzer("sql").diagnostics(_snapshot(monorepo / "auth" / "q.sql", text), ws)]
    assert any("unknown table invoices" in m for m in messages)


def test_migrations_are_applied_in_version_order_and_down_files_never(monorepo):
    ws = _workspace(monorepo)
    assert _columns(ws, monorepo / "analytics" / "q.sql", "events") == {"id", "event_kind", "at"}
    files = [p.name for p in migrations.order((monorepo / "analytics" / "migrations").iterdir())]
    assert files == ["V1__init.sql", "V2__drop_legacy.sql", "V10__rename.sql"]


def test_migration_names_of_several_tools_order_numerically():
    names = ["0010_c.sql", "0002_b.sql", "schema.sql", "V1_10__x.sql", "V1_2__y.sql", "R__views.sql",
             "20240102_z.up.sql", "20240102_z.down.sql", "U3__undo.sql"]
    ordered = [p.name for p in migrations.order(Path(n) for n in names)]
    assert ordered[0] == "schema.sql" and ordered[-1] == "R__views.sql"
    assert ordered.index("0002_b.sql") < ordered.index("0010_c.sql") < ordered.index("20240102_z.up.sql")
    assert ordered.index("V1_2__y.sql") < ordered.index("V1_10__x.sql")
    assert "20240102_z.down.sql" not in ordered and "U3__undo.sql" not in ordered


def test_the_workspace_union_is_the_last_resort_and_says_so(monorepo):
    ws = _workspace(monorepo)
    path = monorepo / "scratch.sql"  # at the top: no folder above it holds a schema
    resolution = _resolution(ws, path)
    assert resolution.source.rule == "workspace"
    assert {"invoices", "sessions", "events"} <= _tables(ws, path)
    [note] = _findings(ws, path, "SELECT 1;\n")
    assert note.severity == "information" and "No SQL data source found" in note.message
    assert "-- gdg: source=NAME" in note.message and "gdg.sql.sources" in note.message


# -- the comment ------------------------------------------------------------------------------------


def test_a_schema_comment_wins_over_the_folder(monorepo):
    ws = _workspace(monorepo)
    path = monorepo / "billing" / "login_report.sql"
    text = "-- gdg: schema=../auth/schema.sql\nSELECT "
    assert _columns(ws, path, "users", text) == {"id", "email", "password_hash"}
    assert _resolution(ws, path, text).source.rule == "comment"
    text = "-- totals\n-- gdg: schema=../shop\nSELECT "  # a folder: its schema files
    assert _columns(ws, path, "users", text) == {"id", "nickname"}


def test_a_source_comment_names_a_settings_entry(monorepo):
    ws = _workspace(monorepo, {"sql": {"sources": [{"name": "auth-db", "ddl": ["auth/schema.sql"]}]}})
    path = monorepo / "billing" / "x.sql"
    text = "-- gdg: source=auth-db dialect=postgres\nSELECT "
    assert _columns(ws, path, "users", text) == {"id", "email", "password_hash"}
    resolution = _resolution(ws, path, text)
    assert resolution.source.rule == "comment" and resolution.dialect.name == "postgres"
    assert "auth-db" in resolution.describe()


def test_an_unknown_source_name_is_reported_and_the_folder_decides(monorepo):
    ws = _workspace(monorepo, {"sql": {"sources": [{"name": "auth-db", "ddl": ["auth/schema.sql"]}]}})
    path = monorepo / "billing" / "x.sql"
    text = "-- gdg: source=nope\nSELECT "
    assert _columns(ws, path, "users", text) == {"id", "plan", "card_last4"}
    [note] = _findings(ws, path, text)
    assert "source=nope" in note.message and "auth-db" in note.message and note.severity == "warning"


# -- the setting ----------------------------------------------------------------------------------


def test_the_mapping_setting_wins_over_the_comment_and_the_folder(monorepo):
    settings = {"sql": {"sources": [{"files": "billing/**", "ddl": ["auth/schema.sql"], "name": "auth"}]}}
    ws = _workspace(monorepo, settings)
    path = monorepo / "billing" / "q.sql"
    assert _columns(ws, path, "users") == {"id", "email", "password_hash"}
    text = "-- gdg: schema=../shop\nSELECT "
    assert _columns(ws, path, "users", text) == {"id", "email", "password_hash"}
    assert _resolution(ws, path, text).source.rule == "setting"
    # a file the globs do not match is left to the other rules
    assert _columns(ws, monorepo / "shop" / "q.sql", "users") == {"id", "nickname"}


def test_a_glob_that_matches_nothing_falls_back_with_a_warning(monorepo):
    ws = _workspace(monorepo, {"sql": {"sources": [{"files": "billing/*.sql", "ddl": ["nowhere/*.sql"]}]}})
    path = monorepo / "billing" / "q.sql"
    assert _columns(ws, path, "users") == {"id", "plan", "card_last4"}  # the folder decided
    [note] = _findings(ws, path, "SELECT 1;")
    assert "gdg.sql.sources[0]" in note.message and "nowhere/*.sql" in note.message and "matches no file" in note.message


def test_a_glob_cut_by_its_bound_uses_what_it_found_and_says_so_once(monorepo):
    for n in range(6):
        (monorepo / "billing" / "parts").mkdir(exist_ok=True)
        (monorepo / "billing" / "parts" / f"p{n}.sql").write_text(f"CREATE TABLE part{n} (id INT);\n")
    ws = _workspace(monorepo, {"sql": {"sources": [{"files": "billing/*.sql", "ddl": ["billing/parts/*.sql"]}]},
                               "limits": {"globMatches": 4}})
    path = monorepo / "billing" / "q.sql"
    assert _tables(ws, path) == {"part0", "part1", "part2", "part3"}
    [note] = _findings(ws, path, "SELECT 1;")
    assert "gdg.sql.sources[0]" in note.message and "more than 4 files" in note.message
    assert "gdg.limits.globMatches" in note.message


def test_two_entries_claiming_a_file_fall_back_with_a_warning(monorepo):
    ws = _workspace(monorepo, {"sql": {"sources": [
        {"files": "billing/**", "ddl": ["auth/schema.sql"]}, {"files": "*.sql", "sqlite": "shop/shop.sqlite"}]}})
    path = monorepo / "billing" / "q.sql"
    assert _columns(ws, path, "users") == {"id", "plan", "card_last4"}
    [note] = _findings(ws, path, "SELECT 1;")
    assert "gdg.sql.sources[0]" in note.message and "gdg.sql.sources[1]" in note.message and "claim" in note.message


def test_an_unreadable_database_falls_back_with_a_warning(monorepo):
    (monorepo / "billing" / "broken.sqlite").write_text("not a database")
    ws = _workspace(monorepo, {"sql": {"sources": [{"files": "billing/**", "sqlite": "billing/broken.sqlite"}]}})
    path = monorepo / "billing" / "q.sql"
    assert _columns(ws, path, "users") == {"id", "plan", "card_last4"}
    messages = [f.message for f in _findings(ws, path, "SELECT 1;")]
    assert any("gdg.sql.sources[0]" in m and "not a SQLite database" in m for m in messages), messages


def test_a_database_that_refuses_falls_back_and_hides_the_password(monorepo):
    dsn = "postgresql://app:pa@ss/w0rd@127.0.0.1:1/billing?connect_timeout=1"
    ws = _workspace(monorepo, {"sql": {"sources": [{"files": "billing/**", "postgres": dsn}]}})
    path = monorepo / "billing" / "q.sql"
    assert _columns(ws, path, "users") == {"id", "plan", "card_last4"}
    messages = [f.message for f in _findings(ws, path, "SELECT 1;")]
    assert any("gdg.sql.sources[0]" in m and "PostgreSQL" in m for m in messages), messages
    assert not any(fragment in m for m in messages for fragment in ("pa@ss", "ss/w0rd", "w0rd"))


def test_a_bad_entry_is_reported_and_skipped_and_the_others_kept():
    settings, problems = from_json({"sql": {"sources": [
        {"files": "a/**", "ddl": "a/schema.sql"}, {"files": "b/**"}, {"files": "c/**", "sqlite": "c.db", "dialect": "oracle"}]}})
    assert [s.files for s in settings.sql.sources] == [["a/**"]]
    assert len(problems) == 2 and all("gdg.sql.sources[" in p and "skipped" in p for p in problems)


# -- visible ---------------------------------------------------------------------------------------


def test_hover_and_explain_name_the_data_source(monorepo):
    from gdg_lsp.explain import explain_hole
    from gdg_lsp.settings import Settings

    ws = _workspace(monorepo)
    path = monorepo / "auth" / "queries" / "login.sql"
    text = "SELECT email FROM users;"
    binding, _, _ = analyzer("sql").binding_at(_snapshot(path, text), text.index("users") + 1, ws)
    assert binding.sort == "Table" and binding.attrs["data_source"] == "folder auth (folder, standard SQL)"
    report = explain_hole(_snapshot(path, "SELECT "), len("SELECT "), Settings(), ws)
    assert "data source: folder auth (folder, standard SQL)" in report["text"]


def test_the_schema_prompt_shows_the_own_database_with_example_rows(monorepo):
    ws = _workspace(monorepo)
    sql = analyzer("sql")
    path = monorepo / "shop" / "q.sql"
    text = "-- Which nicknames start with a?\nSELECT "
    hole = sql.hole_at(_snapshot(path, text), len(text), ws)
    prompt = sql.prompt_context(_snapshot(path, text), hole, ws)
    assert "CREATE TABLE users (id INTEGER, nickname TEXT);" in prompt
    assert "(1, 'ada')" in prompt and "Using valid SQLite" in prompt
    assert "SELECT count(*) FROM users;" in prompt and "SELECT nickname FROM users ORDER BY id;" in prompt
    assert prompt.rstrip().endswith("-- Question: Which nicknames start with a?")
    assert "email" not in prompt and "invoices" not in prompt


def test_example_rows_are_never_in_a_prompt_for_a_remote_engine(monorepo):
    ws = _workspace(monorepo, {"backend": "remote", "remote": {"url": "http://127.0.0.1:1"}})
    sql = analyzer("sql")
    path = monorepo / "shop" / "q.sql"
    text = "-- Which nicknames start with a?\nSELECT "
    prompt = sql.prompt_context(_snapshot(path, text), sql.hole_at(_snapshot(path, text), len(text), ws), ws)
    assert "CREATE TABLE users" in prompt and "ada" not in prompt and "example row" not in prompt
