"""Context for TileLang prompts: the declarations of the buffers used around the hole that
lie beyond the lines the prompt surely shows, stable while the user types in the hole."""

from __future__ import annotations

import attrs
from tl_helpers import GEMM_HEAD, GEMM_TAIL, snapshot

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.tilelang import context as tile_context
from gdg_lsp.settings import Settings

FILLER = "".join(f"            acc_{i} = {i}\n" for i in range(tile_context.NEAR_LINES + 5))
BODY = (
    "with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):\n"
    "            A_shared = T.alloc_shared((block_M, block_K), dtype)\n"
    "            B_shared = T.alloc_shared((block_K, block_N), dtype)\n"
    "            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)\n"
    + FILLER +
    "            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):\n"
    "                T.copy(A[by * block_M, k * block_K], A_shared)\n"
    "                T.gemm(A_shared, B_shared, C_local)\n"
    "            T.copy(C_local, C[by * block_M, bx * block_N])\n"
)


def _context(analyzer, text: str, cursor: int, settings: Settings | None = None) -> str:
    snap = snapshot(text)
    workspace = WorkspaceContext(settings=settings or Settings())
    hole = analyzer.hole_at(snap, cursor, workspace)
    return analyzer.prompt_context(snap, hole, workspace)


def _holed(typed: str) -> tuple[str, int]:
    """The kernel with a hole before its last T.copy line, ``typed`` already on it."""
    text = GEMM_HEAD + BODY + GEMM_TAIL
    at = text.index("            T.copy(C_local")
    line = "            " + typed + "\n"
    return text[:at] + line + text[at:], at + len(line) - 1


def test_far_declarations_of_buffers_used_around_the_hole_are_shown(tl_analyzer):
    text, cursor = _holed("")
    block = _context(tl_analyzer, text, cursor)
    assert block.startswith(tile_context.HEADER)
    shown = block[len(tile_context.HEADER):].splitlines()
    # used on the lines around the hole, declared far above it: in declaration order
    assert shown == ["# A: T.Tensor((M, K), dtype),", "# C: T.Tensor((M, N), dtype),",
                     "# A_shared = T.alloc_shared((block_M, block_K), dtype)",
                     "# B_shared = T.alloc_shared((block_K, block_N), dtype)",
                     "# C_local = T.alloc_fragment((block_M, block_N), accum_dtype)"]
    # B (a parameter) is used nowhere near the hole: not shown
    assert "# B:" not in block


def test_near_declarations_are_not_repeated(tl_analyzer):
    text = GEMM_HEAD + BODY.replace(FILLER, "") + GEMM_TAIL
    at = text.index("            T.copy(C_local")
    assert _context(tl_analyzer, text[:at] + "            \n" + text[at:], at + 12) == ""


def test_the_block_does_not_change_while_typing_in_the_hole(tl_analyzer):
    # typing a name of another far buffer on the hole's line does not bring it in: the
    # prompt's start stays the same for every keystroke of the line (KV cache reused)
    texts = [_holed(typed) for typed in ("", "T.", "T.copy(B_shared", "T.copy(B_shared, C_local)")]
    blocks = {_context(tl_analyzer, text, cursor) for text, cursor in texts}
    assert len(blocks) == 1 and blocks.pop()


def test_off_with_definitions_off_and_within_its_budget(tl_analyzer):
    text, cursor = _holed("")
    assert _context(tl_analyzer, text, cursor, attrs.evolve(Settings(), definitions=False)) == ""
    small = _context(tl_analyzer, text, cursor, attrs.evolve(Settings(), context_tokens=64))
    assert len(small) <= int(64 * 3 * 0.25) and small.count("\n") < 6
