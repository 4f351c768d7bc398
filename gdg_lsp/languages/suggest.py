"""'Did you mean …?': the existing name closest to one that does not exist.

Diagnostics put it in ``Finding.data["replacement"]``; the server's code
action (``server/code_action.py``) offers it as a quick fix. Only names that
exist at the reference are candidates, so the fix never introduces a ghost.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable

CUTOFF = 0.7
"""difflib's similarity ratio a candidate needs: a swapped or missing letter passes
(widht/width 0.8, nmae/name 0.75); 0.6 also let heigth/exit through."""


def closest(name: str, candidates: Iterable[str], key: Callable[[str], str] = str) -> str | None:
    """The candidate most similar to ``name`` under ``key`` (the first spelling
    wins when two candidates share a key), or None when none is close enough."""
    by_key: dict[str, str] = {}
    for candidate in candidates:
        if candidate != name:  # the name itself is no fix
            by_key.setdefault(key(candidate), candidate)
    match = difflib.get_close_matches(key(name), list(by_key), n=1, cutoff=CUTOFF)
    return by_key[match[0]] if match else None
