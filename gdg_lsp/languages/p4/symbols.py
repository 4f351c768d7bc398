"""From P4 parse trees to declarations, scopes and references (one file).

``bind`` walks the trees ``p4_parser`` produces and records, with absolute
offsets:

- every declaration as a ``Sym`` (kind, name, type text, parameters with
  direction and type, fields, methods, enum members, a table's actions...);
- the lexical ``Scope`` tree (file, parser, control, action, function, state,
  table, block) with the declarations each scope makes and where each becomes
  visible (P4 declares before use; a parser's states are visible throughout it);
- every ``Ref``: a name or a dotted path used as a value, a type, a parser
  state, an action in a table, or a match kind; for diagnostics.

Types are kept as their source text without blanks (``bit<8>``, ``ipv4_t``,
``srcRoute_t[MAX_HOPS]``); ``p4_types`` interprets them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lark import Token, Tree

from gdg_lsp.languages.p4.parser import PLACED, Program


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    direction: str | None
    has_default: bool
    start: int


@dataclass
class Sym:
    name: str
    kind: str
    start: int
    """Offset of the name."""
    end: int
    """End of the declaration: a local is visible from here on."""
    type: str | None = None
    direction: str | None = None
    params: tuple[Param, ...] = ()
    ctor_params: tuple[Param, ...] = ()
    type_params: tuple[str, ...] = ()
    members: list[Sym] = field(default_factory=list)
    returns: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    uri: str | None = None

    def arities(self, params: tuple[Param, ...] | None = None) -> tuple[int, ...]:
        """The argument counts a call may have (parameters with defaults are optional)."""
        params = self.params if params is None else params
        required = sum(1 for p in params if not p.has_default)
        return tuple(range(required, len(params) + 1))


@dataclass
class Scope:
    kind: str  # file | parser | control | action | function | state | block | table | extern
    name: str | None
    start: int
    end: int
    parent: Scope | None = None
    syms: list[Sym] = field(default_factory=list)
    children: list[Scope] = field(default_factory=list)
    forward: bool = False
    """Every name of the scope is visible everywhere in it (a parser's states)."""

    def chain(self) -> Iterator[Scope]:
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def innermost(self, offset: int) -> Scope:
        for child in self.children:
            if child.start <= offset < child.end or (child.start <= offset == child.end and child.end == self.end):
                return child.innermost(offset)
        return self

    def describe(self) -> str:
        return self.kind if self.name is None else f"{self.kind} {self.name}"


@dataclass
class Ref:
    kind: str  # value | type | state | match_kind | action | error | type_member
    segments: tuple[tuple[str, int, int], ...]
    """(name, start, end) of the root and of each member; an index is ("[]", ...)."""
    scope: Scope
    call_args: int | None = None
    writes: bool = False


@dataclass
class Unit:
    """One file's declarations, scopes and references."""

    uri: str | None
    code: str
    program: Program
    scope: Scope
    top: list[Sym]
    refs: list[Ref]

    def top_before(self, offset: int) -> list[Sym]:
        return [s for s in self.top if s.start < offset]


# -- helpers over trees ----------------------------------------------------------------


def _tokens(node: Any) -> Iterator[Token]:
    if isinstance(node, Token):
        yield node
    elif isinstance(node, Tree):
        for child in node.children:
            yield from _tokens(child)


def _first_token(node: Any) -> Token | None:
    return next(_tokens(node), None)


def _child(node: Tree, data: str) -> Tree | None:
    for child in node.children:
        if isinstance(child, Tree) and child.data == data:
            return child
    return None


def _children(node: Tree, data: str) -> list[Tree]:
    return [c for c in node.children if isinstance(c, Tree) and c.data == data]


_TYPE_NODES = {"named_type", "specialized_type", "stack_type", "tuple_type", "bool_type", "error_type",
               "string_type", "int_type", "bit_type", "varbit_type", "void_type", "dont_care", "unknown_type"}


class _Binder:
    def __init__(self, program: Program, code: str, uri: str | None, focus: int | None = None) -> None:
        self.code = code
        self.uri = uri
        self.program = program
        self.focus = focus
        self.offset = 0
        self.item_end = len(code)
        self.refs: list[Ref] = []
        self.file_scope = Scope("file", None, 0, len(code) + 1)
        self.top: list[Sym] = []

    # positions (trees are relative to their top-level item)
    def pos(self, node: Any) -> tuple[int, int]:
        if isinstance(node, Token):
            return node.start_pos + self.offset, node.end_pos + self.offset
        meta = node.meta
        if getattr(meta, "empty", True):
            return self.offset, self.offset
        # an unclosed body (a program cut inside it) still contains the offset where the text ends
        end = meta.end_pos + self.offset + getattr(meta, "unclosed", False)
        return min(meta.start_pos + self.offset, self.item_end), min(end, self.item_end + 1)

    def members(self, body: Tree | None) -> Iterator[Any]:
        """The items of ``body``. A body parsed piece by piece holds each item in a ``placed``
        node whose item has positions of its own: while the caller binds that item, the
        offset is the piece's start (the caller binds each item before asking for the next)."""
        if body is None:
            return
        outer = self.offset
        for child in body.children:
            if isinstance(child, Tree) and child.data == PLACED:
                self.offset = outer + child.meta.start_pos
                yield child.children[0]
                self.offset = outer
            else:
                yield child

    def text(self, node: Any) -> str:
        start, end = self.pos(node)
        return re.sub(r"\s+", "", self.code[start:end])

    def name(self, node: Tree | None) -> tuple[str, int, int]:
        tok = _first_token(node) if node is not None else None
        if tok is None:
            return "", self.offset, self.offset
        return str(tok), tok.start_pos + self.offset, tok.end_pos + self.offset

    def type_text(self, node: Any) -> str:
        if isinstance(node, Token):
            return str(node)
        return self.text(node)

    def type_node(self, node: Tree) -> Any:
        for child in node.children:
            if isinstance(child, Tree) and child.data in _TYPE_NODES:
                return child
            if isinstance(child, Token) and child.type == "VOID":
                return child
        return None

    # -- the walk ---------------------------------------------------------------------

    def run(self) -> Unit:
        for item in self.program.items:
            if item.tree is None:
                continue
            self.offset = item.start
            self.item_end = item.end
            tree = item.tree
            if tree.data == "start":
                for child in tree.children:
                    self.declaration(child, self.file_scope, top=True)
            else:
                self.declaration(tree, self.file_scope, top=True)
        return Unit(self.uri, self.code, self.program, self.file_scope, self.top, self.refs)

    def declare(self, scope: Scope, sym: Sym, top: bool = False) -> Sym:
        sym.uri = self.uri
        scope.syms.append(sym)
        if top:
            self.top.append(sym)
        return sym

    def params(self, node: Tree | None, scope: Scope | None) -> tuple[Param, ...]:
        if node is None:
            return ()
        result = []
        for param in _children(node, "param"):
            direction = _child(param, "direction")
            type_node = self.type_node(param)
            name, start, _ = self.name(_child(param, "name"))
            has_default = len([c for c in param.children if isinstance(c, Tree)]) > (3 if direction else 2)
            if type_node is not None and scope is not None:
                self.type_refs(type_node, scope)
            result.append(Param(name, self.type_text(type_node) if type_node is not None else "",
                                str(_first_token(direction)) if direction else None, has_default, start))
        return tuple(result)

    def type_params(self, node: Tree) -> tuple[str, ...]:
        tp = _child(node, "type_params")
        return tuple(self.name(n)[0] for n in _children(tp, "name")) if tp else ()

    def declaration(self, node: Any, scope: Scope, top: bool = False) -> None:
        if not isinstance(node, Tree):
            return
        kind = node.data
        start, end = self.pos(node)
        handler = getattr(self, f"d_{kind}", None)
        if handler is not None:
            handler(node, scope, top, start, end)
        elif kind in ("empty",):
            return
        else:  # a statement in a body
            self.statement(node, scope)

    # types
    def _fields(self, node: Tree, scope: Scope, parent: str) -> list[Sym]:
        fields = []
        body = _child(node, "field_body")
        for f in _children(body, "struct_field") if body else []:
            type_node = self.type_node(f)
            name, s, e = self.name(_child(f, "name"))
            if type_node is not None:
                self.type_refs(type_node, scope)
            fields.append(Sym(name, "field", s, e, type=self.type_text(type_node) if type_node is not None else "",
                              info={"parent": parent}, uri=self.uri))
        return fields

    def _type_decl(self, kind: str, node: Tree, scope: Scope, top: bool, end: int) -> None:
        name, s, _ = self.name(_child(node, "name"))
        sym = Sym(name, kind, s, end, type_params=self.type_params(node))
        sym.members = self._fields(node, scope, name)
        self.declare(scope, sym, top)

    def d_header_decl(self, node, scope, top, start, end):
        self._type_decl("header", node, scope, top, end)

    def d_header_union_decl(self, node, scope, top, start, end):
        self._type_decl("header_union", node, scope, top, end)

    def d_struct_decl(self, node, scope, top, start, end):
        self._type_decl("struct", node, scope, top, end)

    def _enum(self, node: Tree, scope: Scope, top: bool, end: int, kind: str, underlying: str | None) -> None:
        name, s, _ = self.name(_child(node, "name"))
        sym = Sym(name, kind, s, end, type=underlying)
        body = _child(node, "enum_body")
        for member in _children(body, "enum_member") if body else []:
            mname, ms, me = self.name(_child(member, "name"))
            for expr in member.children[1:]:
                self.expression(expr, scope)
            sym.members.append(Sym(mname, "enum_member", ms, me, info={"parent": name}, uri=self.uri))
        self.declare(scope, sym, top)

    def d_enum_decl(self, node, scope, top, start, end):
        self._enum(node, scope, top, end, "enum", None)

    def d_ser_enum_decl(self, node, scope, top, start, end):
        type_node = self.type_node(node)
        if type_node is not None:
            self.type_refs(type_node, scope)
        self._enum(node, scope, top, end, "ser_enum", self.type_text(type_node) if type_node is not None else None)

    def _alias(self, kind: str, node: Tree, scope: Scope, top: bool, end: int) -> None:
        type_node = self.type_node(node)
        if type_node is not None:
            self.type_refs(type_node, scope)
        name, s, _ = self.name(_child(node, "name"))
        self.declare(scope, Sym(name, kind, s, end, type=self.type_text(type_node) if type_node is not None else None), top)

    def d_typedef_decl(self, node, scope, top, start, end):
        self._alias("typedef", node, scope, top, end)

    def d_newtype_decl(self, node, scope, top, start, end):
        self._alias("newtype", node, scope, top, end)

    def _id_list(self, kind: str, node: Tree, scope: Scope, top: bool, end: int) -> None:
        ids = _child(node, "id_list")
        for name_node in _children(ids, "name") if ids else []:
            name, s, e = self.name(name_node)
            self.declare(scope, Sym(name, kind, s, end), top)

    def d_error_decl(self, node, scope, top, start, end):
        self._id_list("error", node, scope, top, end)

    def d_match_kind_decl(self, node, scope, top, start, end):
        self._id_list("match_kind", node, scope, top, end)

    # externs, packages, parser/control types
    def _proto(self, node: Tree, scope: Scope, kind: str, owner: str | None) -> Sym:
        """A function prototype: (return type | void) name type_params? (params)."""
        returns_node = None
        for child in node.children:
            if isinstance(child, Tree) and child.data in _TYPE_NODES or isinstance(child, Token) and child.type == "VOID":
                returns_node = child
                break
        name, s, e = self.name(_child(node, "name"))
        inner = Scope("extern", owner, s, e, scope)
        sym = Sym(name, kind, s, self.pos(node)[1], returns=self.type_text(returns_node) if returns_node is not None else None,
                  type_params=self.type_params(node))
        sym.params = self.params(_child(node, "params"), inner)
        if owner is not None:
            sym.info["parent"] = owner
        return sym

    def d_extern_object(self, node, scope, top, start, end):
        name, s, _ = self.name(_child(node, "extern_name"))
        sym = Sym(name, "extern", s, end, type_params=self.type_params(node))
        body = _child(node, "extern_body")
        for method in body.children if body else []:
            if not isinstance(method, Tree):
                continue
            if method.data == "constructor":
                ctor = Sym(name, "constructor", self.pos(method)[0], self.pos(method)[1], info={"parent": name}, uri=self.uri)
                ctor.params = self.params(_child(method, "params"), None)
                sym.members.append(ctor)
            else:
                proto = _child(method, "function_proto")
                if proto is not None:
                    m = self._proto(proto, scope, "method", name)
                    m.uri = self.uri
                    sym.members.append(m)
        self.declare(scope, sym, top)

    def d_extern_function(self, node, scope, top, start, end):
        sym = self._proto(node, scope, "extern_function", None)
        sym.end = end
        self.declare(scope, sym, top)

    def d_package_decl(self, node, scope, top, start, end):
        name, s, _ = self.name(_child(node, "name"))
        sym = Sym(name, "package", s, end, type_params=self.type_params(node))
        sym.params = self.params(_child(node, "params"), scope)
        self.declare(scope, sym, top)

    def _block_decl(self, node: Tree, scope: Scope, top: bool, start: int, end: int, kind: str) -> None:
        name, s, _ = self.name(_child(node, "name"))
        tail = node.children[-1]
        has_body = isinstance(tail, Tree) and tail.data != "no_body"
        sym = Sym(name, kind if has_body else f"{kind}_type", s, end, type_params=self.type_params(node))
        self.declare(scope, sym, top)
        inner = Scope(kind, name, start, end, scope)
        scope.children.append(inner)
        sym.params = self.params(_child(node, "params"), inner)
        ctor = _child(node, "ctor_params")
        if ctor is not None:
            sym.ctor_params = self.params(_child(ctor, "params"), inner)
        for p in (*sym.params, *sym.ctor_params):
            inner.syms.append(Sym(p.name, "param", p.start, start, type=p.type, direction=p.direction, uri=self.uri,
                                  info={"ctor": p in sym.ctor_params}))
        if not has_body:
            return
        body = _child(tail, f"{kind}_body")
        if kind == "parser":
            inner.forward = False
            states = Scope("states", name, start, end, inner, forward=True)
        for item in self.members(body):
            if isinstance(item, Tree) and item.data == "parser_state":
                self.parser_state(item, inner, states)
            elif isinstance(item, Tree) and item.data == "apply_block":
                self.block(_child(item, "block"), inner, "apply")
            else:
                self.declaration(item, inner)
        if kind == "parser":
            sym.info["states"] = [st.name for st in states.syms]
            inner.syms.extend(states.syms)

    def d_parser_decl(self, node, scope, top, start, end):
        self._block_decl(node, scope, top, start, end, "parser")

    def d_control_decl(self, node, scope, top, start, end):
        self._block_decl(node, scope, top, start, end, "control")

    def parser_state(self, node: Tree, parser: Scope, states: Scope) -> None:
        name, s, e = self.name(_child(node, "name"))
        start, end = self.pos(node)
        states.syms.append(Sym(name, "state", s, e, uri=self.uri))
        inner = Scope("state", name, start, end, parser)
        parser.children.append(inner)
        if not self._holds_focus(node):
            return
        for item in self.members(_child(node, "state_body")):
            self.statement(item, inner)

    def d_action_decl(self, node, scope, top, start, end):
        name, s, _ = self.name(_child(node, "name"))
        sym = Sym(name, "action", s, end)
        self.declare(scope, sym, top)
        inner = Scope("action", name, start, end, scope)
        scope.children.append(inner)
        sym.params = self.params(_child(node, "params"), inner)
        for p in sym.params:
            inner.syms.append(Sym(p.name, "param", p.start, start, type=p.type, direction=p.direction, uri=self.uri))
        block = _child(node, "block")
        if block is not None:
            self.block_items(block, inner)

    def d_function_decl(self, node, scope, top, start, end):
        sym = self._proto(node, scope, "function", None)
        sym.end = end
        self.declare(scope, sym, top)
        inner = Scope("function", sym.name, start, end, scope)
        scope.children.append(inner)
        for p in sym.params:
            inner.syms.append(Sym(p.name, "param", p.start, start, type=p.type, direction=p.direction, uri=self.uri))
        block = _child(node, "block")
        if block is not None:
            self.block_items(block, inner)

    def d_const_decl(self, node, scope, top, start, end):
        type_node = self.type_node(node)
        if type_node is not None:
            self.type_refs(type_node, scope)
        name, s, _ = self.name(_child(node, "name"))
        value = None
        for child in node.children:
            if isinstance(child, Tree) and child.data not in _TYPE_NODES and child.data != "name":
                self.expression(child, scope)
                value = self.text(child)
        sym = Sym(name, "constant", s, end, type=self.type_text(type_node) if type_node is not None else None)
        if value is not None:
            sym.info["value"] = value
        self.declare(scope, sym, top)

    def d_var_decl(self, node, scope, top, start, end):
        type_node = self.type_node(node)
        if type_node is not None:
            self.type_refs(type_node, scope)
        name, s, _ = self.name(_child(node, "name"))
        for child in node.children:
            if isinstance(child, Tree) and child.data not in _TYPE_NODES and child.data != "name":
                self.expression(child, scope)
        self.declare(scope, Sym(name, "variable", s, end, type=self.type_text(type_node) if type_node is not None else None), top)

    def d_instantiation(self, node, scope, top, start, end):
        type_node = self.type_node(node)
        if type_node is not None:
            self.type_refs(type_node, scope)
        args = _child(node, "args")
        if args is not None:
            self.expression(args, scope)
        name, s, _ = self.name(_child(node, "name"))
        self.declare(scope, Sym(name, "instance", s, end, type=self.type_text(type_node) if type_node is not None else None), top)

    def d_value_set_decl(self, node, scope, top, start, end):
        type_node = self.type_node(node)
        name, s, _ = self.name(_child(node, "name"))
        self.declare(scope, Sym(name, "value_set", s, end, type=self.type_text(type_node) if type_node is not None else None), top)

    def d_table_decl(self, node, scope, top, start, end):
        name, s, _ = self.name(_child(node, "name"))
        sym = Sym(name, "table", s, end)
        self.declare(scope, sym, top)
        inner = Scope("table", name, start, end, scope)
        scope.children.append(inner)
        actions: list[str] = []
        keys: list[tuple[str, str]] = []
        body = _child(node, "table_body")
        for prop in body.children if body else []:
            if not isinstance(prop, Tree):
                continue
            if prop.data == "key_property":
                for element in _children(_child(prop, "key_body") or prop, "key_element"):
                    expr, kind_node = element.children[0], _child(element, "name")
                    self.expression(expr, inner)
                    kind, ks, ke = self.name(kind_node)
                    self.refs.append(Ref("match_kind", ((kind, ks, ke),), inner))
                    keys.append((self.text(expr), kind))
            elif prop.data == "actions_property":
                for ref in _children(_child(prop, "actions_body") or prop, "action_ref"):
                    aname = self.prefixed(_child(ref, "prefixed_name"), inner, "action", _child(ref, "args"))
                    actions.append(aname)
            elif prop.data == "entries_property":
                for entry in _children(_child(prop, "entries_body") or prop, "entry"):
                    for child in entry.children:
                        if isinstance(child, Tree) and child.data == "action_call":
                            self.prefixed(_child(child, "prefixed_name"), inner, "action", _child(child, "args"))
                        elif isinstance(child, Tree):
                            self.expression(child, inner)
            elif prop.data == "simple_property":
                pname = next((str(t) for t in prop.children if isinstance(t, Token) and t.type == "IDENTIFIER"), "")
                value = prop.children[-1]
                if pname == "default_action":
                    sym.info["default_action"] = self.text(value)
                self.expression(value, inner)
        sym.info["actions"] = actions
        sym.info["keys"] = keys

    def prefixed(self, node: Tree | None, scope: Scope, kind: str, args: Tree | None) -> str:
        if node is None:
            return ""
        name, s, e = self.name(_child(node, "value_name"))
        argc = None
        if args is not None:
            self.expression(args, scope)
            argc = len(args.children)
        self.refs.append(Ref(kind, ((name, s, e),), scope, argc))
        return name

    # -- statements ---------------------------------------------------------------------

    def block(self, node: Tree | None, scope: Scope, kind: str = "block") -> None:
        if node is None:
            return
        start, end = self.pos(node)
        inner = Scope(kind, None, start, end, scope)
        scope.children.append(inner)
        self.block_items(node, inner)

    def block_items(self, node: Tree, scope: Scope) -> None:
        if not self._holds_focus(node):
            return
        for item in self.members(_child(node, "block_body")):
            self.statement(item, scope)

    def _holds_focus(self, node: Tree) -> bool:
        """Whether a body's statements are bound: always, unless the unit is bound for one
        place (``bind``'s ``focus``) and the body does not hold it."""
        if self.focus is None:
            return True
        start, end = self.pos(node)
        return start <= self.focus <= end

    def statement(self, node: Any, scope: Scope) -> None:
        if not isinstance(node, Tree):
            return
        kind = node.data
        if kind in ("const_decl", "var_decl", "instantiation", "value_set_decl"):
            self.declaration(node, scope)
        elif kind == "assignment":
            self.expression(node.children[0], scope, writes=True)
            self.expression(node.children[-1], scope)
        elif kind == "call_statement":
            args = _child(node, "args")
            self.expression(node.children[0], scope, call_args=len(args.children) if args is not None else 0)
            for child in node.children[1:]:
                if isinstance(child, Tree):
                    self.expression(child, scope) if child.data == "args" else self.type_refs(child, scope)
        elif kind == "direct_application":
            tname, s, e = self.name(_child(node, "type_name"))
            args = _child(node, "args")
            self.refs.append(Ref("type_member", ((tname, s, e), ("apply", e, e)), scope,
                                 len(args.children) if args is not None else 0))
            if args is not None:
                self.expression(args, scope)
        elif kind == "if_statement":
            self.expression(node.children[0], scope)
            for child in node.children[1:]:
                self.nested(child, scope)
        elif kind == "block":
            self.block(node, scope)
        elif kind == "switch_statement":
            self.expression(node.children[0], scope)
            body = _child(node, "switch_body")
            for case in _children(body, "switch_case") if body else []:
                label = case.children[0]
                if isinstance(label, Tree) and label.data != "default_label":
                    self.expression(label.children[0] if label.data == "switch_label" else label, scope)
                block = _child(case, "block")
                if block is not None:
                    self.block(block, scope)
        elif kind == "return_statement":
            for child in node.children:
                self.expression(child, scope)
        elif kind == "transition":
            self.transition(node, scope)
        elif kind in ("exit_statement", "empty"):
            return
        else:
            self.expression(node, scope)

    def nested(self, node: Any, scope: Scope) -> None:
        """A statement in a branch: a non-block statement still gets its own scope."""
        if isinstance(node, Tree) and node.data != "block":
            start, end = self.pos(node)
            inner = Scope("block", None, start, end, scope)
            scope.children.append(inner)
            self.statement(node, inner)
        else:
            self.statement(node, scope)

    def transition(self, node: Tree, scope: Scope) -> None:
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            if child.data == "state_ref":
                name, s, e = self.name(child)
                self.refs.append(Ref("state", ((name, s, e),), scope))
            elif child.data == "select_expr":
                exprs = _child(child, "expr_list")
                if exprs is not None:
                    self.expression(exprs, scope)
                body = _child(child, "select_body")
                for case in _children(body, "select_case") if body else []:
                    for part in case.children:
                        if isinstance(part, Tree) and part.data == "state_ref":
                            name, s, e = self.name(part)
                            self.refs.append(Ref("state", ((name, s, e),), scope))
                        else:
                            self.expression(part, scope)

    # -- expressions ----------------------------------------------------------------------

    def type_refs(self, node: Any, scope: Scope) -> None:
        if isinstance(node, Token):
            return
        if node.data in ("type_name", "unknown_type"):
            name, s, e = self.name(node)
            self.refs.append(Ref("type", ((name, s, e),), scope))
            return
        if node.data == "width":
            for child in node.children:
                if isinstance(child, Token) and child.type == "IDENTIFIER":
                    self.refs.append(Ref("value", ((str(child), *self.pos(child)),), scope))
                elif isinstance(child, Tree):
                    self.expression(child, scope)
            return
        if node.data == "stack_type":
            self.type_refs(node.children[0], scope)
            self.expression(node.children[1], scope)
            return
        for child in node.children:
            if isinstance(child, Tree):
                self.type_refs(child, scope)

    def path(self, node: Any) -> list[tuple[str, int, int]] | None:
        """The dotted path of an lvalue or member expression, or None if it is not one."""
        if not isinstance(node, Tree):
            return None
        if node.data in ("name_ref", "path_root"):
            value = _child(node, "value_name")
            if value is None:
                return None
            return [self.name(value)]
        if node.data == "member_access":
            base = self.path(node.children[0])
            if base is None:
                return None
            return [*base, self.name(node.children[1])]
        if node.data == "index_access":
            base = self.path(node.children[0])
            if base is None:
                return None
            s, e = self.pos(node)
            return [*base, ("[]", s, e)]
        return None

    def expression(self, node: Any, scope: Scope, call_args: int | None = None, writes: bool = False) -> None:
        if not isinstance(node, Tree):
            return
        kind = node.data
        if kind in ("name_ref", "path_root", "member_access", "index_access"):
            segments = self.path(node)
            if segments is not None:
                self.refs.append(Ref("value", tuple(segments), scope, call_args, writes))
                # index expressions inside the path are references too
                self._path_indexes(node, scope)
                return
            # a member of something that is not a plain path (a call's result, a type member)
            if kind == "member_access":
                self.expression(node.children[0], scope)
                return
            if kind == "index_access":
                for child in node.children:
                    self.expression(child, scope)
                return
        if kind == "slice_access":
            self.expression(node.children[0], scope, writes=writes)
            for child in node.children[1:]:
                self.expression(child, scope)
            return
        if kind == "call":
            args = _child(node, "args")
            self.expression(node.children[0], scope, call_args=len(args.children) if args is not None else 0)
            for child in node.children[1:]:
                if isinstance(child, Tree):
                    if child.data == "args":
                        self.expression(child, scope)
                    elif child.data == "type_args":
                        self.type_refs(child, scope)
            return
        if kind == "error_ref":
            member = self.name(_child(node, "member"))
            s, _ = self.pos(node)
            self.refs.append(Ref("error", (("error", s, s + 5), member), scope))
            return
        if kind == "type_member":
            tname = self.name(_child(node, "type_name"))
            member = self.name(_child(node, "member"))
            self.refs.append(Ref("type_member", (tname, member), scope, call_args))
            return
        if kind == "construct":
            for child in node.children:
                if isinstance(child, Tree):
                    if child.data == "args":
                        self.expression(child, scope)
                    else:
                        self.type_refs(child, scope)
            return
        if kind == "cast":
            self.type_refs(node.children[0], scope)
            self.expression(node.children[1], scope)
            return
        if kind == "named_argument":
            self.expression(node.children[-1], scope)
            return
        if kind == "struct_expression":
            for kv in _children(node, "kv_pair"):
                self.expression(kv.children[-1], scope)
            return
        if kind in _TYPE_NODES or kind == "type_args":
            self.type_refs(node, scope)
            return
        for child in node.children:
            if isinstance(child, Tree):
                self.expression(child, scope)

    def _path_indexes(self, node: Tree, scope: Scope) -> None:
        while isinstance(node, Tree) and node.data in ("member_access", "index_access"):
            if node.data == "index_access":
                self.expression(node.children[1], scope)
            node = node.children[0]


def bind(program: Program, code: str, uri: str | None = None, focus: int | None = None) -> Unit:
    """The unit's declarations, scopes and references. With ``focus`` (an offset), the
    statements of bodies that do not hold it are not bound: what they declare is visible
    only inside them, so Γ at ``focus`` is the same, their references are missing (a hole's
    analysis in a control of 1,400 actions binds one action's statements, not all)."""
    return _Binder(program, code, uri, focus).run()
