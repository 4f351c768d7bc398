"""The acceptance statistics kept across sessions: ``acceptance.json`` in the user's state folder.

The file is the user's alone and never leaves the machine: it lies in the private state
folder (``private_folder.state_folder``: ``$GDG_LSP_STATE_DIR``, else the platform's; never a
workspace), is written whole or not at all, and is read only when it is this user's regular
file that nobody else may write, at most ``MAX_BYTES``, of the expected shape. Anything else
(a file planted by another user, one others may write, a link, a corrupt one) is ignored, said
once by the caller (``problem``), and replaced at the next write.

Several servers may run at once (two editors): each adds what its session counted since its
last write (``add``) to what the file holds then, under a lock file beside it. Rows are
(language, model) pairs; past ``MAX_ROWS`` the rows with the fewest suggestions shown go.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gdg_lsp.private_folder import StateFile, private_folder, remove_entry
from gdg_lsp.service.acceptance import FIELDS, Table

FILE_NAME = "acceptance.json"
LOCK_NAME = "acceptance.lock"
MAX_BYTES = 256 * 1024
MAX_ROWS = 400
"""(language, model) rows kept: a row is about 400 bytes, so the file stays under ``MAX_BYTES``."""
MAX_NAME = 200
"""Characters of a language or model name kept (a model may be a long path)."""
MAX_COUNT = 2**53
FORMAT = 1


class AcceptanceStore(StateFile):
    NAME = FILE_NAME
    MAX_BYTES = MAX_BYTES

    def ignored_because(self, why: str) -> str:
        return f"the acceptance statistics in {self.path} are ignored (and will be replaced): {why}"

    def read(self) -> Table:
        """What the file holds; an empty table when there is none or it is not believed (``problem``)."""
        body = self.read_body()
        if body is None:
            return Table()
        try:
            return _table(json.loads(body.decode("utf-8")))
        except (UnicodeDecodeError, ValueError) as err:
            self.problem = self.ignored_because(str(err))
            return Table()

    def add(self, delta: Table) -> Table:
        """Add ``delta`` to the file (a new one when it is missing or not believed); what it holds
        now. ``NotPrivate`` or ``OSError`` when the state folder cannot be written."""
        with self._locked():
            table = self.read().merged(delta)
            if self.problem is not None:
                remove_entry(self.path)  # a link or a folder planted there is taken away, never followed
            rows = sorted(table.rows.items(), key=lambda row: -row[1].get("shown", 0))[:MAX_ROWS]
            kept = Table(dict(rows))
            self.write_body(_body(kept))
            return kept

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        where = private_folder(self.folder)
        try:
            import fcntl
        except ImportError:  # no advisory locks here (Windows): last writer wins
            yield
            return
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(where / LOCK_NAME, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _body(table: Table) -> bytes:
    rows = [{"language": language, "model": model, **{name: counts.get(name, 0) for name in FIELDS}}
            for (language, model), counts in sorted(table.rows.items())]
    return json.dumps({"format": FORMAT, "rows": rows}, indent=1).encode("utf-8")


def _table(data: Any) -> Table:
    """The table a file's JSON describes; ValueError when it is not of the expected shape."""
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("rows"), list):
        raise ValueError("not of the expected shape (format 1, a list of rows)")
    table = Table()
    for index, row in enumerate(data["rows"]):
        if not isinstance(row, dict):
            raise ValueError(f"row {index} is not an object")
        language, model = row.get("language"), row.get("model")
        if not (isinstance(language, str) and isinstance(model, str)) or max(len(language), len(model)) > MAX_NAME:
            raise ValueError(f"row {index} has no language and model names of at most {MAX_NAME} characters")
        counts = {name: row.get(name, 0) for name in FIELDS}
        if not all(type(value) is int and 0 <= value <= MAX_COUNT for value in counts.values()):
            raise ValueError(f"row {index} has a count that is not a whole number from 0")
        table.add((language, model), counts)
    return table


_COLUMNS = (("shown", "shown"), ("accepted", "accepted"), ("partiallyAccepted", "partly"),
            ("dismissed", "dismissed"), ("typedThrough", "typed"), ("charsAccepted", "chars"))


def stats_lines(table: Table, path: Path) -> list[str]:
    """``gdg-lsp stats``: one row per language and model, and the totals."""
    if not table.rows:
        return [f"no suggestions counted yet ({path})"]
    rows = [(language, model, counts) for (language, model), counts in sorted(table.rows.items())]
    rows.append(("all", "", table.total()))
    header = ["language", "model", *(title for _, title in _COLUMNS), "kept 30s", "kept 2m"]
    body = [[language, model, *(str(counts.get(name, 0)) for name, _ in _COLUMNS),
             _share(counts, "30s"), _share(counts, "2m")] for language, model, counts in rows]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths)))
             for line in [header, *body]]
    return [*lines, "", f"kept: characters accepted still there after 30 s and 2 min, of those checked ({path})"]


def _share(counts: dict[str, int], suffix: str) -> str:
    checked, kept = counts.get(f"charsChecked{suffix}", 0), counts.get(f"charsRetained{suffix}", 0)
    return f"{kept}/{checked} ({100 * kept / checked:.0f}%)" if checked else "-"
