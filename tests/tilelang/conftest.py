"""Fixtures for the TileLang tests: the corpus, documents, holes and compiled grammars."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS = Path(os.environ.get("GDG_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))
if not (CORPUS / "tilelang").is_dir():
    CORPUS = Path("/work/shared/corpus")
TILELANG = CORPUS / "tilelang"


@pytest.fixture(scope="session")
def tl_corpus() -> Path:
    assert TILELANG.is_dir(), f"TileLang corpus not found at {TILELANG} (set GDG_CORPUS)"
    return CORPUS


@pytest.fixture(scope="session")
def tl_analyzer():
    from gdg_lsp import languages

    return languages.analyzer("tilelang")


@pytest.fixture(scope="session")
def tl_bytes():
    from gdg_lsp.explain import byte_grammars

    return byte_grammars()


def snapshot(text: str, uri: str = "file:///kernel.py"):
    from gdg_lsp.documents import Document
    from gdg_lsp.languages.python import parse

    return Document(uri, "python", 0, text, parse).snapshot()


def hole_at_line(analyzer, text: str, line: int, uri: str = "file:///kernel.py"):
    """The hole at the end of (0-based) ``line``."""
    from gdg_lsp.languages.base import WorkspaceContext

    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[:line]) + len(lines[line])
    return analyzer.hole_at(snapshot(text, uri), offset, WorkspaceContext())
