"""Python scopes read from a tree-sitter tree: bindings, references, and who sees what.

Visibility follows Python's rules, with textual order where execution order
makes it matter (the same rules pyflakes applies):

- a name bound anywhere in a function is local to the whole function, and is
  unbound before its first binding: it hides outer names there too;
- code directly in a module or class body sees the names bound above it;
- a function body runs later, so it sees all names of enclosing functions and
  of the module, whatever their order;
- a class body's names are not visible in the functions defined inside it;
- comprehension and lambda variables are visible in their whole construct;
- ``global`` and ``nonlocal`` send a name to the module or an enclosing function.

Nothing is executed; the tree may contain errors (tree-sitter recovers around
them, and identifiers inside ERROR nodes are ignored).
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.languages.python import signatures

FUNCTION_LIKE = frozenset({"function", "lambda"})
COMPREHENSIONS = frozenset({"list_comprehension", "set_comprehension", "dictionary_comprehension", "generator_expression"})
# the names a module has without binding them, as pyflakes counts them (``__cached__`` exists at
# run time but pyflakes flags it: a name both tools accept is the safe side of No-Ghost)
MODULE_IMPLICIT = ("__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__", "__builtins__", "__annotations__")
CLASS_IMPLICIT = ("__module__", "__qualname__")
KEYWORDS = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


def builtin_kind(name: str) -> str:
    value = getattr(builtins, name, None)
    if isinstance(value, type):
        return "exception" if issubclass(value, BaseException) else "class"
    if callable(value):
        return "function"
    return "constant"


@dataclass
class Decl:
    """One binding occurrence."""

    name: str
    sort: str
    pos: int  # byte offset from which the binding is in force
    node_start: int  # byte offset of the bound identifier (for hover/origin)
    row: int
    col: int  # byte column
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Scope:
    kind: str  # module | class | function | lambda | comprehension
    name: str
    start: int
    end: int
    parent: Scope | None = None
    children: list[Scope] = field(default_factory=list)
    decls: dict[str, list[Decl]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    star_imports: list[tuple[str, int, int]] = field(default_factory=list)  # (module, level, pos)

    def bind(self, decl: Decl) -> None:
        self.decls.setdefault(decl.name, []).append(decl)

    def first_before(self, name: str, pos: int) -> Decl | None:
        for decl in self.decls.get(name, ()):
            if decl.pos <= pos:
                return decl
        return None

    def first(self, name: str) -> Decl | None:
        decls = self.decls.get(name)
        return decls[0] if decls else None

    def innermost(self, pos: int) -> Scope:
        for child in self.children:
            if child.start <= pos < child.end:
                return child.innermost(pos)
        return self

    def chain(self) -> Iterator[Scope]:
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass
class Reference:
    name: str
    start: int
    end: int
    scope: Scope


@dataclass
class ScopeTree:
    module: Scope
    references: list[Reference]
    source: bytes

    def scope_at(self, pos: int) -> Scope:
        return self.module.innermost(pos)

    def resolve(self, name: str, pos: int, scope: Scope | None = None) -> Decl | str | None:
        """The declaration ``name`` means at byte ``pos``: a Decl, ``"builtin"``,
        ``"star"`` (may come from an unresolved ``import *``), or None (unbound)."""
        scope = scope or self.scope_at(pos)
        ordered = True
        first = True
        for s in scope.chain():
            if s.kind == "class" and not first:
                continue  # class bodies are not visible to nested scopes
            if name in s.globals and s.kind != "module":
                module = s.module()
                decl = module.first(name) if not ordered else (module.first_before(name, pos) or module.first(name))
                return decl or _builtin_or_none(name, module)
            if name in s.nonlocals:
                first = False
                ordered = False
                continue
            if s.kind in ("comprehension", "lambda"):
                if (decl := s.first(name)) is not None:
                    return decl
            elif s.kind == "function":
                if name in s.decls:
                    if not ordered:
                        return s.first(name)
                    return s.first_before(name, pos)  # local anywhere: unbound before its first binding
            else:  # module, class
                if ordered:
                    if (decl := s.first_before(name, pos)) is not None:
                        return decl
                elif (decl := s.first(name)) is not None:
                    return decl
            if s.kind in FUNCTION_LIKE:
                ordered = False  # outer scopes are seen when the body runs, later
            first = False
        return _builtin_or_none(name, scope.module())

    def visible(self, pos: int) -> list[tuple[str, Scope | None, Decl | None]]:
        """Every name visible at ``pos``: (name, owning scope, declaration); a builtin
        has neither owner nor declaration."""
        scope = self.scope_at(pos)
        names: set[str] = set(BUILTIN_NAMES)
        for s in scope.chain():
            names.update(s.decls)
            names.update(s.globals)
        out: list[tuple[str, Scope | None, Decl | None]] = []
        for name in sorted(names):
            found = self.resolve(name, pos, scope)
            if found == "builtin":
                out.append((name, None, None))
            elif isinstance(found, Decl):
                out.append((name, self._owner(found, scope), found))
        return out

    def _owner(self, decl: Decl, scope: Scope) -> Scope | None:
        for s in scope.chain():
            if decl in s.decls.get(decl.name, ()):
                return s
        return scope.module()


BUILTIN_NAMES = frozenset(dir(builtins))
"""The builtins' names (``hasattr(builtins, "__new__")`` is true of any module object, but
``__new__`` is no builtin: a method's class defining it must not make it one in Γ)."""


