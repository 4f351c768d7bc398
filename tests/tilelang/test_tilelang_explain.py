"""An empty slot query climbs the ladder, and explain says where and why."""

from __future__ import annotations

from tl_helpers import GEMM_HEAD, GEMM_TAIL, snapshot

from gdg_lsp.explain import explain_hole
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.settings import Settings


def test_gemm_without_a_fragment_buffer_climbs_to_gamma_and_says_why():
    body = """with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((16, 16), dtype)
            T.gemm("""
    text = GEMM_HEAD + body + "\n" + GEMM_TAIL
    report = explain_hole(snapshot(text), len(GEMM_HEAD + body), Settings(), WorkspaceContext())
    assert report["hole"]["fragment"] == "gemm"
    attempts = report["choice"]["attempts"]
    assert [a["rung"] for a in attempts] == ["pin", "ctx", "gamma"]
    assert attempts[0]["outcome"] == "empty-slot" and "gemm_acc" in attempts[0]["detail"]
    assert attempts[1]["outcome"] == "empty-slot" and "gemm_acc" in attempts[1]["detail"]
    assert attempts[2]["outcome"] == "chosen" and report["choice"]["guaranteed"]
    assert "ctx: empty-slot" in report["text"]


def test_typed_role_violation_climbs_from_ctx():
    body = """with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((16, 16), dtype)
            F = T.alloc_fragment((16, 16), accum_dtype)
            T.gemm(S, S, S"""
    text = GEMM_HEAD + body + "\n" + GEMM_TAIL
    report = explain_hole(snapshot(text), len(GEMM_HEAD + body), Settings(), WorkspaceContext())
    outcomes = {a["rung"]: a["outcome"] for a in report["choice"]["attempts"]}
    assert outcomes["ctx"] == "rejects-typed-text" and outcomes["gamma"] == "chosen"
