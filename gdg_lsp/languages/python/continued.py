"""Lines inside brackets continued from above: the rest of the statement, and the check of
names a suggested line leaves to it.

At such a line the grammar lets the line end before the statement does (the statement
goes on below). A name in an expression inside brackets may be bound by a comprehension's
``for`` that comes later (``sum(x * y`` / ``for x, y in pairs)``), so the mask leaves those
positions open until the statement rules a comprehension out — which an unfinished line
never does. The line is therefore checked once decoded: every name it references must be
in Γ or bound by the statement as the document goes on below the line (a ``for`` target,
a lambda parameter, an assignment expression's target). The check reads tokens, not a
parse tree: an unfinished statement does not parse, and a name must never pass because
the parser could not place it.
"""

from __future__ import annotations

import io
import keyword
import re
import tokenize
from collections.abc import Container

_FOR_TARGETS = re.compile(r"\bfor\s+([A-Za-z_][\w\s,()\[\]*]*?)\s+in\b")
_LAMBDA_PARAMS = re.compile(r"\blambda\b([^:]*):")
_WALRUS = re.compile(r"([A-Za-z_]\w*)\s*:=")
_NAME = re.compile(r"[A-Za-z_]\w*")


def bound_by_statement(statement: str) -> set[str]:
    """Names the statement binds where they may be used before the binder: comprehension
    targets, lambda parameters, assignment-expression targets (read from the text)."""
    names: set[str] = set()
    for pattern in (_FOR_TARGETS, _LAMBDA_PARAMS):
        for match in pattern.finditer(statement):
            names.update(n for n in _NAME.findall(match.group(1)) if not keyword.iskeyword(n))
    names.update(_WALRUS.findall(statement))
    return names


def referenced_names(line: str) -> list[tuple[int, str]]:
    """(column, name) of the names ``line`` reads: identifiers that are not keywords, not a
    member after a dot, not a keyword argument's name, not inside a string (tokens up to
    where lexing stops)."""
    tokens = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            tokens.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    out = []
    for k, tok in enumerate(tokens):
        if tok.type != tokenize.NAME or keyword.iskeyword(tok.string):
            continue
        before = tokens[k - 1].string if k else ""
        after = tokens[k + 1].string if k + 1 < len(tokens) else ""
        if before == "." or after == "=":
            continue
        out.append((tok.start[1], tok.string))
    return out


def unbound_on_line(line: str, statement: str, gamma: Container[str]) -> list[str]:
    """Names ``line`` reads that neither Γ nor ``statement`` (the whole statement as far as
    the document shows it, the line included) binds."""
    bound = bound_by_statement(statement)
    return [name for _, name in referenced_names(line) if name not in gamma and name not in bound]
