"""The SQL analyzer: holes, Γ at the cursor, π over the statement fragment, diagnostics, prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.explain import byte_grammars
from gdg_lsp.grammar.engine import accepts, full_match
from gdg_lsp.languages import analyzer, language_for_path
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.settings import Settings, SqlSettings


def snap(text: str, uri: str = "file:///nowhere/query.sql") -> Snapshot:
    return Snapshot(uri, "sql", 1, text, parse(text.encode("utf-8")))


def hole_for(marked: str, workspace: WorkspaceContext):
    offset = marked.index("|")
    text = marked.replace("|", "", 1)
    return analyzer("sql").hole_at(snap(text), offset, workspace), text


def choose(hole: Hole, constraint: str = "scope") -> fragments.Choice:
    frag = fragments.fragment("sql", hole.fragment)
    return fragments.choose(frag, hole.gamma, hole.context, hole.typed, constraint, byte_grammars().get, accepts)


@pytest.fixture
def ws(concert_workspace) -> WorkspaceContext:
    return WorkspaceContext([concert_workspace], Settings())


def test_registered_for_sql_files():
    assert language_for_path("a/b.sql") == "sql"
    assert analyzer("sql").name == "sql"


# -- holes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("marked, reason", [
    ("-- a comment |", "comment"),
    ("/* block | */ SELECT 1", "comment"),
    ("SELECT 'abc|'", "string"),
    ("CREATE TABLE x (|", "CREATE"),
    ("SELECT a, FROM singer WHERE |", "comma before FROM"),
    ("SELECT count(*) AS |", "alias"),
    ("SELECT Na|me FROM singer", "inside a word"),
    ("SELECT Name FROM singer WHERE|\n  Age > 1", "on the lines below"),  # a middle stays on its line
    ("WITH r AS (SELECT 1), |", "CTE"),
])
def test_no_hole_where_nothing_should_be_generated(marked, reason, ws):
    hole, _ = hole_for(marked, ws)
    assert isinstance(hole, NoHole) and reason in hole.reason


def test_select_list_before_from_keeps_columns_consistent_with_the_from(ws):
    hole, _ = hole_for("-- how many singers\nSELECT |", ws)
    assert isinstance(hole, Hole) and hole.typed == "SELECT " and hole.sort == "Query"
    choice = choose(hole)
    assert choice.rung == "ctx"
    ok = lambda rest: full_match(choice.compiled, hole.typed + rest)  # noqa: E731
    assert ok("count(*) FROM `singer`;")
    assert ok("Name FROM singer;")  # the bare spelling of `Name`
    assert ok("`Name` FROM `stadium` WHERE `Capacity` > 10;")
    assert ok("T1.`Name`, T3.`Theme` FROM `singer` AS T1 JOIN `singer_in_concert` AS T2 ON T1.`Singer_ID` = "
              "T2.`Singer_ID` JOIN `concert` AS T3 ON T2.`concert_ID` = T3.`concert_ID`;")
    assert not ok("`Theme` FROM `singer`;")  # Theme is a column of concert
    assert not ok("`Name` FROM `nosuch`;")
    assert not ok("T2.`Name` FROM `singer` AS T1 JOIN `singer_in_concert` AS T2 ON T1.`Singer_ID` = T2.`Singer_ID`;")


def test_written_from_restricts_columns_and_alias_dot(ws):
    hole, _ = hole_for("SELECT s.Name FROM singer AS s JOIN concert AS c ON c.Stadium_ID = 1 WHERE c.|", ws)
    choice = choose(hole)
    assert choice.rung == "ctx"
    ok = lambda rest: full_match(choice.compiled, hole.typed + rest)  # noqa: E731
    assert ok("`Theme` = 'x';") and ok("Year > 2000;")
    assert not ok("`Age` > 3;")  # Age is singer's, c is concert
    assert not ok("`Capacity` > 3;")
    gamma = hole.gamma
    assert {b.name: b.attrs["table"] for b in gamma.bindings("Alias")} == {"s": "`singer`", "c": "`concert`"}


def test_subquery_has_its_own_scope_and_ends_with_its_parenthesis(ws):
    hole, text = hole_for("SELECT Name FROM singer WHERE Age > (SELECT |)", ws)
    assert hole.typed == "SELECT " and hole.replace_end == len(text)  # the ")" is regenerated
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "avg(`Capacity`) FROM `stadium`)")
    assert not full_match(choice.compiled, hole.typed + "avg(`Capacity`) FROM `stadium`;")


def test_select_list_with_from_after_the_cursor(ws):
    hole, text = hole_for("SELECT | FROM concert", ws)
    assert hole.sort == "SelectList" and text[hole.replace_end - 4 : hole.replace_end] == "FROM"
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "`Theme`, Year FROM")
    assert not full_match(choice.compiled, hole.typed + "`Age` FROM")
    hole, _ = hole_for("SELECT |\nFROM concert", ws)
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "`Theme`\n") and hole.replace_end == hole.cursor


def test_ctes_and_document_tables_are_in_gamma(ws):
    doc = ("CREATE TABLE fans (fan_id INT, singer_id INT REFERENCES `singer`(`Singer_ID`));\n"
           "WITH young AS (SELECT `Name` AS n, Age FROM singer WHERE Age < 30)\n"
           "SELECT | ;\n"
           "CREATE TABLE later (x INT);")
    hole, text = hole_for(doc, ws)
    tables = set(hole.gamma.names("Table"))
    assert {"fans", "young", "`singer`"} <= tables and "later" not in tables
    assert {"young.n", "young.Age"} <= set(hole.gamma.names("Column"))
    choice = choose(hole)
    ok = lambda rest: full_match(choice.compiled, hole.typed + rest)  # noqa: E731
    assert ok("n FROM young;") and ok("fan_id FROM fans;")
    assert not ok("x FROM later;")
    assert text[hole.cursor : hole.replace_end] == " ;"  # the ";" after the cursor is regenerated


def test_from_subquery_and_select_aliases(ws):
    hole, _ = hole_for("SELECT sub.total AS t FROM (SELECT count(*) AS total FROM singer) AS sub ORDER BY |", ws)
    assert "t" in hole.gamma.names("OutputAlias") and "sub" in hole.gamma.names("Table")
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "t DESC;")
    assert full_match(choice.compiled, hole.typed + "sub.total;")
    assert not full_match(choice.compiled, hole.typed + "sub.`Name`;")


def test_dml_statements(ws):
    hole, _ = hole_for("UPDATE `singer` SET |", ws)
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "`Age` = `Age` + 1 WHERE `Name` = 'x';")
    assert not full_match(choice.compiled, hole.typed + "`Theme` = 1;")
    hole, _ = hole_for("INSERT INTO |", ws)
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "`singer` (`Name`, `Age`) VALUES ('x', 3);")
    assert not full_match(choice.compiled, hole.typed + "`singer` (`Theme`) VALUES ('x');")
    hole, _ = hole_for("DELETE FROM `concert` WHERE |", ws)
    choice = choose(hole)
    assert full_match(choice.compiled, hole.typed + "`Year` < 2000;")


def test_typed_text_outside_the_scope_climbs_to_gamma_then_base(ws):
    hole, _ = hole_for("SELECT Theme FROM singer WHERE |", ws)  # Theme is not singer's
    choice = choose(hole)
    assert [a.outcome for a in choice.attempts][:2] == ["rejects-typed-text", "chosen"] and choice.rung == "gamma"
    hole, _ = hole_for("SELECT nosuch FROM nowhere WHERE |", ws)
    assert choose(hole).rung == "base"
    assert choose(hole, "syntax").rung == "base"


def test_empty_workspace_still_completes_document_tables(tmp_path):
    ws = WorkspaceContext([tmp_path], Settings())
    hole, _ = hole_for("CREATE TABLE t (a INT, \"b c\" TEXT);\nSELECT |", ws)
    choice = choose(hole)
    assert choice.rung == "ctx" and full_match(choice.compiled, hole.typed + '"b c" FROM t;')
    hole, _ = hole_for("SELECT |", WorkspaceContext([], Settings()))
    assert choose(hole).rung == "base"  # nothing known: only the open rung


# -- the rest of the analyzer's answers ----------------------------------------------------


def test_replay_flattens_line_breaks_and_comments(ws):
    hole, _ = hole_for("SELECT `Name`,  -- the name\n       `Age`\nFROM singer\nWHERE |", ws)
    assert "\n" not in hole.typed and "--" not in hole.typed
    assert choose(hole).rung == "ctx"


@pytest.mark.parametrize("form", ["schema", "plain"])
def test_prompt_context_shows_the_tables_in_play_within_the_budget(ws, form):
    sql = analyzer("sql")
    ws = WorkspaceContext(ws.roots, Settings(sql=SqlSettings(prompt=form)))
    hole, text = hole_for("-- name of the stadium with the highest capacity\nSELECT |", ws)
    prompt = sql.prompt_context(snap(text), hole, ws)
    assert prompt.startswith("-- Database schema") and "CREATE TABLE `stadium`" in prompt
    assert prompt.index("`stadium`") < prompt.index("`singer_in_concert`")  # most relevant first
    if form == "schema":  # the question, and the engine the source's DDL shows (backticks: SQLite)
        assert "-- Question: name of the stadium with the highest capacity" in prompt and "SQLite" in prompt
    tight = WorkspaceContext(ws.roots, Settings(context_tokens=200, sql=SqlSettings(prompt=form)))
    short = sql.prompt_context(snap(text), hole, tight)
    assert len(short) <= 200 * 3 * 0.5 + 2 and "`stadium`" in short
    hole, text = hole_for("SELECT * FROM concert WHERE |", ws)
    assert sql.prompt_context(snap(text), hole, ws).index("`concert`") < 60


def test_trim_partial_cuts_back_to_a_statement_that_can_end(ws):
    sql = analyzer("sql")
    hole, _ = hole_for("SELECT |", ws)
    g = hole.gamma
    assert sql.trim_partial("`Name` FROM `singer` WHERE `Age` > 3 AND `singer`.", g) == "`Name` FROM `singer` WHERE `Age` > 3"
    assert sql.trim_partial("`Name` FROM `singer` WHERE `Name` = 'ab", g) == "`Name` FROM `singer` WHERE `Name`"
    assert sql.trim_partial("count(*) FROM `singer` WHERE `Age` IN (SELECT", g) == "count(*) FROM `singer` WHERE `Age`"
    assert sql.trim_partial("`Name`, `Ag", g) == "`Name`"
    assert sql.trim_partial("`Name`, RePlAce(`Name`, 'a", g) == "`Name`"  # a cut call loses its name too
    assert sql.trim_partial("`Name` FROM `singer` ORDER BY `Age` DESC", g) == "`Name` FROM `singer` ORDER BY `Age` DESC"


def test_a_statement_cut_before_its_from_names_unbound_columns(ws):
    sql = analyzer("sql")
    hole, _ = hole_for("SELECT |", ws)
    assert sql.unbound_references("SELECT `Name`, `Age`", hole.gamma) == ["`Name`", "`Age`"]
    assert sql.unbound_references("SELECT `Name` FROM `singer`", hole.gamma) == []
    assert sql.unbound_references("SELECT count(*)", hole.gamma) == []


def test_diagnostics_unknown_tables_and_columns_with_a_quick_fix(ws):
    text = ("SELECT Nmae, s.Agee, x.y FROM singer AS s WHERE Country = 'x';\n"
            "SELECT * FROM singers;\n"
            "WITH r AS (SELECT Name AS n FROM singer) SELECT n, m FROM r;\n"
            "CREATE TABLE t2 (a INT);\n"
            "SELECT a, b FROM t2 ORDER BY a;\n"
            "SELECT `T1`.`Name` FROM `singer` AS `T1` JOIN concert AS c ON c.Theme = `T1`.Country;")
    findings = analyzer("sql").diagnostics(snap(text), ws)
    got = {(text[f.start:f.end], f.code, (f.data or {}).get("replacement")) for f in findings}
    assert got == {
        ("Nmae", "sql.unknown-column", "`Name`"),
        ("Agee", "sql.unknown-column", "`Age`"),
        ("x", "sql.unknown-table", None),
        ("singers", "sql.unknown-table", "`singer`"),
        ("m", "sql.unknown-column", None),  # too far from n to suggest it
        ("b", "sql.unknown-column", None),
    }
    assert all(f.severity == "warning" and f.message for f in findings)


def test_no_schema_no_diagnostics(tmp_path):
    text = "SELECT a FROM t;"
    assert analyzer("sql").diagnostics(snap(text), WorkspaceContext([tmp_path], Settings())) == []


def test_hover_resolves_tables_columns_and_aliases(ws):
    text = "SELECT s.Name, Age FROM singer AS s"
    sql = analyzer("sql")
    binding, start, end = sql.binding_at(snap(text), text.index("Name") + 1, ws)
    assert binding.name == "`singer`.`Name`" and text[start:end] == "Name"
    binding, _, _ = sql.binding_at(snap(text), text.index("Age") + 1, ws)
    assert binding.attrs["table"] == "`singer`"
    binding, _, _ = sql.binding_at(snap(text), text.index("singer") + 1, ws)
    assert binding.sort == "Table"


def test_uri_of_the_document_itself_is_not_read_from_disk(concert_workspace):
    doc = concert_workspace / "q.sql"
    doc.write_text("CREATE TABLE on_disk_only (z INT);\nSELECT 1;")
    ws = WorkspaceContext([concert_workspace], Settings())
    text = "SELECT "
    hole = analyzer("sql").hole_at(snap(text, doc.as_uri()), len(text), ws)
    assert "on_disk_only" not in hole.gamma.names("Table")
    assert "`singer`" in hole.gamma.names("Table")
    assert isinstance(Path(doc), Path)


@pytest.mark.parametrize("before, word", [("SELECT |", "singer_id"), ("SELECT * FROM singer WHERE |", "age"),
                                          ("SELECT name FROM singer WHERE singer_id IN (SELECT |", "singer_id")])
def test_the_hole_key_holds_while_the_first_word_of_a_suggestion_is_typed(before, word, ws):
    """A suggestion shown at the hole is typed through while the hole's key (its Γ and shape)
    stays the one it was decoded under: the region's path is read where the region begins, not
    at the word being typed (SQL's path took the identifier node at the cursor, so the first key
    typed into a shown SELECT item changed the key and the ghost was decoded again, differently)."""
    from gdg_lsp.service.suggestion_reuse import hole_key

    first, _ = hole_for(before, ws)
    assert isinstance(first, Hole), first
    for typed in range(1, len(word)):
        hole, _ = hole_for(before.replace("|", word[:typed] + "|"), ws)
        assert isinstance(hole, Hole), hole
        assert hole.region_path == first.region_path
        assert hole_key(hole) == hole_key(first), word[:typed]
