"""The names ``from module import *`` brings in, found by reading the module's source.

The module is located on disk (relative imports next to the document, then
the workspace folders, then the interpreter's import path) without importing
anything: ``importlib.util.find_spec`` would import parent packages, which
runs their code. The names are cached by the source's stamp (``gdg_lsp.stamps``),
and the caller keeps the stamps of every candidate looked at
(``star_names(witness=)``), so a change on disk is seen at the next request.
Its ``__all__`` is read if it is a literal list or tuple of strings; otherwise its public top-level bindings are used. ``__all__``'s strings
are whatever the module's author wrote (``"x\\nimport os"`` too), so only those
that are Python identifiers (and pass ``words.control_free``) are names; the
others are left out and noted in ``words.REJECTIONS``.

One exception, because they have no source: extension modules of the Python
standard library itself (``_ast``, ``_heapq``, ...; built into the interpreter
or in its ``lib-dynload`` folder) are imported to list their names. They are
part of the interpreter, never of the workspace.

A source is read only when its real path lies inside the workspace folders (a
document outside them brings its own folder) or the server's own import path, and when it holds at
most ``gdg.limits.sourceBytes`` (``MAX_SOURCE_BYTES`` by default; ``gdg_lsp.boundary``); otherwise
its names are unknown and ``unread_reason`` says why (the analyzer reports it on the import).
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import keyword
import os
import sys
import sysconfig
from functools import lru_cache
from pathlib import Path

from gdg_lsp import python_ast, stamps, words
from gdg_lsp.boundary import Boundary, Refused, workspace_folders

MAX_SOURCE_BYTES = 2 << 20
"""Star-import sources larger than this (2 MiB) are not read: the standard library's
largest module is under 1 MiB, and parsing one costs about a second per MiB."""


def _module_file(module: str, bases: list[Path], witness: stamps.Witness | None = None) -> Path | None:
    """The first candidate file of ``module`` under ``bases``; ``witness`` gets the stamp of each
    candidate looked at (absent ones too: one written there now would be found instead)."""
    parts = module.split(".") if module else []
    for base in bases:
        target = base.joinpath(*parts) if parts else base
        for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
            if candidate is None:
                continue
            if witness is not None:
                witness.note(candidate)
            if candidate.is_file():
                return candidate
    return None


@lru_cache(maxsize=1)
def _dynload_dir() -> Path:
    # the base interpreter's, not a virtual environment's
    base = {"platbase": sys.base_exec_prefix, "installed_platbase": sys.base_exec_prefix,
            "base": sys.base_prefix, "installed_base": sys.base_prefix}
    return Path(sysconfig.get_path("platstdlib", vars=base)) / "lib-dynload"


def _stdlib_extension_spec(module: str):
    """The spec of a standard-library extension module (never one found elsewhere)."""
    if "." in module:
        return None
    if module in sys.builtin_module_names:
        return importlib.machinery.BuiltinImporter.find_spec(module)
    spec = importlib.machinery.PathFinder.find_spec(module, [str(_dynload_dir())])
    if spec is None or not spec.origin or Path(spec.origin).parent != _dynload_dir():
        return None
    return spec


@lru_cache(maxsize=256)
def _names_from_source(path: str, stamp: stamps.Stamp, boundary: Boundary, max_bytes: int) -> tuple[str, ...] | None:
    try:
        tree = python_ast.parse(boundary.read_text(path, max_bytes))
    except (Refused, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    exported: list[str] | None = None
    public: list[str] = []
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "__all__":
                value = node.value  # type: ignore[union-attr]
                if isinstance(value, (ast.List, ast.Tuple)) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
                ):
                    items = _identifiers([e.value for e in value.elts], path)  # type: ignore[union-attr]
                    exported = (exported or []) + items if isinstance(node, ast.AugAssign) else items
        for name in _top_level_names(node):
            if not name.startswith("_"):
                public.append(name)
    return tuple(exported if exported is not None else dict.fromkeys(public))


def identifier_problem(name: str) -> str | None:
    """Why a name written as a string (an ``__all__`` entry) cannot be bound by an import."""
    if (why := words.control_free(name)) is not None:
        return why
    if not name.isidentifier() or keyword.iskeyword(name):
        return "it is not a Python identifier"
    return None


def _identifiers(names: list[str], source: str) -> list[str]:
    """The strings of an ``__all__`` that ``from … import *`` can bind (the rest noted)."""
    kept = []
    for name in names:
        if (why := identifier_problem(name)) is None:
            kept.append(name)
        else:
            words.REJECTIONS.note(words.Rejected(source, name, why))
    return kept


def _top_level_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, (ast.If, ast.Try)):
        names = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                names += _top_level_names(child)
            for grandchild in getattr(child, "body", []) if isinstance(child, ast.excepthandler) else []:
                names += _top_level_names(grandchild)
        return names
    return []


@lru_cache(maxsize=64)
def _stdlib_extension_names(module: str) -> tuple[str, ...] | None:
    mod = sys.modules.get(module)
    if mod is None:
        spec = _stdlib_extension_spec(module)
        if spec is None:
            return None
        try:
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)  # type: ignore[union-attr]
        except Exception:
            return None
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return tuple(str(n) for n in names)


def _source(module: str, level: int, document: Path | None, roots: list[Path],
            witness: stamps.Witness | None = None) -> Path | None:
    """The file ``from <level dots><module> import *`` reads (None: none found, or a
    standard-library extension module)."""
    if level:
        if document is None:
            return None
        base = document.parent
        for _ in range(level - 1):
            base = base.parent
        return _module_file(module, [base], witness)
    return _module_file(module, [*roots, *_import_path()], witness)


def module_source(module: str, level: int, document: Path | None, roots: list[Path]) -> Path | None:
    """The source file of ``<level dots><module>`` (None: none found)."""
    return _source(module, level, document, roots)


def _import_path() -> list[Path]:
    """The server interpreter's import path, less the folder it was started in (an
    editor may start it anywhere, the home folder included)."""
    here = os.getcwd()
    return [Path(p) for p in sys.path if p and p != here and os.path.isdir(p)]


def _boundary(document: Path | None, roots: list[Path]) -> Boundary:
    return Boundary.of(workspace_folders(document, roots), _import_path())


def star_names(module: str, level: int, document: Path | None, roots: list[Path],
               max_bytes: int = MAX_SOURCE_BYTES, witness: stamps.Witness | None = None) -> tuple[str, ...] | None:
    """Names ``from <level dots><module> import *`` binds, or None when they cannot be read (a
    source over ``max_bytes``, ``gdg.limits.sourceBytes``, is not). ``witness`` gets the stamps
    of the candidates looked at, the source's among them (taken before it is read)."""
    witness = witness if witness is not None else stamps.Witness()
    path = _source(module, level, document, roots, witness)
    if path is None:
        return None if level else _stdlib_extension_names(module)
    stamp = witness.note(path)
    if stamp is None:
        return None
    return _names_from_source(str(path), stamp, _boundary(document, roots), max_bytes)


def unread_reason(module: str, level: int, document: Path | None, roots: list[Path],
                  max_bytes: int = MAX_SOURCE_BYTES) -> str | None:
    """Why the source of a star import was found but is not read (outside the allowed
    folders, larger than ``max_bytes``, not a regular file), or None."""
    path = _source(module, level, document, roots)
    why = None if path is None else _boundary(document, roots).refusal(path, max_bytes)
    if why is not None and _larger(path, max_bytes):
        why += " (the bound is gdg.limits.sourceBytes)"
    return why


def _larger(path: Path, max_bytes: int) -> bool:
    try:
        return os.stat(path).st_size > max_bytes
    except OSError:
        return False
