"""Shared helpers of the TileLang tests (a module of its own: tests/conftest.py is the suite's)."""

from __future__ import annotations

import os
from pathlib import Path

CORPUS = Path(os.environ.get("GDG_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus"))
if not (CORPUS / "tilelang").is_dir():
    CORPUS = Path("/work/shared/corpus")
TILELANG = CORPUS / "tilelang"

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


def snapshot(text: str, uri: str = "file:///kernel.py"):
    from gdg_lsp.documents import Document
    from gdg_lsp.languages.python.analyzer import parse

    return Document(uri, "python", 0, text, parse).snapshot()


def hole_at_line(analyzer, text: str, line: int, uri: str = "file:///kernel.py"):
    """The hole at the end of (0-based) ``line``."""
    from gdg_lsp.languages.base import WorkspaceContext

    lines = text.split("\n")
    offset = sum(len(x) + 1 for x in lines[:line]) + len(lines[line])
    return analyzer.hole_at(snapshot(text, uri), offset, WorkspaceContext())
