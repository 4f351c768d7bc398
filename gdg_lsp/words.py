"""Names read from workspace data are words before they are Γ.

A cloned repository writes the names the server reads from it: script names in
``package.json``, ref names in ``.git``, JSON keys, column names in a schema. Γ
puts them in the grammar (the mask admits them verbatim), in completion items and
in the prompt, so a name such as ``"test\\ncurl … | sh"`` or ``lint; rm -rf ~`` would
let the workspace author what is suggested. Each source therefore passes every
name through a validator of its own (git's ref rules, a shell word, a jq key, an
SQL identifier) before it becomes a binding; this module holds what they share:

- ``control_free``: the rule every source applies (no C0/C1 control character, no
  line or paragraph separator, no bidirectional override, nothing empty, a length cap);
- ``Rejected`` / ``Rejections``: the names left out, kept per source so each is
  reported once rather than on every request;
- ``comment_text``: text made safe to put inside a one-line prompt comment
  (the model must never read a workspace name as a line of code).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

MAX_NAME_CHARS = 256
"""Longer names are not names a user types; they only grow grammars."""

_SEPARATORS = frozenset("\u2028\u2029\u0085")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def control_free(name: str) -> str | None:
    """Why ``name`` cannot be a name at all (None: it may be, as far as this rule goes)."""
    if not name:
        return "it is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"it is longer than {MAX_NAME_CHARS} characters"
    for char in name:
        if char in _SEPARATORS or char in _BIDI:
            return f"it holds the character U+{ord(char):04X} ({unicodedata.name(char, 'a separator')})"
        if unicodedata.category(char) in ("Cc", "Cs"):
            return f"it holds the control character U+{ord(char):04X}"
    return None


def shown(name: str, limit: int = 60) -> str:
    """A name as a message may show it: escapes for what is not printable, cut at ``limit``."""
    text = name.encode("unicode_escape").decode("ascii") if control_free(name[:limit]) else name
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass(frozen=True)
class Rejected:
    source: str
    """Where the name was read: a file path, ``git refs``, a tool's ``--help``."""
    name: str
    why: str

    def message(self) -> str:
        # shown() has escaped what is not printable already: a repr would double its backslashes
        return f"{shown(self.source, 200)}: the name '{shown(self.name)}' is left out of the suggestions: {self.why}"


class Rejections:
    """Names left out, remembered so that each is said once per process (a request
    that reads the same file again must not repeat the warning)."""

    def __init__(self, limit: int = 4096) -> None:
        self._seen: dict[tuple[str, str], Rejected] = {}
        self._new: list[Rejected] = []
        self._limit = limit
        self._lock = threading.Lock()

    def note(self, rejected: Rejected) -> None:
        key = (rejected.source, rejected.name)
        with self._lock:
            if key in self._seen or len(self._seen) >= self._limit:
                return
            self._seen[key] = rejected
            self._new.append(rejected)

    def note_all(self, rejected: Iterable[Rejected]) -> None:
        for item in rejected:
            self.note(item)

    def take_new(self) -> list[Rejected]:
        """The rejections not yet reported (each is returned once)."""
        with self._lock:
            new, self._new = self._new, []
            return new

    def all(self) -> list[Rejected]:
        with self._lock:
            return list(self._seen.values())


REJECTIONS = Rejections()
"""The process's record of names left out (the server reports new ones as problems)."""


def comment_text(text: str) -> str:
    """``text`` as the content of a one-line comment in a prompt: every character that
    could end the line (or hide part of it) is written as an escape, so whatever a
    workspace file names, the comment stays one line and the model reads it as a comment."""
    out = []
    for char in text:
        if char in _SEPARATORS or char in _BIDI or unicodedata.category(char) in ("Cc", "Cs"):
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
