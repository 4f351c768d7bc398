"""Grammar gate on real code: every gold query of the corpus (Spider, 15 databases).

Positives: the query, typed in a document of its database's workspace, is
accepted by the tightest rung (ctx) — or, when it writes a string in double
quotes (an open name to every engine but SQLite), by base. Negatives: the same
text with one column reference replaced by a name that is not in Γ is rejected
by the same compiled grammar object, at ctx and at gamma; with each grammar engine.
"""

from __future__ import annotations

import json

import pytest

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.explain import byte_grammars
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages import analyzer
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.languages.sql.scope import read_statement
from gdg_lsp.settings import Settings

GHOST = "zz_not_in_gamma"


def _questions(corpus):
    return [json.loads(line) for line in (corpus / "questions.jsonl").read_text().splitlines() if line.strip()]


def _hole(corpus, row, text):
    ws = WorkspaceContext([corpus / "schemas" / row["db_id"]], Settings())
    hole = analyzer("sql").hole_at(Snapshot("file:///gate/q.sql", "sql", 1, text, parse(text.encode())), len(text), ws)
    assert isinstance(hole, Hole), hole
    return hole


def _compiled(hole, rung, engine):
    grammar = fragments.instantiate(fragments.fragment("sql", "statement"), rung, hole.gamma, hole.context)
    return engine.get(grammar)


def _mutations(query: str):
    """The query with one column reference outside FROM/ON replaced by a non-Γ name, for each such reference."""
    statement = read_statement(query, 0, len(query))
    for block in statement.walk():
        for ref in block.refs:
            if ref.clause in ("on",) or ref.star:
                continue
            tok = ref.parts[-1]
            yield query[: tok.start] + GHOST + query[tok.end :]


def test_gold_queries_pass_the_gate(corpus, byte_engine):
    rows = _questions(corpus)
    assert len(rows) >= 100
    positives = negatives = 0
    wrong: list[str] = []
    gamma_checked: set[str] = set()  # the gamma grammar is checked once per database (compile time)
    for row in rows:
        query = row["query"]
        hole = _hole(corpus, row, query + " ")
        choice = fragments.choose(fragments.fragment("sql", "statement"), hole.gamma, hole.context, hole.typed,
                                  "scope", byte_engine.get, accepts)
        expected = "base" if '"' in query else "ctx"
        if choice.rung != expected:
            wrong.append(f"{choice.rung} != {expected}: {query}")
            continue
        positives += 1
        if expected != "ctx":
            continue
        rungs = ["ctx"] if row["db_id"] in gamma_checked else ["ctx", "gamma"]
        gamma_checked.add(row["db_id"])
        for rung in rungs:
            compiled = choice.compiled if rung == "ctx" else _compiled(hole, rung, byte_engine)
            assert accepts(compiled, hole.typed)
            for mutated in _mutations(query):
                replayed = analyzer("sql").replay_text(mutated + " ")
                if accepts(compiled, replayed):
                    wrong.append(f"{rung} accepts a ghost: {mutated}")
                negatives += 1
    assert not wrong, "\n".join(wrong[:20])
    assert positives == len(rows) and negatives > 200


@pytest.mark.parametrize("db_id", ["concert_singer", "college_3", "voter_1"])
def test_compiled_ctx_grammar_is_cached_by_text(corpus, db_id):
    row = next(r for r in _questions(corpus) if r["db_id"] == db_id)
    first = _hole(corpus, row, "-- q\nSELECT ")
    second = _hole(corpus, row, "-- q\nSELECT ")
    a = fragments.instantiate(fragments.fragment("sql", "statement"), "ctx", first.gamma, first.context)
    b = fragments.instantiate(fragments.fragment("sql", "statement"), "ctx", second.gamma, second.context)
    assert a.text == b.text
