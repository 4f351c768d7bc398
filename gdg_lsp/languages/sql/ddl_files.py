"""Γ source: CREATE TABLE / CREATE VIEW / ALTER TABLE in the workspace's ``.sql`` files.

Files are found under the workspace roots by the catalog's walk (hidden folders,
virtual environments and dependency folders, ``SKIPPED_DIRS``, are skipped; links
to folders are not followed; the walk is bounded by ``MAX_FILES_VISITED``), read
through the boundary as text (undecodable bytes replaced: ``Boundary.read_text``, so a link out of the workspace, a FIFO
or a file over ``MAX_FILE_BYTES`` is never read) and parsed with ``sql_ddl``.
A file that cannot be read is a warning, not an error.
"""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.boundary import Boundary, Refused
from gdg_lsp.languages.sql import dialects
from gdg_lsp.languages.sql.ddl import DdlResult, read_ddl

SUFFIXES = (".sql",)
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_FILES_VISITED = 20_000
"""Files and folders one walk looks at (a tree of empty folders costs as much as one of files)."""
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages", "dist", "build", "target"})


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
