"""Γ's member layer: which names at the hole are receivers whose members Γ knows, what
those members are, and the keyword names of callees.

For every visible name the layer decides what it statically is:

- a module (``import json``, ``import os.path``, ``import xml.dom as d``, ``from os
  import path``): its surface (``surfaces.py``), plus the submodules the document
  itself imports under it;
- a class (of the document, or imported): the class object's members along the
  static MRO (``classes.py``), and the constructor's keywords;
- an instance of such a class: a local bound by ``x = Box(...)``, a parameter or
  variable annotated ``Box``, and ``self``/``cls`` in a method (``enclosing``);
  ``self``/``cls`` in one of the class's defining methods (pylint's
  ``defining-attr-methods``: ``__init__``...) also get the attr ``declares``: only there
  may an assignment write an attribute the class does not have yet;
- a callee with a known signature: a function of the document (its ``keywords`` attr,
  set where it is declared), an imported function, a builtin (``print``, ``sorted``).

A receiver's binding gets the attr ``members`` (a label naming its surface) and each
member becomes a binding of sort ``Member`` named ``receiver.member`` (``os.path.join``
two levels deep) with ``kind`` and, for callables whose keyword names are known,
``keywords``. Anything that cannot be known statically -- a module with
``__getattr__``, a class with an unresolvable base, a value of unknown type -- stays
open: no ``members`` attr, and the grammar allows any identifier after its dot (the
report says why). At most ``MAX_MEMBERS`` member names enter Γ (the grammar's compile
time grows with them); beyond that the largest surfaces are left open and the report
says so. Members go to Γ's global layer: qualified names never collide with a frame's
names, and the frames stay the lexical scopes the executor pushes and pops.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.caches import BoundedCache
from gdg_lsp.gamma import Binding, Frame, Gamma
from gdg_lsp.languages.python import classes
from gdg_lsp.languages.python.surfaces import Member, SurfaceReader

MAX_MEMBERS = 2000
"""Member names Γ holds at most (measured: a statement grammar with 1,000 qualified
member names compiles about as fast as without them, with 3,000 about twice as slowly)."""

MAX_NESTING = 2
"""Module members that are modules get their own members this deep (``os.path.join``)."""

IGNORED_BASES = frozenset({"object", "Generic", "Protocol", "typing.Generic", "typing.Protocol",
                           "typing_extensions.Protocol", "builtins.object"})
"""Bases that add no attribute worth listing (``Generic[T]`` only makes a class subscriptable)."""

PROXIES = {"type": "an instance of type is a class: its attributes are its own",
           "super": "super() reads its attributes along the MRO of the class it is called in"}
"""Builtin classes whose instances have attributes their class does not name."""

VALUE_SORTS = frozenset({"Variable", "Function", "Class", "Module", "Parameter", "Import", "Builtin"})


@dataclass(frozen=True)
class Enclosing:
    """The method around a hole, for ``self.``/``cls.``."""

    parameter: str
    """Its first parameter (``self``, ``cls``)."""
    role: str
    """"instance" or "class" (a classmethod, ``__new__``)."""
    shape: classes.ClassShape
    """Its class's shape."""
    method: str
    defining: bool
    """The method is one of the defining methods (``gdg.python.definingAttrMethods``)."""
    first_at: int = -1
    """Byte offset of the first parameter's name (which declaration ``self`` is)."""


@dataclass(frozen=True)
class ClassRef:
    shape: classes.ClassShape
    home: str | None
    """The module whose namespace the bases are resolved in (None: the document, through Γ)."""


@dataclass
class Found:
    """One receiver's surface (``members`` None: open, ``why`` says why)."""

    label: str
    members: dict[str, Member] | None
    why: str
    keywords: tuple[str, ...] | None | bool = False
    """The receiver's own call keywords (a class's constructor, a callee); False: none set here."""
    module: str | None = None
    """The module a module surface is (its own submodules get members of their own)."""
    declares: str | None = None
    """Where a new attribute may be written after this receiver (``self`` in a defining
    method: "in __init__, a defining method"); None: only its members are targets."""
    private_unknown: bool = False
    """A class of its MRO was read from a stub, which leaves private names out."""
    complete: bool = True
    """Every class of its MRO was read from a source (the document's, an installed ``.py``) or
    from the stub of a module that has none (``builtins``): a stub that won over a source may
    leave out what the source has (attributes its methods set, ``**kwargs``), so diagnostics
    judge nothing by it."""

    constructed: bool = True
    """A class of its MRO defines ``__init__`` or ``__new__`` (one without is likely a mixin)."""

    def copy(self) -> Found:
        return Found(self.label, self.members, self.why, self.keywords, self.module, self.declares,
                     self.private_unknown, self.complete, self.constructed)


