"""Whether a statement reads over Γ's tables: SQLite prepares it on a scratch database.

A mid-line middle (``SqlAnalyzer.middle_fits``) must leave a statement that parses with
the text after the cursor and names only what Γ holds. The file's own data source
cannot always judge that (DDL files, a server, tables the document creates), so the
judge is an in-memory SQLite database made of Γ's tables and their columns, and nothing
else: no workspace file is opened, and ``EXPLAIN`` builds the statement's program
without running it. Cached per Γ (its tables) and statement.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable

from gdg_lsp.caches import BoundedCache
from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.sql.lexer import unquote

_Schema = tuple[tuple[str, tuple[str, ...]], ...]
_DATABASES: BoundedCache[_Schema, sqlite3.Connection] = BoundedCache("sql.scratch-databases", 8)
_VERDICTS: BoundedCache[tuple[_Schema, str], bool] = BoundedCache("sql.scratch-verdicts", 512)
_QUERY = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*\(?\s*(select|with|values|insert|update|delete|replace)\b",
                    re.IGNORECASE | re.DOTALL)
_LOCK = threading.Lock()  # one connection is shared by the analysis threads


def schema_of(gamma: Gamma) -> _Schema:
    """Γ's tables (and the CTEs and derived tables it declares) with their columns."""
    tables: dict[str, tuple[str, ...]] = {}
    for binding in gamma.bindings("Table"):
        columns = tuple(unquote(c) for c in binding.attrs.get("columns", ()))
        tables.setdefault(unquote(binding.name).lower(), columns)
    return tuple(sorted(tables.items()))


def prepares(gamma: Gamma, statement: str) -> bool:
    """Whether SQLite reads ``statement`` (one statement) over Γ's tables alone: its syntax
    and every table and column it names."""
    text = statement.strip().rstrip(";").strip()
    if not text or not sqlite3.complete_statement(text + ";") or _several(text):
        return False
    if not _QUERY.match(text):  # a middle lives in a query: never an ATTACH, a PRAGMA, a DDL
        return False
    schema = schema_of(gamma)
    key = (schema, text)
    with _LOCK:
        cached = _VERDICTS.get(key)
        if cached is not None:
            return cached
        connection = _DATABASES.get(schema)
        if connection is None:
            connection = _DATABASES.put(schema, _database(schema))
        try:
            connection.execute("EXPLAIN " + text)
            verdict = True
        except (sqlite3.Error, ValueError, OverflowError):  # refused; several statements; a NUL
            verdict = False
        return _VERDICTS.put(key, verdict)


def _several(text: str) -> bool:
    """Whether ``text`` holds more than one statement (``EXPLAIN`` would read the first)."""
    end = text.find(";")
    while end != -1:
        if sqlite3.complete_statement(text[: end + 1]) and text[end + 1 :].strip():
            return True
        end = text.find(";", end + 1)
    return False


def _database(schema: _Schema) -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:", check_same_thread=False)
    for name, columns in schema:
        connection.execute(f"CREATE TABLE {_quoted(name)} ({', '.join(_columns(columns))})")
    connection.execute("PRAGMA query_only = ON")
    return connection


def _columns(columns: Iterable[str]) -> list[str]:
    unique = list(dict.fromkeys(c.lower() for c in columns)) or ["_gdg_no_column"]
    return [_quoted(c) for c in unique]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
