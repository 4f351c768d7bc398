"""A module's member surface -- what may follow ``json.`` or ``os.path.`` -- read
statically, never by importing the module.

For a module name the reader finds, on the workspace folders and then on the configured
interpreter's search path (``interpreter.py``):

- its stub: typeshed's (the standard library and the third-party stubs that ship with
  the maintained ``typeshed-client`` package), a ``<pkg>-stubs`` package or a ``.pyi``
  file next to the source; read with typeshed-client for the interpreter's version and
  platform (``if sys.version_info >= (3, 12):`` branches count for 3.12 only);
- its source (``.py``): every top-level binding, star imports resolved through the
  starred module's own surface, ``__all__``, the submodules its ``__init__`` imports;
  ``if TYPE_CHECKING:`` blocks do not count (they do not run).

The surface is the union of both (a stub's private helpers -- ``_T = TypeVar(...)`` --
only where the source binds them). It is *open* (no member list: after the receiver any
identifier remains possible, and ``explain`` says why) when the module defines
``__getattr__``, star-imports a module that cannot be read, rewrites its globals, is a
compiled extension without a stub, or is not found. A member's name is a Python
identifier: a stub's star import binds its source's ``__all__`` strings, and one that is
not an identifier (``"x\\nimport os"`` in a workspace venv's stub) is left out and noted in
``words.REJECTIONS``. Each member records its kind
(module, class, function, variable), the module or class it leads to, and for callables
the keyword names a call may use (None when ``**kwargs`` takes any).

Kept in a ``BoundedCache`` keyed by the files read (path and stamp: ``gdg_lsp.stamps``) and the
installed distribution's version (its ``dist-info`` METADATA), so an upgrade changes the
surface; installed files are looked up again at most every ``revalidate_s`` seconds. A
module of the workspace (or one not found, which a file written there may become) is the
user's code, edited while the server runs: its surface keeps a witness of what it was read
from (its files, the folders it was looked up in, the witnesses of the workspace modules it
star-imports), and ``changed()``, asked at every request, drops the surfaces whose witness no
longer holds.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path

import typeshed_client
from typeshed_client import parser as ts_parser

from gdg_lsp import python_ast, stamps, words
from gdg_lsp.boundary import Boundary, Refused
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.python import classes, signatures
from gdg_lsp.languages.python.imports import MAX_SOURCE_BYTES, identifier_problem
from gdg_lsp.languages.python.interpreter import SearchPath

logging.getLogger("typeshed_client").setLevel(logging.ERROR)  # unreadable star imports are reported by us

MODULE_DUNDERS = frozenset({"__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__", "__dict__"})
SOURCE_DUNDERS = frozenset({"__builtins__", "__cached__"})
"""Attributes every module object has; a module run from source also these."""

EXTENSION_SUFFIXES = (".so", ".pyd")
MAX_METADATA_BYTES = 1 << 20
"""A distribution's METADATA (its long description included) or top_level.txt larger than this is
not read; the version is then the dist-info folder's."""
MAX_DEPTH = 8
"""How far ``from a import b`` chains are followed when a member's kind is resolved."""


@dataclass(frozen=True)
class Member:
    kind: str
    """module | class | function | variable"""
    target: str | None = None
    """The module a ``module`` member is (dotted name); the ``module:Class`` a ``class`` member is."""
    keywords: tuple[str, ...] | None = None
    """A callable's keyword names (None: not callable, or unknown)."""


@dataclass(frozen=True)
class Surface:
    label: str
    members: Mapping[str, Member] | None
    """None when the surface is open (``why`` says why)."""
    why: str
    """Where it was read from, or why it is open."""
    version: str | None = None
    classes: Mapping[str, classes.ClassShape] = field(default_factory=dict)
    """The shapes of the module's top-level classes."""
    stamp: str = ""
    """Identifies what was read (files, their modification times, the version)."""
    from_source: bool = False
    """The module's own source was read (else only a stub, which may leave out private names)."""
    from_stub: bool = False
    """A stub was read. With the source too, the stub's classes and signatures won (they may
    leave out what the source has: attributes set in methods, ``**kwargs``)."""
    elsewhere: frozenset[str] = frozenset()
    """Names the stub gives the module on other platforms only (``select.kqueue`` on Linux):
    not members here, but code guarded for those platforms is not warned about."""
    imports: Mapping[str, str] = field(default_factory=dict)
    """Every name the module imports, public or not (``dict`` in a stub's class header
    may come from a private ``from typing import ...``): ``module`` or ``module:name``."""

    @property
    def open(self) -> bool:
        return self.members is None


