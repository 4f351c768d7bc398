"""The real default model through the service: a suggestion at a hole of a real
file is non-empty and ghost-free (judged by pyflakes, not by gdg-lsp's Γ)."""

from __future__ import annotations

import pytest

from gdg_lsp.documents import Document
from gdg_lsp.languages.python import bench as python_bench
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings

pytestmark = pytest.mark.slow


def test_real_model_suggestions_are_ghost_free(real_backend, corpus):
    service = CompletionService(real_backend)
    cases = python_bench.cut_holes(corpus, 6, seed=3)
    made = 0
    for case in cases:
        doc = Document(case.uri, "python", 1, case.text, parse)
        suggestion = service.complete(doc.snapshot(), case.cursor, Settings(max_tokens=40, timeout_ms=60000))
        assert suggestion.rung == "gamma", suggestion.reason
        verdict = python_bench.check(case, suggestion.text)
        assert verdict.ghosts == [], (case.case_id, suggestion.text)
        made += bool(suggestion.text.strip())
    assert made >= 4, f"only {made} of {len(cases)} holes got a suggestion"


def test_a_half_typed_name_completes_to_a_name_in_gamma(real_backend):
    """The typed 'resu' is replayed into the grammar and healed: the only way on is a
    name of Γ that starts with it."""
    code = "import os\n\ndef total(values):\n    result = 0\n    for v in values:\n        result += v\n    return resu"
    doc = Document("file:///t.py", "python", 1, code, parse)
    service = CompletionService(real_backend)
    scope = service.complete(doc.snapshot(), len(code), Settings(max_tokens=8, timeout_ms=60000))
    assert scope.rung == "gamma"
    assert ("resu" + scope.text).split()[0].rstrip("(),:") in {"result"}
