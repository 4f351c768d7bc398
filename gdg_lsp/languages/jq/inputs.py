"""Which JSON a jq filter reads, in order of precedence:

1. a ``# gdg: input=path`` comment in the document (relative to its folder);
2. the file the shell command names after the program (``jq '.x' data.json``);
3. ``gdg.jq.inputs``: ``{"filter": "<glob of filter files>", "input": "<glob of JSON files>"}``
   entries, relative to a workspace folder or absolute (an absolute input glob must
   lie inside a workspace folder);
4. the ``.json`` file of the same stem beside the filter (``orders.jq`` → ``orders.json``).

Every candidate must lie inside the boundary (workspace folders); one outside
it, or reached through a symlink that leaves it, is not read.

An input glob is walked by ``gdg_lsp.folder_walk`` (links to folders followed only inside
the boundary, each real folder listed once per step of the pattern), which stops at
``gdg.limits.globFolders`` folders or ``gdg.limits.globMatches`` files (one problem for the
user, ``problems``); a walk is kept until one of the folders it looked into changes.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gdg_lsp import folder_walk
from gdg_lsp.boundary import Boundary
from gdg_lsp.settings import limits_of

INPUT_COMMENT = re.compile(r"#\s*gdg:\s*input\s*=\s*(\S+)")
MAX_INPUT_FILES = 8


def from_comment(text: str) -> str | None:
    match = INPUT_COMMENT.search(text)
    return match.group(1) if match else None


def _inside(paths: Sequence[Path], boundary: Boundary) -> list[Path]:
    return [p for p in paths if p.is_file() and boundary.allows(p)][:MAX_INPUT_FILES]


def _entries(settings: Any) -> Sequence[Any]:
    return getattr(getattr(settings, "jq", None), "inputs", None) or ()


def _filter_matches(document: Path, root: Path, entry: Any) -> bool:
    if os.path.isabs(entry.filter):
        return fnmatch.fnmatch(document.as_posix(), entry.filter)
    try:
        relative = document.relative_to(root).as_posix()
    except ValueError:
        return False
    return fnmatch.fnmatch(relative, entry.filter)


def problems(roots: Sequence[Path], settings: Any) -> list[str]:
    """Why an input glob of ``gdg.jq.inputs`` was not (or not wholly) walked, from the walks
    made so far (nothing is walked here): for ``server/problems.py``, said once each."""
    boundary = Boundary.of(roots)
    found = []
    for entry in _entries(settings):
        for root in roots:
            problem = folder_walk.known_problem(Path(root), entry.input, boundary, _label(entry.input),
                                                **_bounds(settings))
            if problem is not None:
                found.append(problem)
    return sorted(set(found))


def _label(pattern: str) -> str:
    return f"gdg.jq.inputs: the input glob {pattern!r}"


def _bounds(settings: Any) -> dict[str, int]:
    """The walk's bounds: ``gdg.limits.globFolders`` / ``globMatches`` (the user's settings)."""
    limits = limits_of(settings)
    return {"max_folders": limits.glob_folders, "max_matches": limits.glob_matches}


def glob_walk(root: Path, pattern: str, boundary: Boundary, settings: Any = None) -> folder_walk.Walk:
    """The JSON files an input glob names (``folder_walk.glob_walk`` within the settings' bounds)."""
    return folder_walk.glob_walk(root, pattern, boundary, _label(pattern), **_bounds(settings))


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
        for entry in _entries(settings):
            for root in roots:
                if _filter_matches(document, Path(root), entry):
                    found = _inside(glob_walk(Path(root), entry.input, boundary, settings).files, boundary)
                    if found:
                        return found
        same_stem = document.with_suffix(".json")
        if same_stem != document:
            found = _inside([same_stem], boundary)
            if found:
                return found
    return []