@dataclass
class Report:
    receivers: dict[str, str] = field(default_factory=dict)
    """receiver name -> what its surface is (member count and source) or why it is open."""
    members: int = 0
    omitted: list[str] = field(default_factory=list)
    keywords: tuple[str, ...] = ()
    """Every keyword name of a known callee (the keyword slot's answer), once computed."""
    member_keywords: frozenset[str] = frozenset()
    """The keyword names of the members' callables."""
    described: tuple[str, ...] = ()
    """``lines()``, once computed."""

    def lines(self) -> list[str]:
        return [f"{name}: {what}" for name, what in sorted(self.receivers.items())]


def _digest(*parts: Any) -> str:
    return hashlib.blake2b(repr(parts).encode(), digest_size=4).hexdigest()


INSTANCES: BoundedCache[str, Found] = BoundedCache("python.instance-surfaces", 256)
"""The instance surface of each class surface label: ``x = Box()`` in a suggestion makes
``x`` a receiver with the surface the hole's Γ knows ``Box`` by (``declare``)."""

_MEMBER_BINDINGS: BoundedCache[tuple[str, str], tuple[Binding, ...]] = BoundedCache("python.member-bindings", 512)
"""Member bindings by (receiver, surface label): a keystroke reuses them instead of
making hundreds of Binding objects again."""

_BUILTIN_KEYWORDS: BoundedCache[int, tuple[Any, dict[str, tuple[str, ...]]]] = BoundedCache(
    "python.builtin-keywords", 4)

_CLASS_SURFACES: BoundedCache[tuple, tuple[tuple, Found]] = BoundedCache("python.class-surfaces", 1024)

_RETAGGED: BoundedCache[tuple, tuple[Binding, Binding | None]] = BoundedCache("python.retagged-bindings", 8192)
"""A receiver's binding with its ``members``/``keywords`` attrs, by the binding it was made
from (kept beside it, so an id is never matched to another object) and its surface."""
"""Class and instance surfaces by the shapes of their MRO (a new hole does not rebuild them)."""


