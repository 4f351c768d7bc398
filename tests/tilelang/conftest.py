"""Fixtures for the TileLang tests: the corpus, the analyzer, compiled grammars, vocabularies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tl_helpers, tl_scripted, tl_refs

from tl_helpers import CORPUS, TILELANG  # noqa: E402


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


@pytest.fixture(scope="session")
def tiny_tl_vocab():
    """Printable ASCII one character a token, plus a few TileLang words (for random models)."""
    import string

    from gdg_lsp.vocab import ListVocabulary

    words = ["T.", "T.copy", "T.gemm", "T.clear", "T.fill", "T.alloc_shared", "T.alloc_fragment", "T.Kernel",
             "T.Pipelined", "T.Parallel", "A_shared", "B_shared", "C_local", "block_M", "block_N", "block_K",
             " = ", ", ", "(", "):", "\n", "\n    ", "\n        ", "\n            ", "    ", "dtype", "accum_dtype",
             "with ", " as ", "for ", " in "]
    chars = [c for c in string.printable if c not in "\r\x0b\x0c"]
    return ListVocabulary(list(dict.fromkeys(chars + words)))


@pytest.fixture(scope="session")
def real_tl_backend():
    from gdg_lsp.backends import models

    return models.load(models.resolve("default"), "cpu")
