"""Class members read statically: what ``self.``, ``cls.``, ``Box.`` and an instance of
``Box`` may be followed by.

A class's *shape* is what its own body says: the names assigned, defined or imported in
the class body (class attributes, methods, properties), the attributes its methods assign
through their first parameter (``self.size = ...`` in any method, nested blocks and
functions included; ``cls.x = ...`` in a classmethod, ``__new__`` or ``__init_subclass__``
is a class attribute), its bases and metaclass as written, and its constructor's keyword
names. Two
readers make shapes: one from a tree-sitter ``class_definition`` (the document being
edited: the tree may hold errors), one from an ``ast.ClassDef`` (installed sources and
stubs). Neither runs anything. Keyword names come from ``signatures.py``.

A shape is *dynamic* when a member may exist that no statement names: the class
defines ``__getattr__``/``__getattribute__``, has a metaclass other than the plain
ones (``ABCMeta``, enums'), is decorated with something that may add members (a
dataclass adds none that matter for attributes; any other decorator does), a method
writes attributes by name (``setattr(self, ...)``, ``self.__dict__.update(...)``,
``vars(self)[k] = ...``), or its ``__slots__`` is not a literal. The names a literal
``__slots__`` lists are attributes. ``members.py`` combines shapes along the static MRO;
a dynamic shape or a base it cannot resolve leaves the receiver open. A shape read from a
stub says so (``stub``): stubs leave private names out. A metaclass other than ``type``
and ``ABCMeta`` may take its own keywords in the class's call (``Enum('E', 'A B',
module=...)``): its constructor keywords are unknown.
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

CALL_KEEPING_METACLASSES = frozenset({"type", "ABCMeta", "abc.ABCMeta"})
"""Metaclasses whose call is the class's ``__new__``/``__init__`` (an enum's takes other keywords)."""


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
    stub: bool = False
    """Read from a stub (which leaves private names out)."""
    metaclass: str | None = None
    """The metaclass as written (``ABCMeta``): its members are the class object's too."""


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
    slots: list[list[str] | None] = []
    writes_by_name: list[str] = []
    elsewhere_init: list[bool] = []

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
                if not stub and (why := _self_attributes(stmt, class_members if _class_level(stmt.name, decorators)
                                                         else instance)):
                    writes_by_name.append(why)
            elif isinstance(stmt, ast.ClassDef):
                class_members.setdefault(stmt.name, "class")
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):  # `from x import walk` in a class body
                for alias in stmt.names:
                    if alias.name != "*":
                        class_members.setdefault(alias.asname or alias.name.split(".")[0], "attribute")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            class_members.setdefault(name.id, "attribute")
                            if name.id == "__slots__" and stmt.value is not None:
                                slots.append(_ast_strings(stmt.value))
            elif isinstance(stmt, ast.If) and truth is not None and (holds := truth(stmt.test)) is not None:
                body(stmt.body if holds else stmt.orelse)
                if _tests_platform(stmt.test) and any(
                        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name in ("__init__", "__new__")
                        for s in ast.walk(ast.Module(stmt.orelse if holds else stmt.body, []))):
                    elsewhere_init.append(True)  # another platform's constructor takes other keywords
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For)):
                body(stmt.body)
                body(getattr(stmt, "orelse", []))
                body(getattr(stmt, "finalbody", []))
                for handler in getattr(stmt, "handlers", []):
                    body(handler.body)

    body(node.body)
    bases = tuple(b for b in (signatures.ast_dotted(x) for x in node.bases) if b)
    dynamic = _slot_members(slots, class_members) or (writes_by_name[0] if writes_by_name else None)
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
    metaclass = next((signatures.ast_dotted(k.value) or "?" for k in node.keywords if k.arg == "metaclass"), None)
    if (metaclass is not None and metaclass not in CALL_KEEPING_METACLASSES) or elsewhere_init:
        init = None
    return ClassShape(node.name, class_members, instance, bases, init, dynamic,
                      {name: signatures.merge_keywords(found) for name, found in methods.items()}, stub, metaclass)


_CLASS_DECORATORS_KEEPING_MEMBERS = frozenset({"dataclass", "dataclasses.dataclass", "final", "typing.final",
                                               "total_ordering", "functools.total_ordering", "unique", "enum.unique",
                                               "runtime_checkable", "typing.runtime_checkable"})


CLASS_LEVEL_METHODS = frozenset({"__new__", "__init_subclass__", "__class_getitem__"})
"""Methods whose first parameter is the class without a ``classmethod`` decorator."""


def _class_level(name: str, decorators: Iterable[str]) -> bool:
    """A method whose first parameter is the class: ``cls.x = ...`` there sets a class attribute."""
    return name in CLASS_LEVEL_METHODS or any(d in ("classmethod", "builtins.classmethod") for d in decorators)


def _is_property(decorators: Iterable[str]) -> bool:
    return any(d in ("property", "functools.cached_property", "cached_property") or d.endswith(".setter")
               or d.endswith(".getter") or d.endswith(".deleter") for d in decorators)


