"""Γ source: a SQLite database file in the workspace, opened read-only.

The file is opened through a ``file:…?mode=ro`` URI, so SQLite itself refuses
every write (and creates no journal). Table and view definitions come from
``sqlite_master``: the DDL SQLite keeps there is the text the user wrote, so
names keep their quotes; where that text cannot be read, ``PRAGMA table_info``
gives the columns and they are quoted as needed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from gdg_lsp.languages.sql.ddl import read_ddl, resolve
from gdg_lsp.languages.sql.lexer import ident_key, spell
from gdg_lsp.languages.sql.schema import Column, ForeignKey, Schema, Table

SUFFIXES = (".sqlite", ".sqlite3", ".db")
SQLITE_MAGIC = b"SQLite format 3\x00"


def read_only_uri(path: Path) -> str:
    return f"file:{quote(str(path.resolve()))}?mode=ro"


def looks_like_sqlite(path: Path) -> bool:
    """A ``.db`` file may be anything; only SQLite files are opened."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def read(path: Path) -> Schema:
    """The tables and views of the SQLite database at ``path`` (never raises)."""
    schema = Schema()
    source = f"sqlite:{path}"
    if not looks_like_sqlite(path):
        schema.warnings.append(f"{path}: not a SQLite database (skipped)")
        return schema
    try:
        connection = sqlite3.connect(read_only_uri(path), uri=True, timeout=1.0)
    except sqlite3.Error as err:
        schema.warnings.append(f"{path}: cannot open read-only: {err}")
        return schema
    try:
        connection.execute("PRAGMA query_only = ON")
        rows = connection.execute(
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
        ).fetchall()
        ddl_text = ";\n".join(sql for _, _, sql in rows if sql)
        parsed = resolve([read_ddl(ddl_text, source)])
        by_key = {t.key: t for t in parsed}
        for kind, name, _ in rows:
            table = by_key.get(ident_key(name))
            if table is None or (not table.columns and kind == "table"):
                table = _from_pragmas(connection, name, kind, source)
            schema.tables.append(Table(table.name, table.columns, kind, source, table.foreign_keys,
                                       table.ddl, 0, table.complete))
    except sqlite3.Error as err:
        schema.warnings.append(f"{path}: cannot read the schema: {err}")
    finally:
        connection.close()
    return schema


def _from_pragmas(connection: sqlite3.Connection, name: str, kind: str, source: str) -> Table:
    quoted = '"' + name.replace('"', '""') + '"'
    columns = tuple(
        Column(spell(row[1]), row[2] or "") for row in connection.execute(f"PRAGMA table_info({quoted})")
    )
    fks: dict[int, list] = {}
    for row in connection.execute(f"PRAGMA foreign_key_list({quoted})"):
        fks.setdefault(row[0], []).append(row)
    foreign_keys = tuple(
        ForeignKey(tuple(spell(r[3]) for r in rows), spell(rows[0][2]), tuple(spell(r[4]) for r in rows if r[4]))
        for rows in fks.values()
    )
    return Table(spell(name), columns, kind, source, foreign_keys)
