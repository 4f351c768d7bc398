"""Class members read statically: what ``self.``, ``cls.``, ``Box.`` and an instance of
``Box`` may be followed by.

A class's *shape* is what its own body says: the names assigned or defined in the
class body (class attributes, methods, properties), the attributes its methods assign
through their first parameter (``self.size = ...`` in any method, nested blocks and
functions included), its bases as written, and its constructor's keyword names. Two
readers make shapes: one from a tree-sitter ``class_definition`` (the document being
edited: the tree may hold errors), one from an ``ast.ClassDef`` (installed sources and
stubs). Neither runs anything.

A shape is *dynamic* when a member may exist that no statement names: the class
defines ``__getattr__``/``__getattribute__``, has a metaclass, or is decorated with
something that may add members (a dataclass adds none that matter for attributes; any
other decorator does). ``members.py`` combines shapes along the static MRO; a dynamic
shape or a base it cannot resolve leaves the receiver open.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

OBJECT_INSTANCE = frozenset(dir(object)) | {"__dict__", "__module__", "__weakref__"}
"""What every instance of a class defined in Python has (``object``'s attributes)."""

CLASS_OBJECT = OBJECT_INSTANCE | frozenset(dir(type)) - {"__abstractmethods__"}
"""What every class object has (``type``'s attributes as well)."""

SIGNATURE_KEEPING = frozenset({"staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "cache",
                               "functools.cache", "lru_cache", "functools.lru_cache", "final", "typing.final",
                               "override", "typing.override", "typing_extensions.override", "overload",
                               "typing.overload", "typing_extensions.overload", "abc.abstractclassmethod",
                               "abc.abstractstaticmethod"})
"""Decorators that leave a function's signature as written (any other one may change it)."""

DYNAMIC_DUNDERS = frozenset({"__getattr__", "__getattribute__"})

PLAIN_METACLASSES = frozenset({"type", "ABCMeta", "abc.ABCMeta", "EnumMeta", "EnumType", "enum.EnumMeta",
                               "enum.EnumType", "_ProtocolMeta", "typing._ProtocolMeta"})
"""Metaclasses known to add no attribute a class's body does not name (abstract classes,
enums, protocols); any other metaclass may."""


@dataclass(frozen=True)
class Callee:
    """A function's keyword names (None: unknown, e.g. ``**kwargs`` or a decorator)."""

    keywords: tuple[str, ...] | None


@dataclass(frozen=True)
class ClassShape:
    name: str
    class_members: Mapping[str, str]
    """Names of the class body (and their kind: method, property, class, attribute)."""
    instance_members: Mapping[str, str]
    """Attributes assigned through ``self`` in methods (kind ``attribute``)."""
    bases: tuple[str, ...]
    """The bases as written (``Base``, ``mod.Base``; subscripts dropped: ``Generic[T]`` is ``Generic``)."""
    init_keywords: tuple[str, ...] | None | bool = False
    """The keyword names of the class's own ``__init__`` (or ``__new__``); False when it
    defines neither (inherited), None when they cannot be known (``**kwargs``, a decorator)."""
    dynamic: str | None = None
    """Why members may exist that no statement names (None: they cannot)."""
    method_keywords: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    """Each method's keyword names, as called on an instance (None: unknown)."""


def keywords_of(params: Iterable[tuple[str, str]], drop_first: bool) -> tuple[str, ...] | None:
    """Keyword names from ``(name, kind)`` parameters in order, kind one of ``positional``,
    ``posonly``, ``keyword``, ``*args``, ``**kwargs``; None when ``**kwargs`` takes any."""
    names: list[str] = []
    for index, (name, kind) in enumerate(params):
        if drop_first and index == 0 and kind in ("positional", "posonly"):
            continue
        if kind == "**kwargs":
            return None
        if kind in ("positional", "keyword"):
            names.append(name)
    return tuple(sorted(set(names)))


def merge_keywords(found: Iterable[tuple[str, ...] | None]) -> tuple[str, ...] | None:
    """Overloads of one function: any keyword of any of them (None if one is unknown)."""
    out: set[str] = set()
    for keywords in found:
        if keywords is None:
            return None
        out.update(keywords)
    return tuple(sorted(out))


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` (its body never runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Subscript):
        return _dotted(expr.value)
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and (head := _dotted(expr.value)) is not None:
        return f"{head}.{expr.attr}"
    return None


# -- from ast (installed sources and stubs) ----------------------------------------------------


def ast_keywords(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> tuple[str, ...] | None:
    args = fn.args
    params = [(a.arg, "posonly") for a in args.posonlyargs] + [(a.arg, "positional") for a in args.args]
    if args.vararg is not None:
        params.append((args.vararg.arg, "*args"))
    params += [(a.arg, "keyword") for a in args.kwonlyargs]
    if args.kwarg is not None:
        params.append((args.kwarg.arg, "**kwargs"))
    decorators = {_dotted(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list}
    return keywords_of(params, method and "staticmethod" not in decorators)


def ast_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[str, ...]:
    return tuple(d for d in (_dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d)


def shape_from_ast(node: ast.ClassDef, stub: bool, truth: Callable[[ast.expr], bool | None] | None = None) -> ClassShape:
    """A class of an installed module. In a stub, decorators describe the result (a stub
    function's signature is the one to call); in a source, an unknown decorator on a
    function hides its signature and one on the class may add members. ``truth`` says
    whether an ``if`` test holds for the interpreter (``sys.version_info >= (3, 12)``;
    None: unknown, both branches count)."""
    class_members: dict[str, str] = {}
    instance: dict[str, str] = {}
    methods: dict[str, list[tuple[str, ...] | None]] = {}
    inits: list[tuple[str, ...] | None] = []
    news: list[tuple[str, ...] | None] = []

    def body(statements: list[ast.stmt]) -> None:
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = ast_decorators(stmt)
                class_members.setdefault(stmt.name, "property" if _is_property(decorators) else "method")
                keywords = ast_keywords(stmt, method=True)
                if not stub and any(d not in SIGNATURE_KEEPING for d in decorators):
                    keywords = None
                methods.setdefault(stmt.name, []).append(keywords)
                if stmt.name == "__init__":
                    inits.append(keywords)
                elif stmt.name == "__new__":
                    news.append(keywords)
                if not stub:
                    _self_attributes(stmt, instance)
            elif isinstance(stmt, ast.ClassDef):
                class_members.setdefault(stmt.name, "class")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            class_members.setdefault(name.id, "attribute")
            elif isinstance(stmt, ast.If) and truth is not None and (holds := truth(stmt.test)) is not None:
                body(stmt.body if holds else stmt.orelse)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For)):
                body(stmt.body)
                body(getattr(stmt, "orelse", []))
                body(getattr(stmt, "finalbody", []))
                for handler in getattr(stmt, "handlers", []):
                    body(handler.body)

    body(node.body)
    bases = tuple(b for b in (_dotted(x) for x in node.bases) if b)
    dynamic = None
    if DYNAMIC_DUNDERS & set(class_members):
        dynamic = "the class defines __getattr__"
    elif any(k.arg == "metaclass" and _dotted(k.value) not in PLAIN_METACLASSES for k in node.keywords):
        dynamic = "the class has a metaclass"
    elif not stub and (others := [d for d in ast_decorators(node) if d not in _CLASS_DECORATORS_KEEPING_MEMBERS]):
        dynamic = f"the class is decorated with {others[0]}"
    init: tuple[str, ...] | None | bool = False
    if inits:
        init = merge_keywords(inits)
    elif news:
        init = merge_keywords(news)
    if not stub and any(d in ("dataclass", "dataclasses.dataclass", "attrs.define", "attr.s") for d in ast_decorators(node)):
        init = None  # the generated __init__ takes the fields
    return ClassShape(node.name, class_members, instance, bases, init, dynamic,
                      {name: merge_keywords(found) for name, found in methods.items()})


_CLASS_DECORATORS_KEEPING_MEMBERS = frozenset({"dataclass", "dataclasses.dataclass", "final", "typing.final",
                                               "total_ordering", "functools.total_ordering", "unique", "enum.unique",
                                               "runtime_checkable", "typing.runtime_checkable"})


def _is_property(decorators: Iterable[str]) -> bool:
    return any(d in ("property", "functools.cached_property", "cached_property") or d.endswith(".setter")
               or d.endswith(".getter") or d.endswith(".deleter") for d in decorators)


def _self_attributes(fn: ast.FunctionDef | ast.AsyncFunctionDef, into: dict[str, str]) -> None:
    args = fn.args.posonlyargs + fn.args.args
    if not args or "staticmethod" in ast_decorators(fn):
        return
    first = args[0].arg
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == first:
                    into.setdefault(part.attr, "attribute")


# -- from a tree-sitter tree (the document) ---------------------------------------------------------


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _tree_dotted(node: Any) -> str | None:
    if node is None:
        return None
    if node.type == "subscript":
        return _tree_dotted(node.child_by_field_name("value"))
    if node.type == "generic_type":  # tree-sitter reads `Generic[T]` in a class header as a type
        return _tree_dotted(node.named_children[0]) if node.named_children else None
    if node.type == "identifier":
        return _text(node)
    if node.type == "attribute":
        head = _tree_dotted(node.child_by_field_name("object"))
        attr = node.child_by_field_name("attribute")
        return f"{head}.{_text(attr)}" if head and attr is not None else None
    return None


def tree_parameters(params: Any) -> list[tuple[str, str]]:
    """``(name, kind)`` of a tree-sitter ``parameters`` node, in order."""
    out: list[tuple[str, str]] = []
    keyword_only = False
    for p in params.named_children if params is not None else ():
        kind, ident = "keyword" if keyword_only else "positional", None
        if p.type == "identifier":
            ident = p
        elif p.type in ("default_parameter", "typed_default_parameter"):
            ident = p.child_by_field_name("name")
        elif p.type == "typed_parameter":
            for child in p.named_children:
                if child.type == "identifier":
                    ident = child
                elif child.type in ("list_splat_pattern", "dictionary_splat_pattern"):
                    kind = "*args" if child.type == "list_splat_pattern" else "**kwargs"
                    ident = next((c for c in child.named_children if c.type == "identifier"), None)
        elif p.type in ("list_splat_pattern", "dictionary_splat_pattern"):
            kind = "*args" if p.type == "list_splat_pattern" else "**kwargs"
            ident = next((c for c in p.named_children if c.type == "identifier"), None)
        elif p.type == "keyword_separator":
            keyword_only = True
            continue
        elif p.type == "positional_separator":
            out = [(n, "posonly" if k == "positional" else k) for n, k in out]
            continue
        if kind == "*args":
            keyword_only = True
        if ident is not None or kind in ("*args", "**kwargs"):
            out.append((_text(ident) if ident is not None else "", kind))
    return out


def tree_decorators(node: Any) -> tuple[str, ...]:
    """Decorators of a tree-sitter function or class definition (its ``decorated_definition`` parent's)."""
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    found = []
    for child in parent.named_children:
        if child.type == "decorator" and child.named_children:
            expr = child.named_children[0]
            if expr.type == "call":
                expr = expr.child_by_field_name("function")
            if (name := _tree_dotted(expr)) is not None:
                found.append(name)
    return tuple(found)


def function_keywords(fn: Any, method: bool) -> tuple[str, ...] | None:
    """Keyword names of a tree-sitter ``function_definition`` (None: unknown)."""
    decorators = tree_decorators(fn)
    if any(d not in SIGNATURE_KEEPING for d in decorators):
        return None
    return keywords_of(tree_parameters(fn.child_by_field_name("parameters")), method and "staticmethod" not in decorators)


_BLOCKS = frozenset({"block", "if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                     "except_group_clause", "finally_clause", "with_statement", "for_statement", "while_statement",
                     "decorated_definition", "match_statement", "case_clause"})


def shape_from_tree(node: Any) -> ClassShape:
    """A class of the document, from its tree-sitter ``class_definition`` (errors tolerated:
    what is inside an ERROR node is not read)."""
    class_members: dict[str, str] = {}
    instance: dict[str, str] = {}
    methods: dict[str, list[tuple[str, ...] | None]] = {}
    inits: list[tuple[str, ...] | None] = []
    news: list[tuple[str, ...] | None] = []

    def walk(block: Any) -> None:
        for child in block.named_children if block is not None else ():
            kind = child.type
            if kind == "function_definition":
                name = _text(child.child_by_field_name("name"))
                decorators = tree_decorators(child)
                class_members.setdefault(name, "property" if _is_property(decorators) else "method")
                keywords = function_keywords(child, method=True)
                methods.setdefault(name, []).append(keywords)
                if name == "__init__":
                    inits.append(keywords)
                elif name == "__new__":
                    news.append(keywords)
                _tree_self_attributes(child, instance)
            elif kind == "class_definition":
                class_members.setdefault(_text(child.child_by_field_name("name")), "class")
            elif kind == "expression_statement":
                for part in child.named_children:
                    if part.type == "assignment":
                        _tree_targets(part.child_by_field_name("left"), class_members)
            elif kind in _BLOCKS:
                walk(child)

    walk(node.child_by_field_name("body"))
    bases_node = node.child_by_field_name("superclasses")
    bases, dynamic = [], None
    for arg in bases_node.named_children if bases_node is not None else ():
        if arg.type == "keyword_argument":
            if _text(arg.child_by_field_name("name")) == "metaclass" and \
                    _tree_dotted(arg.child_by_field_name("value")) not in PLAIN_METACLASSES:
                dynamic = "the class has a metaclass"
            continue
        if (name := _tree_dotted(arg)) is not None:
            bases.append(name)
        else:
            dynamic = f"a base is not a name ({_text(arg)[:40]})"
    if DYNAMIC_DUNDERS & set(class_members):
        dynamic = "the class defines __getattr__"
    decorators = tree_decorators(node)
    if dynamic is None and (others := [d for d in decorators if d not in _CLASS_DECORATORS_KEEPING_MEMBERS]):
        dynamic = f"the class is decorated with {others[0]}"
    init: tuple[str, ...] | None | bool = merge_keywords(inits) if inits else (merge_keywords(news) if news else False)
    if any(d in ("dataclass", "dataclasses.dataclass") for d in decorators):
        init = None
    return ClassShape(_text(node.child_by_field_name("name")), class_members, instance, tuple(bases), init,
                      dynamic, {name: merge_keywords(found) for name, found in methods.items()})


def _tree_targets(target: Any, into: dict[str, str]) -> None:
    if target is None:
        return
    if target.type == "identifier":
        into.setdefault(_text(target), "attribute")
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list"):
        for child in target.named_children:
            _tree_targets(child, into)


def _tree_self_attributes(fn: Any, into: dict[str, str]) -> None:
    """``<first parameter>.name`` assigned anywhere in method ``fn`` (nested functions too)."""
    params = tree_parameters(fn.child_by_field_name("parameters"))
    if not params or params[0][1] not in ("positional", "posonly") or "staticmethod" in tree_decorators(fn):
        return
    first = params[0][0]
    stack = [fn.child_by_field_name("body")]
    while stack:
        node = stack.pop()
        if node is None or node.type == "ERROR":
            continue
        targets = []
        if node.type in ("assignment", "augmented_assignment"):
            targets = [node.child_by_field_name("left")]
        elif node.type in ("for_statement", "for_in_clause"):
            targets = [node.child_by_field_name("left")]
        elif node.type == "as_pattern_target":
            targets = node.named_children
        for target in targets:
            for attr in _attributes_in(target):
                obj = attr.child_by_field_name("object")
                if obj is not None and obj.type == "identifier" and _text(obj) == first:
                    into.setdefault(_text(attr.child_by_field_name("attribute")), "attribute")
        stack.extend(node.named_children)


def _attributes_in(target: Any):
    if target is None:
        return
    if target.type == "attribute":
        yield target
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list",
                         "parenthesized_expression", "list_splat_pattern"):
        for child in target.named_children:
            yield from _attributes_in(child)
