"""Mid-line SQL holes: the text after the cursor stays, and a middle ends only where the whole
statement, with that text after it, prepares over Γ's tables.

The judge of the property test is not the analyzer's: SQLite prepares the filled statement on
the corpus database itself (opened read-only), so a middle naming a column the database lacks,
or one that leaves the statement unreadable, fails it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.languages.base import NoHole, WorkspaceContext
from gdg_lsp.languages.sql import scratch
from gdg_lsp.languages.sql.analyzer import SqlAnalyzer, parse
from tests.tilelang.tl_scripted import NoisyBackend, ScriptedBackend

QUESTION = "-- names of singers older than 30, oldest first\n"


def _hole(folder: Path, code: str):
    cursor = code.index("@")
    code = code.replace("@", "", 1)
    path = folder / "q.sql"
    path.write_text(code, encoding="utf-8")
    snapshot = Snapshot(path.as_uri(), "sql", 1, code, parse(code.encode()))
    return code, cursor, SqlAnalyzer().hole_at(snapshot, cursor, WorkspaceContext([folder]))


def _middle(folder: Path, code_with_cursor: str, script: str, engine, vocab, backend=None) -> str:
    code, cursor, hole = _hole(folder, code_with_cursor)
    backend = backend or ScriptedBackend(vocab, code[:cursor] + script)
    executor = Executor(SqlAnalyzer(), Decoder(backend), engine)
    prompt = Prompt(vocab.encode(code[:cursor]).ids, replay=hole.typed)
    return executor.run(hole, prompt, "scope", max_tokens=32, max_lines=1).text


def test_text_after_the_cursor_makes_a_mid_line_hole_that_keeps_it(concert_workspace):
    _, cursor, hole = _hole(concert_workspace, QUESTION + "SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n")
    assert hole.suffix == " ORDER BY Age DESC;"
    assert hole.replace_end == cursor  # nothing after the cursor is replaced


@pytest.mark.parametrize("line, script", [
    ("SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n", "Age > 30"),
    ("SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n", "Age > 30 AND Country = 'France'"),
    ("SELECT Name FROM singer WHERE @ > 30;\n", "Age"),
    ("SELECT @, Age FROM singer;\n", "Name"),  # an item before the ones already written
    ("SELECT Name FROM singer WHERE Age > 30 ORDER BY @ DESC;\n", "Age"),
    ("SELECT Name FROM @ WHERE Age > 30;\n", "singer"),
])
def test_the_middle_ends_where_the_statement_prepares_with_the_rest(line, script, concert_workspace,
                                                                   tiny_vocab, tiny_engine):
    assert _middle(concert_workspace, QUESTION + line, script, tiny_engine, tiny_vocab) == script


@pytest.mark.parametrize("line, script", [
    ("SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n", "Age >"),  # the comparison is unfinished
    ("SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n", "Ag"),  # half a column's name
    ("SELECT Name FROM @ WHERE Age > 30;\n", "stadium"),  # a table with no Age: the suffix reads it
])
def test_a_middle_never_ends_where_the_statement_does_not_prepare(line, script, concert_workspace,
                                                                  tiny_vocab, tiny_engine):
    middle = _middle(concert_workspace, QUESTION + line, script, tiny_engine, tiny_vocab)
    assert middle != script
    if middle:
        assert _prepares_on_the_database(QUESTION + line, middle), middle


def test_middle_fits_reads_only_gammas_tables(concert_workspace):
    _, _, hole = _hole(concert_workspace, QUESTION + "SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n")
    analyzer = SqlAnalyzer()
    assert analyzer.middle_fits(hole, "Age > 30")
    assert analyzer.middle_fits(hole, "singer.Age > 30")
    assert not analyzer.middle_fits(hole, "Agez > 30")  # no such column in Γ
    assert not analyzer.middle_fits(hole, "Age > 30; DELETE FROM singer")  # a second statement


def test_the_scratch_judge_runs_and_attaches_nothing(concert_workspace, tmp_path):
    """An attack through the judge: a statement that would attach (create) a file, or change the
    scratch database. It is refused before SQLite sees it, and nothing appears on disk."""
    _, _, hole = _hole(concert_workspace, QUESTION + "SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n")
    target = tmp_path / "attached.db"
    assert not scratch.prepares(hole.gamma, f"ATTACH DATABASE '{target}' AS e")
    assert not scratch.prepares(hole.gamma, "DROP TABLE singer")
    assert not scratch.prepares(hole.gamma, "SELECT 1; ATTACH DATABASE 'x.db' AS e")
    assert not target.exists()
    assert scratch.prepares(hole.gamma, "SELECT Name FROM singer")  # the table is still there


@pytest.mark.parametrize("line, why", [
    ("SELECT Name FROM singer WHERE@\n  AND Age > 30;\n", "on the lines below"),
    ("SELECT Na@me FROM singer;\n", "inside a word"),
])
def test_where_no_middle_is_decoded_the_reason_says_why(line, why, concert_workspace):
    _, _, hole = _hole(concert_workspace, QUESTION + line)
    assert isinstance(hole, NoHole) and why in hole.reason


def test_a_postgres_file_keeps_mid_line_off_with_the_reason(tmp_path):
    folder = tmp_path / "pg"
    folder.mkdir()
    (folder / "schema.sql").write_text("CREATE TABLE singer (id SERIAL PRIMARY KEY, name TEXT, age INT);\n")
    _, _, hole = _hole(folder, "SELECT name FROM singer WHERE @ ORDER BY age;\n")
    assert isinstance(hole, NoHole) and "PostgreSQL" in hole.reason


def _prepares_on_the_database(code_with_cursor: str, middle: str) -> bool:
    statement = code_with_cursor.replace("@", middle, 1).split("\n", 1)[1].strip().rstrip(";")
    database = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "sql" / "db" / "concert_singer.sqlite"
    if not database.is_file():
        database = Path("/work/shared/corpus/sql/db/concert_singer.sqlite")
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        connection.execute("EXPLAIN " + statement)
        return True
    except sqlite3.Error:
        return False
    finally:
        connection.close()


WORDS = ("Name", "Age", "Country", "singer.Age", "Capacity", "Agez", "Song_Name", "stadium.Name", "30", "'x'")
JOINS = (" > ", " = ", " AND ", " OR ", ", ", " + ", " ", "(", ")")
LINES = ("SELECT Name FROM singer WHERE @ ORDER BY Age DESC;\n", "SELECT Name FROM singer WHERE @ > 30;\n",
         "SELECT Name FROM singer WHERE Age > 30 ORDER BY @ DESC;\n",
         "SELECT count(*) FROM singer WHERE @ GROUP BY Country;\n")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(words=st.lists(st.integers(0, len(WORDS) - 1), min_size=1, max_size=4),
       joins=st.lists(st.sampled_from(JOINS), max_size=3), line=st.sampled_from(LINES), seed=st.integers(0, 10_000))
def test_every_sql_middle_prepares_on_the_real_database(words, joins, line, seed, concert_workspace,
                                                        tiny_vocab, tiny_engine):
    """A noisy model that wants random middles of real and invented columns: whatever is emitted
    leaves a statement the corpus database itself prepares with the rest of the line after it."""
    script = "".join(WORDS[w] + (joins[i] if i < len(joins) else "") for i, w in enumerate(words))
    code, cursor, _ = _hole(concert_workspace, QUESTION + line)
    backend = NoisyBackend(ScriptedBackend(tiny_vocab, code[:cursor] + script), seed=seed, scale=1.5)
    middle = _middle(concert_workspace, QUESTION + line, script, tiny_engine, tiny_vocab, backend)
    if middle:
        assert _prepares_on_the_database(QUESTION + line, middle), middle
