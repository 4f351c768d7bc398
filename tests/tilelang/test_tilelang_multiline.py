"""Multi-statement suggestions at the start of a GEMM kernel body (only the tensor
parameters exist): each statement's declarations enter Γ before the next one is
decoded, blocks push and pop frames, and the result passes the independent checker."""

from __future__ import annotations

import re

import pytest
from tl_helpers import GEMM_HEAD, GEMM_TAIL, TILELANG, snapshot
from tl_refs import free_names
from tl_scripted import NoisyBackend, ScriptedBackend

from gdg_lsp.decoding.engine import NATURAL_STOPS
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase
from gdg_lsp.languages.tilelang import bench as plugin
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import from_json

SCRIPT = """with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])
"""


def _case(text: str, cursor: int) -> HoleCase:
    return HoleCase("gemm-start", "tilelang", "file:///gemm.py", text, cursor, "",
                    {"corpus": str(TILELANG.parent), "category": "multi"})


def _complete(backend, script_lines: int, constraint: str = "scope"):
    text = GEMM_HEAD + GEMM_TAIL
    cursor = len(GEMM_HEAD)
    settings, problems = from_json({"constraint": constraint, "maxLines": script_lines, "maxTokens": 1024,
                                    "timeoutMs": 120000})
    assert not problems
    service = CompletionService(backend, WorkspaceContext())
    suggestion = service.complete(snapshot(text), cursor, settings)
    return suggestion, _case(text, cursor)


def test_scripted_gemm_body_grows_gamma_statement_by_statement(tiny_tl_vocab):
    suggestion, case = _complete(ScriptedBackend(tiny_tl_vocab, SCRIPT), 12)
    assert suggestion.text.strip() == SCRIPT.strip(), suggestion.execution.statements[-1]
    traces = suggestion.execution.statements
    assert len(traces) >= 10
    assert all(t.rung in ("ctx", "gamma", "pin") for t in traces)
    declared = [name for t in traces for name in t.declared]
    assert declared[:3] == ["A_shared", "B_shared", "C_local"]
    # Γ grew by one buffer per allocation, each before the statement that uses it
    sizes = [t.gamma_size for t in traces]
    assert sizes[2] == sizes[1] + 1 and sizes[3] == sizes[2] + 1 and sizes[4] == sizes[3] + 1
    first_use = {name: next(i for i, t in enumerate(traces) if re.search(rf"\b{name}\b", t.text) and name not in t.declared)
                 for name in ("A_shared", "B_shared", "C_local")}
    for name, use in first_use.items():
        assert any(name in t.declared for t in traces[:use])
    # the loop opened a frame (k) and the last line left it: k is gone there
    written = [t for t in traces if t.text.strip()]
    assert written[-1].text.strip().startswith("T.copy(C_local")
    assert any(t.declared == [] and "k" not in t.declared for t in written[5:9])
    verdict = plugin.check(case, suggestion.text)
    assert verdict.parsed and verdict.ghosts == [], verdict


def test_a_buffer_cannot_be_used_before_it_is_allocated(tiny_tl_vocab):
    # the script copies into B_shared before allocating it: the grammar of that
    # line has no B_shared, so the model cannot write it there
    script = SCRIPT.replace(
        "            B_shared = T.alloc_shared((block_K, block_N), dtype)\n", "").replace(
        "            T.clear(C_local)\n",
        "            T.clear(C_local)\n            T.copy(B[0, 0], B_shared)\n"
        "            B_shared = T.alloc_shared((block_K, block_N), dtype)\n")
    suggestion, case = _complete(ScriptedBackend(tiny_tl_vocab, script), 12)
    lines = suggestion.text.split("\n")
    copy_line = next((i for i, line in enumerate(lines) if line.strip().startswith("T.copy(B[0, 0]")), None)
    alloc_line = next((i for i, line in enumerate(lines) if line.strip().startswith("B_shared =")), None)
    assert copy_line is None or "B_shared" not in lines[copy_line]
    if alloc_line is not None and copy_line is not None:
        assert alloc_line > copy_line
    assert plugin.check(case, suggestion.text).ghosts == []


def test_unconstrained_scripted_model_does_write_the_ghost(tiny_tl_vocab):
    # the same script without the grammar: the early use of B_shared is written (control)
    script = SCRIPT.replace("            T.clear(C_local)\n", "            T.clear(C_local)\n            T.copy(B[0, 0], B_ghost)\n")
    suggestion, case = _complete(ScriptedBackend(tiny_tl_vocab, script), 12, constraint="none")
    assert "B_ghost" in plugin.check(case, suggestion.text).ghosts


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_model_multiline_has_no_ghost(tiny_tl_vocab, seed):
    from gdg_lsp.backends.models import random_backend

    suggestion, case = _complete(NoisyBackend(random_backend(tiny_tl_vocab, seed=seed), seed), 4)
    assert plugin.check(case, suggestion.text).ghosts == []
    assert_statements_only_name_gamma(suggestion)


def assert_statements_only_name_gamma(suggestion):
    """Each statement references only what Γ had at the hole plus what earlier
    statements (or itself) declared: Γ grows statement by statement, never ahead."""
    gamma = suggestion.hole.gamma
    known = set(gamma.visible())
    written = 0
    for trace in suggestion.execution.statements:
        assert trace.rung is None or trace.rung != "base"
        if not trace.text.strip():
            continue
        written += 1
        if trace.stop_reason not in NATURAL_STOPS:
            continue  # a statement cut by the budget is a prefix: its targets are not finished
        for name in free_names(trace.text):
            assert name in known or name in trace.declared, (name, trace.text, suggestion.text)
        known |= set(trace.declared)
    return written


@pytest.mark.slow
def test_real_model_multiline_at_gemm_start(real_tl_backend):
    suggestion, case = _complete(real_tl_backend, 8)
    verdict = plugin.check(case, suggestion.text)
    assert verdict.ghosts == [], (suggestion.text, verdict)
    assert assert_statements_only_name_gamma(suggestion) >= 1


def test_a_per_operation_hole_continues_with_whole_line_statements(tiny_tl_vocab):
    body = ("with T.Kernel(1, threads=128) as bx:\n"
            "            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)\n"
            "            T.clear(")
    text = GEMM_HEAD + body + "\n" + GEMM_TAIL
    script = "T.clear(C_local)\n            T.copy(C_local, C[0, 0])\n"
    settings, _ = from_json({"constraint": "scope", "maxLines": 2, "maxTokens": 200, "timeoutMs": 60000})
    service = CompletionService(ScriptedBackend(tiny_tl_vocab, script), WorkspaceContext())
    suggestion = service.complete(snapshot(text), len(GEMM_HEAD + body), settings)
    traces = suggestion.execution.statements
    assert [t.fragment for t in traces[:2]] == ["clear", "statement"]
    assert suggestion.text.split("\n")[1].strip() == "T.copy(C_local, C[0, 0])"
