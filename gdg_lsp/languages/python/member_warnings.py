"""Member diagnostics: a read of an attribute its receiver does not have, and a keyword
argument a known callee does not take, each with the closest real name as the quick fix
(``Finding.data["replacement"]``, ``server/code_action.py``).

The receivers are those whose members Γ knows (``members.py``): a module (``os.path.jion``,
a chain followed through module members), ``self``/``cls`` in a method, a class, an
instance (``box = Box()``, a parameter annotated ``Box``). Only reads are judged (an
augmented assignment and ``del`` read); an assignment target declares, and where it may
is the grammar's business. The callees are the document's functions, classes, imported
callables, builtins, and the methods of those receivers, whose keyword names are known
(no ``**kwargs``, no decorator that may change the signature).

No warning where an attribute may exist that no statement names: a class written to by
name (``setattr``...), with ``__getattr__``, an unknown base, metaclass or decorator
(``classes.py``: the receiver is open), a private name of a class whose MRO has a class
read from a stub (stubs leave them out); and, beyond what Γ says, a class named as a mixin
(its attributes are its hosts'), an attribute a subclass of the document defines (an
abstract base reads what its subclasses set), one assigned to any other value in the
document (``k.extra = 1``), one ``hasattr`` asks about, a read inside ``try`` that catches
``AttributeError``, and dunder names (a metaclass's). A name bound more than once in its
scope (``v = A()`` then ``v = B()``; a function defined twice) is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tree_sitter
import tree_sitter_python

from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import Finding
from gdg_lsp.languages.python import classes, scopes, signatures
from gdg_lsp.languages.python import members as python_members
from gdg_lsp.languages.python.coverage import TARGET_CONTAINERS, is_target
from gdg_lsp.languages.python.members import Enclosing, Found, MemberLayer
from gdg_lsp.languages.python.surfaces import SurfaceReader
from gdg_lsp.languages.suggest import closest

ATTRIBUTE = re.compile(rb"[ \t]*\.[ \t]*([A-Za-z_][A-Za-z0-9_]*)")
LANGUAGE = tree_sitter.Language(tree_sitter_python.language())
HASATTR = re.compile(rb"hasattr\(\s*([A-Za-z_][A-Za-z0-9_.]*)\s*,\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")

_FACTS = tree_sitter.Query(LANGUAGE, """
(class_definition) @class
(assignment left: (_) @target)
(augmented_assignment left: (attribute) @rebase)
(assignment left: (attribute) @rebase)
(for_statement left: (_) @target)
(for_in_clause left: (_) @target)
(as_pattern_target) @target
(call) @call
""")
ASSIGNED = re.compile(rb"[ \t]*=(?!=)")



@dataclass
class Probe:
    """What the checks ask of the analyzer about one analysed document."""

    tree: scopes.ScopeTree
    root: Any
    """The tree-sitter root node."""
    reader: SurfaceReader
    layer_at: Callable[[int], tuple[MemberLayer, Gamma]]
    """A member layer and Γ at a byte offset of the document."""
    binding_of: Callable[[scopes.Decl, scopes.Scope], Binding]
    enclosing_at: Callable[[int], Enclosing | None]
    shape_of: Callable[[Any], classes.ClassShape]
    """A class node's shape (kept between analyses by the class's text)."""
    surfaces: dict[tuple, Found | None] = field(default_factory=dict)
    enclosings: dict[int, Enclosing | None] = field(default_factory=dict)
    """The method around each scope's references, by the scope."""

    def enclosing(self, ref: scopes.Reference) -> Enclosing | None:
        if id(ref.scope) not in self.enclosings:
            self.enclosings[id(ref.scope)] = self.enclosing_at(ref.start)
        return self.enclosings[id(ref.scope)]


