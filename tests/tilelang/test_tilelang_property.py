"""Property: for any Γ (random buffer names and memory spaces) and any model weights,
a scope-constrained suggestion names nothing outside Γ, uses only API members, and
keeps the gemm accumulator a fragment (the ctx rung's role)."""

from __future__ import annotations

import keyword
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tl_helpers import GEMM_HEAD, GEMM_TAIL, TILELANG, snapshot
from tl_refs import free_names
from tl_scripted import NoisyBackend

from gdg_lsp.decoding.engine import NATURAL_STOPS
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase
from gdg_lsp.languages.tilelang import bench as plugin
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import from_json

RESERVED = set(keyword.kwlist) | set(dir(__builtins__)) | {"T", "A", "B", "C", "M", "N", "K", "bx", "dtype",
                                                          "accum_dtype", "tilelang", "matmul", "main"}
names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: n not in RESERVED)
allocators = st.sampled_from(["alloc_shared", "alloc_fragment", "alloc_local"])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(buffers=st.dictionaries(names, allocators, min_size=1, max_size=5), seed=st.integers(0, 2**16))
def test_random_gamma_random_model_no_ghost(tiny_tl_vocab, engine_name, buffers, seed):
    from gdg_lsp.backends.models import random_backend

    body = "with T.Kernel(1, threads=128) as bx:\n"
    for name, alloc in buffers.items():
        body += f"            {name} = T.{alloc}((16, 16), dtype)\n"
    body += "            "
    text = GEMM_HEAD + body + GEMM_TAIL
    cursor = len(GEMM_HEAD + body)
    config, _ = from_json({"constraint": "scope", "maxLines": 2, "maxTokens": 80, "timeoutMs": 60000,
                           "grammarEngine": engine_name})
    service = CompletionService(NoisyBackend(random_backend(tiny_tl_vocab, seed=seed % 7), seed), WorkspaceContext())
    suggestion = service.complete(snapshot(text), cursor, config)
    case = HoleCase("prop", "tilelang", "file:///p.py", text, cursor, "", {"corpus": str(TILELANG.parent)})
    verdict = plugin.check(case, suggestion.text)
    assert verdict.ghosts == [], (suggestion.text, verdict)
    known = set(suggestion.hole.gamma.visible())
    for trace in suggestion.execution.statements:
        if trace.stop_reason not in NATURAL_STOPS:
            continue  # a statement cut by the budget is a prefix: its targets are not finished
        for name in free_names(trace.text):
            assert name in known or name in trace.declared, (name, suggestion.text)
        known |= set(trace.declared)
    fragments = {n for n, a in buffers.items() if a == "alloc_fragment"}
    for m in re.finditer(r"T\.gemm\(([^,]+),([^,]+),\s*(\w+)", suggestion.text):
        assert m.group(3) in fragments, suggestion.text
