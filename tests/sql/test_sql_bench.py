"""The SQL benchmark plug-in: cases from the corpus, and its SQLite oracle."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from gdg_lsp.languages.sql import bench


def test_cases_are_deterministic_documents_ending_in_select(corpus):
    cases = bench.cut_holes(corpus, 12, seed=3)
    assert len(cases) == 12 and [c.case_id for c in cases] == [c.case_id for c in bench.cut_holes(corpus, 12, 3)]
    for case in cases:
        assert case.text.startswith("-- ") and case.text.endswith("\nSELECT ") and case.cursor == len(case.text)
        assert case.language == "sql" and Path(case.meta["database"]).is_file()
        folder = Path(case.uri.removeprefix("file://")).parent  # the database's folder in the layout
        assert folder.name == case.meta["db_id"] and (folder / "schema.sql").is_file()
        assert (folder / f"{case.meta['db_id']}.sqlite").is_file()
        assert Path(case.meta["workspace_roots"][0]) == folder.parent
    assert len(bench.cut_holes(corpus, 0, 0)) == 150


def test_the_gold_query_passes_and_the_database_is_untouched(corpus):
    cases = bench.cut_holes(corpus, 20, seed=1)
    db = Path(cases[0].meta["database"])
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for case in cases:
        result = bench.check(case, case.expected)
        assert result.parsed and result.passed and not result.ghosts, (case.meta["gold"], result.details)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_ghosts_syntax_errors_and_wrong_rows(corpus):
    case = next(c for c in bench.cut_holes(corpus, 0, 0) if c.meta["db_id"] == "concert_singer")
    ghost = bench.check(case, "nosuch_column FROM singer;")
    assert ghost.parsed and ghost.ghosts == ["nosuch_column"] and not ghost.passed
    table = bench.check(case, "* FROM nosuch_table")
    assert table.ghosts == ["nosuch_table"]
    broken = bench.check(case, "name FROM")
    assert not broken.parsed and not broken.ghosts
    wrong = bench.check(case, "count(*) FROM singer WHERE 0;")
    assert wrong.parsed and wrong.details["executes"] and not wrong.passed


def test_rows_match_respects_order_only_when_asked():
    assert bench.rows_match([(1,), (2,)], [(2,), (1,)], ordered=False)
    assert not bench.rows_match([(1,), (2,)], [(2,), (1,)], ordered=True)
    assert bench.rows_match([(0.1 + 0.2,)], [(0.3,)], ordered=True)
    assert not bench.rows_match([(1,)], [(1,), (1,)], ordered=False)


def test_a_query_that_runs_too_long_is_stopped(corpus, tmp_path):
    db = next(Path(c.meta["database"]) for c in bench.cut_holes(corpus, 1, 0))
    rows, error = bench.run_query(str(db), "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                                           "SELECT count(*) FROM r", timeout=0.5)
    assert rows is None and error


def test_each_question_sees_only_its_own_database(corpus):
    """The workspace holds every database's folder; the data source rules give each
    question its own folder's schema (the tables of its SQLite file, and no other)."""
    import sqlite3

    from gdg_lsp.languages import analyzer
    from gdg_lsp.languages.sql.lexer import ident_key

    cases = {c.meta["db_id"]: c for c in bench.cut_holes(corpus, 0, 0)}
    assert len(cases) == 15
    for db_id, case in cases.items():
        workspace = bench.workspace_for(case)
        assert len(workspace.roots) == 1 and len({p.name for p in workspace.roots[0].iterdir()}) == 15
        hole = analyzer("sql").hole_at(case.document().snapshot(), case.cursor, workspace)
        tables = {ident_key(b.name) for b in hole.gamma.bindings("Table")}
        with sqlite3.connect(f"file:{case.meta['database']}?mode=ro&immutable=1", uri=True) as db:
            own = {name.casefold() for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        db.close()
        assert tables == own, db_id
        assert hole.context["data_source"] == f"folder {db_id} (folder, SQLite)"


def test_both_prompts_run_side_by_side():
    from gdg_lsp.bench import quality
    from gdg_lsp.settings import Settings

    args = quality.parse_args(["--lang", "sql", "--sql-prompt", "plain,schema"])
    assert quality._variants(bench, args) == ["plain", "schema"]
    assert bench.variant_settings(Settings(), "plain").sql.prompt == "plain"
    with pytest.raises(SystemExit, match="unknown fancy"):
        quality._variants(bench, quality.parse_args(["--lang", "sql", "--sql-prompt", "fancy"]))


@pytest.mark.slow
def test_real_model_scope_names_only_what_exists(corpus, tmp_path):
    """The default model through the benchmark runner (as `gdg-lsp bench quality --lang sql`)."""
    from gdg_lsp.bench import quality

    args = quality.parse_args(["--lang", "sql", "--arms", "scope", "--n", "2", "--seed", "4", "--max-tokens", "96",
                               "--timeout-ms", "120000", "--out", str(tmp_path), "--no-plots", str(corpus)])
    report = quality.run(args)
    assert report["n"] == 2
    for row in report["cases"]:
        assert not row["ghosts"], row
        assert row["rung"] in ("ctx", "gamma"), row
