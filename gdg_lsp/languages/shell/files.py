"""The one reader of the workspace files the shell sources read (``.git`` files, Makefiles and
their includes, package.json, justfiles, Taskfiles).

Every read goes through ``Boundary.read``: the real path is judged (a link is followed only
where it leads inside the workspace), the file is opened without blocking and only when it is
a regular file (a FIFO planted at ``.git/HEAD`` or named by a Makefile ``include`` would
otherwise hang the analysis thread for good), and never past its size limit. A file that
exists but is refused is noted once (``boundary.note_unread``), so the names it would have given
are missing for a reason the user can read; a missing file is simply absent.
"""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.boundary import Boundary, Refused, note_unread


def read_bytes(path: Path, boundary: Boundary, limit: int) -> bytes | None:
    """The file's bytes, or None (missing, or refused: outside, not a regular file, too large)."""
    try:
        return boundary.read(path, limit)
    except Refused as err:
        note_unread(path, err)
        return None


def read_text(path: Path, boundary: Boundary, limit: int) -> str | None:
    data = read_bytes(path, boundary, limit)
    return None if data is None else data.decode("utf-8", "replace")


class Lines:
    """Line numbers of offsets in ``text`` asked in increasing order, counted in one pass
    (``text.count`` from 0 for each of 40,000 names is quadratic in the file)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 0

    def at(self, offset: int) -> int:
        if offset < self._offset:  # out of order: count again from the start
            self._offset, self._line = 0, 0
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line
