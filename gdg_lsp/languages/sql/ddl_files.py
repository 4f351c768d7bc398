"""Γ source: CREATE TABLE / CREATE VIEW / ALTER TABLE in the workspace's ``.sql`` files.

Files are found under the workspace roots (hidden folders, virtual
environments and dependency folders are skipped; links to folders are not
followed; the walk is bounded), read through the boundary as text (undecodable
bytes replaced: ``Boundary.read_text``, so a link out of the workspace, a FIFO
or a file over ``MAX_FILE_BYTES`` is never read) and parsed with ``sql_ddl``.
A file that cannot be read is a warning, not an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from gdg_lsp.boundary import Boundary, Refused
from gdg_lsp.languages.sql import dialects
from gdg_lsp.languages.sql.ddl import DdlResult, read_ddl

SUFFIXES = (".sql",)
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FILES_VISITED = 20_000
"""Files and folders one walk looks at (a tree of empty folders costs as much as one of files)."""
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages", "dist", "build", "target"})


def walk(roots: Iterable[Path], suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Files under ``roots`` whose name ends with one of ``suffixes`` (sorted per folder)."""
    visited = 0
    seen: set[Path] = set()
    for root in roots:
        root = Path(root)
        if root.is_file():
            if root.suffix.lower() in suffixes:
                yield root
            continue
        for folder, dirs, files in os.walk(root):  # links to folders are not followed
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            visited += 1  # the folder itself
            if visited > MAX_FILES_VISITED:
                return
            for name in sorted(files):
                visited += 1
                if visited > MAX_FILES_VISITED:
                    return
                path = Path(folder) / name
                if path.suffix.lower() in suffixes and path not in seen:
                    seen.add(path)
                    yield path


def read(path: Path, boundary: Boundary) -> tuple[DdlResult, list[str]]:
    """The schema definitions in one ``.sql`` file, and any warnings."""
    try:
        text = boundary.read_text(path, MAX_FILE_BYTES)
    except Refused as err:
        return DdlResult(), [str(err)]
    result = read_ddl(text, str(path))
    if result:
        result.dialect_hint = dialects.hint(text)
    return result, list(result.notes)
