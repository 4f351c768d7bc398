"""Γ source: CREATE TABLE / CREATE VIEW / ALTER TABLE in the workspace's ``.sql`` files.

Files are found under the workspace roots (hidden folders, virtual
environments and dependency folders are skipped; the walk is bounded), read
as text (undecodable bytes replaced) and parsed with ``sql_ddl``. A file that
cannot be read is a warning, not an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from gdg_lsp.languages.sql import dialects
from gdg_lsp.languages.sql.ddl import DdlResult, read_ddl

SUFFIXES = (".sql",)
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FILES_VISITED = 20_000
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
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
            for name in sorted(files):
                visited += 1
                if visited > MAX_FILES_VISITED:
                    return
                path = Path(folder) / name
                if path.suffix.lower() in suffixes and path not in seen:
                    seen.add(path)
                    yield path


def read(path: Path) -> tuple[DdlResult, list[str]]:
    """The schema definitions in one ``.sql`` file, and any warnings."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return DdlResult(), [f"{path}: {size} bytes, larger than {MAX_FILE_BYTES} (skipped)"]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        return DdlResult(), [f"{path}: cannot read: {err.strerror or err}"]
    result = read_ddl(text, str(path))
    if result:
        result.dialect_hint = dialects.hint(text)
    return result, list(result.notes)