@dataclass(frozen=True)
class _Located:
    stub: Path | None
    source: Path | None
    extension: Path | None
    package_dir: Path | None
    stdlib: bool
    site: Path | None
    """The site folder the module was found in (for its distribution's version)."""


def _identity(path: Path | None) -> tuple | None:
    if path is None:
        return None
    stamp = stamps.of(path)
    return None if stamp is None else (str(path), stamp)


_DIST = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+?)-(?P<version>[^-]+?)\.dist-info$")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


class SurfaceReader:
    """Module surfaces for one interpreter and workspace (thread-safe: its tables are
    dictionaries replaced entry by entry, and the caches are BoundedCaches)."""

    def __init__(self, search: SearchPath, roots: Sequence[Path] = (), revalidate_s: float = 2.0,
                 max_modules: int = 256, max_source_bytes: int = MAX_SOURCE_BYTES) -> None:
        self.search = search
        self.max_source_bytes = max_source_bytes
        """The largest stub or source read (``gdg.limits.sourceBytes``): a larger one leaves its
        module open, with the reason."""
        self.roots = tuple(Path(r) for r in roots)
        bases = [*self.roots, *(r / "src" for r in self.roots if (r / "src").is_dir()), *search.paths]
        self.bases = tuple(dict.fromkeys(b for b in bases if b.is_dir()))
        self.revalidate_s = revalidate_s
        self.context = typeshed_client.get_search_context(
            search_path=list(self.bases), version=search.version, platform=sys.platform, allow_py_files=False)
        self._typeshed = self.context.typeshed
        self._typeshed_versions: dict | None = None
        self.boundary = Boundary.of(self.bases, [self._typeshed])
        self._surfaces: BoundedCache[tuple, Surface] = BoundedCache("python.surfaces", max_modules)
        self._checked: dict[str, tuple[float, Surface]] = {}
        self._modules: dict[str, tuple[float, bool]] = {}
        self.generation = 0
        """Counts surfaces read: what callers kept from older surfaces is stale when it moved."""
        self._versions: dict[Path, tuple[int, dict[str, str]]] = {}
        self._reading = threading.local()
        self._witnesses: dict[str, tuple[tuple, stamps.Witness]] = {}
        """Workspace modules' surfaces: their cache key and what they were read from."""
        self._workspace_bases = tuple(b for b in self.bases if any(b == r or r in b.parents for r in self.roots))

    # -- public ----------------------------------------------------------------------------

    def module(self, name: str) -> Surface:
        """The surface of module ``name`` (cached; files re-checked every ``revalidate_s``)."""
        now = time.monotonic()
        checked = self._checked.get(name)
        if checked is not None and now - checked[0] < self.revalidate_s:
            return checked[1]
        # No lock is held while a module is read (the event loop must not wait for the decode
        # thread's first read of a big stub): two threads may read one module at once, and
        # the second result replaces the first. A cycle is caught per thread.
        reading = getattr(self._reading, "names", None)
        if reading is None:
            reading = self._reading.names = set()
        if name in reading:  # a cycle (a imports b imports a): open, this once
            return Surface(f"module {name}", None, "imports itself through another module")
        witnesses = getattr(self._reading, "witnesses", None)
        if witnesses is None:
            witnesses = self._reading.witnesses = []
        own = self._workspace_witness(name)  # taken before the files are looked up and read
        located = self._locate(name)
        version = self._version(name, located)
        key = (name, _identity(located.stub), _identity(located.source), str(located.extension), version)
        surface = self._surfaces.get(key)
        read_anew = surface is None
        if surface is None:
            self.generation += 1  # a module read anew (first time, or its files or version changed)
            reading.add(name)
            witnesses.append(own)
            try:
                surface = self._surfaces.put(key, replace(self._read(name, located, version),
                                                          stamp=hashlib.blake2b(repr(key).encode(), digest_size=4).hexdigest()))
            finally:
                reading.discard(name)
                witnesses.pop()
        if self._of_workspace(located) and (read_anew or self._witnesses.get(name, ((),))[0] != key):
            for identity in key[1:3]:  # the stub's and the source's stamps, taken before the read
                if identity is not None:
                    own.keep(*identity)
            self._witnesses[name] = (key, own)
        if witnesses and name in self._witnesses:  # a module being read star-imports this one
            witnesses[-1].add(self._witnesses[name][1])
        if len(self._checked) > 4 * self._surfaces.limit:
            self._checked.clear()
            self._witnesses.clear()  # each module is looked up again, and its witness taken anew
        self._checked[name] = (now, surface)
        return surface

    def changed(self) -> int:
        """Forget the workspace modules' surfaces whose files moved (asked at every request:
        one ``stat`` per file and folder they were read from); the generation after it."""
        for name, (key, witness) in list(self._witnesses.items()):
            if not witness.holds():
                self._witnesses.pop(name, None)
                self._checked.pop(name, None)
                self._surfaces.pop(key)
                self._modules.clear()
                self.generation += 1
        return self.generation

    def _workspace_witness(self, name: str) -> stamps.Witness:
        """The stamps of the workspace folders a module's files are looked up in (a file that
        comes or goes there changes the answer), taken before the lookup."""
        parts = name.split(".")
        witness = stamps.Witness()
        for base in self._workspace_bases:
            witness.note(base.joinpath(*parts[:-1]))
            witness.note(base.joinpath(*parts))  # a package's folder
        return witness

    def _of_workspace(self, located: _Located) -> bool:
        """The module is the user's: found in a workspace folder, or found nowhere (yet)."""
        found = [p for p in (located.source, located.stub, located.extension) if p is not None]
        return not found or any(any(p == r or r in p.parents for r in self.roots) for p in found)

    def member(self, module: str, name: str) -> Member | None:
        """What ``module.name`` is (None: not a member, or the surface is open)."""
        surface = self.module(module)
        if surface.members is None:
            return None
        return surface.members.get(name)

    def resolve(self, module: str, dotted: str, depth: int = 0) -> Member | None:
        """What ``dotted`` (``dict``, ``abc.ABC``) means in the namespace of ``module``: its
        members, then the names it imports privately, then the builtins."""
        head, _, rest = dotted.partition(".")
        surface = self.module(module)
        found = surface.members.get(head) if surface.members is not None else None
        if found is None and head in surface.imports and depth < MAX_DEPTH:
            source, _, name = surface.imports[head].partition(":")
            found = Member("module", source) if not name else (
                Member("module", f"{source}.{name}") if self.is_module(f"{source}.{name}")
                else self.resolve(source, name, depth + 1))
        if found is None and module != "builtins":
            found = self.member("builtins", head)
        while found is not None and rest:
            part, _, rest = rest.partition(".")
            if found.kind != "module" or found.target is None:
                return None
            found = self.member(found.target, part)
        return found

    def class_shape(self, target: str) -> classes.ClassShape | None:
        """The shape of the class ``module:Name`` (a top-level class of an installed module)."""
        module, _, name = target.partition(":")
        return self.module(module).classes.get(name)

    # -- finding the files -----------------------------------------------------------------------

    def _typeshed_stub(self, parts: list[str]) -> Path | None:
        """The bundled typeshed's stub for a module, if the interpreter's version has it
        (typeshed's VERSIONS file, read once)."""
        if self._typeshed_versions is None:
            self._typeshed_versions = typeshed_client.finder.get_typeshed_versions(self._typeshed)
        known = self._typeshed_versions.get(parts[0])
        version = self.search.version
        if known is None or version < known.min or (known.max is not None and version > known.max):
            return None
        folder = self._typeshed.joinpath(*parts)
        for candidate in (folder / "__init__.pyi", folder.with_suffix(".pyi")):
            if candidate.is_file():
                return candidate
        return None

    def _locate(self, name: str) -> _Located:
        parts = name.split(".")
        stub = self._typeshed_stub(parts)
        if stub is None:  # a stub package (`pkg-stubs/`), or a stub next to the source
            candidates = []
            for base in self.bases:
                stubs = base.joinpath(f"{parts[0]}-stubs", *parts[1:])
                inline = base.joinpath(*parts)
                candidates += [stubs / "__init__.pyi", *([stubs.with_suffix(".pyi")] if parts[1:] else []),
                               inline / "__init__.pyi", inline.with_suffix(".pyi")]
            stub = next((c for c in candidates if c.is_file()), None)
        source = extension = package_dir = site = None
        for base in self.bases:
            target = base.joinpath(*parts)
            found = None
            if (target / "__init__.py").is_file():
                found, package_dir = target / "__init__.py", target
            elif target.with_suffix(".py").is_file():
                found = target.with_suffix(".py")
            elif target.parent.is_dir():
                prefix = parts[-1] + "."
                try:
                    entries = os.listdir(target.parent)
                except OSError:
                    entries = []
                ext = next((e for e in entries if e.startswith(prefix) and e.endswith(EXTENSION_SUFFIXES)), None)
                if ext is not None:
                    extension = target.parent / ext
                    site = base
                    break
                if target.is_dir() and not package_dir and not (target / "__init__.pyi").is_file():
                    package_dir = target  # a namespace package, unless a later base has the module
            if found is not None and self.boundary.allows(found):
                source, site = found, base
                break
        stdlib = site is not None and any(site == s or site.is_relative_to(s) for s in self.search.stdlib) \
            and not any(site == s for s in self.search.site)
        if stub is not None and stub.is_relative_to(self._typeshed) and site is None:
            stdlib = True
        if stub is not None and not self.boundary.allows(stub):
            stub = None
        return _Located(stub, source, extension, package_dir, stdlib, site)

    def _version(self, name: str, located: _Located) -> str | None:
        """The installed distribution's version (dist-info), or the interpreter's for the
        standard library."""
        if located.stdlib or located.site is None:
            return "python %d.%d" % self.search.version if located.stdlib else None
        top = _normal(name.split(".")[0])
        folder = located.site
        try:
            stamp = folder.stat().st_mtime_ns
        except OSError:
            return None
        known = self._versions.get(folder)
        if known is None or known[0] != stamp:
            versions: dict[str, str] = {}
            try:
                entries = os.listdir(folder)
            except OSError:
                entries = []
            for entry in entries:
                m = _DIST.match(entry)
                if m is None:
                    continue
                version = m.group("version")
                meta = folder / entry / "METADATA"
                try:  # bounded and never blocking: a workspace venv's METADATA may be a FIFO
                    head = self.boundary.read(meta, MAX_METADATA_BYTES).decode("utf-8", "replace")
                    for line in head.splitlines()[:40]:
                        if line.startswith("Version:"):
                            version = line.split(":", 1)[1].strip()
                            break
                except Refused:  # the folder's name says the version
                    pass
                tops = [m.group("name")]
                try:
                    tops += self.boundary.read(folder / entry / "top_level.txt", MAX_METADATA_BYTES).decode(
                        "utf-8", "replace").split()
                except Refused:
                    pass
                for top_name in tops:
                    versions[_normal(top_name)] = version
            known = self._versions[folder] = (stamp, versions)
        return known[1].get(top)

    # -- reading ------------------------------------------------------------------------------------

    def _read(self, name: str, located: _Located, version: str | None) -> Surface:
        label = f"module {name}"
        stub_names = source_tree = None
        elsewhere: frozenset[str] = frozenset()
        why: list[str] = []
        try:
            if located.stub is not None:
                stub_names, stub_tree = self._stub(name, located.stub)
                elsewhere = _other_platforms(stub_tree.body, self._truth(located.stub))
                why.append(f"stub {located.stub}")
            if located.source is not None:
                source_tree = python_ast.parse(self.boundary.read(located.source, self.max_source_bytes),
                                               filename=str(located.source))
                why.append(f"source {located.source}")
        except (OSError, Refused, SyntaxError, ValueError, RecursionError, ts_parser.InvalidStub) as err:
            return Surface(label, None, f"could not be read ({type(err).__name__}: {str(err)[:120]})", version)
        if stub_names is None and source_tree is None:
            if located.extension is not None:
                return Surface(label, None, f"a compiled extension without a stub ({located.extension.name})", version)
            if located.package_dir is not None:
                return Surface(label, None, f"a namespace package ({located.package_dir}): members are set at run time",
                               version)
            return Surface(label, None, "not found on the interpreter's search path or in the workspace", version)
        members: dict[str, Member] = {n: Member("variable") for n in MODULE_DUNDERS}
        shapes: dict[str, classes.ClassShape] = {}
        imports: dict[str, str] = {}
        if stub_names is not None:
            if "__getattr__" in stub_names:
                return Surface(label, None, f"its stub defines __getattr__ ({located.stub}): any attribute may exist",
                               version)
            for member, info in stub_names.items():
                if (problem := identifier_problem(member)) is not None:
                    # a star import in a stub binds its source's __all__ strings, whatever they hold
                    words.REJECTIONS.note(words.Rejected(str(located.stub), member, problem))
                    continue
                if isinstance(info.ast, ts_parser.ImportedName):
                    source = ".".join(info.ast.module_name)
                    imports[member] = source if info.ast.name is None else f"{source}:{info.ast.name}"
                if not _stub_member_exists(member, info):
                    continue
                members[member] = self._member_from_info(name, member, info, stub=True, depth=0, names=stub_names)
                if isinstance(info.ast, ast.ClassDef):
                    shapes[member] = classes.shape_from_ast(info.ast, stub=True, truth=self._truth(located.stub))
        if source_tree is not None:
            problem = self._add_source_members(name, located, source_tree, members, shapes, imports)
            if problem is not None:
                return Surface(label, None, problem, version)
        return Surface(label, members, "; ".join(why), version, shapes, imports=imports,
                       from_source=source_tree is not None, from_stub=stub_names is not None,
                       elsewhere=elsewhere - set(members))

    def _truth(self, path: Path | None) -> Callable[[ast.expr], bool | None]:
        """Whether an ``if`` test holds for the interpreter (its version and platform)."""
        shown = path or Path("stub.pyi")

        def truth(test: ast.expr) -> bool | None:
            if classes.is_type_checking(test):
                return False
            try:
                return typeshed_client.evaluate_expression_truthiness(test, ctx=self.context, file_path=Path(str(shown) + ".py"))
            except Exception:
                return None

        return truth

    def _stub_names(self, name: str, path: Path) -> ts_parser.NameDict:
        names, _ = self._stub(name, path)
        return names

    def _stub(self, name: str, path: Path) -> tuple[ts_parser.NameDict, ast.Module]:
        tree = python_ast.parse(self.boundary.read(path, self.max_source_bytes), filename=str(path))
        is_init = path.name in ("__init__.pyi", "__init__.py")
        names = ts_parser.parse_ast(tree, self.context, typeshed_client.ModulePath(tuple(name.split("."))),
                                    file_path=path, is_init=is_init)
        return names, tree

    def _member_from_info(self, module: str, member: str, info: ts_parser.NameInfo, stub: bool, depth: int,
                          names: ts_parser.NameDict | None = None) -> Member:
        node = info.ast
        if isinstance(node, ts_parser.ImportedName):
            source = ".".join(node.module_name)
            if node.name is None:
                return Member("module", source)
            # a stub's re-exports (`from posixpath import *` in os/path.pyi) are its API: followed
            return self._imported(module, source, node.name, depth, follow=stub and info.is_exported)
        if isinstance(node, ts_parser.OverloadedName):
            defs = [d for d in node.definitions if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if defs and len(defs) == len(node.definitions):
                return Member("function", None, signatures.merge_keywords(_function_keywords(d, stub) for d in defs))
            return Member("variable")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return Member("function", None, _function_keywords(node, stub))
        if isinstance(node, ast.ClassDef):
            return Member("class", f"{module}:{member}",
                          _constructor_keywords(classes.shape_from_ast(node, stub, self._truth(None))))
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and depth < MAX_DEPTH and names:
            # `path = _path`: the same object as another name of the module (os binds its path module so)
            aliased = names.get(node.value.id)
            if aliased is not None and aliased is not info:
                return self._member_from_info(module, node.value.id, aliased, stub, depth + 1, names)
        return Member("variable")

    def is_module(self, name: str) -> bool:
        """Whether ``name`` is a module (``from os import path``), looked up again at most
        every ``revalidate_s`` seconds: each new hole asks it of every ``from`` import."""
        now = time.monotonic()
        known = self._modules.get(name)
        if known is None or now - known[0] >= self.revalidate_s:
            located = self._locate(name)
            if len(self._modules) > 4096:
                self._modules.clear()
            known = self._modules[name] = (now, located.stub is not None or located.source is not None
                                           or located.extension is not None)
        return known[1]

    def _imported(self, module: str, source: str | None, name: str, depth: int, follow: bool = False) -> Member:
        """What ``from source import name`` binds in ``module``. Followed inside the
        module's own top-level package (a package re-exporting its submodules' API) or when
        ``follow`` (a stub's explicit re-export): reading every module an import names
        would read half the library for one module."""
        if not source or depth >= MAX_DEPTH or (not follow and source.split(".")[0] != module.split(".")[0]):
            return Member("variable")
        if self.is_module(f"{source}.{name}"):
            return Member("module", f"{source}.{name}")
        if source == module:
            return Member("variable")
        try:
            found = self.member(source, name)
        except RecursionError:
            found = None
        return found if found is not None else Member("variable")

    def _add_source_members(self, name: str, located: _Located, tree: ast.Module, members: dict[str, Member],
                            shapes: dict[str, classes.ClassShape], imports: dict[str, str]) -> str | None:
        """Adds what the source binds at module level; returns why the surface is open, if it is."""
        statements = list(_runtime_statements(tree.body))
        for stmt in statements:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "__getattr__" \
                    and located.stub is None:  # a stub without __getattr__ lists what it serves
                return f"it defines __getattr__ ({located.source}): any attribute may exist"
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                starred = _absolute(name, stmt, located.package_dir is not None)
                surface = self.module(starred) if starred else None
                if surface is None or surface.members is None:
                    return f"it star-imports {starred or 'a relative module'}, which cannot be read" + (
                        f" ({surface.why})" if surface is not None else "")
                for member, info in surface.members.items():
                    if not member.startswith("_") or member in MODULE_DUNDERS:
                        members.setdefault(member, info)
            if _rewrites_globals(stmt):
                if located.stub is None:
                    return f"it sets module attributes at run time ({located.source}, line {stmt.lineno})"
        for stmt in statements:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    imports.setdefault(alias.asname or alias.name.split(".")[0],
                                       alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(stmt, ast.ImportFrom):
                source = _absolute(name, stmt, located.package_dir is not None)
                for alias in stmt.names:
                    if source and alias.name != "*":
                        imports.setdefault(alias.asname or alias.name, f"{source}:{alias.name}")
            for member, kind in _bindings(stmt):
                if member in members and members[member].kind != "variable":
                    continue  # the stub (or an earlier branch) already says what it is
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    members[member] = Member("function", None, _function_keywords(stmt, stub=False))
                elif isinstance(stmt, ast.ClassDef):
                    shape = classes.shape_from_ast(stmt, stub=False, truth=self._truth(located.source))
                    shapes.setdefault(member, shape)
                    members[member] = Member("class", f"{name}:{member}", _constructor_keywords(shape))
                elif isinstance(stmt, ast.Import):
                    alias = next(a for a in stmt.names if (a.asname or a.name.split(".")[0]) == member)
                    members[member] = Member("module", alias.name if alias.asname else member)
                elif isinstance(stmt, ast.ImportFrom):
                    alias = next(a for a in stmt.names if (a.asname or a.name) == member)
                    members[member] = self._imported(name, _absolute(name, stmt, located.package_dir is not None),
                                                     alias.name, 0)
                else:
                    members.setdefault(member, Member(kind))
            if isinstance(stmt, ast.ImportFrom) and stmt.level and located.package_dir is not None:
                # `from .sub import x` in a package's __init__ also binds the submodule `sub`
                sub = (stmt.module or "").split(".")[0] if stmt.level == 1 else ""
                if sub:
                    members.setdefault(sub, Member("module", f"{name}.{sub}"))
            if isinstance(stmt, ast.Delete):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        members.pop(target.id, None)
        members.update({d: Member("variable") for d in SOURCE_DUNDERS})
        if located.package_dir is not None:
            members.setdefault("__path__", Member("variable"))
        return None

def _stub_member_exists(name: str, info: ts_parser.NameInfo) -> bool:
    """A stub name that exists at run time: exported names, and private functions and
    classes (``os._exit``); not private type variables and aliases or private imports."""
    if info.is_exported:
        return True
    return isinstance(info.ast, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or (
        isinstance(info.ast, ts_parser.OverloadedName)
        and all(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) for d in info.ast.definitions))


def _constructor_keywords(shape: classes.ClassShape) -> tuple[str, ...] | None:
    """A class's call keywords from its own ``__init__``/``__new__``; a class that
    defines neither and has no base takes none; one with bases inherits (unknown here)."""
    if not isinstance(shape.init_keywords, bool):
        return shape.init_keywords
    return () if not shape.bases or shape.bases == ("object",) else None


def _function_keywords(fn: ast.FunctionDef | ast.AsyncFunctionDef, stub: bool) -> tuple[str, ...] | None:
    if not stub and any(d not in signatures.SIGNATURE_KEEPING for d in signatures.ast_decorators(fn)):
        return None
    return signatures.ast_keywords(fn, method=False)


def _absolute(module: str, stmt: ast.ImportFrom, is_package: bool) -> str | None:
    if not stmt.level:
        return stmt.module
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if stmt.level > 1:
        parts = parts[: len(parts) - (stmt.level - 1)] if len(parts) >= stmt.level - 1 else []
    if not parts and not stmt.module:
        return None
    return ".".join([*parts, *([stmt.module] if stmt.module else [])])


def _other_platforms(body: list[ast.stmt], truth: Callable[[ast.expr], bool | None]) -> frozenset[str]:
    """Names a stub binds on any platform: both branches of a ``sys.platform`` test count,
    other tests as they evaluate for the interpreter."""
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.If):
            platform = any(isinstance(n, ast.Attribute) and n.attr == "platform" for n in ast.walk(stmt.test))
            holds = None if platform else truth(stmt.test)
            names |= _other_platforms(stmt.body, truth) if holds in (None, True) else set()
            names |= _other_platforms(stmt.orelse, truth) if holds in (None, False) else set()
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)  # a stub declares without a value
        else:
            names.update(name for name, _ in _bindings(stmt))
    return frozenset(names)


