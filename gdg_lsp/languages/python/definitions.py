"""Definitions from other files for the prompt: what the names imported near the cursor are.

A name bound by ``from module import name`` and used near the cursor is looked up
in the module's source, found statically (``imports``: relative imports next to
the document, then the workspace folders) and read only inside the workspace
folders (the model knows the standard library; the user's helpers it has never
seen). Its definition is shown as a stub: a function's header and the first line
of its docstring, a class's header and its methods' headers, an assignment's line.

Chunks are cached per (file, stamp, name: ``gdg_lsp.stamps``); the context lists them in
the order of the imports in the document, so the prompt's start changes only when
another imported name comes into use (the KV cache is reused across keystrokes).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from gdg_lsp import python_ast, stamps
from gdg_lsp.boundary import Boundary, Refused, workspace_folders
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.python import imports
from gdg_lsp.words import comment_text

NEAR_LINES = 30
"""Lines before the cursor (and a third as many after) whose names count as "used near it"."""

MAX_CLASS_MEMBERS = 12
"""Method headers shown for a class."""

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CHUNKS: BoundedCache[tuple[str, int, str], str] = BoundedCache("python definitions", 512)


def line_start_back(text: str, pos: int, count: int) -> int:
    """Where the line ``count`` line starts back from ``pos`` begins (the first line of the
    text when there are fewer)."""
    for _ in range(count):
        if pos <= 0:
            return 0
        pos = text.rfind("\n", 0, pos - 1) + 1
    return pos


def line_end_forward(text: str, pos: int, count: int) -> int:
    """Where the line ``count`` line breaks after ``pos`` ends (the text's end when there
    are fewer)."""
    for _ in range(count):
        found = text.find("\n", pos + 1)
        if found < 0:
            return len(text)
        pos = found
    return pos


def names_near(text: str, region_start: int, cursor: int) -> set[str]:
    """The identifiers on the ``NEAR_LINES`` lines above the hole's first line and the
    ``NEAR_LINES // 3`` lines below the cursor's line, import lines aside. The hole's own
    lines are left out: what the user types there does not change the context, so the
    prompt's start stays the same for every keystroke of the line (KV cache reused)."""
    first = text.rfind("\n", 0, region_start) + 1
    start = line_start_back(text, first, NEAR_LINES)
    after = text.find("\n", cursor)
    after = len(text) if after < 0 else after
    end = line_end_forward(text, after, NEAR_LINES // 3)
    lines = text[start:first].split("\n") + text[after:end].split("\n")
    return {name for line in lines if not line.lstrip().startswith(("import ", "from "))  # the imports themselves
            for name in _IDENT.findall(line)}


def _stub(source: str, node: ast.stmt) -> str:
    lines = source.splitlines()
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        body_start = node.body[0].lineno if node.body else node.lineno
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        header = lines[first - 1 : max(node.lineno, body_start - 1)]
        indent = " " * (node.col_offset + 4)
        out = [*header]
        doc = ast.get_docstring(node)
        if doc:
            out.append(f'{indent}"""{doc.strip().splitlines()[0]}"""')
        if isinstance(node, ast.ClassDef):
            members = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for member in members[:MAX_CLASS_MEMBERS]:
                out.append(_stub(source, member).rstrip("\n"))
            if not members:
                out.append(f"{indent}...")
        else:
            out.append(f"{indent}...")
        return "\n".join(out) + "\n"
    return "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)]) + "\n"


def _defined(node: ast.stmt, name: str) -> bool:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Name) and t.id == name for t in targets)
    return False


def _chunk(path: Path, name: str, boundary: Boundary, max_bytes: int) -> str:
    """The stub of ``name``'s top-level definition in ``path`` ("" when there is none)."""
    stamp = stamps.of(path)  # before the read; a racy one equals no other, so it is read again
    if stamp is None:
        return ""
    key = (str(path), stamp, name, max_bytes)
    found = _CHUNKS.get(key)
    if found is None:
        try:
            source = boundary.read_text(path, max_bytes)
            tree = python_ast.parse(source)
        except (Refused, SyntaxError, ValueError, RecursionError, MemoryError):
            source, tree = "", None
        node = next((n for n in tree.body if _defined(n, name)), None) if tree is not None else None
        found = _CHUNKS.put(key, _stub(source, node) if node is not None else "")
    return found


def context(imported: Iterable[tuple[str, str, str]], used: set[str], document: Path | None,
            roots: list[Path], max_chars: int, max_bytes: int = imports.MAX_SOURCE_BYTES) -> str:
    """Stubs of the imported names in ``used``, in the order given (the document's imports),
    each headed by where it comes from, within ``max_chars`` (whole chunks only; a source file
    over ``max_bytes``, ``gdg.limits.sourceBytes``, gives none).

    ``imported``: (local name, module as written with its leading dots, name in the module)."""
    folders = workspace_folders(document, roots)
    boundary = Boundary.of(folders)
    parts: list[str] = []
    size = 0
    for local, module, original in imported:
        if local not in used:
            continue
        level = len(module) - len(module.lstrip("."))
        path = imports.module_source(module.lstrip("."), level, document, roots)
        if path is None or not boundary.allows(path):
            continue  # not the user's code (the standard library, site-packages): the model knows it
        chunk = _chunk(path, original, boundary, max_bytes)
        if not chunk:
            continue
        part = f"# {comment_text(f'{module}.{original} ({path.name}):')}\n{chunk}"
        if size + len(part) > max_chars:
            break
        parts.append(part)
        size += len(part)
    return "".join(parts) + ("\n" if parts else "")
