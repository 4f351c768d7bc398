"""Class members read statically: what ``self.``, ``cls.``, ``Box.`` and an instance of
``Box`` may be followed by.

A class's *shape* is what its own body says: the names assigned or defined in the
class body (class attributes, methods, properties), the attributes its methods assign
through their first parameter (``self.size = ...`` in any method, nested blocks and
functions included), its bases as written, and its constructor's keyword names. Two
readers make shapes: one from a tree-sitter ``class_definition`` (the document being
edited: the tree may hold errors), one from an ``ast.ClassDef`` (installed sources and
stubs). Neither runs anything. Keyword names come from ``signatures.py``.

A shape is *dynamic* when a member may exist that no statement names: the class
defines ``__getattr__``/``__getattribute__``, has a metaclass other than the plain
ones (``ABCMeta``, enums'), or is decorated with something that may add members (a dataclass adds none that matter for attributes; any
other decorator does). ``members.py`` combines shapes along the static MRO; a dynamic
shape or a base it cannot resolve leaves the receiver open.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.languages.python import signatures

OBJECT_INSTANCE = frozenset(dir(object)) | {"__dict__", "__module__", "__weakref__"}
"""What every instance of a class defined in Python has (``object``'s attributes)."""

CLASS_OBJECT = OBJECT_INSTANCE | frozenset(dir(type)) - {"__abstractmethods__"}
"""What every class object has (``type``'s attributes as well)."""

DYNAMIC_DUNDERS = frozenset({"__getattr__", "__getattribute__"})

PLAIN_METACLASSES = frozenset({"type", "ABCMeta", "abc.ABCMeta", "EnumMeta", "EnumType", "enum.EnumMeta",
                               "enum.EnumType", "_ProtocolMeta", "typing._ProtocolMeta"})
"""Metaclasses known to add no attribute a class's body does not name (abstract classes,
enums, protocols); any other metaclass may."""


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


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` (its body never runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


# -- from ast (installed sources and stubs) ----------------------------------------------------


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
                decorators = signatures.ast_decorators(stmt)
                class_members.setdefault(stmt.name, "property" if _is_property(decorators) else "method")
                keywords = signatures.ast_keywords(stmt, method=True)
                if not stub and any(d not in signatures.SIGNATURE_KEEPING for d in decorators):
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
    bases = tuple(b for b in (signatures.ast_dotted(x) for x in node.bases) if b)
    dynamic = None
    if DYNAMIC_DUNDERS & set(class_members):
        dynamic = "the class defines __getattr__"
    elif any(k.arg == "metaclass" and signatures.ast_dotted(k.value) not in PLAIN_METACLASSES for k in node.keywords):
        dynamic = "the class has a metaclass"
    elif not stub and (others := [d for d in signatures.ast_decorators(node) if d not in _CLASS_DECORATORS_KEEPING_MEMBERS]):
        dynamic = f"the class is decorated with {others[0]}"
    init: tuple[str, ...] | None | bool = False
    if inits:
        init = signatures.merge_keywords(inits)
    elif news:
        init = signatures.merge_keywords(news)
    if not stub and any(d in ("dataclass", "dataclasses.dataclass", "attrs.define", "attr.s") for d in signatures.ast_decorators(node)):
        init = None  # the generated __init__ takes the fields
    return ClassShape(node.name, class_members, instance, bases, init, dynamic,
                      {name: signatures.merge_keywords(found) for name, found in methods.items()})


_CLASS_DECORATORS_KEEPING_MEMBERS = frozenset({"dataclass", "dataclasses.dataclass", "final", "typing.final",
                                               "total_ordering", "functools.total_ordering", "unique", "enum.unique",
                                               "runtime_checkable", "typing.runtime_checkable"})


def _is_property(decorators: Iterable[str]) -> bool:
    return any(d in ("property", "functools.cached_property", "cached_property") or d.endswith(".setter")
               or d.endswith(".getter") or d.endswith(".deleter") for d in decorators)


def _self_attributes(fn: ast.FunctionDef | ast.AsyncFunctionDef, into: dict[str, str]) -> None:
    args = fn.args.posonlyargs + fn.args.args
    if not args or "staticmethod" in signatures.ast_decorators(fn):
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
                name = signatures.text(child.child_by_field_name("name"))
                decorators = signatures.tree_decorators(child)
                class_members.setdefault(name, "property" if _is_property(decorators) else "method")
                keywords = signatures.function_keywords(child, method=True)
                methods.setdefault(name, []).append(keywords)
                if name == "__init__":
                    inits.append(keywords)
                elif name == "__new__":
                    news.append(keywords)
                _tree_self_attributes(child, instance)
            elif kind == "class_definition":
                class_members.setdefault(signatures.text(child.child_by_field_name("name")), "class")
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
            if signatures.text(arg.child_by_field_name("name")) == "metaclass" and \
                    signatures.tree_dotted(arg.child_by_field_name("value")) not in PLAIN_METACLASSES:
                dynamic = "the class has a metaclass"
            continue
        if (name := signatures.tree_dotted(arg)) is not None:
            bases.append(name)
        else:
            dynamic = f"a base is not a name ({signatures.text(arg)[:40]})"
    if DYNAMIC_DUNDERS & set(class_members):
        dynamic = "the class defines __getattr__"
    decorators = signatures.tree_decorators(node)
    if dynamic is None and (others := [d for d in decorators if d not in _CLASS_DECORATORS_KEEPING_MEMBERS]):
        dynamic = f"the class is decorated with {others[0]}"
    init: tuple[str, ...] | None | bool = signatures.merge_keywords(inits) if inits else (signatures.merge_keywords(news) if news else False)
    if any(d in ("dataclass", "dataclasses.dataclass") for d in decorators):
        init = None
    return ClassShape(signatures.text(node.child_by_field_name("name")), class_members, instance, tuple(bases), init,
                      dynamic, {name: signatures.merge_keywords(found) for name, found in methods.items()})


def _tree_targets(target: Any, into: dict[str, str]) -> None:
    if target is None:
        return
    if target.type == "identifier":
        into.setdefault(signatures.text(target), "attribute")
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list"):
        for child in target.named_children:
            _tree_targets(child, into)


def _tree_self_attributes(fn: Any, into: dict[str, str]) -> None:
    """``<first parameter>.name`` assigned anywhere in method ``fn`` (nested functions too)."""
    params = signatures.tree_parameters(fn.child_by_field_name("parameters"))
    if not params or params[0][1] not in ("positional", "posonly") or "staticmethod" in signatures.tree_decorators(fn):
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
                if obj is not None and obj.type == "identifier" and signatures.text(obj) == first:
                    into.setdefault(signatures.text(attr.child_by_field_name("attribute")), "attribute")
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
