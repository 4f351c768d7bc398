"""Γ for P4: bindings with sorts and types, frames per scope, typed paths.

Sorts (and their attrs):

- ``Type`` (kind: header, header_union, struct, enum, ser_enum, typedef, newtype,
  extern, parser, parser_type, control, control_type, package)
- ``Field``: ``parent.field`` (parent, field, type); ``EnumMember``: ``E.m`` (enum);
  ``Error``: ``error.X``; ``MatchKind``; ``ExternMethod``: ``extern.method`` (arities)
- ``Action``, ``ExternFunction``, ``Function`` (``arity_N`` = True for each
  admissible argument count N, params, returns); ``Table`` (actions);
- ``Constant`` (type; macro); ``Parameter`` (type, direction, writable);
  ``Variable`` (type, writable); ``Instance`` (type); ``ValueSet``; ``ParserState``
- derived, in the innermost frame ``paths``: ``Path`` for every typed path from a
  parameter, local or instance down to a bounded depth (``hdr.ipv4.ttl``: type,
  root, writable), and ``Method`` for every callable path (``hdr.ipv4.setValid``,
  ``ipv4_lpm.apply``, ``packet.extract``, ``c.count``: arity_N, returns, table).

Declare-before-use: a top-level declaration is visible after its name, a local
after its declaration ends; parameters and parser states are visible throughout
their scope (states may be named before they are declared).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gdg_lsp.gamma import MAX_FRAMES, Binding, Frame, Gamma, Origin
from gdg_lsp.languages.p4.preprocess import Define
from gdg_lsp.languages.p4.symbols import Scope, Sym
from gdg_lsp.languages.p4.types import TABLE_RESULT, TypeTable, shape

MAX_PATH_DEPTH = 5
"""Segments after the root in a generated path (``hdr.a.b.c.d.e``)."""
MAX_PATHS = 4000
"""Bound on derived path bindings at one hole (deep, wide header structs)."""
STACK_INDEXES = 4
"""Header-stack elements spelled out in paths (``hdr.stack[0]`` … ``[3]``)."""
MAX_ARITY = 8

TYPE_SORT_KINDS = ("header", "header_union", "struct", "enum", "ser_enum", "typedef", "newtype",
                   "extern", "parser", "parser_type", "control", "control_type", "package")
VALUE_TYPE_KINDS = ("header", "header_union", "struct", "enum", "ser_enum", "typedef", "newtype")
"""Types a local variable may have."""

BUILTIN_STATES = ("accept", "reject")


def arity_attrs(arities: Iterable[int]) -> dict[str, bool]:
    return {f"arity_{n}": True for n in arities if n <= MAX_ARITY}


def _origin(sym: Sym, lines: Callable[[str | None, int], tuple[int, int]] | None) -> Origin | None:
    if sym.start < 0:
        return Origin(sym.uri, 0, 0, "library facts") if sym.uri else None
    if lines is None:
        return Origin(sym.uri, 0, sym.start)
    line, col = lines(sym.uri, sym.start)
    return Origin(sym.uri, line, col)


def sym_bindings(sym: Sym, lines=None) -> list[Binding]:
    """The bindings one declaration contributes (a header contributes its fields too)."""
    origin = _origin(sym, lines)
    kind = sym.kind
    out: list[Binding] = []
    if kind in TYPE_SORT_KINDS:
        attrs = {"kind": kind}
        if sym.type:
            attrs["type"] = sym.type
        if sym.params:
            attrs.update(arity_attrs(sym.arities()))
        if sym.ctor_params:
            attrs["ctor"] = True
        out.append(Binding(sym.name, "Type", attrs, origin))
        for member in sym.members:
            morigin = _origin(member, lines)
            if member.kind == "field":
                out.append(Binding(f"{sym.name}.{member.name}", "Field",
                                   {"parent": sym.name, "field": member.name, "type": member.type or ""}, morigin))
            elif member.kind == "enum_member":
                out.append(Binding(f"{sym.name}.{member.name}", "EnumMember", {"enum": sym.name}, morigin))
            elif member.kind == "method":
                out.append(Binding(f"{sym.name}.{member.name}", "ExternMethod",
                                   {"extern": sym.name, "returns": member.returns or "void",
                                    **arity_attrs(member.arities())}, morigin))
    elif kind == "error":
        out.append(Binding(f"error.{sym.name}", "Error", {"member": sym.name}, origin))
    elif kind == "match_kind":
        out.append(Binding(sym.name, "MatchKind", {}, origin))
    elif kind in ("action", "extern_function", "function"):
        sort = {"action": "Action", "extern_function": "ExternFunction", "function": "Function"}[kind]
        attrs = {"params": ", ".join(f"{p.direction + ' ' if p.direction else ''}{p.type} {p.name}" for p in sym.params),
                 **arity_attrs(sym.arities())}
        if sym.returns:
            attrs["returns"] = sym.returns
        if kind == "action":
            attrs["data_params"] = sum(1 for p in sym.params if p.direction is None)
        out.append(Binding(sym.name, sort, attrs, origin))
    elif kind == "table":
        out.append(Binding(sym.name, "Table", {"actions": tuple(sym.info.get("actions", ()))}, origin))
    elif kind == "constant":
        out.append(Binding(sym.name, "Constant", {"type": sym.type or ""}, origin))
    elif kind == "variable":
        out.append(Binding(sym.name, "Variable", {"type": sym.type or "", "writable": True}, origin))
    elif kind == "instance":
        out.append(Binding(sym.name, "Instance", {"type": sym.type or ""}, origin))
    elif kind == "param":
        writable = sym.direction in ("out", "inout")
        out.append(Binding(sym.name, "Parameter", {"type": sym.type or "", "direction": sym.direction or "",
                                                   "writable": writable}, origin))
    elif kind == "value_set":
        out.append(Binding(sym.name, "ValueSet", {"type": sym.type or ""}, origin))
    elif kind == "state":
        out.append(Binding(sym.name, "ParserState", {}, origin))
    return out


def declare_all(frame: Frame, bindings: Iterable[Binding]) -> None:
    """Declare into ``frame``; overloads of a callable (same name and sort) merge
    their arities (``mark_to_drop()`` and ``mark_to_drop(standard_metadata)``)."""
    pending: dict[str, Binding] = {}
    order: list[str] = []
    for binding in bindings:
        old = pending.get(binding.name)
        if old is None:
            pending[binding.name] = binding
            order.append(binding.name)
        elif old.sort == binding.sort and binding.sort in ("Action", "ExternFunction", "Function", "ExternMethod", "Method"):
            arities = {k: v for k, v in binding.attrs.items() if k.startswith("arity_")}
            pending[binding.name] = Binding(old.name, old.sort, {**old.attrs, **arities}, old.origin)
    for name in order:
        frame.declare(pending[name])


def macro_binding(define: Define) -> Binding:
    origin = Origin(define.uri, 0, max(define.offset, 0), "macro")
    if define.params is not None:
        return Binding(define.name, "Function", {"macro": True, **arity_attrs([len(define.params)])}, origin)
    return Binding(define.name, "Constant", {"macro": True, "value": define.value}, origin)


def visible(sym: Sym, scope: Scope, offset: int) -> bool:
    if sym.kind in ("param", "state") or scope.forward:
        return True
    if scope.kind == "file":
        return sym.start < offset
    return sym.end <= offset


@dataclass
class PathContext:
    types: TypeTable
    in_parser: bool
    integer: Callable[[str], int | None]


def integer_value(text: str, macros: dict[str, str], constants: dict[str, str], depth: int = 0) -> int | None:
    """The value of a stack size such as ``4``, ``MAX_HOPS`` or ``16w4`` (None if unknown)."""
    text = text.strip()
    m = re.fullmatch(r"(?:\d+[ws])?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|[0-9][0-9_]*)", text)
    if m:
        try:
            return int(m.group(1).replace("_", ""), 0)
        except ValueError:
            return None
    if depth < 8 and re.fullmatch(r"[A-Za-z_]\w*", text):
        value = macros.get(text) or constants.get(text)
        if value is not None:
            return integer_value(value, macros, constants, depth + 1)
    return None


def derive_paths(roots: Iterable[Binding], ctx: PathContext, tables: Iterable[str] = (),
                 applicable_types: Iterable[Binding] = ()) -> list[Binding]:
    """``Path`` and ``Method`` bindings reachable from ``roots`` (bounded)."""
    out: dict[str, Binding] = {}

    def add(binding: Binding) -> bool:
        if len(out) >= MAX_PATHS:
            return False
        out.setdefault(binding.name, binding)
        return True

    def expand(prefix: str, root: str, type_text: str, writable: bool, depth: int) -> None:
        if depth > MAX_PATH_DEPTH or len(out) >= MAX_PATHS:
            return
        for member in ctx.types.members(type_text):
            if member.parser_only and not ctx.in_parser:
                continue
            if member.index:
                s = shape(type_text)
                size = ctx.integer(s.size) if s and s.size else None
                for i in range(min(size if size is not None else 1, STACK_INDEXES)):
                    name = f"{prefix}[{i}]"
                    if not add(Binding(name, "Path", {"type": member.type or "", "root": root, "writable": writable})):
                        return
                    expand(name, root, member.type or "", writable, depth + 1)
                continue
            name = f"{prefix}.{member.name}"
            if member.method:
                if member.mutates and not writable:
                    continue
                attrs = {"root": root, "returns": member.type or "void", **arity_attrs(member.arities)}
                if not add(Binding(name, "Method", attrs)):
                    return
                continue
            if not add(Binding(name, "Path", {"type": member.type or "", "root": root, "writable": writable})):
                return
            if member.type:
                expand(name, root, member.type, writable, depth + 1)

    for table in tables:
        add(Binding(f"{table}.apply", "Method", {"root": table, "returns": TABLE_RESULT, "table": True, "arity_0": True}))
    for binding in applicable_types:
        if binding.attrs.get("kind") in ("control", "parser"):
            add(Binding(f"{binding.name}.apply", "Method",
                        {"root": binding.name, "returns": "void",
                         **{k: v for k, v in binding.attrs.items() if k.startswith("arity_")}}))
    for root in roots:
        type_text = root.attrs.get("type")
        if type_text:
            expand(root.name, root.name, type_text, bool(root.attrs.get("writable")), 1)
    return list(out.values())


def build_gamma(
    global_syms: Iterable[Sym],
    macros: Iterable[Define],
    file_scope: Scope,
    offset: int,
    ctx: PathContext,
    lines=None,
) -> Gamma:
    """Γ at ``offset``: includes in the global layer, one frame per enclosing scope, then paths."""
    global_frame = Frame("includes")
    declare_all(global_frame, [b for sym in global_syms for b in sym_bindings(sym, lines)])
    for define in macros:
        if define.value or define.params is not None:  # an empty macro is an include guard, not a value
            global_frame.declare(macro_binding(define))
    chain = list(reversed(list(file_scope.innermost(offset).chain())))
    frames: list[Frame] = []
    in_parser = any(s.kind in ("parser", "state") for s in chain)
    for scope in chain:
        frame = Frame(scope.describe())
        declare_all(frame, [b for sym in scope.syms if visible(sym, scope, offset) for b in sym_bindings(sym, lines)])
        if scope.kind == "parser":
            for state in BUILTIN_STATES:
                frame.declare(Binding(state, "ParserState", {"builtin": True}))
        frames.append(frame)
    # more scopes than frames allowed: the deepest blocks share the last frame
    while len(frames) > MAX_FRAMES - 1:
        inner = frames.pop()
        for binding in inner:
            frames[-1].declare(binding)
    gamma = Gamma(global_frame, frames)
    ctx.in_parser = in_parser
    roots = gamma.bindings(["Parameter", "Variable", "Instance", "Constant"])
    tables = gamma.names("Table")
    # direct application (`C.apply(...)`): a control in a control, a parser in a parser, never itself
    enclosing = chain[1] if len(chain) > 1 else None
    applicable = [
        b for b in gamma.bindings("Type", kind=enclosing.kind if enclosing and enclosing.kind in ("control", "parser") else ())
        if not b.attrs.get("ctor") and b.name != enclosing.name
    ] if enclosing is not None else []
    paths = Frame("paths", derive_paths(roots, ctx, tables, applicable))
    return Gamma(global_frame, [*frames, paths])
