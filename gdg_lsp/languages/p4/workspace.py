"""Analysing a P4 file together with the files it includes.

``analyse(text, uri, workspace)`` preprocesses the document, resolving each
``#include`` through ``IncludePaths`` and analysing the included file in turn
(with the macros in force at the ``#include``), then parses and binds the
document. An included file is analysed once per (path, stamp, values of the
macros it tests) and cached.

Both are kept only while the disk says what they were made from: each keeps a
``stamps.Witness`` of every file it read (the stamp taken before the read) and of
every include candidate it looked for before the one found (absent then: a file
written there now would be included instead), its nested includes' too, and a kept
analysis is used only while its witness holds (one ``stat`` per path, per request).

Include search, for ``#include "f"``: the including file's folder first; then,
for both forms, the ``gdg.p4.includePaths`` setting, the workspace folders
(and their ``include``/``p4include`` subfolders), and the usual p4c install
locations. A ``core.p4`` or ``v1model.p4`` found nowhere is replaced by the
project's facts about it (``p4_library``); any other missing include is
reported and contributes nothing.

The first file found is the one included (as the compiler would), and it is read
only when its real path lies inside the workspace folders, the configured include
paths or p4c's install folders (``gdg_lsp.boundary``; a document outside every
workspace folder brings its own folder) and it holds at most ``gdg.limits.includeBytes``
(``MAX_INCLUDE_BYTES`` by default). Otherwise nothing of it is read and the ``#include`` line
gets a diagnostic saying why (``check.py``). What an included file declares
becomes Γ only where its names are P4's (``names.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary, Refused, TooLarge, workspace_folders
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import uri_to_path
from gdg_lsp.languages.p4 import library as p4_library
from gdg_lsp.languages.p4 import names as p4_names
from gdg_lsp.languages.p4.parser import Program, parse_program, scan_type_names
from gdg_lsp.languages.p4.preprocess import Define, Include, Preprocessed, preprocess
from gdg_lsp.languages.p4.symbols import Sym, Unit, bind
from gdg_lsp.settings import limits_of

P4C_INCLUDE_DIRS = (
    "/usr/share/p4c/p4include",
    "/usr/local/share/p4c/p4include",
    "/opt/p4c/p4include",
    "/opt/homebrew/share/p4c/p4include",
    os.path.join(sys.prefix, "share", "p4c", "p4include"),
    os.path.expanduser("~/.local/share/p4c/p4include"),
)
"""Where p4c installs its include files (package managers, make install, pip, local)."""

MAX_INCLUDE_DEPTH = 16
MAX_INCLUDE_BYTES = 1 << 20
"""Included files larger than this (1 MiB) are not read. The largest real ones (p4c's
``tna.p4``, ``psa.p4``, ``v1model.p4``) are tens of KiB; analysing 1 MiB of declarations
takes seconds and hundreds of MB, 8 MiB took minutes and 2 GB."""


@dataclass(frozen=True)
class IncludePaths:
    """The folders searched for included files, in order."""

    configured: tuple[Path, ...] = ()
    roots: tuple[Path, ...] = ()
    system: tuple[Path, ...] = ()
    max_bytes: int = MAX_INCLUDE_BYTES
    """The largest included file read (``gdg.limits.includeBytes``)."""

    @classmethod
    def from_workspace(cls, workspace) -> IncludePaths:
        settings = getattr(workspace, "settings", None)
        p4 = getattr(settings, "p4", None)
        configured = tuple(Path(os.path.expanduser(p)) for p in getattr(p4, "include_paths", ()) or ())
        roots: list[Path] = []
        for root in getattr(workspace, "roots", ()) or ():
            root = Path(root)
            roots += [root, root / "include", root / "p4include"]
        return cls(configured, tuple(roots), tuple(Path(p) for p in P4C_INCLUDE_DIRS),
                   limits_of(settings).include_bytes)

    @cached_property
    def boundary(self) -> Boundary:
        """Where included files may be read from: every folder searched (the workspace
        folders hold their ``include`` subfolders)."""
        return Boundary.of(self.configured, self.roots, self.system)

    def for_document(self, including: Path | None) -> IncludePaths:
        """A document outside every workspace folder brings its own folder (``workspace_folders``)."""
        roots = tuple(workspace_folders(including, self.roots))
        return self if roots == self.roots else replace(self, roots=roots)

    def resolve(self, include: Include, including: Path | None,
                witness: stamps.Witness | None = None) -> Path | None:
        """The file ``include`` names (None: none found); ``witness`` gets the stamp of each
        candidate looked at, absent ones too."""
        target = include.target
        if not target:
            return None
        candidates: list[Path] = []
        if os.path.isabs(target):
            candidates.append(Path(target))
        else:
            if not include.system and including is not None:
                candidates.append(including.parent / target)
            candidates += [folder / target for folder in (*self.configured, *self.roots, *self.system)]
        for candidate in candidates:
            if witness is not None:
                witness.note(candidate)
            try:
                if candidate.is_file():
                    return candidate
            except OSError:
                continue
        return None


@dataclass
class IncludedFile:
    """One included file's analysis (or the library facts standing in for it)."""

    name: str
    path: Path | None
    syms: list[Sym]
    types: set[str]
    exported: dict[str, Define]
    nested: list[IncludedFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    from_facts: bool = False
    refused: str | None = None
    """Why the file found for this include was not read (outside the boundary, too large)."""
    witness: stamps.Witness = field(default_factory=stamps.Witness, repr=False, compare=False)
    """The stamps of the files read for it and of the include candidates looked at, nested ones too."""

    def refusals(self) -> Iterable[str]:
        """Why this file or a file it includes was not read."""
        if self.refused:
            yield self.refused
        for nested in self.nested:
            for why in nested.refusals():
                yield f"in {self.name}: {why}"

    def all_syms(self) -> Iterable[Sym]:
        for nested in self.nested:
            yield from nested.all_syms()
        yield from self.syms

    def all_types(self) -> set[str]:
        names = set(self.types)
        for nested in self.nested:
            names |= nested.all_types()
        return names


@dataclass
class Analysis:
    """A document with its includes: what Γ, holes and diagnostics are computed from."""

    uri: str
    text: str
    pre: Preprocessed
    program: Program
    unit: Unit
    includes: list[tuple[Include, IncludedFile | None]]
    types: frozenset[str]
    memo: dict = field(default_factory=dict, repr=False, compare=False)
    """Answers computed from this analysis (Γ, blocks at an offset): keystrokes in one
    region share the analysis, and with it these."""
    witness: stamps.Witness = field(default_factory=stamps.Witness, repr=False, compare=False)
    """What its includes were read from (``IncludedFile.witness``): it is kept while that holds."""

    def included_syms(self, before: int | None = None) -> list[Sym]:
        out: list[Sym] = []
        for include, found in self.includes:
            if found is None or (before is not None and include.start >= before):
                continue
            out.extend(found.all_syms())
        return out

    def macros_before(self, offset: int) -> list[Define]:
        """Object-like and function-like macros defined before ``offset`` (includes' too)."""
        result: dict[str, Define] = {}
        for include, found in self.includes:
            if found is not None and include.start < offset:
                result.update(found.exported)
        for define in self.pre.own_defines:
            if define.offset < offset:
                result[define.name] = define
        return list(result.values())


_included: BoundedCache[tuple, IncludedFile] = BoundedCache("p4.included-files", 64)
_documents: BoundedCache[tuple, Analysis] = BoundedCache("p4.analyses", 16, max_weight=1_500_000,
                                                          weigh=lambda analysis: len(analysis.text))
"""Weighed by the text's length: an analysis of a 0.3 M-character document holds ~50,000
objects that every full collection of the garbage collector walks (16 of them made each
one last a second)."""
_WORD = re.compile(r"[A-Za-z_]\w*")


def _relevant(text: str, macros: Mapping[str, Define]) -> tuple[tuple[str, str], ...]:
    words = set(_WORD.findall(text))
    return tuple(sorted((n, d.value) for n, d in macros.items() if n in words))


def _library(name: str, macros: Mapping[str, Define]) -> IncludedFile | None:
    if name not in p4_library.LIBRARY:
        return None
    version_define = macros.get("V1MODEL_VERSION")
    try:
        version = int(version_define.value, 0) if version_define else p4_library.V1MODEL_DEFAULT_VERSION
    except ValueError:
        version = p4_library.V1MODEL_DEFAULT_VERSION
    nested = [f for f in (_library(n, macros) for n in p4_library.LIBRARY[name].get("includes", ())) if f]
    exported = {n: Define(n, v, None, -1, f"p4-library:{name}") for n, v in p4_library.macros(name)}
    if "V1MODEL_VERSION" in macros and name == "v1model.p4":
        exported["V1MODEL_VERSION"] = macros["V1MODEL_VERSION"]
    return IncludedFile(name, None, p4_library.symbols(name, version), p4_library.type_names(name, version),
                        exported, nested, from_facts=True)


def analyse_include(
    include: Include,
    including: Path | None,
    macros: Mapping[str, Define],
    paths: IncludePaths,
    stack: tuple[Path, ...] = (),
    known_types: frozenset[str] = frozenset(),
    witness: stamps.Witness | None = None,
) -> IncludedFile | None:
    """The included file's declarations (cached while its witness holds), the library facts, or None.

    ``known_types`` are the type names declared before the ``#include`` (by
    earlier includes): an include guard may empty a nested include (v1model.p4's
    ``#include "core.p4"`` after the program's own), yet its types are known.
    ``witness`` gets the stamps of the candidates looked at and of what was read."""
    witness = witness if witness is not None else stamps.Witness()
    name = Path(include.target).name
    path = paths.resolve(include, including, witness)
    if path is None:
        return _library(name, macros)
    try:
        resolved = path.resolve()
        if resolved in stack or len(stack) >= MAX_INCLUDE_DEPTH:
            return IncludedFile(name, path, [], set(), {}, problems=[f"{name} includes itself (ignored)"])
        stamp = witness.note(resolved)  # before the read: a change made while reading is seen next time
        text = paths.boundary.read(path, paths.max_bytes).decode("utf-8", errors="replace")
    except Refused as err:
        found = _library(name, macros) or IncludedFile(name, None, [], set(), {})
        bound = " (the bound is gdg.limits.includeBytes)" if isinstance(err, TooLarge) else ""
        found.refused = f"#include {include.target!r}: {err}{bound}"
        return found
    except OSError as err:
        found = _library(name, macros)
        if found is not None:
            found.problems.append(f"cannot read {path}: {err}")
        return found
    words = set(_WORD.findall(text))
    inherited = frozenset(known_types & words)
    key = (str(resolved), stamp, _relevant(text, macros), paths, inherited)
    if (hit := _included.get(key)) is not None and hit.witness.holds():  # its own includes too
        witness.add(hit.witness)
        return hit
    nested: list[IncludedFile] = []
    own = stamps.Witness()
    own.keep(resolved, stamp)

    def on_include(inner: Include, current: Mapping[str, Define]) -> Mapping[str, Define] | None:
        so_far = inherited.union(*(n.all_types() for n in nested))
        found = analyse_include(inner, resolved, current, paths, (*stack, resolved), frozenset(so_far), own)
        if found is None:
            return None
        nested.append(found)
        return _exports(found)

    pre = preprocess(text, macros, on_include, resolved.as_uri())
    known = set(inherited).union(*(n.all_types() for n in nested))
    program = parse_program(pre.code, known)
    unit = bind(program, pre.code, resolved.as_uri())
    # the file's author chose these names: only P4 identifiers (and macro values without control characters) pass
    exported = p4_names.admitted_defines({d.name: d for d in pre.own_defines}, str(resolved))
    witness.add(own)
    return _included.put(key, IncludedFile(name, resolved, p4_names.admitted_syms(unit.top, str(resolved)),
                                           scan_type_names(pre.code) | _type_params(unit.top),
                                           exported, nested, [m for _, _, m in program.errors], witness=own))


def _exports(found: IncludedFile) -> dict[str, Define]:
    out: dict[str, Define] = {}
    for nested in found.nested:
        out.update(_exports(nested))
    out.update(found.exported)
    return out


def _type_params(syms: Iterable[Sym]) -> set[str]:
    names: set[str] = set()
    for sym in syms:
        names.update(sym.type_params)
        for member in sym.members:
            names.update(member.type_params)
    return names


def analyse(text: str, uri: str, paths: IncludePaths, memory: dict | None = None,
            focus: int | None = None) -> Analysis:
    """The document's analysis with its includes (cached by text, uri, include paths and focus,
    while what its includes were read from holds: ``Analysis.witness``).

    ``memory`` is the document's last good parse of each top-level declaration
    (see ``parse_program``). With ``focus``, only the bodies holding that offset have their
    statements bound (``symbols.bind``): enough for Γ there, not for diagnostics."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    key = (digest, uri, paths, focus)
    if (hit := _documents.get(key)) is not None and hit.witness.holds():
        return hit
    including = uri_to_path(uri)
    paths = paths.for_document(including)
    includes: list[tuple[Include, IncludedFile | None]] = []
    witness = stamps.Witness()

    def on_include(include: Include, macros: Mapping[str, Define]) -> Mapping[str, Define] | None:
        so_far = frozenset().union(*(f.all_types() for _, f in includes if f is not None))
        found = analyse_include(include, including, macros, paths, (including.resolve(),) if including else (), so_far,
                                witness)
        includes.append((include, found))
        return _exports(found) if found is not None else None

    pre = preprocess(text, {}, on_include, uri)
    known: set[str] = set()
    for _, found in includes:
        if found is not None:
            known |= found.all_types()
    program = parse_program(pre.code, known, memory)
    unit = bind(program, pre.code, uri, focus)
    return _documents.put(key, Analysis(uri, text, pre, program, unit, includes,
                                        frozenset(known | scan_type_names(pre.code)), witness=witness))