def _tests_platform(test: ast.expr) -> bool:
    """``sys.platform == "win32"``, ``os.name == "nt"``: code elsewhere may be written for the other branch."""
    return any(isinstance(n, ast.Attribute) and (n.attr == "platform" or (
        n.attr == "name" and isinstance(n.value, ast.Name) and n.value.id == "os")) for n in ast.walk(test))


def _ast_strings(value: ast.expr) -> list[str] | None:
    """The strings a literal ``__slots__`` names (None: not a literal of strings)."""
    items = value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else [value]
    if all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items):
        return [item.value for item in items]  # type: ignore[attr-defined]
    return None


def _slot_members(slots: list[list[str] | None], class_members: dict[str, str]) -> str | None:
    """Adds the names of literal ``__slots__`` to the class's members (a slot is a descriptor
    of the class); why the shape is dynamic when one is computed."""
    for names in slots:
        if names is None:
            return "its __slots__ is computed"
        for name in names:
            class_members.setdefault(name, "attribute")
    return None


SETTERS = frozenset({"setattr", "object.__setattr__", "super().__setattr__"})
"""Calls that write an attribute of their first argument by a name no statement spells."""

NAMESPACE_FILLERS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
"""Methods (argparse's) that set an attribute per option on the namespace they are given."""

NAMESPACE_WRITERS = frozenset({"update", "setdefault"})
"""Methods of ``self.__dict__`` / ``vars(self)`` that write attributes by name."""


def _self_attributes(fn: ast.FunctionDef | ast.AsyncFunctionDef, into: dict[str, str]) -> str | None:
    """Adds the attributes ``fn`` assigns through its first parameter; why the class's
    attributes cannot all be known when it writes them by name (``setattr(self, ...)``)."""
    args = fn.args.posonlyargs + fn.args.args
    if not args or "staticmethod" in signatures.ast_decorators(fn):
        return None
    first = args[0].arg
    why = None
    for node in ast.walk(fn):
        if why is None:
            why = _ast_writes_by_name(node, first)
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
    return why


def _ast_writes_by_name(node: ast.AST, first: str) -> str | None:
    """``_tree_writes_by_name`` for ``ast``."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == first:
        callee = _ast_callee(node.func)
        if callee in SETTERS:
            return f"a method writes its attributes by name ({callee})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NAMESPACE_FILLERS \
            and any(isinstance(a, ast.Name) and a.id == first for a in node.args):
        return f"a method passes it to {node.func.attr}, which sets an attribute per option"
    namespace = None
    if isinstance(node, ast.Attribute) and node.attr in NAMESPACE_WRITERS:
        namespace = node.value
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
        namespace = node.value
    if namespace is not None and _ast_namespace_of(namespace, first):
        return "a method writes its attributes by name (its __dict__)"
    return None


def _ast_namespace_of(node: ast.expr, first: str) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id == first
    return (isinstance(node, ast.Call) and signatures.ast_dotted(node.func) == "vars" and len(node.args) == 1
            and isinstance(node.args[0], ast.Name) and node.args[0].id == first)


def _ast_callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and signatures.ast_dotted(func.value.func) == "super":
        return f"super().{func.attr}"
    return signatures.ast_dotted(func)


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
    slots: list[list[str] | None] = []
    writes_by_name: list[str] = []

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
                if why := _tree_self_attributes(child, class_members if _class_level(name, decorators) else instance):
                    writes_by_name.append(why)
            elif kind == "class_definition":
                class_members.setdefault(signatures.text(child.child_by_field_name("name")), "class")
            elif kind in ("import_statement", "import_from_statement"):  # `from x import walk` in a class body
                for name in _tree_imported_names(child):
                    class_members.setdefault(name, "attribute")
            elif kind == "expression_statement":
                for part in child.named_children:
                    if part.type == "assignment":
                        left = part.child_by_field_name("left")
                        _tree_targets(left, class_members)
                        if left is not None and left.type == "identifier" and signatures.text(left) == "__slots__":
                            slots.append(_tree_strings(part.child_by_field_name("right")))
            elif kind in _BLOCKS:
                walk(child)

    walk(node.child_by_field_name("body"))
    bases_node = node.child_by_field_name("superclasses")
    bases: list[str] = []
    dynamic = _slot_members(slots, class_members) or (writes_by_name[0] if writes_by_name else None)
    metaclass = None
    for arg in bases_node.named_children if bases_node is not None else ():
        if arg.type == "keyword_argument":
            if signatures.text(arg.child_by_field_name("name")) == "metaclass":
                metaclass = signatures.tree_dotted(arg.child_by_field_name("value")) or "?"
                if metaclass not in PLAIN_METACLASSES:
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
    if any(d in ("dataclass", "dataclasses.dataclass") for d in decorators) or (
            metaclass is not None and metaclass not in CALL_KEEPING_METACLASSES):
        init = None
    return ClassShape(signatures.text(node.child_by_field_name("name")), class_members, instance, tuple(bases), init,
                      dynamic, {name: signatures.merge_keywords(found) for name, found in methods.items()},
                      metaclass=metaclass)


def _tree_imported_names(node: Any) -> list[str]:
    """The names an import statement binds (``import a.b`` binds ``a``, ``as`` its alias)."""
    module = node.child_by_field_name("module_name")
    out = []
    for child in node.named_children:
        if child == module:
            continue
        if child.type == "aliased_import":
            out.append(signatures.text(child.child_by_field_name("alias")))
        elif child.type == "dotted_name":
            out.append(signatures.text(child).split(".")[0])
    return out


def _tree_targets(target: Any, into: dict[str, str]) -> None:
    if target is None:
        return
    if target.type == "identifier":
        into.setdefault(signatures.text(target), "attribute")
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list"):
        for child in target.named_children:
            _tree_targets(child, into)


def _tree_strings(value: Any) -> list[str] | None:
    """The strings a literal ``__slots__`` names (None: not a literal of plain strings)."""
    if value is None:
        return None
    items = value.named_children if value.type in ("tuple", "list", "set", "parenthesized_expression") else [value]
    names = []
    for item in items:
        if item.type != "string" or any(c.type == "interpolation" for c in item.named_children):
            return None
        content = [c for c in item.named_children if c.type == "string_content"]
        names.append(signatures.text(content[0]) if content else "")
    return names


def _tree_self_attributes(fn: Any, into: dict[str, str]) -> str | None:
    """``<first parameter>.name`` assigned anywhere in method ``fn`` (nested functions too);
    why the class's attributes cannot all be known when it writes them by name."""
    params = signatures.tree_parameters(fn.child_by_field_name("parameters"))
    if not params or params[0][1] not in ("positional", "posonly") or "staticmethod" in signatures.tree_decorators(fn):
        return None
    first = params[0][0]
    why = None
    stack = [fn.child_by_field_name("body")]
    while stack:
        node = stack.pop()
        if node is None or node.type == "ERROR":
            continue
        if why is None:
            why = _tree_writes_by_name(node, first)
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
    return why


