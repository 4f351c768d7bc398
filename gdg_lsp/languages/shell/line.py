"""The command line under the cursor, as typed so far (it need not parse).

``logical_line`` finds where the line starts (lines joined by a trailing
backslash count as one); ``split_words`` cuts a partial line into words and
operators the way the shell would, noting a quote still open at the end, so
the analyzer can tell that the cursor is inside ``jq '...`` before the quote
is closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEREDOC = re.compile(r"(?<!<)<<(-?)[ \t]*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
OPERATORS = ("&&", "||", "|&", ";;", "|", ";", "&", "(", ")")
_CONTINUATION = re.compile(r"\\\r?\n[ \t]*")


@dataclass(frozen=True)
class LineWord:
    raw: str
    start: int
    end: int
    operator: bool = False
    open_quote: str | None = None
    """``'`` or ``"`` when the word ends inside an unclosed quote."""


def logical_line(text: str, offset: int) -> tuple[int, int]:
    """Start and end of the logical line holding ``offset`` (backslash continuations joined)."""
    start = text.rfind("\n", 0, offset) + 1
    while start >= 2 and text[start - 2] == "\\" and text[start - 1] == "\n":
        start = text.rfind("\n", 0, start - 1) + 1
    end = text.find("\n", offset)
    return start, len(text) if end < 0 else end


def replay(raw: str) -> str:
    """A typed line as the grammar reads it: continuations become one blank."""
    return _CONTINUATION.sub(" ", raw)


def split_words(line: str, base: int = 0) -> list[LineWord]:
    """Words and operators of ``line`` (offsets plus ``base``); a ``#`` that starts a word ends it."""
    words: list[LineWord] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch in " \t\n":
            i += 1
            continue
        if ch == "\\" and i + 1 < n and line[i + 1] == "\n":
            i += 2
            continue
        if ch == "#":
            break
        op = next((o for o in OPERATORS if line.startswith(o, i)), None)
        if op is not None:
            words.append(LineWord(op, base + i, base + i + len(op), operator=True))
            i += len(op)
            continue
        start = i
        quote = None
        depth = 0
        while i < n:
            ch = line[i]
            if quote == "'":
                if ch == "'":
                    quote = None
                i += 1
                continue
            if ch == "\\":
                i += 2
                continue
            if quote == '"':
                if ch == '"':
                    quote = None
                i += 1
                continue
            if ch in "'\"":
                quote = ch
                i += 1
                continue
            if line.startswith("$(", i):
                depth += 1
                i += 2
                continue
            if ch == ")" and depth:
                depth -= 1
                i += 1
                continue
            if depth == 0 and (ch in " \t\n" or any(line.startswith(o, i) for o in OPERATORS)):
                break
            i += 1
        words.append(LineWord(line[start:min(i, n)], base + start, base + min(i, n), open_quote=quote))
    return words


def last_command(words: list[LineWord]) -> list[LineWord]:
    """The words of the last simple command (after the last operator)."""
    for index in range(len(words) - 1, -1, -1):
        if words[index].operator:
            return words[index + 1:]
    return words


def in_heredoc(text: str, line_start: int) -> bool:
    """Whether the line starting at ``line_start`` is the body of a here-document
    (a ``<<WORD`` on an earlier line whose terminator has not come yet)."""
    pending: list[tuple[str, bool]] = []
    for line in text[:line_start].split("\n")[:-1] if line_start else []:
        if pending:
            word, tabs = pending[0]
            if (line.lstrip("\t") if tabs else line) == word:
                pending.pop(0)
            continue
        if "#" in line and line.lstrip().startswith("#"):
            continue
        pending.extend((m.group(3), m.group(1) == "-") for m in _HEREDOC.finditer(line))
    return bool(pending)