def _runtime_statements(body: list[ast.stmt]):
    """Module-level statements that run (every branch of an ``if``/``try`` may; an ``if
    TYPE_CHECKING:`` body does not)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if not classes.is_type_checking(stmt.test):
                yield from _runtime_statements(stmt.body)
            yield from _runtime_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try) or (sys.version_info >= (3, 11) and isinstance(stmt, ast.TryStar)):
            yield from _runtime_statements(stmt.body)
            for handler in stmt.handlers:
                yield from _runtime_statements(handler.body)
            yield from _runtime_statements(stmt.orelse)
            yield from _runtime_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield stmt
            yield from _runtime_statements(stmt.body)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            yield stmt
            yield from _runtime_statements(stmt.body)
            yield from _runtime_statements(stmt.orelse)
        else:
            yield stmt


def _bindings(stmt: ast.stmt) -> list[tuple[str, str]]:
    """(name, kind) a module-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [(stmt.name, "function")]
    if isinstance(stmt, ast.ClassDef):
        return [(stmt.name, "class")]
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target] if (not isinstance(stmt, ast.AnnAssign) or stmt.value is not None) else []
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    elif isinstance(stmt, ast.Import):
        return [((a.asname or a.name.split(".")[0]), "module") for a in stmt.names]
    elif isinstance(stmt, ast.ImportFrom):
        return [((a.asname or a.name), "variable") for a in stmt.names if a.name != "*"]
    names = []
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append((node.id, "variable"))
    for node in ast.walk(stmt):  # walrus at module level
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.append((node.target.id, "variable"))
    return names


def _rewrites_globals(stmt: ast.stmt) -> bool:
    """``globals()[...] = ``, ``globals().update(...)``, ``vars()``, ``sys.modules[__name__] = ...``
    in module-level code (function bodies run later, if ever: not counted)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars") \
                and not node.args:
            return True
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "modules" \
                and isinstance(node.slice, ast.Name) and node.slice.id == "__name__":
            return True
    return False


# -- one reader per interpreter and workspace --------------------------------------------------------

_READERS: BoundedCache[tuple, SurfaceReader] = BoundedCache("python.surface-readers", 4)


def reader_for(search: SearchPath, roots: Sequence[Path],
               max_source_bytes: int = MAX_SOURCE_BYTES) -> SurfaceReader:
    key = (search.key, tuple(Path(r) for r in roots), max_source_bytes)
    return _READERS.get_or_make(key, lambda: SurfaceReader(search, roots, max_source_bytes=max_source_bytes))