class MemberLayer:
    """Extends one hole's Γ (made per request: it holds the request's document facts)."""

    def __init__(self, reader: SurfaceReader | None, document_shape: Callable[[Binding], classes.ClassShape | None],
                 package: str | None = None, max_members: int = MAX_MEMBERS) -> None:
        self.reader = reader
        self.document_shape = document_shape
        self.package = package
        """The dotted package of the document (for ``from . import x``); None when unknown."""
        self.max_members = max_members
        self._gamma: Gamma | None = None
        self._mro_memo: dict[int, list[classes.ClassShape] | str] = {}
        self._homes: dict[int, str | None] = {}
        """The module each shape of an MRO walked was read in (its metaclass is named there)."""

    # -- what a name is -------------------------------------------------------------------------

    def _module(self, name: str) -> Found:
        if self.reader is None:
            return Found(f"module {name}", None, "no interpreter search path")
        surface = self.reader.module(name)
        why = surface.why + (f"; version {surface.version}" if surface.version else "")
        return Found(f"{surface.label} #{surface.stamp}", None if surface.members is None else dict(surface.members), why,
                     module=name)

    def _absolute(self, module: str) -> str | None:
        if not module.startswith("."):
            return module
        if self.package is None:
            return None
        level = len(module) - len(module.lstrip("."))
        parts = self.package.split(".") if self.package else []
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
        rest = module[level:]
        return ".".join([*parts, *([rest] if rest else [])]) or None

    def _member_of_module(self, module: str, name: str) -> Member | None:
        if self.reader is None:
            return None
        if self.reader.is_module(f"{module}.{name}"):
            return Member("module", f"{module}.{name}")
        return self.reader.member(module, name)

    def _class_ref(self, member: Member | None) -> ClassRef | None:
        if member is None or member.kind != "class" or member.target is None or self.reader is None:
            return None
        shape = self.reader.class_shape(member.target)
        return ClassRef(shape, member.target.partition(":")[0]) if shape is not None else None

    def _resolve_dotted(self, dotted: str, home: str | None) -> Member | ClassRef | None:
        """What a dotted name (a base, an annotation, a callee) is: a ClassRef for a class
        whose shape is known, a Member (module, function...) otherwise."""
        if home is not None:
            if self.reader is None:
                return None
            found = self.reader.resolve(home, dotted)
            return self._class_ref(found) or found
        head, _, rest = dotted.partition(".")
        binding = self._gamma.lookup(head) if self._gamma is not None else None
        current = self.binding_kind(binding) if binding is not None else None
        for part in rest.split(".") if rest else ():
            if not (isinstance(current, Member) and current.kind == "module" and current.target):
                return None
            current = self._member_of_module(current.target, part)
            current = self._class_ref(current) or current
        return current

    def binding_kind(self, binding: Binding) -> Member | ClassRef | None:
        attrs = binding.attrs
        if binding.sort == "Module":
            module = str(attrs.get("module", binding.name))
            return Member("module", module if attrs.get("alias") else module.split(".")[0])
        if binding.sort == "Import":
            module = self._absolute(str(attrs.get("module", "")))
            imported = attrs.get("imported")
            if not module or not imported:
                return None
            found = self._member_of_module(module, str(imported))
            return self._class_ref(found) or found
        if binding.sort == "Class":
            shape = self.document_shape(binding)
            return ClassRef(shape, None) if shape is not None else None
        if binding.sort == "Builtin" and self.reader is not None:
            found = self.reader.member("builtins", binding.name)
            return self._class_ref(found) or found
        return None

    def mro(self, ref: ClassRef, depth: int = 0) -> list[classes.ClassShape] | str:
        """The class and its bases, nearest first, or why they cannot all be known."""
        memo = self._mro_memo.get(id(ref.shape))
        if memo is not None:
            return memo
        shape = ref.shape
        if shape.dynamic:
            return f"class {shape.name}: {shape.dynamic}"
        if depth > 24:
            return f"class {shape.name}: its bases nest too deep"
        self._mro_memo[id(shape)] = f"class {shape.name} is its own base"  # a cycle
        self._homes[id(shape)] = ref.home
        out = [shape]
        result: list[classes.ClassShape] | str = out
        for base in shape.bases:
            if base in IGNORED_BASES:
                continue
            found = self._resolve_dotted(base, ref.home)
            if not isinstance(found, ClassRef):
                result = f"class {shape.name}: its base {base} cannot be read"
                break
            below = self.mro(found, depth + 1)
            if isinstance(below, str):
                result = below
                break
            out += [s for s in below if s not in out]
        self._mro_memo[id(shape)] = result
        return result

    def class_surface(self, ref: ClassRef, instance: bool) -> Found:
        """The members of the class object, or of an instance. A class object's surface
        keeps its instances' beside it (``INSTANCES``, by its label), for ``declare``."""
        line = self.mro(ref)
        label = f"{'instance of' if instance else 'class'} {ref.shape.name}"
        if isinstance(line, str):
            return Found(label, None, line)
        if instance and (proxy := next((s.name for s in line if s.name in PROXIES and s.stub), None)):
            return Found(label, None, PROXIES[proxy])
        key = (tuple(id(s) for s in line), ref.home, instance)
        cached = _CLASS_SURFACES.get(key)
        if cached is not None and cached[0] == tuple(line):  # the shapes themselves, not ids reused
            return cached[1].copy()
        found = self._class_surface(ref, line, label, instance)
        _CLASS_SURFACES.put(key, (tuple(line), found))
        return found.copy()

    def _metaclass_members(self, line: list[classes.ClassShape], home: str | None) -> dict[str, Member] | str:
        """What the metaclasses of the classes of ``line`` give the class object (``register``
        of ``ABCMeta``), or why that cannot be known."""
        members: dict[str, Member] = {}
        for shape in line:
            if shape.metaclass in (None, "type"):
                continue
            found = self._resolve_dotted(shape.metaclass, self._homes.get(id(shape), home))
            meta_line = self.mro(found) if isinstance(found, ClassRef) else None
            if not isinstance(meta_line, list):
                return f"class {shape.name}: its metaclass {shape.metaclass} cannot be read"
            for meta in meta_line:
                for name, kind in meta.class_members.items():
                    keywords = meta.method_keywords.get(name) if kind == "method" else None
                    members.setdefault(name, Member("function" if kind == "method" else "variable", None, keywords))
        return members

    def _class_surface(self, ref: ClassRef, line: list[classes.ClassShape], label: str, instance: bool) -> Found:
        members: dict[str, Member] = {}
        if not instance:
            given = self._metaclass_members(line, ref.home)
            if isinstance(given, str):
                return Found(label, None, given)
        for shape in line:
            for name, kind in shape.class_members.items():
                keywords = shape.method_keywords.get(name) if kind == "method" else None
                members.setdefault(name, Member("function" if kind == "method" else "variable", None, keywords))
            if instance:
                for name in shape.instance_members:
                    members.setdefault(name, Member("variable"))
        for name in classes.OBJECT_INSTANCE if instance else classes.CLASS_OBJECT:
            members.setdefault(name, Member("variable"))
        if not instance:
            for name, member in given.items():  # type: ignore[union-attr]
                members.setdefault(name, member)
        keywords: tuple[str, ...] | None = ()
        for shape in line:
            if shape.init_keywords is not False:
                keywords = shape.init_keywords  # type: ignore[assignment]
                break
        label += f" #{_digest(sorted(members.items()), ref.home, [s.name for s in line])}"
        where = "class" if len(line) == 1 else f"{len(line)} classes"
        found = Found(label, members, f"{where} of its MRO read statically", False if instance else keywords,
                      private_unknown=any(s.stub for s in line),
                      complete=all(not s.stub or self._stub_only(self._homes.get(id(s), ref.home)) for s in line),
                      constructed=any({"__init__", "__new__"} & set(s.class_members) for s in line))
        if not instance:
            INSTANCES.put(label, self.class_surface(ref, instance=True))
        return found

    def _stub_only(self, module: str | None) -> bool:
        """A module described by its stub alone (no Python source: ``builtins``, C extensions)."""
        return module is not None and self.reader is not None and not self.reader.module(module).from_source

    def _instance_of(self, binding: Binding) -> ClassRef | None:
        for key in ("call", "annotation"):
            text = binding.attrs.get(key)
            if not isinstance(text, str) or not all(part.isidentifier() for part in text.split(".")):
                continue  # plain dotted names only (`Box`, `mod.Box`), not `Optional[Box]`
            found = self._resolve_dotted(text, None)
            if isinstance(found, ClassRef):
                return found
        return None

    def _builtin_keywords(self) -> dict[str, tuple[str, ...]]:
        """Keyword names of the builtins whose stub gives them (``print``, ``sorted``,
        ``open``; a class by its own ``__init__``), kept per builtins surface."""
        if self.reader is None:
            return {}
        surface = self.reader.module("builtins")
        cached = _BUILTIN_KEYWORDS.get(id(surface))
        if cached is None or cached[0] is not surface:
            table = {name: m.keywords for name, m in (surface.members or {}).items()
                     if m.kind in ("function", "class") and m.keywords is not None}
            cached = _BUILTIN_KEYWORDS.put(id(surface), (surface, table))
        return cached[1]

    def _surface_of(self, name: str, binding: Binding, enclosing: Enclosing | None) -> Found | None:
        if enclosing is not None and name == enclosing.parameter and binding.sort == "Parameter":
            surface = self.class_surface(ClassRef(enclosing.shape, None), instance=enclosing.role == "instance")
            surface.keywords = False
            if enclosing.defining and surface.members is not None:
                surface.declares = f"in {enclosing.method}, a defining method"
            return surface
        if binding.sort == "Builtin":
            keywords = self._builtin_keywords().get(name)
            return Found("", None, "", keywords) if keywords is not None else None
        if binding.sort in ("Module", "Import", "Class"):
            kind = self.binding_kind(binding)
            if isinstance(kind, ClassRef):
                return self.class_surface(kind, instance=False)
            if isinstance(kind, Member) and kind.kind == "module" and kind.target:
                return self._module(kind.target)
            if isinstance(kind, Member) and kind.keywords is not None:
                return Found("", None, "", kind.keywords)  # an imported callee: its keywords only
            if binding.sort == "Class":
                return Found(f"class {name}", None, "its shape cannot be read", None)
            return None
        if binding.sort in ("Variable", "Parameter"):
            ref = self._instance_of(binding)
            if ref is not None:
                return self.class_surface(ref, instance=True)
        return None

    def surface(self, gamma: Gamma, name: str, binding: Binding, enclosing: Enclosing | None = None) -> Found | None:
        """What ``name``, bound by ``binding``, is as a receiver where ``gamma`` is Γ (a
        module, a class, an instance, ``self``), or None (diagnostics ask one name at a time)."""
        self._gamma = gamma
        return self._surface_of(name, binding, enclosing)

    # -- extending Γ -----------------------------------------------------------------------------

    def extend(self, gamma: Gamma, enclosing: Enclosing | None = None,
               memo: dict | None = None, stable: Callable[[str, Binding], bool] | None = None
               ) -> tuple[Gamma, Report]:
        """Γ with receivers tagged and their members added (a new Γ; ``gamma`` is unchanged).
        ``enclosing``: the method around the hole, if any.
        ``memo``: surfaces of names for which ``stable(name, binding)`` holds (module names
        as every function sees them), kept by the caller between holes."""
        self._gamma = gamma
        report = Report()
        found: dict[str, Found] = {}
        generation = self.reader.generation if self.reader is not None else 0
        for name, binding in gamma.visible().items():
            if binding.sort not in VALUE_SORTS or "." in name:
                continue
            kept = memo is not None and stable is not None and stable(name, binding)
            cached = memo.get(name) if kept else None
            if cached is not None and cached[0] == generation and cached[1] is binding:
                surface = cached[2]
            else:
                surface = self._surface_of(name, binding, enclosing)
                if surface is not None and binding.sort == "Module" and surface.members is not None:
                    for dotted in binding.attrs.get("submodules", ()) or ():
                        self._add_submodule(surface, str(dotted))
                if kept:
                    memo[name] = (generation, binding, surface)
            if surface is not None:  # a copy: the budget below may leave a surface out of this Γ only
                found[name] = surface.copy()
        members = self._member_bindings(found, report)
        return self._retagged(gamma, found, members, report), report

    @staticmethod
    def _add_submodule(surface: Found, dotted: str) -> None:
        """``import a.b`` makes ``b`` a member of ``a`` whatever ``a``'s ``__init__`` imports."""
        parts = dotted.split(".")
        if len(parts) > 1 and surface.members is not None:
            current = surface.members.get(parts[1])
            if current is None or current.kind != "module":
                surface.members[parts[1]] = Member("module", f"{parts[0]}.{parts[1]}")
                surface.label += f" +{parts[1]}"

    def _member_bindings(self, found: dict[str, Found], report: Report) -> dict[str, tuple[Binding, ...]]:
        per_receiver: dict[str, tuple[Binding, ...]] = {}
        for name, surface in sorted(found.items()):
            if surface.members is None:
                if surface.label:
                    report.receivers[name] = f"{surface.label.split(' #')[0]}: open ({surface.why})"
                continue
            per_receiver[name] = _MEMBER_BINDINGS.get_or_make(
                (name, surface.label), lambda name=name, surface=surface: _with_keywords(self._bindings_for(name, surface, 0)))
            report.receivers[name] = f"{surface.label.split(' #')[0]}: {len(surface.members)} members ({surface.why})" + (
                f"; new attributes may be declared ({surface.declares})" if surface.declares else "")
        total = sum(len(v) for v in per_receiver.values())
        while total > self.max_members and per_receiver:
            largest = max(per_receiver, key=lambda r: (len(per_receiver[r]), r))
            total -= len(per_receiver.pop(largest))
            found[largest].members = None
            report.omitted.append(largest)
            report.receivers[largest] = (f"{found[largest].label.split(' #')[0]}: open (left out: Γ holds at most "
                                         f"{self.max_members} members)")
        report.members = total
        report.member_keywords = frozenset().union(*(getattr(v, "keywords", frozenset()) for v in per_receiver.values()))
        return per_receiver

    def _bindings_for(self, receiver: str, surface: Found, depth: int) -> list[Binding]:
        out = []
        for member, info in sorted((surface.members or {}).items()):
            qualified = f"{receiver}.{member}"
            attrs: dict[str, Any] = {"receiver": receiver, "kind": info.kind}
            if info.keywords is not None:
                attrs["keywords"] = info.keywords
            if (info.kind == "module" and info.target and depth + 1 < MAX_NESTING and surface.module
                    and info.target.startswith(surface.module + ".")):  # its own submodule, not one it imports
                nested = self._module(info.target)
                if nested.members is not None:
                    attrs["members"] = nested.label
                    out.extend(self._bindings_for(qualified, nested, depth + 1))
            out.append(Binding(qualified, "Member", attrs))
        return out

    @staticmethod
    def _retagged(gamma: Gamma, found: dict[str, Found], members: dict[str, tuple[Binding, ...]],
                  report: Report) -> Gamma:
        keywords: set[str] = set(report.member_keywords)

        def retag(binding: Binding) -> Binding | None:
            surface = found.get(binding.name)
            if surface is None:
                return None
            key = (id(binding), surface.label if surface.members is not None else None, surface.keywords,
                   surface.declares, None if surface.members is not None else surface.why)
            kept = _RETAGGED.get(key)
            if kept is not None and kept[0] is binding:
                return kept[1]
            new = _retag(binding, surface)
            _RETAGGED.put(key, (binding, new))
            return new

        def _retag(binding: Binding, surface: Found) -> Binding | None:
            attrs = dict(binding.attrs)
            if surface.members is not None:
                attrs["members"] = surface.label
                if surface.declares:
                    attrs["declares"] = surface.declares
            elif surface.label and surface.why:
                attrs["open_members"] = surface.why  # why it is open, said where a suggestion assigns to it
            if surface.keywords is None:
                attrs.pop("keywords", None)
            elif surface.keywords is not False:
                attrs["keywords"] = surface.keywords
            if attrs == dict(binding.attrs):
                return None
            return Binding(binding.name, binding.sort, attrs, binding.origin)

        def frame(old: Frame, extra: tuple[Binding, ...] = ()) -> Frame:
            changed = [b for b in (retag(old.get(name)) for name in found if name in old) if b is not None]
            for binding in (*old, *changed):
                if binding.sort != "Member" and isinstance(known := binding.attrs.get("keywords"), tuple):
                    keywords.update(known)
            return old.replaced([*changed, *extra]) if changed or extra else old.copy()

        global_layer = frame(gamma.global_layer, tuple(b for name in sorted(members) for b in members[name]))
        frames = [frame(f) for f in gamma.frames]
        report.keywords = tuple(sorted(k for k in keywords if k.isidentifier()))
        return Gamma(global_layer, frames)