def findings(probe: Probe) -> list[Finding]:
    """The member and keyword warnings of the document, in order."""
    source = probe.tree.source
    guards = _Guards.read(probe.root, source, probe.shape_of)
    out: list[Finding] = []
    modules = _module_findings(probe)
    for ref in probe.tree.references:
        match = ATTRIBUTE.match(source, ref.end)
        if match is None:
            continue
        node = probe.root.descendant_for_byte_range(ref.start, ref.end)
        attribute = node.parent if node is not None else None
        if attribute is None or attribute.type != "attribute" or attribute.child_by_field_name("object") != node:
            continue
        name = match.group(1).decode("utf-8", "replace")
        receiver = _receiver(probe, ref)
        if receiver is None:
            continue
        surface, what, own = receiver
        call = attribute.parent if attribute.parent is not None and attribute.parent.type == "call" else None
        if call is not None and call.child_by_field_name("function") == attribute and surface.members \
                and name in surface.members and not guards.overridden(what, name):
            out += _keyword_findings(call, f"{ref.name}.{name}", surface.members[name].keywords, source)
        if own and not surface.constructed and _class_name(what) not in guards.called:
            continue  # no class of its MRO makes instances, nor does the document: a mixin
        if is_target(attribute) or not _judged(name, what, own, guards, attribute, ref.name):
            continue
        if surface.private_unknown and (name.startswith("_") or _class_name(what).startswith("_")):
            continue  # a class of its MRO was read from a stub, which leaves private names (and classes) out
        if surface.members is not None and name not in surface.members:
            out.append(_finding(source, match.start(1), name, f"{what.split(' #')[0]} has no attribute '{name}' "
                                f"({ref.name}.{name})", surface.members, "unknown-member"))
    out += _callee_findings(probe)
    return sorted(modules + out, key=lambda f: f.start)


def _finding(source: bytes, start_byte: int, name: str, message: str, candidates, code: str) -> Finding:
    start = len(source[:start_byte].decode("utf-8", "replace"))
    data: dict[str, Any] = {"name": name}
    if (fix := closest(name, candidates)) is not None:
        data["replacement"] = fix
        message += f"; did you mean {fix}?"
    return Finding(start, start + len(name), message, code, "warning", data)


# -- what a receiver is --------------------------------------------------------------------------


def _receiver(probe: Probe, ref: scopes.Reference) -> tuple[Found, str, bool] | None:
    """The surface of the name ``ref`` reads, when it is ``self``/``cls``, a class or an instance of
    one (modules: ``_module_findings``), with the class's label and whether it is the method's own
    ``self``/``cls``; None when it is none of them or its members are not all known."""
    decl = probe.tree.resolve(ref.name, ref.start, ref.scope)
    if not isinstance(decl, scopes.Decl) or decl.sort not in ("Parameter", "Variable", "Class", "Import"):
        return None
    owner = probe.tree._owner(decl, ref.scope) or probe.tree.module
    enclosing = probe.enclosing(ref) if decl.sort == "Parameter" else None
    if enclosing is not None and decl.node_start != enclosing.first_at:
        enclosing = None
    if enclosing is None and not _bound_once(decl, owner):
        return None
    # a class's `self` is the same receiver in each of its methods: its surface is read once
    key = ("self", id(enclosing.shape), enclosing.role) if enclosing is not None else (id(decl),)
    if key not in probe.surfaces:
        layer, gamma = probe.layer_at(ref.start)
        found = layer.surface(gamma, ref.name, probe.binding_of(decl, owner), enclosing)
        judged = found is not None and found.members is not None and found.module is None and found.complete
        probe.surfaces[key] = found if judged else None
    surface = probe.surfaces[key]
    return (surface, surface.label, enclosing is not None) if surface is not None else None


def _bound_once(decl: scopes.Decl, owner: scopes.Scope) -> bool:
    """Whether the name is bound once in its scope, or each time to the same class (``v = A()``
    twice); a class or an import bound twice (``try: from a import X`` / ``except: class X``) is not."""
    decls = owner.decls.get(decl.name, ())
    if decl.sort in ("Class", "Import"):
        return len(decls) == 1
    return all((d.sort, d.attrs.get("call"), d.attrs.get("annotation")) ==
               (decl.sort, decl.attrs.get("call"), decl.attrs.get("annotation")) for d in decls)


def _judged(name: str, what: str, own: bool, guards: _Guards, node: Any, receiver: str) -> bool:
    """Whether a missing ``name`` is a mistake rather than an attribute no statement names
    (``own``: the receiver is the method's ``self``/``cls``, which may be a subclass's)."""
    if name.startswith("_") and name.endswith("_"):
        return False  # dunders and enums' sunders: what metaclasses give a class
    if guards.runtime_classes or name in guards.assigned_elsewhere or guards.overridden(what, name) or (own and guards.reads_others(what)):
        return False
    return (receiver, name) not in guards.hasattr_asked and not _catches_attribute_error(node)


def _catches_attribute_error(node: Any) -> bool:
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "try_statement" and parent.child_by_field_name("body") == child:
            for clause in parent.named_children:
                if clause.type == "except_clause":
                    caught = clause.named_children[0] if clause.named_children else None
                    if caught is None or caught.type == "block" or b"AttributeError" in (caught.text or b"") \
                            or caught.text in (b"Exception", b"BaseException"):
                        return True
        child, parent = parent, parent.parent
    return False


