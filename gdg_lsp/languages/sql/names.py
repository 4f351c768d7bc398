"""Which table and column names read from a schema may become Γ.

A schema in the workspace (a ``.sql`` file, a SQLite database, a PostgreSQL
catalog) is written by whoever wrote the repository, and SQL lets a quoted
identifier hold anything: ``CREATE TABLE "x\\nDROP TABLE users; --"`` is valid
in SQLite and PostgreSQL. Γ offers each name as its spelling, so such a name
would put a line of the schema author's choosing into a suggestion, a completion
item and the prompt. A spelling is a name here when it is one identifier or a
dotted chain of them, each bare (a word the lexer reads) or quoted and closed,
and what each denotes passes ``words.control_free`` and holds no ``;`` (a
statement separator has no business inside a name, and scripts that split on it
would run the rest). Valid names that need quotes keep them: the spelling is
what the grammar admits, so ``"weird name"`` is offered quoted and never bare.

``admitted`` is applied to every schema a data source serves (``catalog.py``)
and to the tables the document itself creates (``analyzer.py``): a table whose
name fails is left out, a column that fails is left out of its table (whose DDL
is then rendered from what is left, since its own text names the column), a
foreign key that names a rejected name is dropped. Each rejection is noted in
``words.REJECTIONS`` (the server says it once).
"""

from __future__ import annotations

from collections.abc import Iterable

from gdg_lsp import words
from gdg_lsp.languages.sql.lexer import Token, tokenize, unquote
from gdg_lsp.languages.sql.schema import Column, ForeignKey, Table


def why_not(spelling: str) -> str | None:
    """Why ``spelling`` (as a schema declares it, quotes included) cannot be offered;
    None when it can."""
    parts = _parts(spelling)
    if parts is None:
        return "it is not an identifier as SQL writes one (an unclosed quote, or more than a name)"
    for part in parts:
        name = unquote(part.text)
        if (why := words.control_free(name)) is not None:
            return why
        if ";" in name:
            return "it holds ';', which ends a statement"
    return None


def _parts(spelling: str) -> list[Token] | None:
    """The identifiers of a (possibly schema-qualified) spelling, or None when it is not one
    (a blank, a comment or an operator between its parts included)."""
    tokens = tokenize(spelling)
    parts = tokens[0::2]
    dots = tokens[1::2]
    if not parts or any(t.kind not in ("word", "quoted") or not t.closed for t in parts):
        return None
    if any(t.kind != "op" or t.text != "." for t in dots) or len(dots) != len(parts) - 1:
        return None
    return parts


def admitted(tables: Iterable[Table], source: str = "") -> list[Table]:
    """``tables`` less the names that fail ``why_not`` (each noted once in ``words.REJECTIONS``)."""
    kept: list[Table] = []
    for table in tables:
        origin = table.source or source or "SQL schema"
        if (why := why_not(table.name)) is not None:
            words.REJECTIONS.note(words.Rejected(origin, table.name, why))
            continue
        columns: list[Column] = []
        refused: set[str] = set()
        for column in table.columns:
            if (why := why_not(column.name)) is not None:
                words.REJECTIONS.note(words.Rejected(origin, column.name, why))
                refused.add(column.name)
            else:
                columns.append(column)
        keys = tuple(fk for fk in table.foreign_keys if _clean(fk))
        if not refused and len(keys) == len(table.foreign_keys):
            kept.append(table)
            continue
        # the DDL as written names what was left out: the prompt renders the table from what is left
        kept.append(Table(table.name, tuple(columns), table.kind, table.source, keys, "", table.line,
                          table.complete))
    return kept


def _clean(fk: ForeignKey) -> bool:
    return all(why_not(name) is None for name in (*fk.columns, fk.ref_table, *fk.ref_columns))
