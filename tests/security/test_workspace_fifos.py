"""Attack: a workspace puts a FIFO where a SQL, jq or Python source reads a file: a FIFO named
``schema.sql``, ``x.sqlite`` or ``x.db`` (found by the SQL catalog's walk, or named by a data
source), a FIFO ``.json`` a jq filter samples, a FIFO Python module a document imports. Opening
a FIFO for reading blocks until a writer comes (SQLite's own open of one too), so one planted
file stuck every analysis thread that asked for that workspace's names, for good.

Each test asks the real path (the analyzer with a workspace context) on a thread with a
deadline (``within_deadline``: a regression fails instead of hanging the suite): the answer
comes, without the FIFO's names, and the FIFO is said to be no regular file where the source
reports what it did not read. The races (a file that is regular when found and a FIFO, or a
link out of the workspace, when read) are performed at the moment between the two: the read
itself judges the file."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from gdg_lsp import words
from gdg_lsp.documents import Document, Snapshot
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.jq import analyzer as jq_analyzer
from gdg_lsp.languages.jq import inputs as jq_inputs
from gdg_lsp.languages.python.analyzer import PythonAnalyzer
from gdg_lsp.languages.python.analyzer import parse as parse_python
from gdg_lsp.languages.sql.analyzer import parse as parse_sql
from gdg_lsp.languages.sql.catalog import catalog_for
from gdg_lsp.settings import Settings, from_json
from tests.security.test_shell_fifos import within_deadline

# -- SQL ----------------------------------------------------------------------------------------


def _sql_hole(path: Path, text: str, workspace: WorkspaceContext) -> Hole:
    snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse_sql(text.encode()))
    hole = analyzer("sql").hole_at(snapshot, len(text), workspace)
    assert isinstance(hole, Hole), hole
    return hole


def _tables(hole: Hole) -> set[str]:
    return {b.name for b in hole.gamma.bindings("Table")}


@pytest.fixture
def sql_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "orders.sql").write_text("CREATE TABLE orders (id INT, total REAL);\n")
    return root


@pytest.mark.parametrize("name", ["schema.sql", "x.sqlite", "x.db"])
def test_a_fifo_schema_file_found_by_the_walk_never_blocks_the_analysis(sql_workspace: Path, name: str):
    fifo = sql_workspace / name
    os.mkfifo(fifo)
    workspace = WorkspaceContext([sql_workspace], Settings())
    hole = within_deadline(fifo, lambda: _sql_hole(sql_workspace / "q.sql", "SELECT * FROM ", workspace))
    assert "orders" in _tables(hole)  # the workspace's other schema files are read as before
    said = [w for w in catalog_for([sql_workspace]).warnings() if name in w]
    assert said and "not a regular file" in said[0], said


@pytest.mark.parametrize("name", ["pipe.sqlite", "pipe.db"])
def test_a_fifo_database_named_by_a_data_source_never_blocks_the_analysis(sql_workspace: Path, name: str):
    fifo = sql_workspace / "data" / name
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    settings, problems = from_json({"sql": {"sources": [{"files": "*.sql", "sqlite": f"data/{name}"}]}})
    assert problems == []
    workspace = WorkspaceContext([sql_workspace], settings)
    text = f"-- gdg: schema=data/{name}\nSELECT * FROM "
    for path in (sql_workspace / "q.sql", sql_workspace / "by_setting.sql"):
        shown = text if path.name == "q.sql" else "SELECT * FROM "
        within_deadline(fifo, lambda: _sql_hole(path, shown, workspace))


def test_a_database_turned_into_a_fifo_after_its_schema_was_read_never_blocks(sql_workspace: Path):
    """The database is a regular file when the catalog reads its schema, then a FIFO takes its
    place: the example rows of the prompt and the check that a suggestion prepares open the file
    again, and each judges it right before SQLite opens it."""
    database = sql_workspace / "app.db"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE customers (id INT, name TEXT)")
        connection.execute("INSERT INTO customers VALUES (1, 'ada')")
    connection.close()
    settings, _ = from_json({"sql": {"sources": [{"files": "q.sql", "sqlite": "app.db"}]}})
    workspace = WorkspaceContext([sql_workspace], settings)
    path, text = sql_workspace / "q.sql", "SELECT * FROM "
    snapshot = Snapshot(path.as_uri(), "sql", 1, text, parse_sql(text.encode()))
    sql = analyzer("sql")
    hole = _sql_hole(path, text, workspace)
    assert "customers" in _tables(hole)
    database.unlink()
    os.mkfifo(database)
    # the prompt's example rows (sqlite.sample_rows) and the prepare check (sqlite.prepares)
    within_deadline(database, lambda: sql.prompt_context(snapshot, hole, workspace))
    assert within_deadline(database, lambda: sql.statement_check(snapshot, hole, len(text), "customers",
                                                                 workspace)) is None


# -- jq -----------------------------------------------------------------------------------------


def _jq_hole(root: Path, text: str) -> Hole:
    hole = analyzer("jq").hole_at(Snapshot((root / "f.jq").as_uri(), "jq", 1, text, None), len(text),
                                  WorkspaceContext([root], Settings()))
    assert isinstance(hole, Hole), hole
    return hole


def _swapped_after_found(monkeypatch, swap) -> None:
    """Performs the race: ``swap(path)`` runs on each input the moment ``input_files`` has
    judged it (a regular file inside the workspace) and before it is sampled."""
    found = jq_inputs.input_files

    def then_swapped(*args, **kwargs):
        paths = found(*args, **kwargs)
        for path in paths:
            swap(path)
        return paths

    monkeypatch.setattr(jq_inputs, "input_files", then_swapped)


def test_a_fifo_json_sample_never_blocks_the_reader(tmp_path: Path):
    """The reader the jq analyzer and the shell's embedded jq programs share."""
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert within_deadline(fifo, lambda: jq_analyzer.SAMPLES.read([fifo])) is None
    assert [r for r in words.REJECTIONS.all() if r.source == str(fifo) and "not a regular file" in r.why]


