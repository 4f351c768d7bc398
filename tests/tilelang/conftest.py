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


GEMM_HEAD = '''import tilelang
import tilelang.language as T


def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        '''
GEMM_TAIL = '''

    return main
'''


@pytest.fixture(scope="session")
def tiny_tl_vocab():
    """Printable ASCII one character a token, plus a few TileLang words (for random models)."""
    import string

    from gdg_lsp.decoding.vocab import ListVocabulary

    words = ["T.", "T.copy", "T.gemm", "T.clear", "T.fill", "T.alloc_shared", "T.alloc_fragment", "T.Kernel",
             "T.Pipelined", "T.Parallel", "A_shared", "B_shared", "C_local", "block_M", "block_N", "block_K",
             " = ", ", ", "(", "):", "\n", "\n    ", "\n        ", "\n            ", "    ", "dtype", "accum_dtype",
             "with ", " as ", "for ", " in "]
    chars = [c for c in string.printable if c not in "\r\x0b\x0c"]
    return ListVocabulary(list(dict.fromkeys(chars + words)))


@pytest.fixture(scope="session")
def real_tl_backend():
    from gdg_lsp.decoding import models

    return models.load(models.resolve("default"), "cpu")