@dataclass
class _Guards:
    """What the document says about attributes beyond the classes' own statements."""

    assigned_elsewhere: set[str]
    """Attributes assigned to a value other than a method's own ``self`` (``k.extra = 1``,
    ``setattr(k, "extra", 1)``)."""
    defined_below: dict[str, set[str]]
    """Class name -> what its subclasses in the document have along their document bases (a
    base's ``self`` may be any of them: ``_BaseAddress`` reads ``self._version``, which its
    subclass ``IPv4Address`` gets from its other base ``_BaseV4``)."""
    open_below: set[str]
    """Classes with a subclass in the document that has a base the document does not define."""
    open_ended: frozenset[str]
    """Classes whose ``self`` reads what others define: mixins (pylint's ``ignore-mixin-members``;
    also a class no class of whose MRO defines a constructor and that the document never calls:
    ``Found.constructed``), abstract bases
    (``ABC``, ``@abstractmethod``, ``raise NotImplementedError``, an ``__init__`` refusing the
    class itself), a class named where the document assigns ``__bases__``."""
    called: frozenset[str] = frozenset()
    """Every callee the document names (``Box`` in ``Box()``)."""
    runtime_classes: bool = False
    """The document builds classes at run time (``type(name, bases, namespace)``) or writes
    attributes by computed names on other values (``setattr(x, name, v)``): any class may have
    any attribute."""
    hasattr_asked: frozenset[tuple[str, str]] = frozenset()
    """(receiver, name) of every ``hasattr(receiver, 'name')``: guarded, it may not exist."""

    @classmethod
    def read(cls, root: Any, source: bytes, shape_of: Callable[[Any], classes.ClassShape]) -> _Guards:
        assigned: set[str] = set()
        called: set[str] = set()
        rebased: set[str] = set()
        runtime = False
        classes_: dict[str, tuple[list[str], set[str], bool]] = {}  # name -> (bases, members, open-ended)
        found = tree_sitter.QueryCursor(_FACTS).captures(root)  # in C: a walk in Python costs ~50 ms a file
        for node in found.get("class", ()):
            classes_.setdefault(_text(node.child_by_field_name("name")), _class_facts(node, shape_of(node)))
        for node in (a for target in found.get("target", ()) for a in _target_attributes(target)):
            obj = node.child_by_field_name("object")
            if not (obj is not None and obj.type == "identifier" and _text(obj) == _own_parameter(node)):
                assigned.add(_text(node.child_by_field_name("attribute")))
        for node in found.get("call", ()):
            callee = _text(node.child_by_field_name("function"))
            called.add(callee.rsplit(".", 1)[-1])
            if callee not in ("setattr", "type"):
                continue
            args = node.child_by_field_name("arguments")
            given = [a for a in (args.named_children if args is not None else ()) if a.type != "comment"]
            if callee == "setattr" and len(given) > 1:
                if given[1].type == "string":
                    assigned.add(_text(given[1]).strip("'\"").split("'")[0])
                elif not (given[0].type == "identifier" and _text(given[0]) == _own_parameter(node)):
                    runtime = True
            elif callee == "type" and len(given) == 3:
                runtime = True
        for node in found.get("rebase", ()):
            if _text(node.child_by_field_name("attribute")) == "__bases__" and node.parent is not None:
                rebased.update(_text(n) for n in _identifiers(node.parent))
        hasattr_asked = {(m.group(1).decode(), m.group(2).decode()) for m in HASATTR.finditer(source)}
        ancestry = {name: _ancestors(name, classes_) for name in classes_}
        below: dict[str, set[str]] = {}
        open_below: set[str] = set()
        for name, ancestors in ancestry.items():
            has = set(classes_[name][1]).union(*(classes_[a][1] for a in ancestors if a in classes_))
            foreign = {a for a in ancestors if a not in classes_ and a not in python_members.IGNORED_BASES}
            for ancestor in ancestors:
                below.setdefault(ancestor, set()).update(has)
                if foreign - ancestry.get(ancestor, set()):
                    open_below.add(ancestor)
        open_ended = {n for n, facts in classes_.items() if facts[2]}
        return cls(assigned, below, open_below, frozenset(open_ended | (rebased & set(classes_))),
                   frozenset(called), runtime, frozenset(hasattr_asked))

    def overridden(self, what: str, name: str) -> bool:
        cls = _class_name(what)
        return cls in self.open_below or name in self.defined_below.get(cls, ())

    def reads_others(self, what: str) -> bool:
        return _class_name(what) in self.open_ended


