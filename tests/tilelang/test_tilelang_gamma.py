"""Γ inside TileLang kernels, read from real corpus kernels, and the language's API surface."""

from __future__ import annotations

from tl_helpers import GEMM_HEAD, GEMM_TAIL, hole_at_line, snapshot

from gdg_lsp import languages
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.tilelang.api import load, resolve, versions
from gdg_lsp.settings import from_json


def _hole(analyzer, path, line_no):
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    line = lines[line_no - 1]
    indent = line[: len(line) - len(line.lstrip())]
    doc = "\n".join(lines[: line_no - 1] + [indent] + lines[line_no:])
    return hole_at_line(analyzer, doc, line_no - 1, path.as_uri())


def test_python_files_that_import_tilelang_are_tilelang():
    assert languages.resolve_language("python", "import tilelang.language as T\n") == "tilelang"
    assert languages.resolve_language("python", "from tilelang import language as T\n") == "tilelang"
    assert languages.resolve_language("python", "import os\n# import tilelang\n") == "python"
    assert languages.resolve_language("tilelang", "x = 1\n") == "tilelang"


def test_gemm_kernel_gamma(tl_corpus, tl_analyzer):
    path = tl_corpus / "tilelang/examples/gemm/example_gemm_autotune_pass_configs.py"
    hole = _hole(tl_analyzer, path, 148)  # T.gemm(...) inside the Pipelined loop of matmul_decorator
    g = hole.gamma
    buffers = {b.name: dict(b.attrs) for b in g.bindings("Buffer")}
    assert set(buffers) == {"A", "B", "C", "A_shared", "B_shared", "C_local"}
    assert buffers["A"]["mem"] == "global" and buffers["A"]["shape"] == "(M, K)" and buffers["A"]["dtype"] == "dtype"
    assert buffers["A_shared"]["mem"] == "shared" and buffers["A_shared"]["shape"] == "(block_M, block_K)"
    assert buffers["C_local"]["mem"] == "fragment" and buffers["C_local"]["dtype"] == "accum_dtype"
    idx = {b.name: dict(b.attrs) for b in g.bindings("BlockIdx")}
    assert idx["bx"]["extent"] == "T.ceildiv(N, block_N)" and idx["bx"]["threads"] == "thread_num"
    assert idx["by"]["axis"] == 1
    loops = {b.name: dict(b.attrs) for b in g.bindings("LoopVar")}
    assert loops == {"k": loops["k"]} and loops["k"]["loop"] == "Pipelined"
    # closure variables of the enclosing factory, and T as the module (not a value)
    assert {"block_M", "block_K", "dtype", "accum_dtype", "num_stages"} <= set(g.names())
    assert g.names("TileLangModule") == ["T"]
    assert "T.gemm" in g.names("ApiMember") and "T.block" not in g.names("ApiMember")
    assert hole.fragment == "statement" and hole.context["mem_gemm_C"] == ["fragment"]
    assert hole.context["gemm_acc_pin"] == ["C_local"]  # cleared before the loop


def test_loop_variable_is_gone_after_its_loop(tl_corpus, tl_analyzer):
    path = tl_corpus / "tilelang/examples/gemm/example_gemm_autotune_pass_configs.py"
    hole = _hole(tl_analyzer, path, 149)  # T.copy(C_local, C[...]) after the loop
    assert "k" not in hole.gamma.names("LoopVar") and "k" not in hole.gamma
    assert "C_local" in hole.gamma.names("Buffer", mem="fragment")


def test_parallel_loop_vars_and_elementwise_context(tl_corpus, tl_analyzer):
    path = tl_corpus / "tilelang/examples/elementwise/example_elementwise_add.py"
    text = path.read_text(encoding="utf-8").split("\n")
    line_no = next(i + 1 for i, line in enumerate(text) if "C_local[" in line and "=" in line)
    hole = _hole(tl_analyzer, path, line_no)
    loop_vars = hole.gamma.bindings("LoopVar")
    assert [b.attrs["loop"] for b in loop_vars] == ["Parallel"] * len(loop_vars) and len(loop_vars) == 2
    assert 1 not in hole.context["parallel_ranks"] and 2 in hole.context["parallel_ranks"]


def test_macro_parameters_are_buffers(tl_corpus, tl_analyzer):
    path = tl_corpus / "tilelang/examples/minference/example_vertical_slash_sparse_attn.py"
    text = path.read_text(encoding="utf-8").split("\n")
    macro = next(i for i, line in enumerate(text) if line.strip() == "@T.macro")
    body = next(i for i in range(macro, len(text)) if text[i].strip().startswith("T.")) + 1
    hole = _hole(tl_analyzer, path, body)
    shared = hole.gamma.names("Buffer", mem="shared")
    assert "K_shared" in shared and "V_shared" in shared


