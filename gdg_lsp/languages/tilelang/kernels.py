"""TileLang kernels read from a tree-sitter tree: their buffers, indices and blocks.

A kernel is a function decorated with ``@T.prim_func`` or ``@T.macro`` (T being
any name bound to ``tilelang.language``), or any function whose own body opens
``with T.Kernel(...)`` (a ``@tilelang.jit`` function written directly in the
tile language). Inside it the TVMScript rules hold rather than Python's:

- tensor parameters (``A: T.Tensor((M, K), dtype)``, ``T.Tensor[...]``,
  ``T.Buffer``, ``T.StridedTensor``, ``T.SharedBuffer``, ``T.FragmentBuffer``,
  ``T.LocalBuffer``) are buffers with a memory space, a shape as written and a
  dtype; other annotated parameters (``n: T.int32``) are scalars;
- ``x = T.alloc_shared/alloc_fragment/alloc_local/alloc_var/...(...)`` binds a
  buffer whose memory space is the allocator's (from the API surface);
- ``with T.Kernel(...) as (bx, by)`` binds block indices, with their extent
  and the kernel's thread count, visible inside the ``with`` block only;
- loop variables (``T.Parallel``, ``T.Pipelined``, ``T.serial``, ``range``, ...)
  are visible inside their loop only, and so is whatever a block binds.

Nothing here runs the code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.gamma import Binding, Frame, Origin
from gdg_lsp.languages.tilelang.api import Surface

MAX_RANK = 8
SCOPE_MEM = {"global": "global", "shared": "shared", "shared.dyn": "shared", "local.fragment": "fragment",
             "local": "local", "local.var": "local", "shared.barrier": "barrier", "shared.tmem": "tmem"}


def text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def shape_key(node: Any) -> tuple[str, int | str]:
    """(normalised shape, rank) of a shape as written; ("?", "?") when it is not a literal."""
    if node is None:
        return "?", "?"
    if node.type in ("tuple", "list", "parenthesized_expression"):
        items = [re.sub(r"\s+", "", text(c)) for c in node.named_children if c.type != "comment"]
        return ",".join(items), len(items)
    if node.type in ("integer", "identifier", "binary_expression", "call", "attribute"):
        # a single extent (T.alloc_shared(block_M, dtype) is 1-D) -- unless it names a shape variable
        if node.type == "identifier" and node.parent is not None:
            return "?", "?"
        return re.sub(r"\s+", "", text(node)), 1
    return "?", "?"


@dataclass
class Decl:
    binding: Binding
    pos: int  # byte offset from which it is visible
    block: tuple[int, int]  # the block it is visible in


@dataclass
class Kernel:
    name: str
    node: Any  # function_definition
    body: tuple[int, int]
    params: list[Binding] = field(default_factory=list)
    decls: list[Decl] = field(default_factory=list)
    blocks: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, kind) of nested blocks
    accumulators: list[tuple[str, int]] = field(default_factory=list)  # (buffer, pos): cleared or gemm C


def _call_name(call: Any, tmods: set[str]) -> str | None:
    """``copy`` for ``T.copy(...)`` (T any tilelang.language alias), else None."""
    if call is None or call.type != "call":
        return None
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "attribute":
        obj = fn.child_by_field_name("object")
        if obj is not None and obj.type == "identifier" and text(obj) in tmods:
            return text(fn.child_by_field_name("attribute"))
    return None


def _args(call: Any) -> tuple[list[Any], dict[str, Any]]:
    args = call.child_by_field_name("arguments")
    positional, keywords = [], {}
    for child in args.named_children if args is not None else ():
        if child.type == "keyword_argument":
            keywords[text(child.child_by_field_name("name"))] = child.child_by_field_name("value")
        elif child.type != "comment":
            positional.append(child)
    return positional, keywords


def _origin(node: Any, uri: str | None, source: bytes) -> Origin:
    line_start = source.rfind(b"\n", 0, node.start_byte) + 1
    return Origin(uri, node.start_point[0], len(source[line_start : node.start_byte].decode("utf-8", "replace")))


def is_kernel(fn: Any, tmods: set[str]) -> bool:
    parent = fn.parent
    if parent is not None and parent.type == "decorated_definition":
        for dec in parent.named_children:
            if dec.type != "decorator":
                continue
            expr = dec.named_children[0] if dec.named_children else None
            if expr is not None and expr.type == "call":
                expr = expr.child_by_field_name("function")
            if expr is not None and expr.type == "attribute":
                obj = expr.child_by_field_name("object")
                if text(obj) in tmods and text(expr.child_by_field_name("attribute")) in ("prim_func", "macro"):
                    return True
    body = fn.child_by_field_name("body")
    return body is not None and _opens_kernel(body, tmods)


def _opens_kernel(node: Any, tmods: set[str]) -> bool:
    for child in node.named_children:
        if child.type in ("function_definition", "decorated_definition", "class_definition"):
            continue
        if child.type == "with_statement":
            for item in _with_items(child):
                value = item.child_by_field_name("value")
                call = value.named_children[0] if value is not None and value.type == "as_pattern" else value
                if _call_name(call, tmods) in ("Kernel", "ClusterKernel"):
                    return True
        if _opens_kernel(child, tmods):
            return True
    return False


def _with_items(node: Any) -> Iterable[Any]:
    for child in node.named_children:
        if child.type == "with_clause":
            yield from (c for c in child.named_children if c.type == "with_item")


def find_kernels(root: Any, tmods: set[str]) -> list[Any]:
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition" and is_kernel(node, tmods):
            found.append(node)
        stack.extend(reversed(node.named_children))
    return found


def kernel_at(root: Any, pos: int, tmods: set[str]) -> Any | None:
    """The innermost kernel function whose body holds byte ``pos``."""
    best = None
    for fn in find_kernels(root, tmods):
        body = fn.child_by_field_name("body")
        start = (fn.child_by_field_name("parameters") or fn).start_byte
        if body is not None and start <= pos <= body.end_byte:
            if best is None or fn.start_byte >= best.start_byte:
                best = fn
    return best


class KernelReader:
    """Walks one kernel function; produces its parameters, declarations and blocks."""

    def __init__(self, surface: Surface, tmods: set[str], source: bytes, uri: str | None) -> None:
        self.surface, self.tmods, self.source, self.uri = surface, tmods, source, uri

    def read(self, fn: Any) -> Kernel:
        body = fn.child_by_field_name("body")
        kernel = Kernel(text(fn.child_by_field_name("name")), fn, (body.start_byte, body.end_byte) if body else (0, 0))
        params = fn.child_by_field_name("parameters")
        for p in params.named_children if params is not None else ():
            binding = self.param(p)
            if binding is not None:
                kernel.params.append(binding)
        if body is not None:
            self.block(body, kernel, (body.start_byte, fn.end_byte + 1))
        return kernel

    # -- parameters ------------------------------------------------------------

    def param(self, p: Any) -> Binding | None:
        if p.type == "identifier":
            return Binding(text(p), "Parameter", {"kind": "positional"}, _origin(p, self.uri, self.source))
        if p.type not in ("typed_parameter", "typed_default_parameter", "default_parameter"):
            return None
        ident = p.child_by_field_name("name")
        if ident is None:
            ident = next((c for c in p.named_children if c.type == "identifier"), None)
        if ident is None:
            return None
        annotation = p.child_by_field_name("type")
        ann = annotation.named_children[0] if annotation is not None and annotation.named_children else None
        origin = _origin(ident, self.uri, self.source)
        buffer = self.buffer_annotation(ann)
        if buffer is not None:
            return Binding(text(ident), "Buffer", {**buffer, "origin": "parameter"}, origin)
        if ann is not None:
            return Binding(text(ident), "Scalar", {"dtype": text(ann), "origin": "parameter"}, origin)
        return Binding(text(ident), "Parameter", {"default": text(p.child_by_field_name("value")) or None}, origin)

    def buffer_annotation(self, ann: Any) -> dict[str, Any] | None:
        """Attrs of a buffer parameter annotation (``T.Tensor((M, K), dtype)``, ``T.Tensor[...]``)."""
        if ann is None:
            return None
        if ann.type == "call":
            head, (positional, keywords) = ann.child_by_field_name("function"), _args(ann)
        elif ann.type == "subscript":
            head = ann.child_by_field_name("value")
            positional, keywords = list(ann.children_by_field_name("subscript")), {}
        else:
            return None
        if head is None or head.type != "attribute" or text(head.child_by_field_name("object")) not in self.tmods:
            return None
        kind = text(head.child_by_field_name("attribute"))
        if kind not in self.surface.annotations:
            return None
        mem = self.surface.mem_of_annotation(kind) or "?"
        if "scope" in keywords:
            mem = SCOPE_MEM.get(text(keywords["scope"]).strip("\"'"), "?")
        shape_node = keywords.get("shape", positional[0] if positional else None)
        dtype_index = 2 if kind == "StridedTensor" else 1
        dtype_node = keywords.get("dtype", positional[dtype_index] if len(positional) > dtype_index else None)
        key, rank = shape_key(shape_node)
        return {"mem": mem, "shape": text(shape_node) or "?", "shape_key": key, "rank": rank,
                "dtype": text(dtype_node) or "?", "annotation": kind}

    # -- bodies ------------------------------------------------------------------

    def block(self, node: Any, kernel: Kernel, span: tuple[int, int]) -> None:
        for stmt in node.named_children:
            self.statement(stmt, kernel, span)

    def declare(self, kernel: Kernel, binding: Binding, pos: int, span: tuple[int, int]) -> None:
        kernel.decls.append(Decl(binding, pos, span))

    def statement(self, stmt: Any, kernel: Kernel, span: tuple[int, int]) -> None:
        kind = stmt.type
        if kind == "expression_statement":
            for child in stmt.named_children:
                if child.type == "assignment":
                    self.assignment(child, kernel, span, stmt.end_byte)
                elif child.type == "call":
                    self.note_accumulator(child, kernel)
        elif kind == "for_statement":
            body = stmt.child_by_field_name("body")
            if body is None:
                return
            inner = (body.start_byte, stmt.end_byte)
            kernel.blocks.append((*inner, "loop"))
            right = stmt.child_by_field_name("right")
            loop = _call_name(right, self.tmods) or (text(right.child_by_field_name("function")) if right is not None and right.type == "call" else "?")
            extents = _args(right)[0] if right is not None and right.type == "call" else []
            left = stmt.child_by_field_name("left")
            names = [c for c in (left.named_children if left is not None and left.type in ("pattern_list", "tuple_pattern", "tuple") else [left]) if c is not None and c.type == "identifier"]
            for axis, ident in enumerate(names):
                extent = text(extents[axis]) if axis < len(extents) else "?"
                self.declare(kernel, Binding(text(ident), "LoopVar",
                                             {"loop": loop, "axis": axis, "axes": len(names), "extent": extent,
                                              "header": stmt.start_byte},
                                             _origin(ident, self.uri, self.source)), body.start_byte, inner)
            self.block(body, kernel, inner)
            alternative = stmt.child_by_field_name("alternative")
            if alternative is not None:
                self.compound(alternative, kernel)
        elif kind == "with_statement":
            body = stmt.child_by_field_name("body")
            if body is None:
                return
            inner = (body.start_byte, stmt.end_byte)
            launch = False
            for item in _with_items(stmt):
                value = item.child_by_field_name("value")
                if value is None or value.type != "as_pattern":
                    continue
                call = value.named_children[0]
                alias = value.child_by_field_name("alias")
                target = alias.named_children[0] if alias is not None and alias.named_children else alias
                idents = [c for c in (target.named_children if target is not None and target.type in ("tuple", "pattern_list", "tuple_pattern", "parenthesized_expression", "list") else [target]) if c is not None and c.type == "identifier"]
                if _call_name(call, self.tmods) in ("Kernel", "ClusterKernel"):
                    launch = True
                    extents, keywords = _args(call)
                    threads = text(keywords.get("threads")) or "?"
                    for axis, ident in enumerate(idents):
                        self.declare(kernel, Binding(text(ident), "BlockIdx",
                                                     {"axis": axis, "extent": text(extents[axis]) if axis < len(extents) else "?",
                                                      "threads": threads},
                                                     _origin(ident, self.uri, self.source)), body.start_byte, inner)
                else:
                    for ident in idents:
                        self.declare(kernel, Binding(text(ident), "Variable", {"kind": "with"},
                                                     _origin(ident, self.uri, self.source)), body.start_byte, inner)
            kernel.blocks.append((*inner, "kernel" if launch else "with"))
            self.block(body, kernel, inner)
        elif kind in ("if_statement", "while_statement", "try_statement", "elif_clause", "else_clause",
                      "except_clause", "finally_clause", "block"):
            self.compound(stmt, kernel)
        elif kind in ("function_definition", "decorated_definition"):
            fn = stmt if kind == "function_definition" else stmt.child_by_field_name("definition")
            if fn is not None and fn.child_by_field_name("name") is not None:
                name = fn.child_by_field_name("name")
                self.declare(kernel, Binding(text(name), "Function", {"kind": "nested"},
                                             _origin(name, self.uri, self.source)), stmt.end_byte, span)

    def compound(self, node: Any, kernel: Kernel) -> None:
        for child in node.named_children:
            if child.type == "block":
                inner = (child.start_byte, child.end_byte + 1)
                kernel.blocks.append((*inner, node.type))
                self.block(child, kernel, inner)
            elif child.type in ("elif_clause", "else_clause", "except_clause", "finally_clause"):
                self.compound(child, kernel)

    def assignment(self, node: Any, kernel: Kernel, span: tuple[int, int], end: int) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is not None and right.type == "assignment":  # a = b = value
            self.assignment(right, kernel, span, end)
        if right is not None and right.type == "call":
            self.note_accumulator(right, kernel)
        if left is None or left.type != "identifier":
            targets = [c for c in (left.named_children if left is not None else []) if c.type == "identifier"]
            for ident in targets:
                self.declare(kernel, Binding(text(ident), "Variable", {"kind": "assignment"},
                                             _origin(ident, self.uri, self.source)), end, span)
            return
        origin = _origin(left, self.uri, self.source)
        buffer = self.allocation(right, kernel, end)
        if buffer is not None:
            self.declare(kernel, Binding(text(left), "Buffer", buffer, origin), end, span)
            return
        annotation = node.child_by_field_name("type")
        ann = self.buffer_annotation(annotation.named_children[0] if annotation is not None and annotation.named_children else None)
        if ann is not None:
            self.declare(kernel, Binding(text(left), "Buffer", ann, origin), end, span)
            return
        self.declare(kernel, Binding(text(left), "Variable", {"kind": "assignment"}, origin), end, span)

    def allocation(self, call: Any, kernel: Kernel, pos: int) -> dict[str, Any] | None:
        name = _call_name(call, self.tmods)
        if name is None:
            return None
        positional, keywords = _args(call)
        if name in self.surface.allocators:
            mem = self.surface.mem_of_allocator(name) or "?"
            if "scope" in keywords:
                mem = SCOPE_MEM.get(text(keywords["scope"]).strip("\"'"), mem)
            params = self.surface.allocators[name].get("params") or ["shape", "dtype"]
            if name == "alloc_var":
                dtype = keywords.get("dtype", positional[0] if positional else None)
                return {"mem": mem, "shape": "()", "shape_key": "", "rank": 0, "dtype": text(dtype) or "?",
                        "alloc": name, "var": True}
            if name == "empty":
                # T.empty(shape, dtype) or T.empty(*extents, dtype=...)
                literal = bool(positional) and positional[0].type in ("tuple", "list")
                if literal and len(positional) > 1 and "dtype" not in keywords:
                    keywords = {**keywords, "dtype": positional[1]}
                    positional = positional[:1]
                shape_node = positional[0] if len(positional) == 1 else None
                key, rank = shape_key(shape_node) if shape_node is not None else (",".join(text(p) for p in positional) or "?", len(positional) or "?")
                return {"mem": mem, "shape": text(shape_node) if shape_node is not None else ", ".join(text(p) for p in positional),
                        "shape_key": key, "rank": rank, "dtype": text(keywords.get("dtype")) or "?", "alloc": name}
            shape_node = keywords.get("shape", positional[params.index("shape")] if "shape" in params and params.index("shape") < len(positional) else None)
            dtype_node = keywords.get("dtype", positional[params.index("dtype")] if "dtype" in params and params.index("dtype") < len(positional) else None)
            key, rank = shape_key(shape_node)
            return {"mem": mem, "shape": text(shape_node) or "?", "shape_key": key, "rank": rank,
                    "dtype": text(dtype_node) or "?", "alloc": name}
        if name in ("view", "reshape") and positional:
            source = text(positional[0])
            base = next((d.binding for d in reversed(kernel.decls) if d.binding.name == source and d.binding.sort == "Buffer"), None)
            base = base or next((b for b in kernel.params if b.name == source and b.sort == "Buffer"), None)
            shape_node = keywords.get("shape", positional[1] if len(positional) > 1 else None)
            key, rank = shape_key(shape_node)
            return {"mem": base.attrs.get("mem", "?") if base else "?", "shape": text(shape_node) or "?",
                    "shape_key": key, "rank": rank, "dtype": base.attrs.get("dtype", "?") if base else "?", "alloc": name}
        return None

    def note_accumulator(self, call: Any, kernel: Kernel) -> None:
        """Remember buffers cleared, filled or accumulated into by T.gemm (the pin rung's candidates)."""
        name = _call_name(call, self.tmods)
        positional, keywords = _args(call)
        target = None
        if name in ("clear", "fill") and positional:
            target = positional[0]
        elif name == "gemm":
            target = keywords.get("C", positional[2] if len(positional) > 2 else None)
        if target is not None and target.type == "identifier":
            kernel.accumulators.append((text(target), call.start_byte))


# -- Γ at a position ------------------------------------------------------------------


def frames_at(kernel: Kernel, pos: int) -> list[Frame]:
    """The kernel's frames at byte ``pos``: parameters, then one frame per open block."""
    frames: list[Frame] = []
    open_blocks = sorted((b for b in kernel.blocks if b[0] <= pos < b[1]), key=lambda b: (b[0], -b[1]))
    spans = [(kernel.body[0], kernel.node.end_byte + 1)] + [(b[0], b[1]) for b in open_blocks]
    kinds = [f"kernel {kernel.name}"] + [b[2] for b in open_blocks]
    for span, kind in zip(spans, kinds):
        frame = Frame(kind)
        for decl in kernel.decls:
            if decl.block == span and decl.pos <= pos:
                frame.declare(decl.binding)
        if not frames:
            # a parameter re-declared in the body (`A: T.Tensor(...)` under a plain
            # parameter A, as lazily-jitted kernels do) is what the body says
            for param in kernel.params:
                frame.declare(param)
        frames.append(frame)
    return frames


def visible_accumulators(kernel: Kernel, pos: int) -> list[str]:
    return list(dict.fromkeys(name for name, at in kernel.accumulators if at < pos))