def _class_name(label: str) -> str:
    """``instance of Box #ab12`` -> ``Box``."""
    return label.split(" #")[0].rsplit(" ", 1)[-1]


def _ancestors(name: str, classes: dict[str, tuple[list[str], set[str], bool]]) -> set[str]:
    """Every base of the document's class ``name`` as written, through the document's classes
    (a plain name the document defines; ``tkinter.Tk`` is another module's even in a class ``Tk``)."""
    seen: set[str] = set()
    todo = list(classes[name][0])
    while todo:
        base = todo.pop()
        if base not in seen:
            seen.add(base)
            if base in classes and base != name:
                todo.extend(classes[base][0])
    return seen


def _identifiers(node: Any):
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            yield current
        stack.extend(current.named_children)


def _target_attributes(target: Any):
    """The attributes a target assigns (``a.x``, ``a.x, b.y``; not ``a.x[0]`` nor ``a.x.y``'s ``a.x``)."""
    stack = [target]
    while stack:
        node = stack.pop()
        if node.type == "attribute":
            yield node
        elif node.type in TARGET_CONTAINERS or node.type == "as_pattern_target":
            stack.extend(node.named_children)


def _own_parameter(node: Any) -> str | None:
    """The first parameter of the method ``node`` is in (``self``), if any."""
    while node is not None and node.type != "function_definition":
        node = node.parent
    return _first_parameter(node) if node is not None else None


def _first_parameter(fn: Any) -> str | None:
    """A method's first parameter (``self``), None for a function outside a class body."""
    holder = fn.parent.parent if fn.parent is not None and fn.parent.type == "decorated_definition" else fn.parent
    if holder is None or holder.type != "block" or holder.parent is None or holder.parent.type != "class_definition":
        return None
    params = fn.child_by_field_name("parameters")
    named = [ident for _, ident, _, _ in map(signatures.parameter_parts, params.named_children if params else ())]
    return _text(named[0]) if named and named[0] is not None else None


ABSTRACT_MARKS = (b"abstractmethod", b"NotImplementedError", b"ABCMeta")
"""Words of a class that is an abstract base in all but name; one whose ``__init__`` refuses
itself (``if self.__class__ is ParserBase: raise``) is one too."""


def _class_facts(node: Any, shape: classes.ClassShape) -> tuple[list[str], set[str], bool]:
    """(its bases as written, the members it defines, whether its ``self`` reads what other
    classes define: a mixin, an abstract base)."""
    text = node.text or b""
    open_ended = "mixin" in shape.name.lower() or any(b.rsplit(".", 1)[-1] == "ABC" for b in shape.bases) \
        or any(m in text for m in ABSTRACT_MARKS) \
        or re.search(rb"(__class__|type\(\s*self\s*\))\s+is\s+" + re.escape(shape.name.encode()) + rb"\b", text) is not None
    return list(shape.bases), set(shape.class_members) | set(shape.instance_members), open_ended


def _text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


# -- keyword arguments ---------------------------------------------------------------------------


def _keyword_findings(call: Any, callee: str, known: tuple[str, ...] | None | bool, source: bytes) -> list[Finding]:
    if not isinstance(known, tuple):
        return []
    args = call.child_by_field_name("arguments")
    out = []
    for keyword in (c for c in (args.named_children if args is not None else ()) if c.type == "keyword_argument"):
        ident = keyword.child_by_field_name("name")
        name = _text(ident)
        if ident is not None and name not in known:
            out.append(_finding(source, ident.start_byte, name, f"{callee}() takes no keyword argument '{name}'",
                                known, "unknown-keyword"))
    return out


def _callee_findings(probe: Probe) -> list[Finding]:
    """Keywords in calls of a plain name: a function of the document, a class, an imported
    callable, a builtin."""
    source = probe.tree.source
    out: list[Finding] = []
    for ref in probe.tree.references:
        node = probe.root.descendant_for_byte_range(ref.start, ref.end)
        call = node.parent if node is not None else None
        if call is None or call.type != "call" or call.child_by_field_name("function") != node:
            continue
        args = call.child_by_field_name("arguments")
        if args is None or not any(c.type == "keyword_argument" for c in args.named_children):
            continue
        out += _keyword_findings(call, ref.name, _callee_keywords(probe, ref), source)
    return out


