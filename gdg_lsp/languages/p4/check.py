"""Diagnostics for P4: names that are declared nowhere, and field paths that do not exist.

Every reference the binder recorded is resolved against the scopes of the
document (declare-before-use), its includes and the macros: a value (a name
or the root of a path), a type, a parser state, an action named in a table, a
match kind, ``error.X`` and ``Type.member``. A path's members are then
followed through the types (``hdr.ipv4.ttl``: ``hdr`` is a ``headers``, which
has ``ipv4``, an ``ipv4_t``, which has ``ttl``); a member the type does not
have is reported. A path through a type the analysis cannot see (a type
parameter, an unresolved include) is not judged. An ``#include`` whose file was
not read (outside the workspace and the configured folders, or too large) is
reported on its line.

Each finding about a name carries the closest name declared there as ``replacement``
(``languages/suggest.py``; the server offers it as a quick fix): only names the same
lookup would have accepted at that place are candidates, so a fix is never a ghost.
"""

from __future__ import annotations

from gdg_lsp.languages.base import Finding
from gdg_lsp.languages.p4.gamma import BUILTIN_STATES, visible
from gdg_lsp.languages.p4.symbols import Ref, Scope, Sym
from gdg_lsp.languages.p4.types import TABLE_RESULT, TypeTable, shape
from gdg_lsp.languages.p4.workspace import Analysis
from gdg_lsp.languages.suggest import closest

VALUE_KINDS = frozenset({"param", "variable", "constant", "instance", "action", "table", "extern_function",
                         "function", "value_set"})
ACTION_KINDS = frozenset({"action"})
BUILTIN_TYPES = frozenset({"bit", "int", "varbit", "bool", "error", "string", "void", "tuple", "list", "match_kind"})


class _Resolver:
    def __init__(self, analysis: Analysis, types: TypeTable) -> None:
        self.analysis = analysis
        self.types = types
        self.included = analysis.included_syms()
        self.global_values: dict[str, Sym] = {}
        self.type_names: set[str] = set()
        self.errors: set[str] = set()
        self.match_kinds: set[str] = set()
        for sym in self.included:
            self._global(sym)
        self.type_params: set[str] = set()
        for sym in analysis.unit.top:
            self.type_params.update(sym.type_params)
            for member in sym.members:
                self.type_params.update(member.type_params)
        self.file_top = analysis.unit.top
        # name -> declarations, in order: a lookup per reference costs the declarations of
        # that name, not of the scope (a control of 1,400 actions made diagnostics quadratic)
        self._by_scope: dict[int, dict[str, list[Sym]]] = {}
        self._first_start: dict[tuple[str, str], int] = {}
        self._top_types: dict[str, list[Sym]] = {}
        for sym in self.file_top:
            if sym.kind in ("error", "match_kind"):
                key = (sym.kind, sym.name)
                self._first_start[key] = min(self._first_start.get(key, sym.start), sym.start)
            elif sym.kind not in VALUE_KINDS:
                self._top_types.setdefault(sym.name, []).append(sym)

    def _named(self, scope: Scope) -> dict[str, list[Sym]]:
        index = self._by_scope.get(id(scope))
        if index is None:
            index = self._by_scope[id(scope)] = {}
            for sym in scope.syms:
                if sym.kind in VALUE_KINDS:
                    index.setdefault(sym.name, []).append(sym)
        return index

    def _global(self, sym: Sym) -> None:
        if sym.kind in VALUE_KINDS:
            self.global_values.setdefault(sym.name, sym)
        elif sym.kind == "error":
            self.errors.add(sym.name)
        elif sym.kind == "match_kind":
            self.match_kinds.add(sym.name)
        else:
            self.type_names.add(sym.name)

    def macros(self, offset: int) -> set[str]:
        return {d.name for d in self.analysis.macros_before(offset)}

    def value(self, name: str, scope: Scope, offset: int) -> Sym | str | None:
        for s in scope.chain():
            for sym in reversed(self._named(s).get(name, ())):
                if visible(sym, s, offset):
                    return sym
        if name in self.global_values:
            return self.global_values[name]
        if name in self.macros(offset):
            return "macro"
        return None

    def type_declared(self, name: str, offset: int) -> Sym | None:
        for sym in self._top_types.get(name, ()):
            if sym.start < offset:
                return sym
        return self.types.types.get(name) if name in self.type_names else None

    def is_type(self, name: str, offset: int) -> bool:
        return (name in BUILTIN_TYPES or name in self.type_params or self.type_declared(name, offset) is not None
                or name in self.macros(offset))

    def error_declared(self, name: str, offset: int) -> bool:
        return name in self.errors or self._first_start.get(("error", name), offset) < offset

    def match_kind_declared(self, name: str, offset: int) -> bool:
        return name in self.match_kinds or self._first_start.get(("match_kind", name), offset) < offset

    # -- what would have been accepted (candidates for a fix) -------------------------------------

    def values_at(self, scope: Scope, offset: int, kinds: frozenset[str] = VALUE_KINDS) -> set[str]:
        names = {sym.name for s in scope.chain() for sym in s.syms if sym.kind in kinds and visible(sym, s, offset)}
        names |= {n for n, sym in self.global_values.items() if sym.kind in kinds}
        return names | (self.macros(offset) if kinds is VALUE_KINDS else set())

    def types_at(self, offset: int) -> set[str]:
        declared = {n for n, syms in self._top_types.items() if any(sym.start < offset for sym in syms)}
        return set(BUILTIN_TYPES) | self.type_params | declared | self.type_names | self.macros(offset)

    def declared_before(self, kind: str, offset: int) -> set[str]:
        """Error or match-kind names declared before ``offset`` (the includes' at any place)."""
        given = self.errors if kind == "error" else self.match_kinds
        return given | {name for (k, name), start in self._first_start.items() if k == kind and start < offset}

    def known(self, type_text: str | None) -> bool:
        """Whether the analysis can see what the type is (a type parameter it cannot)."""
        s = shape(type_text)
        if s is None:
            return False
        if s.size is not None:
            return True
        sym, final = self.types.definition(type_text)
        return sym is not None or (final is not None and final.base in BUILTIN_TYPES - {"tuple", "list"})


