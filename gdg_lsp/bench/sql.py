"""SQL benchmark plug-in: Spider questions, judged by running the query on SQLite.

A case is a document ``-- <question>`` then ``SELECT `` with the cursor after
it, placed in the database's schema folder (its ``schema.sql`` is the
workspace schema; ``meta["workspace_roots"]`` adds the ``.sqlite`` file). The
oracle runs ``SELECT <suggestion>`` on the database, opened read-only, and
compares the rows with those of the gold query. It shares nothing with the
analyzer: a reference that does not exist is reported by SQLite itself
("no such table" / "no such column"), and counted as a ghost.

Run all three arms with the real model (``python -m gdg_lsp.bench.sql --help``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sqlite3
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from gdg_lsp.bench.cases import HoleCase, OracleResult

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


# -- the measurement ------------------------------------------------------------------


def measure(cases: list[HoleCase], arms: list[str], max_tokens: int, timeout_ms: int, model: str = "default",
            device: str = "cpu", progress=None) -> dict[str, Any]:
    """Run every case under every arm with one model; return per-case records and a summary."""
    from gdg_lsp.decoding import models
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.sql import parse
    from gdg_lsp.service import CompletionService
    from gdg_lsp.settings import Settings

    backend = models.load(models.resolve(model), device)
    records: list[dict[str, Any]] = []
    services: dict[tuple[str, ...], CompletionService] = {}
    # case by case, every arm in turn: a run stopped early still compares the arms on the same cases
    for case in cases:
        for arm in arms:
            settings = Settings(constraint=arm, max_tokens=max_tokens, timeout_ms=timeout_ms, max_lines=1)
            roots = tuple(case.meta["workspace_roots"])
            if roots not in services:
                services[roots] = CompletionService(backend, WorkspaceContext([Path(r) for r in roots], settings))
            service = services[roots]
            service.workspace.settings = settings
            snapshot = Snapshot(case.uri, "sql", 1, case.text, parse(case.text.encode("utf-8")))
            began = time.perf_counter()
            suggestion = service.complete(snapshot, case.cursor, settings)
            latency = time.perf_counter() - began
            result = check(case, suggestion.text)
            record = {
                "case": case.case_id, "arm": arm, "text": suggestion.text, "rung": suggestion.rung,
                "stop": suggestion.stop_reason, "tokens": suggestion.tokens, "latency_s": round(latency, 3),
                "executes": result.details.get("executes", False), "match": result.passed,
                "ghosts": result.ghosts, "error": result.details.get("error"),
                "dropped": bool(not suggestion.text and suggestion.reason and "not bound" in suggestion.reason),
                "reason": suggestion.reason,
            }
            records.append(record)
            if progress:
                progress(record)
    return {"records": records, "summary": summarise(records, arms)}


def summarise(records: list[dict[str, Any]], arms: list[str]) -> dict[str, dict[str, float]]:
    summary = {}
    for arm in arms:
        rows = [r for r in records if r["arm"] == arm]
        if not rows:
            continue
        latencies = [r["latency_s"] for r in rows]
        summary[arm] = {
            "cases": len(rows),
            "executes_pct": round(100 * sum(r["executes"] for r in rows) / len(rows), 1),
            "match_pct": round(100 * sum(r["match"] for r in rows) / len(rows), 1),
            "ghosts": sum(len(r["ghosts"]) for r in rows),
            "ghost_queries": sum(1 for r in rows if r["ghosts"]),
            "dropped": sum(1 for r in rows if r.get("dropped")),
            "tokens_mean": round(statistics.mean(r["tokens"] for r in rows), 1),
            "latency_mean_s": round(statistics.mean(latencies), 2),
            "latency_p50_s": round(statistics.median(latencies), 2),
        }
    return summary


def table(summary: dict[str, dict[str, float]]) -> str:
    lines = ["| arm | cases | executes % | execution match % | ghosts (no such table/column) | dropped (cut before FROM) | tokens (mean) | latency mean / p50 (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for arm, s in summary.items():
        lines.append(f"| {arm} | {s['cases']} | {s['executes_pct']} | {s['match_pct']} | {s['ghosts']} | "
                     f"{s['dropped']} | {s['tokens_mean']} | {s['latency_mean_s']} / {s['latency_p50_s']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gdg_lsp.bench.sql", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("shared/corpus/sql"))
    parser.add_argument("--n", type=int, default=0, help="questions (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arms", default="none,syntax,scope")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--timeout-ms", type=int, default=60_000)
    parser.add_argument("--model", default="default")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument("--out", type=Path, default=None, help="write the records and summary as JSON")
    parser.add_argument("--records", type=Path, default=None, help="append each record as a JSON line as it comes")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    cases = cut_holes(args.corpus, args.n, args.seed)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]

    def progress(record: dict[str, Any]) -> None:
        if args.records:
            with args.records.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
        flag = "ok" if record["match"] else ("exec" if record["executes"] else "fail")
        print(f"{record['arm']:6} {record['case']:40} {flag:4} {record['latency_s']:6.2f}s  SELECT {record['text'][:90]!r}",
              file=sys.stderr, flush=True)

    result = measure(cases, arms, args.max_tokens, args.timeout_ms, args.model, args.device, progress)
    print(table(result["summary"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