def _callee_keywords(probe: Probe, ref: scopes.Reference) -> tuple[str, ...] | None | bool:
    decl = probe.tree.resolve(ref.name, ref.start, ref.scope)
    if decl == "builtin":
        binding = Binding(ref.name, "Builtin", {"kind": scopes.builtin_kind(ref.name)})
        key: tuple = ("builtin", ref.name)
    elif isinstance(decl, scopes.Decl) and decl.sort in ("Function", "Class", "Import"):
        owner = probe.tree._owner(decl, ref.scope) or probe.tree.module
        if len(owner.decls.get(decl.name, ())) != 1:
            return None  # bound more than once: which one a call reaches depends on the run
        if decl.sort == "Function":
            return decl.attrs.get("keywords")
        if decl.sort == "Import" and _stub_over_source(probe, decl):
            return None
        binding = probe.binding_of(decl, owner)
        key = (id(decl), "callee")
    else:
        return None
    if key not in probe.surfaces:
        layer, gamma = probe.layer_at(ref.start)
        probe.surfaces[key] = layer.surface(gamma, ref.name, binding)
    found = probe.surfaces[key]
    return found.keywords if found is not None and found.complete else None


def _stub_over_source(probe: Probe, decl: scopes.Decl) -> bool:
    """``from m import f`` where ``m`` has a stub and a source: the stub's signature won, and it may
    lack the source's ``**kwargs``."""
    layer, _ = probe.layer_at(decl.node_start)
    module = layer._absolute(str(decl.attrs.get("module", "")))
    surface = probe.reader.module(module) if module else None
    return surface is None or (surface.from_stub and surface.from_source)


# -- modules -------------------------------------------------------------------------------------


def _module_findings(probe: Probe) -> list[Finding]:
    """``module.name`` where the module's surface is known and has no ``name`` (a chain
    ``os.path.jion`` is followed through module members). Assignments to a module
    attribute are the grammar's business and are not warned about."""
    tree, reader = probe.tree, probe.reader
    source = tree.source
    kinds: dict[int, str | None] = {}  # id(decl) -> module name (None: not a module)
    out = []
    for ref in tree.references:
        match = ATTRIBUTE.match(source, ref.end)
        if match is None:
            continue
        decl = tree.resolve(ref.name, ref.start, ref.scope)
        if not isinstance(decl, scopes.Decl) or decl.sort not in ("Module", "Import"):
            continue
        if id(decl) not in kinds:
            layer, _ = probe.layer_at(ref.start)
            kind = layer.binding_kind(Binding(decl.name, decl.sort, {k: v for k, v in decl.attrs.items() if v is not None}))
            kinds[id(decl)] = kind.target if isinstance(kind, python_members.Member) and kind.kind == "module" else None
        module = kinds[id(decl)]
        chain = [ref.name]
        while module is not None and match is not None:
            surface = reader.module(module)
            name = match.group(1).decode("utf-8", "replace")
            if surface.members is None or ASSIGNED.match(source, match.end()):
                break
            member = surface.members.get(name)
            if member is None and (
                    name in surface.elsewhere  # another platform's: code guarded for it is common
                    or (name.startswith("_") and not surface.from_source)  # stubs leave private names out
                    or re.search(rb"hasattr\(\s*" + re.escape(".".join(chain).encode()) + rb"\s*,\s*['\"]"
                                 + re.escape(name.encode()) + rb"['\"]", source)):  # guarded: may not exist here
                break
            if member is None and decl.attrs.get("submodules") and len(chain) == 1 and any(
                    str(d).split(".")[1] == name for d in decl.attrs["submodules"] if "." in str(d)):
                member = python_members.Member("module", f"{module}.{name}")  # `import os.path` made it one
            if member is None:
                out.append(_finding(source, match.start(1), name,
                                    f"module {module} has no attribute '{name}' ({'.'.join(chain)}.{name})",
                                    surface.members, "unknown-member"))
                break
            if member.kind != "module" and not (surface.from_stub and surface.from_source):
                call = _call_of(probe.root, match.end(1))  # a stub that won over the source may lack its **kwargs
                if call is not None:
                    out += _keyword_findings(call, f"{'.'.join(chain)}.{name}", member.keywords, source)
            chain.append(name)
            module = member.target if member.kind == "module" else None
            match = ATTRIBUTE.match(source, match.end())
    return out


def _call_of(root: Any, end: int) -> Any:
    """The call whose callee is the attribute ending at byte ``end``, if any."""
    node = root.descendant_for_byte_range(end - 1, end)
    while node is not None and node.type != "attribute":
        node = node.parent
    if node is None or node.end_byte != end or node.parent is None or node.parent.type != "call":
        return None
    return node.parent if node.parent.child_by_field_name("function") == node else None
