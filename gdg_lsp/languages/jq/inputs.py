"""Which JSON a jq filter reads, in order of precedence:

1. a ``# gdg: input=path`` comment in the document (relative to its folder);
2. the file the shell command names after the program (``jq '.x' data.json``);
3. ``gdg.jq.inputs``: ``{"filter": "<glob of filter files>", "input": "<glob of JSON files>"}``
   entries, both relative to a workspace folder;
4. the ``.json`` file of the same stem beside the filter (``orders.jq`` → ``orders.json``).

Every candidate must lie inside the boundary (workspace folders); one outside
it, or reached through a symlink that leaves it, is not read.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gdg_lsp.boundary import Boundary

INPUT_COMMENT = re.compile(r"#\s*gdg:\s*input\s*=\s*(\S+)")
MAX_INPUT_FILES = 8


def from_comment(text: str) -> str | None:
    match = INPUT_COMMENT.search(text)
    return match.group(1) if match else None


def _inside(paths: Sequence[Path], boundary: Boundary) -> list[Path]:
    return [p for p in paths if p.is_file() and boundary.allows(p)][:MAX_INPUT_FILES]


def input_files(document: Path | None, text: str, roots: Sequence[Path], settings: Any = None,
                named: str | None = None) -> list[Path]:
    """The JSON files a filter in ``document`` reads (empty when none is known)."""
    boundary = Boundary.of(roots)
    folder = document.parent if document is not None else (roots[0] if roots else None)
    written = from_comment(text)
    for candidate in (written, named):
        if candidate and folder is not None:
            found = _inside([Path(os.path.normpath(folder / candidate))], boundary)
            if found:
                return found
    if document is not None:
        for entry in getattr(getattr(settings, "jq", None), "inputs", None) or ():
            for root in roots:
                try:
                    relative = document.relative_to(root).as_posix()
                except ValueError:
                    continue
                if fnmatch.fnmatch(relative, entry.filter):
                    found = _inside(sorted(root.glob(entry.input)), boundary)
                    if found:
                        return found
        same_stem = document.with_suffix(".json")
        if same_stem != document:
            found = _inside([same_stem], boundary)
            if found:
                return found
    return []
