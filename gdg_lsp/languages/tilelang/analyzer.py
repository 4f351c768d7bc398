"""TileLang: Python files that import tilelang, with kernel-aware Γ.

Everything Python's analyzer does holds (the hole is the logical line, Γ comes
from the document with that line blanked out), and on top of it:

- Γ's global layer holds the API surface of the configured TileLang version
  (sort ``ApiMember``: what may follow ``T.``), and the names bound to
  ``tilelang.language`` get the sort ``TileLangModule`` (they are not values);
- inside a kernel (see ``tilelang_kernels``) the kernel function's Python frame
  is replaced by the kernel's own frames: buffers with ``mem``/``shape``/``dtype``,
  block indices, loop variables, scalars, each visible where TVMScript says;
- the hole's fragment follows the text typed on the line (``T.gemm(`` picks the
  gemm fragment), and its context carries what the ctx and pin rungs read:
  the operand memory spaces of the API's roles, the shape classes of
  whole-buffer copies, the ranks an element-wise store may have in the
  innermost ``T.Parallel``, and the accumulator to pin.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from gdg_lsp.documents import Snapshot
from gdg_lsp.gamma import Binding, Frame, Gamma
from gdg_lsp.languages.base import (
    Finding,
    Hole,
    NoHole,
    StatementEffects,
    WorkspaceContext,
)
from gdg_lsp.languages.python.analyzer import (
    DEFINITIONS_SHARE,
    HEADER_WORD,
    PythonAnalyzer,
    _Analysis,
    parse,
)
from gdg_lsp.languages.tilelang import context as tile_prompt_context
from gdg_lsp.languages.tilelang import kernels
from gdg_lsp.languages.tilelang.api import Surface, resolve

COPY_CLASSES = 6
"""Whole-buffer copy shape classes the grammar has rules for (statement.ebnf)."""

OPERATION_FRAGMENTS = {"copy": "copy", "gemm": "gemm", "fill": "fill", "clear": "clear", "reduce": "reduce",
                       "atomic": "atomic"}


def tile_modules(gamma: Gamma) -> set[str]:
    return set(gamma.names("TileLangModule"))


class TileLangAnalyzer(PythonAnalyzer):
    name = "tilelang"
    grammar_dir = "tilelang"
    fragment = "statement"
    parse_functions_alone = False  # kernels are found from the whole tree (decorators, `with T.Kernel`)
    member_surfaces = False  # the `T.*` API surface is TileLang's own (tilelang/api.py)

    def __init__(self, incremental: bool = True) -> None:
        super().__init__(incremental)
        self._local = threading.local()

    # -- the API surface ----------------------------------------------------------

    def surface(self, workspace: WorkspaceContext | None) -> tuple[Surface, str | None]:
        settings = getattr(workspace, "settings", None)
        version = getattr(getattr(settings, "tilelang", None), "version", None)
        return resolve(version)

    # -- Γ ---------------------------------------------------------------------------

    def _gamma(self, analysis: _Analysis, offset: int, uri: str) -> Gamma:
        python = super()._gamma(analysis, offset, uri)
        surface = getattr(self._local, "surface", None) or resolve(None)[0]
        return self.tile_gamma(python, analysis, analysis.byte(offset), uri, surface)

    def tile_gamma(self, python: Gamma, analysis: _Analysis, pos: int, uri: str, surface: Surface) -> Gamma:
        frames = [Frame(f.kind, [self._retag(b) for b in f]) for f in python.frames]
        tmods = {b.name for f in frames for b in f if b.sort == "TileLangModule"}
        global_layer = Frame("builtins+tilelang", [*python.global_layer, *surface.bindings(tmods)])
        kernel_fn = kernels.kernel_at(analysis.tree.root_node, pos, tmods) if tmods else None
        self._local.kernel = None
        if kernel_fn is None:
            return Gamma(global_layer, frames)
        kernel = kernels.KernelReader(surface, tmods, analysis.scope_tree.source, uri).read(kernel_fn)
        self._local.kernel = (kernel, pos)
        # the kernel function's Python frame is replaced by the kernel's own frames
        name = kernel.name
        if frames and frames[-1].kind == f"function {name}":
            frames = frames[:-1]
        kernel_frames = kernels.frames_at(kernel, pos)
        return Gamma(global_layer, (frames + kernel_frames)[-32:])

    @staticmethod
    def _retag(binding: Binding) -> Binding:
        attrs = binding.attrs
        module = attrs.get("module")
        if (binding.sort == "Module" and module == "tilelang.language") or (
            binding.sort == "Import" and module == "tilelang" and attrs.get("imported") == "language"
        ):
            return Binding(binding.name, "TileLangModule", attrs, binding.origin)
        return binding

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        self._local.surface = self.surface(workspace)[0]
        return super().gamma_at(snapshot, offset, workspace)

    # -- the hole -----------------------------------------------------------------------

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        surface, _ = self.surface(workspace)
        self._local.surface = surface
        self._local.kernel = None
        hole = super().hole_at(snapshot, offset, workspace)
        if isinstance(hole, NoHole):
            return hole
        found = self._local.kernel
        kernel, pos = found if found else (None, 0)
        context = dict(hole.context)
        context.update(self.tile_context(hole.gamma, surface))
        if kernel is not None:
            pins = [n for n in kernels.visible_accumulators(kernel, pos)
                    if (b := hole.gamma.lookup(n)) is not None and b.sort == "Buffer" and b.attrs.get("mem") == "fragment"]
            context["gemm_acc_pin"] = pins if len(pins) == 1 else []
            context["in_kernel"] = True
            context["in_launch"] = any(f.kind == "kernel" for f in hole.gamma.frames)
        else:
            context["gemm_acc_pin"] = []
            context["in_kernel"] = False
            context["in_launch"] = False
        fragment = self.fragment_for(hole.typed, hole.gamma, context)
        path = hole.region_path + ((f"kernel {kernel.name}",) if kernel is not None else ())
        return replace(hole, fragment=fragment, context=MappingProxyType(context), region_path=path)

    def fragment_for(self, typed: str, gamma: Gamma, context: Mapping[str, Any]) -> str:
        """The fragment for the text typed on the line (the whole-line one when it names nothing)."""
        tmods = tile_modules(gamma)
        stripped = typed.lstrip(" \t")
        if tmods:
            t = "|".join(re.escape(m) for m in sorted(tmods))
            m = re.match(rf"((?:{t})\.\w+)\s*\(", stripped)
            if m:
                binding = gamma.global_layer.get(m.group(1))
                family = binding.attrs.get("family") if binding is not None and binding.sort == "ApiMember" else None
                if family in OPERATION_FRAGMENTS:
                    return OPERATION_FRAGMENTS[family]
            m = re.match(rf"[A-Za-z_]\w*\s*=\s*((?:{t})\.\w+)", stripped)
            if m and context.get("in_kernel"):
                binding = gamma.global_layer.get(m.group(1))
                if binding is not None and binding.attrs.get("family") == "alloc":
                    return "alloc"
        if context.get("in_kernel"):
            if re.match(r"for\s", stripped):
                return "loop"
            if re.match(r"with\s", stripped) and not context.get("in_launch"):
                return "launch"
            m = re.match(r"([A-Za-z_]\w*)\s*\[", stripped)
            if m and (b := gamma.lookup(m.group(1))) is not None and b.sort == "Buffer":
                return "elementwise"
        return "statement"

    def tile_context(self, gamma: Gamma, surface: Surface, parallel_axes: int | None = None) -> dict[str, Any]:
        """What the ctx rung reads besides Γ: roles' memory spaces, copy shape classes, ranks."""
        context: dict[str, Any] = {
            "mem_gemm_A": surface.role_mems("gemm", "A"),
            "mem_gemm_C": surface.role_mems("gemm", "C"),
            "mem_fill_buffer": surface.role_mems("fill", "buffer"),
            "mem_reduce_buffer": surface.role_mems("reduce_max", "buffer"),
            "mem_reduce_out": surface.role_mems("reduce_max", "out"),
            "mem_atomic_dst": surface.role_mems("atomic_add", "dst"),
        }
        # whole-buffer copies: buffers of one literal shape form a class
        classes: dict[str, list[str]] = {}
        for binding in gamma.bindings("Buffer"):
            key = binding.attrs.get("shape_key", "?")
            if key not in ("?", ""):
                classes.setdefault(key, []).append(binding.name)
        ordered = sorted(classes, key=lambda k: (-len(classes[k]), k))
        kept, overflow = ordered[:COPY_CLASSES], ordered[COPY_CLASSES:]
        free = ["?", *overflow]
        context["copy_free"] = free
        for k in range(COPY_CLASSES):
            key = kept[k] if k < len(kept) else "\0none"
            context[f"copy_cls_{k}"] = key
            context[f"copy_dst_{k}"] = [key, *free]
        # element-wise stores inside T.Parallel: the buffer's rank covers the loop's axes
        if parallel_axes is None:
            parallel_axes = 0
            for frame in reversed(gamma.frames):
                axes = [b for b in frame if b.sort == "LoopVar" and b.attrs.get("loop") in ("Parallel", "parallel")]
                if axes:
                    parallel_axes = len(axes)
                    break
        context["parallel_ranks"] = ["?", *range(parallel_axes, kernels.MAX_RANK + 1)]
        return context

    # -- the executor's questions ------------------------------------------------------

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        """Python's (definitions of imported names from other files), then the declaration
        lines of the kernel's buffers used around the hole that the prompt window may not
        reach (``context.py``), each within its share of the budget (``gdg.definitions``)."""
        imported = super().prompt_context(snapshot, hole, workspace)
        if not getattr(workspace.settings, "definitions", True):
            return imported
        tokens = getattr(workspace.settings, "context_tokens", 1024) or 1024
        buffers = tile_prompt_context.buffer_declarations(
            snapshot.text, snapshot.uri, snapshot.version, hole.gamma, hole.region_start, hole.cursor,
            int(tokens * 3 * DEFINITIONS_SHARE))
        return imported + buffers

    def statement_effects(self, statement: str, hole: Hole, gamma: Gamma) -> StatementEffects:
        base = super().statement_effects(statement, hole, gamma)
        tmods = tile_modules(gamma)
        surface = self._surface_of(gamma)
        stripped = statement.strip()
        declarations: list[Binding] = []
        block: list[Binding] = []
        opens = base.opens_block
        parallel_axes = None
        source = stripped + ("\n    pass\n" if stripped.endswith(":") else "\n")
        wrapped = "@T.prim_func\ndef __gdg_kernel__():\n" + "".join("    " + line + "\n" for line in source.splitlines())
        tree = parse(wrapped.encode())
        fn = next((n for n in kernels.find_kernels(tree.root_node, tmods | {"T"})), None) if hole.context.get("in_kernel") else None
        if fn is not None:
            reader = kernels.KernelReader(surface, tmods or {"T"}, wrapped.encode(), None)
            kernel = reader.read(fn)
            for decl in kernel.decls:
                top = decl.block == (kernel.body[0], fn.end_byte + 1)
                (declarations if top else block).append(decl.binding)
            if kernel.blocks:
                word = HEADER_WORD.match(stripped)
                opens = {"for": "loop", "with": "kernel" if any(b.sort == "BlockIdx" for b in block) else "with",
                         "if": "if", "elif": "if", "else": "else", "while": "while", "try": "try",
                         "except": "except", "finally": "finally"}.get(word.group(2) if word else "", opens)
                parallel = [b for b in block if b.sort == "LoopVar" and b.attrs.get("loop") in ("Parallel", "parallel")]
                if parallel:
                    parallel_axes = len(parallel)
            names = {b.name for b in declarations + block}
            declarations += [b for b in base.declarations if b.name not in names]
        else:
            declarations = [self._retag(b) for b in base.declarations]
            block = list(base.block_bindings)
        context = dict(base.context or hole.context)
        grown = gamma.overlay()
        for binding in declarations:
            grown.declare(binding)
        if opens and block:
            grown.push(opens, block)
        context.update(self.tile_context(grown, surface, parallel_axes))
        if opens and stripped.endswith(":") and hole.context.get("in_kernel") and (
            opens == "kernel" or any(b.sort == "BlockIdx" for b in block)
        ):
            context["in_launch"] = True
        return StatementEffects(declarations, opens, block, context, fragment="statement")

    def _surface_of(self, gamma: Gamma) -> Surface:
        for binding in gamma.global_layer:
            if binding.sort == "ApiMember":
                return resolve(binding.attrs.get("version"))[0]
        return resolve(None)[0]

    def unbound_references(self, statement: str, gamma: Gamma) -> list[str]:
        """Python's check (comprehension names), plus T.<member> the surface lacks (a
        comprehension's twin grammar leaves attribute names open)."""
        missing = super().unbound_references(statement, gamma)
        tmods = tile_modules(gamma)
        if tmods:
            members = {b.name for b in gamma.global_layer if b.sort == "ApiMember"}
            t = "|".join(re.escape(m) for m in sorted(tmods))
            for m in re.finditer(rf"(?<![\w.])({t})\s*\.\s*([A-Za-z_]\w*)", statement):
                if f"{m.group(1)}.{m.group(2)}" not in members:
                    missing.append(f"{m.group(1)}.{m.group(2)}")
        return missing

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        """Python's trimming; a ``T.<member>`` cut before its end goes too, and so does
        a dotted name cut right after its dot (``tn.``)."""
        m = re.search(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)?\Z", text)
        if m and m.group(1) in tile_modules(gamma):
            return text if gamma.global_layer.get(m.group(0)) is not None else text[: m.start()].rstrip(" \t")
        m = re.search(r"[A-Za-z_][\w.]*\.\Z", text)
        if m:
            return text[: m.start()].rstrip(" \t")
        return super().trim_partial(text, gamma)

    # -- diagnostics ------------------------------------------------------------------

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        from gdg_lsp.languages.tilelang.diagnostics import tile_findings

        surface, problem = self.surface(workspace)
        self._local.surface = surface
        findings = super().diagnostics(snapshot, workspace)
        analysis = self._current(snapshot, workspace)
        findings += tile_findings(self, analysis, snapshot, surface)
        if problem:
            findings.append(Finding(0, 0, problem, "tilelang-version", "information"))
        return findings
