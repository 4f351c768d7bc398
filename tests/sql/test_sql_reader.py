"""The SQL lexer and the statement reader (scopes of unfinished statements)."""

from __future__ import annotations

from gdg_lsp.languages.sql.lexer import ident_key, spell, tokenize, unquote
from gdg_lsp.languages.sql.scope import read_statement, split_statements


def test_quoted_identifiers_keep_their_spelling_and_escapes():
    text = 'SELECT "a""b", `c``d`, [e f], \'it\'\'s\' FROM t'
    kinds = [(t.kind, t.text) for t in tokenize(text) if t.kind not in ("space",)]
    assert ("quoted", '"a""b"') in kinds
    assert ("quoted", "`c``d`") in kinds
    assert ("quoted", "[e f]") in kinds
    assert ("string", "'it''s'") in kinds
    assert unquote('"a""b"') == 'a"b' and unquote("`c``d`") == "c`d" and unquote("[e f]") == "e f"
    assert ident_key("`Song_Name`") == ident_key("song_name") == ident_key('"SONG_NAME"')


def test_unterminated_tokens_run_to_the_end():
    toks = tokenize("SELECT 'abc")
    assert toks[-1].kind == "string" and not toks[-1].closed
    toks = tokenize('SELECT "Ord')
    assert toks[-1].kind == "quoted" and not toks[-1].closed
    toks = tokenize("SELECT 1 /* open")
    assert toks[-1].kind == "comment" and not toks[-1].closed


def test_spell_quotes_only_what_needs_it():
    assert spell("name") == "name"
    assert spell("order") == '"order"'  # reserved
    assert spell("order details") == '"order details"'
    assert spell('a"b') == '"a""b"'
    assert spell("Name", fold_lower=True) == '"Name"'  # PostgreSQL folds bare names


def test_trailing_comma_before_from_is_an_empty_item_not_a_column():
    # tree-sitter-sql reads this as a column FROM aliased t, without error
    block = read_statement("SELECT a, FROM t", 0, 16).blocks[0]
    assert [c.name for c in block.clauses] == ["select", "from"]
    assert [" ".join(t.text for t in i.tokens) for i in block.items] == ["a"]
    assert [r.written for r in block.relations] == ["t"]


def test_ctes_subqueries_aliases_and_joins():
    text = ("WITH r(x) AS (SELECT a FROM t), q AS (SELECT * FROM r) "
            "SELECT r.x, count(*) n FROM r JOIN [u v] AS v ON v.id = r.x "
            "WHERE b IN (SELECT c FROM w WHERE ")
    statement = read_statement(text, 0, len(text))
    main = statement.blocks[0]
    assert [c.name.text for c in main.ctes] == ["r", "q"]
    assert [(r.written, r.alias.text if r.alias else None) for r in main.relations] == [("r", None), ("[u v]", "v")]
    assert [a.text for a in main.output_aliases()] == ["n"]
    assert [".".join(t.text for t in ref.parts) for ref in main.refs] == ["r.x", "v.id", "r.x", "b"]
    inner = statement.block_at(len(text))
    assert inner is not main and inner.open_paren is not None and [r.written for r in inner.relations] == ["w"]
    assert inner.clause_at(len(text)).name == "where"


def test_dml_targets_and_columns():
    for text, kind, target, refs in [
        ("INSERT INTO t (a, b) VALUES (1, 2)", "insert", "t", ["a", "b"]),
        ("UPDATE t SET a = b + 1 WHERE c = 'x'", "update", "t", ["a", "b", "c"]),
        ("DELETE FROM t WHERE d > 1", "delete", "t", ["d"]),
    ]:
        block = read_statement(text, 0, len(text)).blocks[0]
        assert block.kind == kind and block.target.written == target
        assert [r.parts[-1].text for r in block.refs] == refs


def test_cast_types_typed_literals_and_functions_are_not_column_references():
    text = "SELECT CAST(a AS INT), DATE '2020-01-01', lower(b) FROM t AS x"
    block = read_statement(text, 0, len(text)).blocks[0]
    assert [r.parts[-1].text for r in block.refs] == ["a", "b"]


def test_statements_split_at_semicolons_outside_strings_and_comments():
    text = "SELECT ';' FROM t; -- a ; comment\nSELECT 2"
    parts = split_statements(text)
    assert len(parts) == 2
    assert text[parts[1][0] :].strip().endswith("SELECT 2")


def test_reader_survives_garbage():
    for text in ["((((", "SELECT (SELECT (SELECT", ")))", "WITH", "WITH x AS (", "SELECT * FROM (", "INSERT INTO",
                 "SELECT " + "(" * 3000]:
        read_statement(text, 0, len(text))


from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st

_PIECES = ["SELECT", "FROM", "WHERE", "WITH", "AS", "JOIN", "ON", "(", ")", ",", "a", "t.b", "`q q`", "'s'",
           "UNION", "INSERT", "INTO", "VALUES", "UPDATE", "SET", "DELETE", "=", "*", "GROUP", "BY", "ORDER", "1", ";"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
@example(["SELECT", "UNION"])  # an empty core after a set operator (found by this test in CI)
@example(["SELECT", "a", "FROM", "t", "UNION", "ALL"])
def test_reader_never_raises_on_token_soup(pieces):
    from gdg_lsp.languages.sql.lexer import significant
    from gdg_lsp.languages.sql.scope import _Reader

    text = " ".join(pieces)
    toks = significant(tokenize(text))
    if toks and toks[0].is_word("select", "with", "values", "insert", "update", "delete"):
        _Reader(toks, len(text)).query(0, len(toks), None, None)  # the reader itself, without the guard
