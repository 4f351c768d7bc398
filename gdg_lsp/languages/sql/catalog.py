"""The workspace's SQL schema: DDL files, SQLite files and PostgreSQL databases, kept fresh.

``SchemaCatalog`` owns one workspace's sources. ``tables()`` answers from
memory; it re-checks the files' modification times at most every
``rescan_after`` seconds (and only re-reads the files that changed), and
re-introspects databases at most every ``database_refresh_after`` seconds.
The server calls ``refresh(paths)`` when it learns that files changed
(``workspace/didChangeWatchedFiles``, ``didSave``); ``refresh(databases=True)``
forces a new introspection. A database that is down, hangs or refuses keeps
its last known schema and adds a warning.

Precedence when two sources define the same table: DDL files (in path order),
then SQLite files, then databases; later definitions only add missing columns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdg_lsp.languages.sql import ddl_files as sql_ddl_files
from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.ddl import DdlResult, resolve
from gdg_lsp.languages.sql.schema import Schema, Table, merge


@dataclass
class _FileEntry:
    stamp: tuple[int, int]
    ddl: DdlResult | None = None
    tables: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _DatabaseEntry:
    tables: list[Table] = field(default_factory=list)
    warning: str | None = None
    checked: float = float("-inf")
    ok: bool = False
    refreshing: bool = False
    """A background introspection is under way."""


class SchemaCatalog:
    def __init__(
        self,
        roots: Sequence[Path | str] = (),
        connections: Sequence[str] = (),
        *,
        database_timeout: float = sql_postgres.DEFAULT_TIMEOUT,
        rescan_after: float = 2.0,
        database_refresh_after: float = 60.0,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.connections = list(connections)
        self.database_timeout = database_timeout
        self.rescan_after = rescan_after
        self.database_refresh_after = database_refresh_after
        self.version = 0
        """Grows whenever the merged schema may have changed."""
        self._files: dict[Path, _FileEntry] = {}
        self._databases: dict[str, _DatabaseEntry] = {dsn: _DatabaseEntry() for dsn in self.connections}
        self._scanned = float("-inf")
        self._merged: dict[str | None, list[Table]] = {}
        self._lock = threading.RLock()

    # -- the API the analyzer and the server use --------------------------------

    def tables(self, exclude: Path | str | None = None) -> list[Table]:
        """Every table and view known, merged (``exclude``: a file to leave out,
        such as the document being edited, whose own text is read live)."""
        with self._lock:
            now = time.monotonic()
            if now - self._scanned >= self.rescan_after:
                self._rescan()
            self._refresh_databases(force=False)
            key = str(Path(exclude).resolve()) if exclude is not None else None
            if key not in self._merged:
                self._merged[key] = self._merge(key)
            return list(self._merged[key])

    def refresh(self, paths: Iterable[Path | str] | None = None, *, databases: bool = False) -> bool:
        """Re-read what changed: the given files (or every file when ``paths`` is
        None) and, with ``databases``, every connection. Returns True when the
        schema may have changed."""
        with self._lock:
            before = self.version
            if paths is None:
                self._rescan()
            else:
                for path in paths:
                    path = Path(path).resolve()
                    if self._under_roots(path):
                        self._check(path, forget_missing=True)
            if databases:
                self._refresh_databases(force=True)
            return self.version != before

    def warnings(self) -> list[str]:
        with self._lock:
            found = [w for entry in self._files.values() for w in entry.warnings]
            found += [entry.warning for entry in self._databases.values() if entry.warning]
            return found

    # -- internals ----------------------------------------------------------

    def _under_roots(self, path: Path) -> bool:
        for root in self.roots:
            root = root.resolve()
            if path == root or root in path.parents:
                return True
        return False

    def _changed(self) -> None:
        self.version += 1
        self._merged.clear()

    def _rescan(self) -> None:
        self._scanned = time.monotonic()
        present = set()
        for path in sql_ddl_files.walk(self.roots, sql_ddl_files.SUFFIXES + sql_sqlite.SUFFIXES):
            path = path.resolve()
            present.add(path)
            self._check(path, forget_missing=False)
        for gone in [p for p in self._files if p not in present]:
            del self._files[gone]
            self._changed()

    def _check(self, path: Path, forget_missing: bool) -> None:
        try:
            stat = path.stat()
        except OSError:
            if forget_missing and path in self._files:
                del self._files[path]
                self._changed()
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        entry = self._files.get(path)
        if entry is not None and entry.stamp == stamp:
            return
        suffix = path.suffix.lower()
        if suffix in sql_ddl_files.SUFFIXES:
            ddl, warnings = sql_ddl_files.read(path)
            self._files[path] = _FileEntry(stamp, ddl, [], warnings)
        elif suffix in sql_sqlite.SUFFIXES:
            schema = sql_sqlite.read(path)
            self._files[path] = _FileEntry(stamp, None, schema.tables, schema.warnings)
        else:
            return
        self._changed()

    def _refresh_databases(self, force: bool) -> None:
        """Re-introspect the databases that are due. A database's first
        introspection and forced ones run here (bounded by ``database_timeout``);
        the periodic ones run in a background thread and land when they finish,
        so a request never waits for a slow or hanging database again."""
        now = time.monotonic()
        for dsn, entry in self._databases.items():
            if not force and (entry.refreshing or now - entry.checked < self.database_refresh_after):
                continue
            first = entry.checked == float("-inf")
            entry.checked = now
            if force or first:
                self._store(entry, sql_postgres.introspect(dsn, self.database_timeout))
            else:
                entry.refreshing = True
                threading.Thread(target=self._refresh_in_background, args=(dsn, entry),
                                 name="gdg-sql-introspect", daemon=True).start()

    def _refresh_in_background(self, dsn: str, entry: _DatabaseEntry) -> None:
        try:
            schema = sql_postgres.introspect(dsn, self.database_timeout)
            with self._lock:
                self._store(entry, schema)
        finally:
            entry.refreshing = False

    def _store(self, entry: _DatabaseEntry, schema: Schema) -> None:
        if schema.warnings:
            kept = f" (keeping the last known schema: {len(entry.tables)} tables)" if entry.ok else ""
            entry.warning = schema.warnings[0] + kept
            return
        entry.warning = None
        if not entry.ok or schema.tables != entry.tables:
            entry.tables, entry.ok = schema.tables, True
            self._changed()

    def _merge(self, exclude: str | None) -> list[Table]:
        ddl_results = [e.ddl for p, e in sorted(self._files.items()) if e.ddl is not None and str(p) != exclude]
        sqlite_tables = [e.tables for p, e in sorted(self._files.items()) if e.ddl is None and str(p) != exclude]
        database_tables = [e.tables for e in self._databases.values()]
        base = merge([*sqlite_tables, *database_tables])
        from_files = resolve(ddl_results, base)
        return merge([from_files, *sqlite_tables, *database_tables])


_CATALOGS: dict[tuple[tuple[str, ...], tuple[str, ...]], SchemaCatalog] = {}
_CATALOGS_LOCK = threading.Lock()


def catalog_for(roots: Sequence[Path | str], settings: Any = None) -> SchemaCatalog:
    """The shared catalog of a workspace (one per roots + connections)."""
    connections = sql_postgres.connections_from(settings)
    key = (tuple(str(Path(r).resolve()) for r in roots), tuple(connections))
    with _CATALOGS_LOCK:
        catalog = _CATALOGS.get(key)
        if catalog is None:
            catalog = _CATALOGS[key] = SchemaCatalog(roots, connections)
            while len(_CATALOGS) > 8:
                _CATALOGS.pop(next(iter(_CATALOGS)))
        return catalog


def refresh_all(paths: Iterable[Path | str] | None = None, *, databases: bool = False) -> bool:
    """What the server calls when files change: every catalog re-reads them.
    Returns True when any catalog's schema may have changed."""
    paths = list(paths) if paths is not None else None
    with _CATALOGS_LOCK:
        catalogs = list(_CATALOGS.values())
    changed = False
    for catalog in catalogs:
        changed |= catalog.refresh(paths, databases=databases)
    return changed