class _Bindings(tuple):
    """A receiver's member bindings, with the keyword names its callable members take."""

    keywords: frozenset[str] = frozenset()


def _with_keywords(bindings: list[Binding]) -> _Bindings:
    out = _Bindings(bindings)
    out.keywords = frozenset(k for b in bindings if isinstance(b.attrs.get("keywords"), tuple) for k in b.attrs["keywords"])
    return out


def keyword_names(gamma: Gamma) -> list[str]:
    """Every keyword name of every callee in Γ (the keyword-argument slot's answer)."""
    names: set[str] = set()
    for binding in gamma.bindings(has="keywords"):
        keywords = binding.attrs.get("keywords")
        if isinstance(keywords, tuple):
            names.update(keywords)
    return sorted(n for n in names if n.isidentifier())


def member_bindings(receiver: str, members: Mapping[str, Member]) -> list[Binding]:
    return [Binding(f"{receiver}.{name}", "Member",
                    {"receiver": receiver, "kind": info.kind,
                     **({"keywords": info.keywords} if info.keywords is not None else {})})
            for name, info in sorted(members.items())]


def declare(gamma: Gamma, binding: Binding) -> list[Binding]:
    """What declaring ``binding`` (a statement of a suggestion) adds to Γ: ``self.new =
    ...`` in a defining method gives the receiver ``self`` the member ``self.new`` (no other
    receiver Γ knows takes a new one); ``x = Box()`` makes ``x``
    an instance of ``Box`` when Γ knows ``Box``'s surface (the receiver's binding comes
    first, in place of ``binding``). Empty when the declaration adds nothing."""
    receiver, dot, _ = binding.name.rpartition(".")
    if dot:
        owner = gamma.lookup(receiver)
        if owner is not None and "members" in owner.attrs and "declares" in owner.attrs and binding.name not in gamma:
            return [Binding(binding.name, "Member", {"receiver": receiver, "kind": "variable"})]
        return []
    callee = binding.attrs.get("call")
    cls = gamma.lookup(callee) if binding.sort == "Variable" and isinstance(callee, str) else None
    instance = INSTANCES.get(str(cls.attrs.get("members", ""))) if cls is not None else None
    if instance is None or instance.members is None:
        return []
    return [Binding(binding.name, binding.sort, {**binding.attrs, "members": instance.label}, binding.origin),
            *member_bindings(binding.name, instance.members)]