def test_every_tile_operand_in_the_corpus_is_a_buffer_in_gamma(tl_corpus, tl_analyzer):
    """On sampled T.copy/T.gemm/T.fill/T.clear/reduce lines, each bare-name operand is a Buffer."""
    import re

    from gdg_lsp.languages.tilelang import bench as plugin

    seen = 0
    for path in plugin.corpus_files(tl_corpus)[::3]:
        text = path.read_text(encoding="utf-8")
        for index, line, kind in plugin.kernel_lines(text)[::4]:
            if kind not in ("copy", "gemm", "clear", "reduce"):
                continue
            hole = _hole(tl_analyzer, path, index + 1)
            args = re.match(r"\s*T\.\w+\((.*)\)\s*$", line).group(1)
            depth, current, parts = 0, "", []
            for ch in args:
                depth += ch in "([{"
                depth -= ch in ")]}"
                if ch == "," and depth == 0:
                    parts.append(current)
                    current = ""
                else:
                    current += ch
            parts.append(current)
            count = {"copy": 2, "gemm": 3, "clear": 1, "reduce": 2}[kind]
            for part in parts[:count]:
                base = re.match(r"\s*([A-Za-z_]\w*)", part)
                if base and "=" not in part:
                    assert base.group(1) in hole.gamma.names("Buffer"), (path.name, index + 1, part)
                    seen += 1
    assert seen >= 20


def test_surface_versions_and_setting():
    assert versions()[-1] == "0.1.15" and "0.1.8" in versions()
    assert load("latest").version == "0.1.15"
    old = load("0.1.8")
    assert "block" in old.members and "block" not in load().members
    surface, problem = resolve("9.9.9")
    assert surface.version == "0.1.15" and "9.9.9" in problem
    assert load().role_mems("gemm", "C") == ["fragment"]
    assert set(load().role_mems("gemm", "A")) == {"shared", "fragment"}
    assert load().mem_of_allocator("alloc_fragment") == "fragment"
    assert load().mem_of_annotation("SharedBuffer") == "shared"


def test_surface_matches_the_corpus_name_list(tl_corpus):
    listed = {line.strip() for line in (tl_corpus / "tilelang/T_API_NAMES.wheel-0.1.15.txt").read_text().splitlines() if line.strip()}
    assert set(load("0.1.15").members) == listed and len(listed) == 713


def test_version_setting_changes_the_surface(tl_analyzer):
    text = GEMM_HEAD + "with T.Kernel(1, threads=128) as bx:\n            \n" + GEMM_TAIL
    line = text.split("\n").index("            ")
    offset = sum(len(x) + 1 for x in text.split("\n")[:line]) + 12
    settings, _ = from_json({"tilelang": {"version": "0.1.8"}})
    hole = tl_analyzer.hole_at(snapshot(text), offset, WorkspaceContext(settings=settings))
    assert "T.block" in hole.gamma.names("ApiMember")
    hole = tl_analyzer.hole_at(snapshot(text), offset, WorkspaceContext())
    assert "T.block" not in hole.gamma.names("ApiMember")


def test_diagnostics(tl_analyzer):
    body = """with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((16, 16), dtype)
            F = T.alloc_fragment((16, 16), accum_dtype)
            for k in T.Pipelined(4):
                T.copy(A[0, k * 16], S)
            T.gemm(S, S, S)
            T.block_sync(k)
            T.copy(S, undefined_buf)
"""
    findings = tl_analyzer.diagnostics(snapshot(GEMM_HEAD + body + GEMM_TAIL), WorkspaceContext())
    codes = {(f.code, (f.data or {}).get("name") or (f.data or {}).get("parameter")) for f in findings}
    assert ("tilelang-unknown-member", "block_sync") in codes
    assert ("tilelang-out-of-scope", "k") in codes
    assert ("tilelang-role", "C") in codes  # a shared buffer as the gemm accumulator
    assert ("undefined-name", "undefined_buf") in codes
    assert not any(f.code == "tilelang-role" and f.data["parameter"] in ("A", "B") for f in findings)


def test_trim_partial_never_ends_inside_a_member(tl_analyzer):
    from gdg_lsp.gamma import Binding, Gamma

    gamma = Gamma([Binding("T.copy", "ApiMember", {"member": "copy"})],
                  [__import__("gdg_lsp.gamma", fromlist=["Frame"]).Frame("k", [Binding("T", "TileLangModule"), Binding("tn", "LoopVar")])])
    assert tl_analyzer.trim_partial("x = T.co", gamma) == "x ="
    assert tl_analyzer.trim_partial("x = tn.", gamma) == "x ="
    assert tl_analyzer.trim_partial("T.copy", gamma) == "T.copy"
