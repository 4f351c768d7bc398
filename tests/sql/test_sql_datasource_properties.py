"""The guarantee per data source: under scope, a suggestion names nothing outside the file's own database.

Two random schemas (the hostile identifiers of ``test_sql_properties``) are
written into two folders of one workspace, ``own/`` and ``other/``; a
random-weight model completes a query in ``own/q.sql`` through the whole
pipeline. Checked without the analyzer: SQLite prepares the statement against
``own``'s DDL alone (no "no such table/column"), and every identifier the
suggestion writes is a name ``own`` declares (or a join alias). A name only
``other`` has would fail both, so the union Γ of the old workspace catalog
fails this test whenever the model wanders there.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp.backends import models
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.sql.analyzer import parse
from gdg_lsp.languages.sql.lexer import ident_key
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.sql.test_sql_properties import (
    _SETTINGS,
    PREFIXES,
    RandomLogits,
    check_references,
    ddl,
    schema,
    vocabulary,
)


def complete_in_own_folder(own, other, seed: int, prefix: str, model_for=None) -> tuple[int, int]:
    """(references checked, references the other database alone declares that were offered)."""
    first_table, first_columns, _ = own[0]
    prefix = prefix.format(t=first_table, c=first_columns[0])
    if "\n" in prefix:
        return 0, 0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for name, tables in (("own", own), ("other", other)):
            (root / name).mkdir()
            (root / name / "schema.sql").write_text(ddl(tables), encoding="utf-8")
        oracle = sqlite3.connect(":memory:")
        oracle.executescript(ddl(own))
        config = Settings(constraint="scope", max_tokens=64, timeout_ms=60_000)
        # the vocabulary knows both databases' names as whole tokens: the model is tempted by both
        model = (model_for or (lambda vocab: RandomLogits(vocab, seed)))(vocabulary(own + other))
        service = CompletionService(model, WorkspaceContext([root], config))
        text = "-- question\n" + prefix
        snapshot = Snapshot((root / "own" / "q.sql").as_uri(), "sql", 1, text, parse(text.encode()))
        suggestion = service.complete(snapshot, len(text), config)
        gamma_tables = {ident_key(b.name) for b in suggestion.hole.gamma.bindings("Table")} if suggestion.hole else set()
    foreign = {ident_key(n) for n, _, _ in other} - {ident_key(n) for n, _, _ in own}
    leaked = len(gamma_tables & foreign)
    if not suggestion.text or suggestion.rung == "base":
        return 0, leaked
    return check_references(prefix, suggestion.text, oracle, own), leaked


def test_random_logits_name_nothing_outside_the_files_own_database():
    references: list[int] = []
    leaked: list[int] = []

    @settings(max_examples=60, **_SETTINGS)
    @given(own=schema(), other=schema(), seed=st.integers(0, 1000), prefix=st.sampled_from(PREFIXES))
    def check(own, other, seed, prefix):
        made, foreign = complete_in_own_folder(own, other, seed, prefix)
        references.append(made)
        leaked.append(foreign)

    check()
    assert sum(leaked) == 0  # Γ never held a table only the other database has
    assert sum(references) >= 15, references  # not vacuous: many references, each checked


def test_random_weight_model_names_nothing_outside_the_files_own_database():
    leaked: list[int] = []

    @settings(max_examples=8, **_SETTINGS)
    @given(own=schema(), other=schema(), seed=st.integers(0, 1000), prefix=st.sampled_from(PREFIXES))
    def check(own, other, seed, prefix):
        leaked.append(complete_in_own_folder(
            own, other, seed, prefix, lambda vocab: models.random_backend(vocab, seed=seed, hidden=32, layers=1))[1])

    check()
    assert len(leaked) == 8 and sum(leaked) == 0
