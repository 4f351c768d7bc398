"""SQL benchmark plug-in: Spider questions, judged by running the query on SQLite.

A case is a document ``-- <question>`` then ``SELECT `` with the cursor after
it, placed in the database's schema folder (its ``schema.sql`` is the
workspace schema; ``meta["workspace_roots"]`` adds the ``.sqlite`` file). The
oracle runs ``SELECT <suggestion>`` on the database, opened read-only, and
compares the rows with those of the gold query. It shares nothing with the
analyzer: a reference that does not exist is reported by SQLite itself
("no such table" / "no such column"), and counted as a ghost.

Run the arms with ``gdg-lsp bench quality --lang sql --max-tokens 96``; the
runner asks ``workspace_for`` which workspace each question sees.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase, OracleResult

QUERY_TIMEOUT_S = 5.0
_MISSING = re.compile(r"no such (table|column): (.+)$")


def _corpus(corpus: Path) -> Path:
    """Accept the corpus root (``shared/corpus``) or its ``sql`` folder."""
    return corpus / "sql" if (corpus / "sql" / "questions.jsonl").is_file() else corpus


def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """``n`` questions (all when ``n`` is 0 or more than there are), in a seeded order."""
    root = _corpus(Path(corpus))
    rows = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    if n and n < len(order):
        order = sorted(order[:n])
    cases = []
    for index in order:
        row = rows[index]
        db_id = row["db_id"]
        question = " ".join(str(row["question"]).split())
        text = f"-- {question}\nSELECT "
        folder = (root / "schemas" / db_id).resolve()
        database = (root / "db" / f"{db_id}.sqlite").resolve()
        gold = str(row["query"])
        cases.append(HoleCase(
            case_id=f"sql-{index:03d}-{db_id}",
            language="sql",
            uri=(folder / f"question_{index:03d}.sql").as_uri(),
            text=text,
            cursor=len(text),
            expected=_after_select(gold),
            meta={"db_id": db_id, "question": question, "gold": gold, "database": str(database),
                  "workspace_roots": [str(folder), str(database)], "gold_rows": row.get("gold_rows")},
        ))
    return cases


def _after_select(query: str) -> str:
    m = re.match(r"\s*select\s", query, re.IGNORECASE)
    return query[m.end():] if m else query


def run_query(database: str, sql: str, timeout: float = QUERY_TIMEOUT_S) -> tuple[list[tuple] | None, str | None]:
    """Rows of ``sql`` on ``database`` opened read-only, or the error message."""
    uri = f"file:{Path(database).resolve()}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=1.0)
    except sqlite3.Error as err:
        return None, f"cannot open {database}: {err}"
    deadline = time.monotonic() + timeout
    connection.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        connection.execute("PRAGMA query_only = ON")
        return connection.execute(sql).fetchall(), None
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError) as err:
        return None, str(err) or type(err).__name__
    finally:
        connection.close()


def statement_of(case: HoleCase, suggestion: str) -> str:
    """The query the filled document holds: ``SELECT`` plus the suggestion, up to its first ``;``."""
    filled = case.text[: case.cursor] + suggestion
    body = filled.split("\n", 1)[1] if filled.startswith("--") and "\n" in filled else filled
    return body.split(";", 1)[0].strip()


def _normalise(rows: list[tuple]) -> list[tuple]:
    def value(v: Any) -> Any:
        if isinstance(v, float):
            return round(v, 6)
        return v
    return [tuple(value(v) for v in row) for row in rows]


def rows_match(got: list[tuple], gold: list[tuple], ordered: bool) -> bool:
    got, gold = _normalise(got), _normalise(gold)
    if ordered:
        return got == gold
    key = lambda row: tuple((v is None, str(type(v)), str(v)) for v in row)  # noqa: E731
    return Counter(map(key, got)) == Counter(map(key, gold))


def check(case: HoleCase, suggestion: str) -> OracleResult:
    sql = statement_of(case, suggestion)
    database = case.meta["database"]
    rows, error = run_query(database, sql)
    details: dict[str, Any] = {"sql": sql, "executes": error is None}
    if error is not None:
        details["error"] = error
        missing = _MISSING.search(error)
        parsed = "syntax error" not in error and "incomplete input" not in error
        return OracleResult(parsed=parsed, ghosts=[missing.group(2)] if missing else [], passed=False, details=details)
    gold_rows, gold_error = run_query(database, case.meta["gold"])
    if gold_error is not None:
        details["gold_error"] = gold_error
        return OracleResult(parsed=True, passed=False, details=details)
    ordered = re.search(r"\border\s+by\b", case.meta["gold"], re.IGNORECASE) is not None
    match = rows_match(rows or [], gold_rows or [], ordered)
    details.update(rows=len(rows or []), gold_rows=len(gold_rows or []), match=match)
    return OracleResult(parsed=True, passed=match, details=details)


# -- the runner's hook ---------------------------------------------------------------


def workspace_for(case: HoleCase, args: Any = None) -> WorkspaceContext:
    """Each question sees its own database's schema only: the folder with its
    ``schema.sql`` and its ``.sqlite`` file (not the whole corpus's schemas)."""
    return WorkspaceContext([Path(root) for root in case.meta["workspace_roots"]])
