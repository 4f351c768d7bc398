"""What a P4 type offers after a dot: fields, header and stack operations, methods.

``TypeTable`` knows the type declarations in scope (from the file, its
includes, or the library facts) and answers ``members(type_text)``: the
members of a value of that type, each with its own type, whether it is a
method (and with how many arguments it may be called), and whether it may be
written through. Typedefs and ``type`` declarations are followed. Types are
source text without blanks, as ``p4_symbols`` records them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gdg_lsp.languages.p4.symbols import Sym

TYPE_KINDS = frozenset({
    "header", "header_union", "struct", "enum", "ser_enum", "typedef", "newtype", "extern",
    "parser", "parser_type", "control", "control_type", "package",
})

_TYPE_TEXT = re.compile(r"^\.?(?P<base>[A-Za-z_]\w*)(?:<(?P<args>.*)>)?(?:\[(?P<size>[^\[\]]*)\])?$")

HEADER_METHODS = (("isValid", 0, "bool"), ("setValid", 0, None), ("setInvalid", 0, None))
UNION_METHODS = (("isValid", 0, "bool"),)
TABLE_RESULT = "__apply_result"
"""The type of ``t.apply()``: its members are hit, miss and action_run."""


@dataclass(frozen=True)
class Member:
    name: str
    type: str | None
    """The member's type (for a method: what it returns)."""
    method: bool = False
    arities: tuple[int, ...] = ()
    mutates: bool = False
    """A method that changes the value (setValid, push_front): needs a writable path."""
    parser_only: bool = False
    index: bool = False
    """An element of a header stack (``[i]``), not a named member."""


@dataclass(frozen=True)
class TypeShape:
    base: str
    args: str | None
    size: str | None


@functools.lru_cache(maxsize=4096)
def shape(type_text: str | None) -> TypeShape | None:
    if not type_text:
        return None
    m = _TYPE_TEXT.match(type_text)
    if m is None:
        return None
    return TypeShape(m.group("base"), m.group("args"), m.group("size"))


class TypeTable:
    def __init__(self, syms: Iterable[Sym] = ()) -> None:
        self.types: dict[str, Sym] = {}
        self._named: dict[str | None, dict[str, Member]] = {}
        """Each type's members by name, made on first use (a diagnostics run asks for a
        member per path step: a list scanned each time made a header of many fields quadratic)."""
        for sym in syms:
            self.add(sym)

    def add(self, sym: Sym) -> None:
        self._named.clear()
        if sym.kind in TYPE_KINDS:
            # a full declaration wins over a type-only one (parser P(...); then parser P(...) {...})
            old = self.types.get(sym.name)
            if old is None or old.kind.endswith("_type") or not sym.kind.endswith("_type"):
                self.types[sym.name] = sym

    def copy(self) -> TypeTable:
        clone = TypeTable()
        clone.types = dict(self.types)
        return clone

    def definition(self, type_text: str | None, depth: int = 0) -> tuple[Sym | None, TypeShape | None]:
        """The declaration a type names, following typedefs (not through stacks)."""
        s = shape(type_text)
        if s is None or depth > 16:
            return None, s
        sym = self.types.get(s.base)
        if sym is not None and sym.kind in ("typedef", "newtype") and s.size is None and sym.type:
            return self.definition(sym.type, depth + 1)
        return sym, s

    def members(self, type_text: str | None) -> list[Member]:
        if type_text == TABLE_RESULT:
            return [Member("hit", "bool"), Member("miss", "bool"), Member("action_run", None)]
        sym, s = self.definition(type_text)
        if s is None:
            return []
        if s.size is not None:
            element = f"{s.base}<{s.args}>" if s.args else s.base
            return [
                Member("[]", element, index=True),
                Member("next", element, parser_only=True),
                Member("last", element),
                Member("lastIndex", "bit<32>"),
                Member("nextIndex", "bit<32>", parser_only=True),
                Member("size", "int"),
                Member("push_front", None, method=True, arities=(1,), mutates=True),
                Member("pop_front", None, method=True, arities=(1,), mutates=True),
            ]
        if sym is None:
            return []
        if sym.kind in ("header", "header_union", "struct"):
            fields = [Member(f.name, f.type) for f in sym.members]
            if sym.kind == "header":
                fields += [Member(n, r, method=True, arities=(a,), mutates=n != "isValid") for n, a, r in HEADER_METHODS]
            elif sym.kind == "header_union":
                fields += [Member(n, r, method=True, arities=(a,)) for n, a, r in UNION_METHODS]
            return fields
        if sym.kind == "extern":
            result: dict[str, Member] = {}
            for method in sym.members:
                if method.kind != "method":
                    continue
                arities = set(method.arities())
                if method.name in result:
                    arities |= set(result[method.name].arities)
                result[method.name] = Member(method.name, method.returns, method=True, arities=tuple(sorted(arities)))
            return list(result.values())
        if sym.kind in ("parser", "parser_type", "control", "control_type"):
            return [Member("apply", None, method=True, arities=sym.arities())]
        return []

    def member(self, type_text: str | None, name: str) -> Member | None:
        named = self._named.get(type_text)
        if named is None:
            named = self._named[type_text] = {}
            for member in self.members(type_text):
                named.setdefault(member.name, member)
        return named.get(name)