def _finding(segment: tuple[str, int, int], message: str, code: str, candidates=(), **data) -> Finding:
    """A warning on ``segment``; the closest of ``candidates`` to its name is the replacement."""
    _, start, end = segment
    name = data.get("name")
    if isinstance(name, str) and name.isidentifier() and (fix := closest(name, candidates)) is not None:
        data["replacement"] = fix
        message += f"; did you mean {fix}?"
    return Finding(start, end, message, code, "warning", data or None)


def check(analysis: Analysis, types: TypeTable) -> list[Finding]:
    resolver = _Resolver(analysis, types)
    findings: list[Finding] = []
    for ref in analysis.unit.refs:
        finding = _check_ref(ref, resolver)
        if finding is not None:
            findings.append(finding)
    for start, end, message in analysis.program.errors:
        findings.append(Finding(start, min(end, start + 200), f"cannot parse this: {message}", "syntax-error", "error"))
    for include, found in analysis.includes:
        for why in found.refusals() if found is not None else ():
            findings.append(Finding(include.start, include.end, why, "include-not-read", "warning"))
    return findings


def _check_ref(ref: Ref, r: _Resolver) -> Finding | None:
    root = ref.segments[0]
    name, offset, _ = root
    if ref.kind == "type":
        if not r.is_type(name, offset):
            return _finding(root, f"undeclared type '{name}'", "undeclared-type", r.types_at(offset), name=name)
        return None
    if ref.kind == "state":
        parser = next((s for s in ref.scope.chain() if s.kind == "parser"), None)
        states = {s.name for s in parser.syms if s.kind == "state"} if parser else set()
        if name not in states and name not in BUILTIN_STATES:
            return _finding(root, f"undeclared parser state '{name}'", "undeclared-state", states | set(BUILTIN_STATES),
                            name=name)
        return None
    if ref.kind == "match_kind":
        if not r.match_kind_declared(name, offset):
            return _finding(root, f"undeclared match kind '{name}'", "undeclared-match-kind",
                            r.declared_before("match_kind", offset), name=name)
        return None
    if ref.kind == "action":
        found = r.value(name, ref.scope, offset)
        if not isinstance(found, Sym) or found.kind != "action":
            return _finding(root, f"undeclared action '{name}'", "undeclared-action",
                            r.values_at(ref.scope, offset, ACTION_KINDS), name=name)
        return None
    if ref.kind == "error":
        member = ref.segments[1]
        if not r.error_declared(member[0], offset):
            return _finding(member, f"undeclared error 'error.{member[0]}'", "undeclared-error",
                            r.declared_before("error", offset), name=member[0])
        return None
    if ref.kind == "type_member":
        type_sym = r.type_declared(name, offset)
        if type_sym is None:
            if name in r.type_params:
                return None
            return _finding(root, f"undeclared type '{name}'", "undeclared-type", r.types_at(offset), name=name)
        member = ref.segments[1]
        if type_sym.kind in ("typedef", "newtype"):
            target, _ = r.types.definition(type_sym.type)
            type_sym = target if target is not None and target.kind in ("enum", "ser_enum") else type_sym
        if type_sym.kind in ("enum", "ser_enum"):
            names = {m.name for m in type_sym.members}
            if member[0] not in names:
                return _finding(member, f"enum '{name}' has no member '{member[0]}'", "invalid-field-path", names,
                                name=member[0], type=name)
        return None
    # a value or a path
    found = r.value(name, ref.scope, offset)
    if found is None:
        return _finding(root, f"undeclared name '{name}'", "undeclared-name", r.values_at(ref.scope, offset),
                        name=name)
    if not isinstance(found, Sym) or len(ref.segments) == 1:
        return None
    if found.kind == "table":
        type_text: str | None = None
        member = ref.segments[1]
        if member[0] != "apply":
            return _finding(member, f"table '{name}' has no member '{member[0]}' (only apply)",
                            "invalid-field-path", ("apply",), name=member[0], type="table")
        return None
    if found.kind in ("action", "function", "extern_function"):
        member = ref.segments[1]
        return _finding(member, f"'{name}' is a {found.kind.replace('_', ' ')} and has no member '{member[0]}'",
                        "invalid-field-path", name=member[0])
    type_text = found.type
    walked = name
    for segment in ref.segments[1:]:
        if not r.known(type_text):
            return None
        member_name = segment[0]
        member = r.types.member(type_text, member_name)
        if member is None:
            shown = f"{walked}[...]" if member_name == "[]" else f"{walked}.{member_name}"
            what = "is not a header stack" if member_name == "[]" else f"has no member '{member_name}'"
            return _finding(segment, f"invalid field path '{shown}': '{walked}' ({type_text}) {what}",
                            "invalid-field-path", (m.name for m in r.types.members(type_text)),
                            name=member_name, type=type_text)
        if member.method:
            return None
        type_text = member.type
        walked = f"{walked}[...]" if member_name == "[]" else f"{walked}.{member_name}"
        if type_text == TABLE_RESULT:
            return None
    return None
