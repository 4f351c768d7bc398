"""TileLang diagnostics beyond Python's undefined names.

- ``tilelang-unknown-member``: ``T.<name>`` that the configured API surface lacks
  (a TVMScript spelling TileLang does not provide, a typo, a newer member);
- ``tilelang-out-of-scope``: a name used in a kernel outside the block that binds
  it (a loop variable after its loop, a block index outside ``T.Kernel``), which
  Python accepts but TVMScript does not;
- ``tilelang-role``: a tile operation's operand in a memory space its role does not
  accept (a shared buffer as the T.gemm accumulator), by the API surface's roles.
"""

from __future__ import annotations

from typing import Any

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import Finding
from gdg_lsp.languages.suggest import closest
from gdg_lsp.languages.tilelang import kernels
from gdg_lsp.languages.tilelang.api import Surface


def _chars(source: bytes, byte: int) -> int:
    return len(source[:byte].decode("utf-8", "replace"))


def tile_findings(analyzer: Any, analysis: Any, snapshot: Snapshot, surface: Surface) -> list[Finding]:
    source = analysis.scope_tree.source
    root = analysis.tree.root_node
    module = analysis.scope_tree.module
    tmods = {
        name for name, decls in module.decls.items()
        for d in decls[:1]
        if (d.sort == "Module" and d.attrs.get("module") == "tilelang.language")
        or (d.sort == "Import" and d.attrs.get("module") == "tilelang" and d.attrs.get("imported") == "language")
    }
    if not tmods:
        return []
    members = set(surface.members)
    findings: list[Finding] = []
    stack = [root]
    while stack:  # unknown members, anywhere in the file
        node = stack.pop()
        if node.type == "attribute":
            obj, attr = node.child_by_field_name("object"), node.child_by_field_name("attribute")
            if obj is not None and obj.type == "identifier" and kernels.text(obj) in tmods and attr is not None:
                name = kernels.text(attr)
                if name not in members:
                    message = f"'{kernels.text(obj)}.{name}' is not in the TileLang {surface.version} API"
                    data = {"name": name, "version": surface.version}
                    if (fix := closest(name, members)) is not None:
                        data["replacement"] = fix
                        message += f"; did you mean {kernels.text(obj)}.{fix}?"
                    findings.append(Finding(
                        _chars(source, attr.start_byte), _chars(source, attr.end_byte),
                        message, "tilelang-unknown-member", "error", data))
        stack.extend(node.named_children)
    for fn in kernels.find_kernels(root, tmods):
        kernel = kernels.KernelReader(surface, tmods, source, snapshot.uri).read(fn)
        findings += _scope_findings(kernel, fn, source)
        findings += _role_findings(kernel, fn, source, surface, tmods)
    return findings


def _visible(kernel: kernels.Kernel, name: str, pos: int) -> bool | None:
    """Whether ``name`` is bound by the kernel at ``pos`` (None: the kernel never binds it)."""
    decls = [d for d in kernel.decls if d.binding.name == name]
    if not decls or any(b.name == name for b in kernel.params):
        return None
    return any(d.block[0] <= pos < d.block[1] and d.pos <= pos for d in decls)


def _scope_findings(kernel: kernels.Kernel, fn: Any, source: bytes) -> list[Finding]:
    findings = []
    body = fn.child_by_field_name("body")
    stack = [body] if body is not None else []
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "decorated_definition", "lambda", "list_comprehension",
                         "generator_expression", "set_comprehension", "dictionary_comprehension"):
            continue
        if node.type == "identifier":
            parent = node.parent
            if parent is not None and parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
                continue
            if parent is not None and parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
                continue
            visible = _visible(kernel, kernels.text(node), node.start_byte)
            declared_here = any(d.binding.origin is not None and d.binding.origin.line == node.start_point[0]
                                and d.binding.name == kernels.text(node) for d in kernel.decls)
            if visible is False and not declared_here:
                findings.append(Finding(
                    _chars(source, node.start_byte), _chars(source, node.end_byte),
                    f"'{kernels.text(node)}' is used outside the kernel block that binds it",
                    "tilelang-out-of-scope", "warning", {"name": kernels.text(node)}))
            continue
        stack.extend(node.named_children)
    return findings


def _role_findings(kernel: kernels.Kernel, fn: Any, source: bytes, surface: Surface, tmods: set[str]) -> list[Finding]:
    findings = []
    body = fn.child_by_field_name("body")
    stack = [body] if body is not None else []
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        op = kernels._call_name(node, tmods) if node.type == "call" else None
        if op is None or op not in surface.operations:
            continue
        positional, keywords = kernels._args(node)
        params = surface.operations[op]["params"]
        for param, role in surface.operations[op]["roles"].items():
            if not (role.get("buffer") and role.get("mem")):
                continue
            position = params.index(param)
            arg = keywords.get(param, positional[position] if position < len(positional) else None)
            if arg is not None and arg.type == "subscript":
                arg = arg.child_by_field_name("value")
            if arg is None or arg.type != "identifier":
                continue
            binding = _binding_at(kernel, kernels.text(arg), node.start_byte)
            if binding is None or binding.sort != "Buffer":
                continue
            mem = binding.attrs.get("mem", "?")
            if mem != "?" and mem not in role["mem"]:
                findings.append(Finding(
                    _chars(source, arg.start_byte), _chars(source, arg.end_byte),
                    f"T.{op}: '{binding.name}' is a {mem} buffer, but the {role['role']} ({param}) must be "
                    f"{' or '.join(role['mem'])}",
                    "tilelang-role", "error", {"operation": op, "parameter": param, "mem": mem}))
    return findings


def _binding_at(kernel: kernels.Kernel, name: str, pos: int):
    found = None
    for decl in kernel.decls:
        if decl.binding.name == name and decl.block[0] <= pos < decl.block[1] and decl.pos <= pos:
            found = decl.binding
    if found is None:
        found = next((b for b in kernel.params if b.name == name), None)
    return found