def _tree_writes_by_name(node: Any, first: str) -> str | None:
    """``setattr(self, ...)``, ``object.__setattr__(self, ...)``, ``self.__dict__.update(...)``,
    ``vars(self)[name] = ...``: why the method writes attributes no statement names, or None."""
    if node.type == "call":
        args = node.child_by_field_name("arguments")
        given = [a for a in args.named_children if a.type != "comment"] if args is not None else []
        callee = _tree_callee(node.child_by_field_name("function"))
        if given and given[0].type == "identifier" and signatures.text(given[0]) == first and callee in SETTERS:
            return f"a method writes its attributes by name ({callee})"
        method = callee.rsplit(".", 1)[-1] if callee else None
        if method in NAMESPACE_FILLERS and any(a.type == "identifier" and signatures.text(a) == first for a in given):
            return f"a method passes it to {method}, which sets an attribute per option"
    namespace = None
    if node.type == "attribute" and signatures.text(node.child_by_field_name("attribute")) in NAMESPACE_WRITERS:
        namespace = node.child_by_field_name("object")
    elif node.type == "subscript" and node.parent is not None and node.parent.type in ("assignment", "augmented_assignment") \
            and node.parent.child_by_field_name("left") == node:
        namespace = node.child_by_field_name("value")
    if namespace is not None and _tree_namespace_of(namespace, first):
        return "a method writes its attributes by name (its __dict__)"
    return None


def _tree_callee(func: Any) -> str | None:
    if func is not None and func.type == "attribute":
        obj = func.child_by_field_name("object")
        if obj is not None and obj.type == "call" and signatures.text(obj.child_by_field_name("function")) == "super":
            return f"super().{signatures.text(func.child_by_field_name('attribute'))}"
    return signatures.tree_dotted(func)


def _tree_namespace_of(node: Any, first: str) -> bool:
    """``self.__dict__`` or ``vars(self)``."""
    if node.type == "attribute":
        obj = node.child_by_field_name("object")
        return obj is not None and obj.type == "identifier" and signatures.text(obj) == first and \
            signatures.text(node.child_by_field_name("attribute")) == "__dict__"
    if node.type == "call" and signatures.text(node.child_by_field_name("function")) == "vars":
        args = node.child_by_field_name("arguments")
        given = [a for a in args.named_children if a.type != "comment"] if args is not None else []
        return len(given) == 1 and given[0].type == "identifier" and signatures.text(given[0]) == first
    return False


def _attributes_in(target: Any):
    if target is None:
        return
    if target.type == "attribute":
        yield target
    elif target.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "expression_list",
                         "parenthesized_expression", "list_splat_pattern"):
        for child in target.named_children:
            yield from _attributes_in(child)
