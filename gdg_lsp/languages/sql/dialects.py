"""SQL dialects: which keywords and functions a data source's engine reads.

The statement grammar (``grammars/sql/statement.ebnf``) writes the words every
supported engine reads once, and gates the others behind the slots
``d_sqlite``, ``d_postgres`` and ``d_returning``, which the analyzer answers
from the file's data source (``context``): a suggestion for a SQLite file never
says ``ILIKE`` or ``x::int``, one for PostgreSQL never says ``GLOB`` or
``ifnull(…)``. The sets below are the same words as data, for the analyzer
(cutting a half-written call), the tests (every function of a dialect is
accepted by its grammar and refused by the others') and the prompt.

``ansi`` is the portable core: what SQLite and PostgreSQL both read, without
engine-specific operators, casts, ``RETURNING`` or date functions. It is the
dialect of a data source whose engine is unknown (DDL files with no sign of
either engine).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gdg_lsp.languages.sql.lexer import significant, tokenize


@dataclass(frozen=True)
class Dialect:
    name: str
    title: str
    """How the prompt names the engine ("SQLite")."""
    aggregates: frozenset[str]
    functions: frozenset[str]
    operators: frozenset[str]
    """Word operators beyond AND/OR/NOT/LIKE/IN/BETWEEN/IS (GLOB, ILIKE)."""
    casts: bool = False
    """``expr::type``."""
    returning: bool = False
    """``INSERT/UPDATE/DELETE … RETURNING``."""
    extract: bool = False
    """``EXTRACT(field FROM expr)``."""

    @property
    def all_functions(self) -> frozenset[str]:
        return self.aggregates | self.functions


_COMMON_AGGREGATES = frozenset("count sum avg min max".split())
_COMMON_FUNCTIONS = frozenset("abs lower upper length round coalesce nullif trim replace substr".split())

ANSI = Dialect("ansi", "standard SQL", _COMMON_AGGREGATES, _COMMON_FUNCTIONS, frozenset())
SQLITE = Dialect(
    "sqlite", "SQLite",
    _COMMON_AGGREGATES | {"total", "group_concat"},
    _COMMON_FUNCTIONS | {"ifnull", "instr", "date", "time", "datetime", "julianday", "strftime"},
    frozenset({"glob"}),
    returning=True,  # SQLite 3.35 (2021) and later
)
POSTGRES = Dialect(
    "postgres", "PostgreSQL",
    _COMMON_AGGREGATES | {"string_agg", "bool_and", "bool_or"},
    _COMMON_FUNCTIONS | {"now", "date_trunc", "date_part", "age", "to_char", "to_date", "strpos"},
    frozenset({"ilike"}),
    casts=True, returning=True, extract=True,
)

DIALECTS: dict[str, Dialect] = {d.name: d for d in (SQLITE, POSTGRES, ANSI)}
"""By name: the values of ``gdg.sql.sources[].dialect`` and ``-- gdg: dialect=``."""

ALL_FUNCTIONS = frozenset().union(*(d.all_functions for d in DIALECTS.values()))
"""Every function name some dialect's grammar can write."""


def get(name: str | None) -> Dialect:
    return DIALECTS.get((name or "").lower(), ANSI)


def context(dialect: Dialect) -> dict[str, list[str]]:
    """The grammar's dialect slots for a hole (``[""]``: the construct is allowed)."""
    flag = lambda on: [""] if on else []  # noqa: E731
    return {
        "d_sqlite": flag(dialect is SQLITE),
        "d_postgres": flag(dialect is POSTGRES),
        "d_returning": flag(dialect.returning),
    }


# -- guessing the engine of DDL files ------------------------------------------------------

_POSTGRES_WORDS = frozenset("serial bigserial smallserial jsonb timestamptz bytea ilike tsvector inet cidr".split())
_SQLITE_WORDS = frozenset("autoincrement rowid pragma".split())


def hint(text: str) -> str:
    """The engine DDL text was written for, when it shows: ``postgres`` (``SERIAL``,
    ``JSONB``, ``::``, ``CREATE EXTENSION``…), ``sqlite`` (``AUTOINCREMENT``,
    ``WITHOUT ROWID``, backtick or bracket quoting, which PostgreSQL does not read),
    or "" when it does not."""
    postgres = sqlite = 0
    previous = ""
    for tok in significant(tokenize(text)):
        lower = tok.lower if tok.kind == "word" else ""
        if lower in _POSTGRES_WORDS or tok.text == "::" or (previous == "create" and lower in ("extension", "type")):
            postgres += 1
        elif lower in _SQLITE_WORDS or (tok.kind == "quoted" and tok.text[0] in "`["):
            sqlite += 1
        previous = lower
    if postgres > sqlite:
        return "postgres"
    return "sqlite" if sqlite > postgres else ""


def decide(hints: Iterable[str]) -> str:
    """One dialect for a source's DDL files: the hint most of them give, else ``ansi``."""
    counts: dict[str, int] = {}
    for found in hints:
        if found:
            counts[found] = counts.get(found, 0) + 1
    if not counts:
        return "ansi"
    return max(sorted(counts), key=lambda name: counts[name])