def _builtin_or_none(name: str, module: Scope) -> str | None:
    if name in BUILTIN_NAMES:
        return "builtin"
    if module.star_imports:
        return "star"
    return None


# -- building --------------------------------------------------------------


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


class _Builder:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.references: list[Reference] = []

    def decl(self, scope: Scope, node: Any, sort: str, pos: int | None = None, **attrs: Any) -> None:
        name = _text(node)
        if not name or (name in KEYWORDS and name not in ("match", "case", "type", "_")):
            return
        if name in scope.nonlocals:
            return  # binds the enclosing function's name, which is already declared
        if name in scope.globals:
            scope = scope.module()
        scope.bind(Decl(name, sort, node.end_byte if pos is None else pos, node.start_byte,
                        node.start_point[0], node.start_point[1], attrs))

    def ref(self, scope: Scope, node: Any) -> None:
        self.references.append(Reference(_text(node), node.start_byte, node.end_byte, scope))

    # targets -----------------------------------------------------------

    def targets(self, scope: Scope, node: Any, sort: str, pos: int, **attrs: Any) -> None:
        """Bind the names in an assignment-like target; visit the rest as references."""
        kind = node.type
        if kind == "identifier":
            self.decl(scope, node, sort, pos, **attrs)
        elif kind in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list", "parenthesized_expression"):
            for child in node.named_children:
                self.targets(scope, child, sort, pos, **attrs)
        elif kind in ("list_splat_pattern", "list_splat", "as_pattern_target"):
            for child in node.named_children:
                self.targets(scope, child, sort, pos, **attrs)
        else:  # attribute, subscript: the object is a reference
            self.visit(node, scope)

    # the walk ------------------------------------------------------------

    def visit(self, node: Any, scope: Scope) -> None:
        handler = getattr(self, "v_" + node.type, None)
        if handler is not None:
            handler(node, scope)
            return
        if node.type == "identifier":
            self.ref(scope, node)
            return
        if node.type == "ERROR":
            self.visit_error(node, scope)
            return
        for child in node.named_children:
            self.visit(child, scope)

    def visit_error(self, node: Any, scope: Scope) -> None:
        # Identifiers directly in an ERROR node are not trusted as references,
        # but well-formed constructs inside it (a def, an assignment) still bind.
        for child in node.named_children:
            if child.type != "identifier":
                self.visit(child, scope)

    def v_decorated_definition(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "decorator":
                self.visit_children(child, scope)
            else:
                self.visit(child, scope)

    def visit_children(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            self.visit(child, scope)

    def v_function_definition(self, node: Any, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        params = node.child_by_field_name("parameters")
        body = node.child_by_field_name("body")
        returns = node.child_by_field_name("return_type")
        is_async = node.children and node.children[0].type == "async"
        if params is not None:  # defaults and annotations run in the enclosing scope
            self.param_exprs(params, scope)
        if returns is not None:
            self.visit(returns, scope)
        inner = Scope("function", _text(name) or "<function>", (params or node).start_byte, node.end_byte, scope)
        scope.children.append(inner)
        if name is not None:
            self.decl(scope, name, "Function", node.end_byte if scope.kind != "class" else node.end_byte,
                      signature=_text(params), returns=_text(returns) or None, is_async=bool(is_async),
                      keywords=signatures.function_keywords(node, method=scope.kind == "class"))
        if params is not None:
            self.params(params, inner)
        if scope.kind == "class":
            inner.bind(Decl("__class__", "Variable", inner.start, inner.start, 0, 0, {"implicit": True}))
        if body is not None:
            self.visit(body, inner)

    def v_lambda(self, node: Any, scope: Scope) -> None:
        params = node.child_by_field_name("parameters")
        body = node.child_by_field_name("body")
        if params is not None:
            self.param_exprs(params, scope)
        inner = Scope("lambda", "<lambda>", node.start_byte, node.end_byte, scope)
        scope.children.append(inner)
        if params is not None:
            self.params(params, inner)
        if body is not None:
            self.visit(body, inner)

    def param_exprs(self, params: Any, scope: Scope) -> None:
        for p in params.named_children:
            for field_name in ("value", "type"):
                child = p.child_by_field_name(field_name)
                if child is not None:
                    self.visit(child, scope)
            if p.type == "typed_parameter":
                for child in p.named_children:
                    if child.type == "type":
                        self.visit(child, scope)

    def params(self, params: Any, inner: Scope) -> None:
        for p in params.named_children:
            splat, ident, annotation, default = signatures.parameter_parts(p)
            kind = splat or "positional"
            if ident is not None and ident.type == "identifier":
                self.decl(inner, ident, "Parameter", inner.start, kind=kind,
                          annotation=_text(annotation) or None, default=_text(default) or None)

    def v_class_definition(self, node: Any, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        bases = node.child_by_field_name("superclasses")
        body = node.child_by_field_name("body")
        if bases is not None:
            self.visit(bases, scope)
        inner = Scope("class", _text(name) or "<class>", body.start_byte if body else node.end_byte, node.end_byte, scope)
        scope.children.append(inner)
        for implicit in CLASS_IMPLICIT:
            inner.bind(Decl(implicit, "Variable", inner.start, inner.start, 0, 0, {"implicit": True}))
        if body is not None:
            self.visit(body, inner)
        if name is not None:
            self.decl(scope, name, "Class", node.end_byte, bases=_text(bases)[1:-1] or None)

    def _comprehension(self, node: Any, scope: Scope) -> None:
        inner = Scope("comprehension", "<comprehension>", node.start_byte, node.end_byte, scope)
        scope.children.append(inner)
        first = True
        for child in node.named_children:
            if child.type == "for_in_clause":
                left = child.child_by_field_name("left")
                right = child.child_by_field_name("right")
                if right is not None:  # the first iterable is evaluated outside
                    self.visit(right, scope if first else inner)
                if left is not None:
                    self.targets(inner, left, "Variable", inner.start, kind="comprehension")
                first = False
        for child in node.named_children:
            if child.type != "for_in_clause":
                self.visit(child, inner)

    v_list_comprehension = _comprehension
    v_set_comprehension = _comprehension
    v_dictionary_comprehension = _comprehension
    v_generator_expression = _comprehension

    def v_assignment(self, node: Any, scope: Scope) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        annotation = node.child_by_field_name("type")
        if annotation is not None:
            self.visit(annotation, scope)
        if right is not None:
            self.visit(right, scope)
        if left is not None:
            call = None  # `x = Box(...)`: an instance of Box, when Box's members are known
            if left.type == "identifier" and right is not None and right.type == "call":
                function = right.child_by_field_name("function")
                if function is not None and function.type in ("identifier", "attribute"):
                    call = _text(function)
            self.targets(scope, left, "Variable", node.end_byte, kind="assignment",
                         annotation=_text(annotation) or None, call=call)

    def v_augmented_assignment(self, node: Any, scope: Scope) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if right is not None:
            self.visit(right, scope)
        if left is not None:
            self.visit(left, scope)

    def v_named_expression(self, node: Any, scope: Scope) -> None:
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("name")
        if value is not None:
            self.visit(value, scope)
        target = scope
        while target.kind == "comprehension" and target.parent is not None:
            target = target.parent  # PEP 572: binds in the enclosing function/module
        if name is not None:
            self.decl(target, name, "Variable", node.end_byte, kind="walrus")

    def v_for_statement(self, node: Any, scope: Scope) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if right is not None:
            self.visit(right, scope)
        if left is not None:
            self.targets(scope, left, "Variable", left.end_byte, kind="for")
        for field_name in ("body", "alternative"):
            child = node.child_by_field_name(field_name)
            if child is not None:
                self.visit(child, scope)

    def v_with_item(self, node: Any, scope: Scope) -> None:
        value = node.child_by_field_name("value")
        if value is not None and value.type == "as_pattern":
            self.as_pattern(value, scope, "with")
        elif value is not None:
            self.visit(value, scope)

    def as_pattern(self, node: Any, scope: Scope, kind: str) -> None:
        alias = node.child_by_field_name("alias")
        for child in node.named_children:
            if child is not alias and (alias is None or child.id != alias.id):
                self.visit(child, scope)
        if alias is not None:
            self.targets(scope, alias, "Variable", alias.end_byte, kind=kind)

    def v_except_clause(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "as_pattern":
                self.as_pattern(child, scope, "except")
            else:
                self.visit(child, scope)

    v_except_group_clause = v_except_clause

    def v_import_statement(self, node: Any, scope: Scope) -> None:
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                alias = child.child_by_field_name("alias")
                module = _text(child.child_by_field_name("name"))
                if alias is not None:
                    self.decl(scope, alias, "Module", node.end_byte, module=module, alias=True)
            elif child.type == "dotted_name" and child.named_children:
                head = child.named_children[0]
                dotted = _text(child)
                self.decl(scope, head, "Module", node.end_byte, module=dotted)
                self._submodule(scope, _text(head), dotted)

    @staticmethod
    def _submodule(scope: Scope, head: str, dotted: str) -> None:
        """``import a.b`` also makes ``a.b`` an attribute of ``a``: the first binding of ``a``
        (the one Γ keeps) lists every such import of the scope (``submodules``)."""
        if "." not in dotted or scope.globals and head in scope.globals:
            return
        first = scope.decls.get(head, [None])[0]
        if first is not None and first.sort == "Module" and not first.attrs.get("alias"):
            known = tuple(first.attrs.get("submodules", ()))
            if dotted not in known:
                first.attrs["submodules"] = tuple(sorted((*known, dotted)))

    def v_import_from_statement(self, node: Any, scope: Scope) -> None:
        module_node = node.child_by_field_name("module_name")
        module = _text(module_node)
        for child in node.named_children:
            if child.type == "wildcard_import":
                level = len(module) - len(module.lstrip("."))
                scope.module().star_imports.append((module.lstrip("."), level, node.end_byte))
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                alias = child.child_by_field_name("alias")
                original = _text(child.child_by_field_name("name"))
                if alias is not None:
                    self.decl(scope, alias, "Import", node.end_byte, module=module, imported=original)
            elif child.type == "dotted_name":
                self.decl(scope, child, "Import", node.end_byte, module=module, imported=_text(child))

    def v_future_import_statement(self, node: Any, scope: Scope) -> None:
        return None

    def v_global_statement(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "identifier":
                scope.globals.add(_text(child))

    def v_nonlocal_statement(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "identifier":
                scope.nonlocals.add(_text(child))

    def v_attribute(self, node: Any, scope: Scope) -> None:
        obj = node.child_by_field_name("object")
        if obj is not None:
            self.visit(obj, scope)

    def v_keyword_argument(self, node: Any, scope: Scope) -> None:
        value = node.child_by_field_name("value")
        if value is not None:
            self.visit(value, scope)

    def v_case_clause(self, node: Any, scope: Scope) -> None:
        for child in node.named_children:
            if child.type == "case_pattern":
                self.pattern(child, scope)
            else:
                self.visit(child, scope)

    def pattern(self, node: Any, scope: Scope) -> None:
        kind = node.type
        if kind == "dotted_name":
            parts = [c for c in node.named_children if c.type == "identifier"]
            if len(parts) == 1 and _text(parts[0]) != "_":
                self.decl(scope, parts[0], "Variable", node.end_byte, kind="match")
            elif parts:
                self.ref(scope, parts[0])
            return
        if kind == "class_pattern":
            for child in node.named_children:
                if child.type == "dotted_name":
                    parts = [c for c in child.named_children if c.type == "identifier"]
                    if parts:
                        self.ref(scope, parts[0])
                else:
                    self.pattern(child, scope)
            return
        if kind == "keyword_pattern":
            children = node.named_children
            for child in children[1:]:
                self.pattern(child, scope)
            return
        if kind in ("splat_pattern",):
            for child in node.named_children:
                if child.type == "identifier" and _text(child) != "_":
                    self.decl(scope, child, "Variable", node.end_byte, kind="match")
            return
        if kind == "as_pattern":
            alias = node.child_by_field_name("alias")
            for child in node.named_children:
                if alias is None or child.id != alias.id:
                    self.pattern(child, scope)
            if alias is not None:
                self.targets(scope, alias, "Variable", node.end_byte, kind="match")
            return
        if kind == "identifier":
            self.decl(scope, node, "Variable", node.end_byte, kind="match")
            return
        for child in node.named_children:
            self.pattern(child, scope)

    # statements whose identifiers are not references
    def v_type_parameter(self, node: Any, scope: Scope) -> None:
        return None

    def v_print_statement(self, node: Any, scope: Scope) -> None:
        return None

    def v_exec_statement(self, node: Any, scope: Scope) -> None:
        return None


def build(tree: Any, source: bytes) -> ScopeTree:
    root = tree.root_node
    module = Scope("module", "<module>", 0, max(root.end_byte, len(source)) + 1)
    for implicit in MODULE_IMPLICIT:
        module.bind(Decl(implicit, "Variable", 0, 0, 0, 0, {"implicit": True}))
    builder = _Builder(source)
    builder.visit_children(root, module)
    return ScopeTree(module, builder.references, source)