def test_a_json_input_turned_into_a_fifo_when_it_is_read_never_blocks(tmp_path: Path, monkeypatch):
    (tmp_path / "f.json").write_text(json.dumps({"fifo_field": 1}))

    def to_fifo(path: Path) -> None:
        path.unlink()
        os.mkfifo(path)

    _swapped_after_found(monkeypatch, to_fifo)
    hole = within_deadline(tmp_path / "f.json", lambda: _jq_hole(tmp_path, "."))
    assert not hole.gamma.bindings("Field")


def test_a_json_input_turned_into_a_link_out_when_it_is_read_is_not_read(tmp_path: Path, monkeypatch):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "keys.json").write_text(json.dumps({"api_token": "x"}))
    (root / "f.json").write_text(json.dumps({"harmless": 1}))

    def to_link_out(path: Path) -> None:
        path.unlink()
        path.symlink_to(outside / "keys.json")

    _swapped_after_found(monkeypatch, to_link_out)
    hole = _jq_hole(root, ".")
    assert "api_token" not in {b.attrs.get("key") for b in hole.gamma.bindings("Field")}
    assert "api_token" not in str(hole.context)


def test_a_sampled_input_turned_into_a_fifo_before_a_hover_never_blocks_it(tmp_path: Path):
    """Hover finds the line of the key in the sampled file: that file is read again."""
    (tmp_path / "f.json").write_text(json.dumps({"total": 1}))
    jq = analyzer("jq")
    text = ".total"
    snapshot = Snapshot((tmp_path / "f.jq").as_uri(), "jq", 1, text, None)
    workspace = WorkspaceContext([tmp_path], Settings())
    program = jq.program(snapshot, workspace)
    assert program.sample is not None
    (tmp_path / "f.json").unlink()
    os.mkfifo(tmp_path / "f.json")
    found = within_deadline(tmp_path / "f.json", lambda: jq_analyzer.filter_binding(program, 3))
    assert found is not None and found[0].origin.line == 0


# -- Python -------------------------------------------------------------------------------------


HELPERS = "def scale(values, factor=2):\n    return values\n"


@pytest.mark.parametrize("text", [
    "from pkg.helpers import scale\n\n\ndef run(xs):\n    ys = scale(xs)\n    ",  # definitions
    "from pkg.helpers import *\n\n\ndef run(xs):\n    ys = scale(xs)\n    ",  # a star import
    "import pkg.helpers as h\n\n\ndef run(xs):\n    h.",  # members of the module
], ids=["definitions", "star-import", "members"])
def test_a_fifo_module_imported_by_a_document_never_blocks_the_analysis(tmp_path: Path, text: str):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "other.py").write_text(HELPERS)
    fifo = tmp_path / "pkg" / "helpers.py"
    os.mkfifo(fifo)
    document = Document((tmp_path / "main.py").as_uri(), "python", 1, text, parse_python)
    workspace = WorkspaceContext([tmp_path], Settings())
    python = PythonAnalyzer()

    def analyse() -> tuple[Hole, str]:
        snapshot = document.snapshot()
        python.diagnostics(snapshot, workspace)
        hole = python.hole_at(snapshot, len(text), workspace)
        assert isinstance(hole, Hole), hole
        return hole, python.prompt_context(snapshot, hole, workspace)

    hole, prompt = within_deadline(fifo, analyse)
    assert "factor" not in prompt
