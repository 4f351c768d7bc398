"""Γ source: a SQLite database file in the workspace, opened read-only.

The file is opened through a ``file:…?mode=ro&immutable=1`` URI: SQLite itself
refuses every write, and ``immutable`` makes it take no lock and create no
file at all, not even the ``-shm``/``-wal`` files a read-only connection to a
database in WAL mode would otherwise leave beside it in the workspace. The
price: changes still in the ``-wal`` file (not yet checkpointed into the
database) are not seen; the catalog's stamp of the file includes the
``-wal`` file, so the schema is re-read whenever either changes, and the
checkpoint SQLite makes when its writer closes brings them in. Table and view definitions come from
``sqlite_master``: the DDL SQLite keeps there is the text the user wrote, so
names keep their quotes; where that text cannot be read, ``PRAGMA table_info``
gives the columns and they are quoted as needed.

SQLite opens the file by its path itself, and its open of a FIFO blocks until a writer
comes. So each connection (the schema, the prompt's example rows, a prepare check) is
preceded by a judgment of the file right before it: its real path inside the boundary, a
regular file, starting with SQLite's header, read through ``Boundary.head`` (which never
blocks); SQLite then opens that real path. What is left is the instant between the two, which
only someone writing into the workspace while the server runs can use.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from gdg_lsp.boundary import Boundary, Refused, real
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.sql.ddl import read_ddl, resolve
from gdg_lsp.languages.sql.lexer import ident_key, spell
from gdg_lsp.languages.sql.schema import Column, ForeignKey, Schema, Table

SUFFIXES = (".sqlite", ".sqlite3", ".db")
SQLITE_MAGIC = b"SQLite format 3\x00"
NOT_SQLITE = "not a SQLite database (skipped)"
"""How a file under a SQLite name that is something else is reported (a source that is not one)."""


def read_only_uri(path: Path) -> str:
    return f"file:{quote(str(Path(path).resolve()))}?mode=ro&immutable=1"


def stamp(path: Path) -> tuple[int, int, int, int]:
    """What changes when the database does: the file's and its ``-wal`` file's mtime and size.
    The ``-wal`` file is only stamped, never read (``immutable``): a link there is not followed."""
    stat = path.stat()
    try:
        wal = os.lstat(f"{path}-wal")
        return stat.st_mtime_ns, stat.st_size, wal.st_mtime_ns, wal.st_size
    except OSError:
        return stat.st_mtime_ns, stat.st_size, 0, 0


def _open(path: Path, boundary: Boundary) -> sqlite3.Connection:
    """A read-only connection to the SQLite file at ``path``, judged right before SQLite opens
    it. Raises ``Refused`` (outside the boundary, not a regular file, not a SQLite file) or
    ``sqlite3.Error``."""
    header, _ = boundary.head(path, len(SQLITE_MAGIC))
    if header != SQLITE_MAGIC:
        raise Refused(f"{path}: {NOT_SQLITE}")
    connection = sqlite3.connect(read_only_uri(real(path)), uri=True, timeout=1.0)
    connection.execute("PRAGMA query_only = ON")
    return connection


def _open_until(path: Path, boundary: Boundary, seconds: float) -> tuple[sqlite3.Connection, float] | None:
    """A read-only connection that interrupts whatever runs past ``seconds`` from now, and
    that deadline; None when the file cannot be opened."""
    import time

    try:
        connection = _open(path, boundary)
    except (Refused, sqlite3.Error):
        return None
    deadline = time.monotonic() + seconds
    connection.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 1000)
    return connection, deadline


def read(path: Path, boundary: Boundary) -> Schema:
    """The tables and views of the SQLite database at ``path`` (never raises)."""
    schema = Schema()
    source = f"sqlite:{path}"
    try:
        connection = _open(path, boundary)
    except Refused as err:
        schema.warnings.append(str(err))
        return schema
    except sqlite3.Error as err:
        schema.warnings.append(f"{path}: cannot open read-only: {err}")
        return schema
    try:
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


SAMPLE_ROWS = 3
SAMPLE_VALUE_CHARS = 24
SAMPLE_SECONDS = 0.05
"""Example rows are only shown when they are cheap: a few, short, read within this time."""


def sample_rows(path: Path, boundary: Boundary, tables: list[str],
                rows: int = SAMPLE_ROWS) -> dict[str, list[tuple]]:
    """Up to ``rows`` rows of each table (by spelling, quotes included), values cut short;
    a table that cannot be read quickly is left out. Never raises."""
    import time

    found: dict[str, list[tuple]] = {}
    opened = _open_until(path, boundary, SAMPLE_SECONDS)
    if opened is None:
        return found
    connection, deadline = opened
    try:
        for name in tables:
            if time.monotonic() > deadline:
                break
            try:
                fetched = connection.execute(f"SELECT * FROM {name} LIMIT {int(rows)}").fetchall()
            except (sqlite3.Error, ValueError, OverflowError):
                continue
            found[name] = [tuple(_short(v) for v in row) for row in fetched]
    finally:
        connection.close()
    return found


def _short(value: object) -> object:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, str) and len(value) > SAMPLE_VALUE_CHARS:
        return value[: SAMPLE_VALUE_CHARS - 1] + "…"
    return value


PREPARE_SECONDS = 0.05
"""A statement whose preparation takes longer than this is not judged (None)."""

_PREPARED: BoundedCache[tuple[str, tuple[int, int, int, int], str], bool | None] = \
    BoundedCache("sql prepare checks", 1024)


def prepares(path: Path, boundary: Boundary, statement: str) -> bool | None:
    """Whether ``statement`` (one statement) compiles against the database at ``path``: SQLite
    prepares ``EXPLAIN <statement>``, which builds the statement's program and lists it
    without running it, over a read-only, immutable connection with ``query_only`` on, so
    nothing is written or executed whatever the text says. False: SQLite refused it (a
    syntax error, no such table or column, a misuse of an aggregate...). None: it could not
    be judged (not one statement, the file unreadable, too slow). Cached by the file's stamp."""
    text = statement.strip().rstrip(";").strip()
    if not text or ";" in text and not sqlite3.complete_statement(text + ";"):
        return None
    if not boundary.allows(path):
        return None
    try:
        key = (str(path), stamp(path), text)
    except OSError:
        return None
    if key in _PREPARED:
        return _PREPARED.get(key)
    opened = _open_until(path, boundary, PREPARE_SECONDS)
    if opened is None:
        return None
    connection = opened[0]
    verdict: bool | None
    try:
        connection.execute("EXPLAIN " + text)
        verdict = True
    except sqlite3.OperationalError as err:
        verdict = None if "interrupted" in str(err) else False
    except (sqlite3.Error, ValueError, OverflowError):  # several statements, a NUL in the text...
        verdict = None
    finally:
        connection.close()
    return _PREPARED.put(key, verdict)
