"""The real default model on corpus holes (slow: a few model calls)."""

from __future__ import annotations

import pytest
from p4_helpers import workspace

from gdg_lsp.documents import Document
from gdg_lsp.languages.p4 import bench
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import P4Settings, Settings


@pytest.mark.slow
def test_scope_completions_on_corpus_holes_name_only_declared_things(p4, p4_corpus, real_backend):
    cases = bench.cut_holes(p4_corpus, 3, seed=1)
    include = cases[0].meta["include_paths"]
    service = CompletionService(real_backend, workspace(include))
    settings = Settings(constraint="scope", max_tokens=32, timeout_ms=60_000, p4=P4Settings(include_paths=include))
    produced = 0
    for case in cases:
        snapshot = Document(case.uri, "p4", 0, case.text, p4.parser()).snapshot()
        suggestion = service.complete(snapshot, case.cursor, settings)
        assert suggestion.rung in ("ctx", "gamma"), (case.case_id, suggestion.reason)
        assert bench.check(case, suggestion.text).ghosts == [], (case.case_id, suggestion.text)
        produced += bool(suggestion.text.strip())
    assert produced >= 2
