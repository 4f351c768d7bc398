"""Which block the cursor is in, read from the braces (robust to broken code).

The hole classifier needs the innermost enclosing block and its kind (an
action body, a parser state, a ``select``, a table's ``key`` list...). Parse
trees are not reliable while a line is being typed, so this scans the code
text (comments already blanked) for braces and classifies each open brace by
the text before it, back to the previous ``;``, ``{`` or ``}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gdg_lsp.languages.p4.parser import _TOP_KEYWORD_LINE

_ANNOTATION = re.compile(r"@\w+(\s*\((?:[^()]|\([^()]*\))*\))?")
_EXPRESSION_OPENER = re.compile(r"(=|,|\(|\breturn)$")
_LIST_PROPERTY = re.compile(r"\b(key|actions|(const\s+)?entries)\s*=$")

_BLOCK_STOPS = re.compile(r'["{};\n]')
_NON_SPACE = re.compile(r"\S")

STATEMENT_BLOCKS = frozenset({"action", "function", "apply", "block", "case", "state"})


@dataclass(frozen=True)
class OpenBlock:
    kind: str
    header: str
    open: int  # offset of the '{'


@dataclass(frozen=True)
class BlockContext:
    stack: tuple[OpenBlock, ...]
    """Open blocks, outermost first."""
    segment_start: int
    """Where the current item of the innermost block starts (after the last ; { or })."""
    last_closed: OpenBlock | None
    """The block closed last at the cursor's level, when nothing but blanks follow it."""

    @property
    def innermost(self) -> OpenBlock | None:
        return self.stack[-1] if self.stack else None

    def kinds(self) -> tuple[str, ...]:
        return tuple(b.kind for b in self.stack)

    @property
    def in_parser(self) -> bool:
        return any(b.kind in ("parser", "state") for b in self.stack)


def classify(header: str, parent: str | None) -> str:
    h = " ".join(_ANNOTATION.sub(" ", header).split())
    if parent in ("expression",):
        return "expression"
    if _LIST_PROPERTY.search(h):
        return {"key": "key", "actions": "actions"}.get(h.split()[0], "entries")
    if _EXPRESSION_OPENER.search(h):
        return "expression"
    first = h.split(" ", 1)[0].split("(", 1)[0].split("<", 1)[0] if h else ""
    if first in ("control", "parser"):
        return first
    if first in ("header", "header_union", "struct"):
        return "fields"
    if first in ("enum", "extern"):
        return first
    if h in ("error", "match_kind"):
        return "idlist"
    if first == "state":
        return "state"
    if first == "action":
        return "action"
    if first == "table":
        return "table"
    if h == "apply":
        return "apply"
    if re.match(r"transition\s+select\b", h):
        return "select"
    if first == "switch":
        return "switch"
    if parent == "switch":
        return "case"
    if first in ("if", "else"):
        return "block"
    if parent in (None, "control", "parser") and h.endswith(")"):
        return "function"
    return "block"


class BlockScanner:
    """Reads braces left to right; ``context(offset)`` may be asked for increasing offsets."""

    def __init__(self, code: str) -> None:
        self.code = code
        self.stack: list[OpenBlock] = []
        self.segment = 0
        self.last_closed: OpenBlock | None = None
        self.i = 0

    def context(self, offset: int) -> BlockContext:
        code, stack = self.code, self.stack
        n = min(offset, len(code))
        i = self.i
        while i < n:
            # jump to the next character that matters (the scan runs over the document up to
            # the cursor on each new line typed); what lies between only says "not blank"
            found = _BLOCK_STOPS.search(code, i, n)
            stop = found.start() if found is not None else n
            if stop > i and _NON_SPACE.search(code, i, stop) is not None:
                self.last_closed = None
            i = stop
            if found is None:
                break
            ch = code[i]
            if ch == '"':
                j = i + 1
                while j < n and code[j] not in '"\n':
                    j += 2 if code[j] == "\\" else 1
                i = j + 1
                self.last_closed = None
                continue
            if ch == "\n" and stack and i + 1 < len(code) and code[i + 1] not in " \t\r\n}":
                if _TOP_KEYWORD_LINE.match(code, i + 1, min(len(code), i + 400)):
                    stack.clear()
                    self.segment = i + 1
                    self.last_closed = None
            elif ch == "{":
                parent = stack[-1].kind if stack else None
                header = code[self.segment:i]
                stack.append(OpenBlock(classify(header, parent), header.strip(), i))
                self.segment = i + 1
                self.last_closed = None
            elif ch == "}":
                self.last_closed = stack.pop() if stack else None
                self.segment = i + 1
            elif ch == ";":
                self.segment = i + 1
                self.last_closed = None
            i += 1
        self.i = max(i, self.i)
        return BlockContext(tuple(stack), self.segment, self.last_closed)


def block_context(code: str, offset: int) -> BlockContext:
    return BlockScanner(code).context(offset)


def paren_depth(code: str, start: int, end: int) -> int:
    depth = 0
    for ch in code[start:end]:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
    return depth
