"""SQL tokens, identifiers and their identity.

A small lexer that never fails: every character of the input belongs to one
token, and an unterminated string, quoted identifier or block comment runs to
the end of the text (``closed`` says so). Quoted identifiers in the three
styles SQL dialects use ("double quotes", `backticks`, [brackets]) are one
token whose text keeps the quotes: the text is the spelling a reference must
reproduce, ``ident_key`` the identity used to resolve it.

Tree-sitter-sql reads some unfinished statements wrongly (``SELECT a, FROM t``
parses without error, FROM as a column aliased t) and does not know bracket
quoting, so the analyzer reads clause structure from these tokens: a bare
reserved word is always a keyword here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gdg_lsp.languages.base import LexToken

RESERVED = frozenset(
    """
    add all alter and as asc between by case cast check collate column constraint create cross
    current_date current_time current_timestamp
    default delete desc distinct drop else end escape except exists false foreign from full glob
    group having if ilike in index inner insert intersect into is join key left like limit natural
    not null offset on or order outer over partition primary recursive references replace
    returning right select set table temp temporary then true union unique update using values
    view when where window with
    """.split()
)
"""Words that are never read as a bare identifier (a quoted one may spell them)."""

CLAUSE_WORDS = frozenset(
    "select from where group having order limit offset union intersect except join on using "
    "values set returning window".split()
)

_WORD = re.compile(r"[^\W\d]\w*(?:\$\w*)*", re.UNICODE)
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPACE = re.compile(r"\s+")
_OPERATORS = ("<=", ">=", "<>", "!=", "==", "||", "::", "->>", "->")
_CLOSING = {'"': '"', "`": "`", "[": "]"}


@dataclass(frozen=True, slots=True)
class Token(LexToken):
    """kind: word | quoted | string | number | op | comment | space"""

    @property
    def is_identifier(self) -> bool:
        return self.kind == "quoted" or (self.kind == "word" and self.text.lower() not in RESERVED)

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words

    @property
    def lower(self) -> str:
        return self.text.lower()


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[Token]:
    """Every token of ``text[start:end]`` (offsets are into ``text``)."""
    end = len(text) if end is None else end
    tokens: list[Token] = []
    i = start
    while i < end:
        ch = text[i]
        if ch.isspace():
            m = _SPACE.match(text, i, end)
            tokens.append(Token("space", m.group(), i, m.end()))
            i = m.end()
        elif text.startswith("--", i):
            nl = text.find("\n", i, end)
            stop = end if nl < 0 else nl
            tokens.append(Token("comment", text[i:stop], i, stop))
            i = stop
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2, end)
            stop = end if close < 0 else close + 2
            tokens.append(Token("comment", text[i:stop], i, stop, close >= 0))
            i = stop
        elif ch == "'":
            stop, closed = _quoted_end(text, i, end, "'")
            tokens.append(Token("string", text[i:stop], i, stop, closed))
            i = stop
        elif ch in _CLOSING:
            stop, closed = _quoted_end(text, i, end, _CLOSING[ch])
            tokens.append(Token("quoted", text[i:stop], i, stop, closed))
            i = stop
        elif (m := _NUMBER.match(text, i, end)) is not None and (ch.isdigit() or ch == "."):
            tokens.append(Token("number", m.group(), i, m.end()))
            i = m.end()
        elif (m := _WORD.match(text, i, end)) is not None:
            tokens.append(Token("word", m.group(), i, m.end()))
            i = m.end()
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i) and i + len(o) <= end), ch)
            tokens.append(Token("op", op, i, i + len(op)))
            i += len(op)
    return tokens


def _quoted_end(text: str, i: int, end: int, closing: str) -> tuple[int, bool]:
    """End of the quoted token opened at ``i``; a doubled closing quote is an escape."""
    j = i + 1
    while j < end:
        if text[j] == closing:
            if j + 1 < end and text[j + 1] == closing:
                j += 2
                continue
            return j + 1, True
        j += 1
    return end, False


def significant(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.kind not in ("space", "comment")]


def unquote(text: str) -> str:
    """The identifier a (possibly quoted) spelling denotes."""
    if len(text) >= 2 and text[0] in _CLOSING and text[-1] == _CLOSING[text[0]]:
        close = _CLOSING[text[0]]
        return text[1:-1].replace(close * 2, close)
    return text


def ident_key(text: str) -> str:
    """Identity of an identifier for resolution: unquoted and case-folded.

    SQLite and MySQL compare identifiers without regard to case (quoted or
    not); PostgreSQL folds unquoted ones to lower case. Folding both sides is
    the common ground: it never reports a name that resolves as unknown.
    """
    return unquote(text).casefold()


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def spell(name: str, style: str = '"', fold_lower: bool = False) -> str:
    """How to write the identifier ``name`` (an introspected, unquoted name).

    Bare when it is a plain word that is not reserved (and, for a dialect that
    folds unquoted names to lower case, already lower case); otherwise quoted
    in ``style`` with the closing quote doubled.
    """
    if _PLAIN.match(name) and name.lower() not in RESERVED and (not fold_lower or name == name.lower()):
        return name
    close = _CLOSING.get(style, '"')
    return style + name.replace(close, close * 2) + close


def is_plain(text: str) -> bool:
    return bool(_PLAIN.match(text)) and text.lower() not in RESERVED
