"""Fixtures for the P4 tests (helpers live in p4_helpers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4_helpers import P4_CORPUS


@pytest.fixture(scope="session")
def p4_corpus() -> Path:
    assert (P4_CORPUS / "include" / "v1model.p4").is_file(), f"P4 corpus not found at {P4_CORPUS} (set GDG_CORPUS)"
    return P4_CORPUS


@pytest.fixture(scope="session")
def p4():
    from gdg_lsp import languages

    return languages.analyzer("p4")
