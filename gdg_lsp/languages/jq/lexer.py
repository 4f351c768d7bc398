"""jq's tokens (no tree-sitter grammar for jq is packaged): fields, variables,
identifiers, strings with ``\\(...)`` interpolation, numbers, operators, comments.

A field is ``.name`` or ``."name"``; a lone ``.`` is the identity; ``..`` is
recursion. Offsets are code points into the text the lexer was given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gdg_lsp.languages.base import LexToken

KEYWORDS = frozenset({
    "def", "if", "then", "elif", "else", "end", "as", "reduce", "foreach", "try", "catch", "label",
    "import", "include", "and", "or", "not", "__loc__",
})

_PATTERNS = [
    ("comment", r"#[^\n]*"),
    ("space", r"[ \t\r\n]+"),
    ("field", r"\.[A-Za-z_][A-Za-z0-9_]*"),
    ("qfield", r'\."(?:[^"\\\n]|\\.)*"?'),
    ("recurse", r"\.\."),
    ("dot", r"\."),
    ("variable", r"\$(?:__loc__|[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)"),
    ("format", r"@[A-Za-z0-9_]+"),
    ("ident", r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*"),
    ("number", r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"),
    ("op", r"\?//|//=|\|=|\+=|-=|\*=|/=|%=|==|!=|<=|>=|//|\.\.|[|,;:()\[\]{}<>=+\-*/%?]"),
]
_TOKEN = re.compile("|".join(f"(?P<{name}>{pattern})" for name, pattern in _PATTERNS))


@dataclass(frozen=True, slots=True)
class Token(LexToken):
    """kind: field qfield recurse dot variable format ident keyword number string op comment space error"""

    @property
    def key(self) -> str | None:
        """The field name of a ``field``/``qfield`` token."""
        if self.kind == "field":
            return self.text[1:]
        if self.kind == "qfield":
            return _unquote(self.text[1:])
        return None


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unquote(quoted: str) -> str:
    """The key a quoted field names: jq's string escapes are JSON's (``\\u0027`` is ``'``)."""
    body = quoted[1:-1] if _closes(quoted) else quoted[1:]

    def one(match: re.Match) -> str:
        escape = match.group(1)
        return chr(int(escape[1:], 16)) if len(escape) == 5 else _ESCAPED.get(escape, escape)

    return _ESCAPE.sub(one, body)


def _closes(quoted: str) -> bool:
    """Whether a quoted field's last character is its closing quote (not an escaped one:
    ``"tail\\\\"`` closes, ``"open\\"`` does not)."""
    if len(quoted) < 2 or not quoted.endswith('"'):
        return False
    backslashes = len(quoted) - 1 - len(quoted[:-1].rstrip("\\"))
    return backslashes % 2 == 0


def _string_end(text: str, start: int) -> tuple[int, bool]:
    """End of the string opening at ``start`` (interpolations ``\\(...)`` skipped), and whether it closed."""
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text) and text[i + 1] == "(":
            depth, i = 1, i + 2
            while i < len(text) and depth:
                if text[i] == '"':
                    i, _ = _string_end(text, i)
                    continue
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                i += 1
            continue
        if ch == "\\":
            i += 2
            continue
        if ch == '"':
            return i + 1, True
        if ch == "\n":
            return i, False
        i += 1
    return len(text), False


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    end = len(text) if end is None else end
    tokens: list[Token] = []
    i = start
    while i < end:
        if text[i] == '"':
            stop, closed = _string_end(text, i)
            stop = min(stop, end)
            tokens.append(Token("string", text[i:stop], i, stop, closed))
            i = stop
            continue
        match = _TOKEN.match(text, i, end)
        if match is None:
            tokens.append(Token("error", text[i], i, i + 1))
            i += 1
            continue
        kind = match.lastgroup or "error"
        value = match.group()
        if kind == "ident" and value in KEYWORDS:
            kind = "keyword"
        closed = kind != "qfield" or (len(value) >= 3 and _closes(value[1:]))
        tokens.append(Token(kind, value, i, match.end(), closed))
        i = match.end()
    return tokens


def significant(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.kind not in ("space", "comment")]
