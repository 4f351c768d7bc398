"""SQL benchmark plug-in: Spider questions, judged by running the query on SQLite.

The corpus keeps schemas and databases apart (``schemas/<db>/schema.sql``,
``db/<db>.sqlite``); the plug-in lays them out as a user's monorepo would be:
one folder per database holding its ``schema.sql``, its ``<db>.sqlite`` and
its question files, all in one workspace (a private temporary folder). Every
question therefore goes through the data source rules (``sources.py``: the
nearest folder with schema files) and sees its own database only, next to 14
others that define tables of their own.

A case is a document ``-- <question>`` then ``SELECT `` with the cursor after
it. The oracle runs ``SELECT <suggestion>`` on the corpus database, opened
read-only, and compares the rows with those of the gold query. It shares
nothing with the analyzer: a reference that does not exist is reported by
SQLite itself ("no such table" / "no such column"), and counted as a ghost.

Run the arms with ``gdg-lsp bench quality --lang sql --max-tokens 96``
(``--sql-prompt plain,schema`` runs both prompts side by side).
"""

from __future__ import annotations

import atexit
import json
import random
import re
import shutil
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase, OracleResult
from gdg_lsp.languages.sql.lexer import significant, tokenize

QUERY_TIMEOUT_S = 5.0
_MISSING = re.compile(r"no such (table|column): (.+)$")


def _corpus(corpus: Path) -> Path:
    """Accept the corpus root (``shared/corpus``) or its ``sql`` folder."""
    return corpus / "sql" if (corpus / "sql" / "questions.jsonl").is_file() else corpus


_LAYOUTS: dict[Path, Path] = {}


def layout(corpus: Path) -> Path:
    """The one-folder-per-database workspace built from the corpus (once per process):
    ``<workspace>/<db>/schema.sql`` and ``<workspace>/<db>/<db>.sqlite``."""
    root = _corpus(Path(corpus)).resolve()
    if root in _LAYOUTS and _LAYOUTS[root].is_dir():
        return _LAYOUTS[root]
    workspace = Path(tempfile.mkdtemp(prefix="gdg-sql-bench-"))  # mode 0700, removed at exit
    atexit.register(shutil.rmtree, workspace, True)
    for schema in sorted((root / "schemas").glob("*/schema.sql")):
        db_id = schema.parent.name
        folder = workspace / db_id
        folder.mkdir()
        shutil.copyfile(schema, folder / "schema.sql")
        database = root / "db" / f"{db_id}.sqlite"
        if database.is_file():
            shutil.copyfile(database, folder / f"{db_id}.sqlite")
    _LAYOUTS[root] = workspace
    return workspace


def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """``n`` questions (all when ``n`` is 0 or more than there are), in a seeded order."""
    root = _corpus(Path(corpus))
    workspace = layout(root)
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
        path = workspace / db_id / f"question_{index:03d}.sql"
        path.write_text(text, encoding="utf-8")
        database = (root / "db" / f"{db_id}.sqlite").resolve()
        gold = str(row["query"])
        cases.append(HoleCase(
            case_id=f"sql-{index:03d}-{db_id}",
            language="sql",
            uri=path.as_uri(),
            text=text,
            cursor=len(text),
            expected=_after_select(gold),
            meta={"db_id": db_id, "question": question, "gold": gold, "database": str(database),
                  "workspace_roots": [str(workspace)], "gold_rows": row.get("gold_rows")},
        ))
    return cases


def cut_inside_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Holes inside the gold query (``--holes inside``): an operand removed (a column, a
    qualified column, a number or a string) with the rest of the query after it on the line,
    the cursor where it was; ``expected`` is the query from the cursor on. One hole per
    question, in the same seeded order as ``cut_holes``."""
    root = _corpus(Path(corpus))
    workspace = layout(root)
    rows = [json.loads(line) for line in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    rng = random.Random(seed)
    cases: list[HoleCase] = []
    for index in order:
        if n and len(cases) >= n:
            break
        row = rows[index]
        gold = " ".join(str(row["query"]).split())
        spans = _operands(gold)
        if not spans:
            continue
        at, to = spans[rng.randrange(len(spans))]
        db_id = row["db_id"]
        question = " ".join(str(row["question"]).split())
        header = f"-- {question}\n"
        text = header + gold[:at] + gold[to:] + "\n"
        path = workspace / db_id / f"question_{index:03d}_inside.sql"
        path.write_text(text, encoding="utf-8")
        database = (root / "db" / f"{db_id}.sqlite").resolve()
        cases.append(HoleCase(
            case_id=f"sql-{index:03d}-{db_id}-in", language="sql", uri=path.as_uri(), text=text,
            cursor=len(header) + at, expected=gold[at:],
            meta={"db_id": db_id, "question": question, "gold": gold, "database": str(database),
                  "workspace_roots": [str(workspace)], "gold_rows": row.get("gold_rows"), "midline": True,
                  "rest": gold[to:]},
        ))
    return cases


def _operands(query: str) -> list[tuple[int, int]]:
    """Where an operand of ``query`` lies (after its first word, with more than a ``;`` after it):
    a column or ``alias.column``, a number, a string."""
    tokens = significant(tokenize(query))
    spans: list[tuple[int, int]] = []
    i = 1
    while i < len(tokens):
        token = tokens[i]
        if token.kind in ("number", "string") or token.is_identifier:
            end = i
            while (end + 2 < len(tokens) and tokens[end + 1].text == "." and tokens[end + 1].start == tokens[end].end
                   and tokens[end + 2].start == tokens[end + 1].end):
                end += 2
            previous = tokens[i - 1]
            if (query[tokens[end].end :].strip(" ;") and not previous.is_word("as", "from", "join")
                    and previous.text != "."):
                spans.append((token.start, tokens[end].end))
            i = end + 1
        else:
            i += 1
    return spans


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
    """The workspace of every database's folder: which one a question sees is the
    data source rules' decision (its own folder), as in an editor."""
    return WorkspaceContext([Path(root) for root in case.meta["workspace_roots"]])


VARIANTS = {"plain": "the DDL of the tables in play (gdg.sql.prompt = plain)",
            "schema": "the data source's schema compacted, example rows, the question (gdg.sql.prompt = schema)"}
"""The prompts ``--sql-prompt`` compares."""


def variant_settings(settings: Any, name: str) -> Any:
    """``settings`` with the SQL prompt ``name`` (``bench quality --sql-prompt``)."""
    import attrs

    return attrs.evolve(settings, sql=attrs.evolve(settings.sql, prompt=name))
