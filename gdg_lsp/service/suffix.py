"""Fitting a suggestion before the text that follows the cursor on its line.

The grammars write whole statements, so at ``foo(|)`` the decoder writes the
``)`` again and the hole replaces the rest of the line (``Hole.replace_end``).
When the suggestion ends with exactly the text it replaces, inserting the part
before it at the cursor gives the same line: that is the edit shown, so the
ghost text never repeats what the user already sees after the cursor (and the
editor keeps the user's own closers). When it does not (the model closed the
call and went on: ``a) + 1``), or when what would be inserted closes the
bracket the suffix closes (``a) == b(c`` before ``)``: the same line, but a
ghost text that reads wrong), replacing the rest of the line is the better
edit and is kept: the document never ends up with the suffix twice.

Holes that replace nothing while text follows (a SQL or jq cursor in mid-line)
keep the suffix; there the longest ending of the suggestion that the suffix
starts with (at a token boundary) is dropped, so ``x)`` before ``) AS t``
becomes ``x``.

Only one-line suggestions are fitted: a suggestion that goes on to more lines
ends its first line where the statement ends, and replaces the rest of it.
"""

from __future__ import annotations

from dataclasses import dataclass

REPEATS_ONLY = "the suggestion only repeats the text after the cursor"


@dataclass(frozen=True)
class Fit:
    text: str
    end: int
    """End of the replaced range (the cursor when nothing after it is replaced)."""
    trimmed: str = ""
    """What was dropped from the end of the suggestion because the document already has it."""


_OPENERS = {"(": ")", "[": "]", "{": "}"}


def closes_outer(text: str) -> bool:
    """``text`` closes a bracket it did not open (one opened before the cursor), string
    literals skipped: inserted before the user's closers, it would end the call early."""
    depth = 0
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _OPENERS:
            depth += 1
        elif ch in _OPENERS.values():
            depth -= 1
            if depth < 0:
                return True
        i += 1
    return False


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def rest_of_line(document: str, cursor: int) -> str:
    line_end = document.find("\n", cursor)
    return document[cursor : len(document) if line_end < 0 else line_end].rstrip("\r")


def fit(text: str, document: str, cursor: int, replace_end: int) -> Fit:
    """The edit to show for ``text`` at ``cursor`` (the hole replaces ``[cursor, replace_end)``)."""
    rest = rest_of_line(document, cursor)
    if not rest.strip() or not text.strip() or "\n" in text:
        return Fit(text, replace_end)
    if replace_end > cursor:
        core = rest.strip()
        body = text.rstrip(" \t")
        if not body.endswith(core):
            return Fit(text, replace_end)  # the suggestion rewrites the rest of the line
        kept = body[: len(body) - len(core)]
        if closes_outer(kept):  # ``a) == b(c`` before ``)``: same line, but the replacement reads right
            return Fit(text, replace_end)
        if rest[:1] in (" ", "\t"):  # the user's blank before the closers stays theirs
            kept = kept.rstrip(" \t")
        return Fit(kept, cursor, text[len(kept):])
    for k in range(min(len(rest), len(text)), 0, -1):
        head = rest[:k]
        if not head.strip() or not text.endswith(head):
            continue
        if k < len(rest) and _word(rest[k - 1]) and _word(rest[k]):
            continue  # the overlap would end inside a word of the suffix
        if len(text) > k and _word(text[-k - 1]) and _word(head[0]):
            continue  # ... or start inside a word of the suggestion
        return Fit(text[:-k], replace_end, head)
    return Fit(text, replace_end)
