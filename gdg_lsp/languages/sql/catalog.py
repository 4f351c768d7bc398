"""The workspace's SQL schema files and databases, read once and kept fresh.

``SchemaCatalog`` owns one workspace's sources: the ``.sql`` and SQLite files
under its folders, the PostgreSQL databases of ``gdg.sql.connections``, and
any file or database a data source names (``sources.py``). It answers from
memory; it re-checks the files' modification times at most every
``rescan_after`` seconds (and only re-reads the files that changed), and
re-introspects databases at most every ``database_refresh_after`` seconds.
The server calls ``refresh(paths)`` when it learns that files changed
(``workspace/didChangeWatchedFiles``, ``didSave``); ``refresh(databases=True)``
forces a new introspection. A database that is down, hangs or refuses keeps
its last known schema and adds a warning.

Only files inside the boundary are read (``gdg_lsp.boundary``: the workspace
folders and the folders the user's settings name): a symlinked ``.sql`` or
SQLite file leading outside is refused with a warning, never opened. Each file
is read through the boundary's reader (``ddl_files.read``, ``sqlite.read``): a
FIFO or a device under a schema file's name is refused with a warning, never
waited on, so the catalog's lock is never held by a read that does not end.

``load(ddl, sqlite, postgres)`` is one data source's schema: its DDL files
replayed in the order given (``ddl.resolve``), over its SQLite and PostgreSQL
tables. ``tables()`` is the whole workspace's union (the last resort of
``sources.py``): DDL files in path order, then SQLite files, then databases;
a table defined twice keeps its first definition and gains the others' columns.
Both serve only the names ``names.admitted`` lets through (a name with a line
break or a ``;`` is the schema author's text, not a name).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdg_lsp.boundary import Boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.sql import ddl_files as sql_ddl_files
from gdg_lsp.languages.sql import names as sql_names
from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.ddl import DdlResult, resolve
from gdg_lsp.languages.sql.schema import Schema, Table, merge

SCHEMA_SUFFIXES = sql_ddl_files.SUFFIXES + sql_sqlite.SUFFIXES


def absolute(path: Path | str) -> Path:
    """The path made absolute without following symlinks (a link keeps its own folder)."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


@dataclass
class _FileEntry:
    stamp: tuple[int, ...]
    ddl: DdlResult | None = None
    tables: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    walked: bool = True
    """Found by the walk of the workspace (forgotten when the walk no longer finds it)."""

    @property
    def is_schema(self) -> bool:
        """The file defines tables: DDL statements, or a SQLite database that opened."""
        return bool(self.ddl) if self.ddl is not None else bool(self.tables) or not self.warnings


@dataclass
class _DatabaseEntry:
    tables: list[Table] = field(default_factory=list)
    warning: str | None = None
    checked: float = float("-inf")
    ok: bool = False
    refreshing: bool = False
    """A background introspection is under way."""


@dataclass
class Loaded:
    """One data source's schema, and what went wrong reading it."""

    tables: list[Table]
    warnings: list[str]
    failed: bool
    """Something it names could not be read and it gave no table (the next rule is tried)."""
    dialect_hints: tuple[str, ...] = ()


class SchemaCatalog:
    def __init__(
        self,
        roots: Sequence[Path | str] = (),
        connections: Sequence[str] = (),
        *,
        allowed: Sequence[Path | str] = (),
        database_timeout: float = sql_postgres.DEFAULT_TIMEOUT,
        rescan_after: float = 2.0,
        database_refresh_after: float = 60.0,
    ) -> None:
        self.roots = [Path(r) for r in roots]
        self.connections = list(connections)
        self.boundary = Boundary.of(self.roots, allowed)
        """The files that may be read: under the workspace folders and the configured ones."""
        self.database_timeout = database_timeout
        self.rescan_after = rescan_after
        self.database_refresh_after = database_refresh_after
        self.version = 0
        """Grows whenever a schema may have changed."""
        self._files: dict[Path, _FileEntry] = {}
        self._refused: dict[Path, str] = {}
        self._databases: dict[str, _DatabaseEntry] = {dsn: _DatabaseEntry() for dsn in self.connections}
        self._scanned = float("-inf")
        self._merged: dict[str | None, list[Table]] = {}
        self._loaded: BoundedCache[tuple, Loaded] = BoundedCache("sql.source-schemas", 64)
        self._folders: dict[Path, list[Path]] | None = None
        self._lock = threading.RLock()

    # -- the API the analyzer and the server use --------------------------------

    def tables(self, exclude: Path | str | None = None) -> list[Table]:
        """Every table and view of the workspace, merged (``exclude``: a file to leave
        out, such as the document being edited, whose own text is read live)."""
        with self._lock:
            self.fresh()
            key = str(absolute(exclude)) if exclude is not None else None
            if key not in self._merged:
                self._merged[key] = self._merge(key)
            return list(self._merged[key])

    def fresh(self) -> None:
        """Re-check the files' stamps and the databases' age when they are due."""
        with self._lock:
            if time.monotonic() - self._scanned >= self.rescan_after:
                self._rescan()
            self._refresh_databases(force=False)

    def schema_files(self, folder: Path) -> list[Path]:
        """The schema files directly in ``folder`` (DDL files and SQLite databases), by name."""
        with self._lock:
            self.fresh()
            if self._folders is None:
                index: dict[Path, list[Path]] = {}
                for path, entry in self._files.items():
                    if entry.walked and entry.is_schema:
                        index.setdefault(path.parent, []).append(path)
                self._folders = {k: sorted(v) for k, v in index.items()}
            return list(self._folders.get(absolute(folder), ()))

    def folders_with_schemas(self) -> list[Path]:
        """Every folder of the workspace that holds schema files (for choosing a source)."""
        with self._lock:
            self.schema_files(self.roots[0] if self.roots else Path("."))
            return sorted(self._folders or ())

    def load(self, ddl: Sequence[Path], sqlite: Sequence[Path] = (), postgres: Sequence[str] = (),
             exclude: Path | str | None = None) -> Loaded:
        """One data source's schema: ``ddl`` replayed in order over its databases' tables."""
        with self._lock:
            self.fresh()
            skip = _same_file_test(exclude)
            key = (tuple(ddl), tuple(sqlite), tuple(postgres), str(exclude))
            cached = self._loaded.get(key)
            if cached is not None:
                return cached
            warnings: list[str] = []
            failed = False
            results, database_tables, hints = [], [], []
            for path in ddl:
                if skip(path):
                    continue
                entry, why = self._file(path)
                if entry is None:
                    warnings.append(why)
                    failed = True
                    continue
                warnings.extend(entry.warnings)
                if entry.ddl is not None:
                    results.append(entry.ddl)
                    hints.append(entry.ddl.dialect_hint)
            for path in sqlite:
                entry, why = self._file(path)
                if entry is None or entry.warnings:
                    warnings.extend([why] if entry is None else entry.warnings)
                    failed = True
                if entry is not None:
                    database_tables.append(entry.tables)
            for dsn in postgres:
                database = self._database(dsn)
                if database.warning:
                    warnings.append(database.warning)
                    failed = failed or not database.ok
                database_tables.append(database.tables)
            base = merge(database_tables)
            tables = sql_names.admitted(merge([resolve(results, base), *database_tables]) if results else base)
            loaded = Loaded(tables, warnings, failed and not tables, tuple(hints))
            return self._loaded.put(key, loaded)

    def dialect_hints(self) -> list[str]:
        """The engine each DDL file of the workspace shows it was written for (``dialects.hint``)."""
        with self._lock:
            return [e.ddl.dialect_hint for e in self._files.values() if e.walked and e.ddl is not None]

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
                    path = absolute(path)
                    if path in self._files or self._under_roots(path):
                        self._check(path, forget_missing=True, walked=self._under_roots(path))
            if databases:
                self._refresh_databases(force=True)
            return self.version != before

    def warnings(self) -> list[str]:
        with self._lock:
            found = [w for entry in self._files.values() for w in entry.warnings]
            found += list(self._refused.values())
            for dsn, entry in self._databases.items():  # named by the setting that gave the DSN
                if entry.warning:
                    setting = "gdg.sql.connections" if dsn in self.connections else "gdg.sql.sources"
                    found.append(f"{setting}: {entry.warning}")
            return found

    # -- internals ----------------------------------------------------------

    def _under_roots(self, path: Path) -> bool:
        return any(path == root or root in path.parents for root in (absolute(r) for r in self.roots))

    def _changed(self) -> None:
        self.version += 1
        self._merged.clear()
        self._loaded.clear()
        self._folders = None

    def _rescan(self) -> None:
        self._scanned = time.monotonic()
        present = set()
        for path in sql_ddl_files.walk(self.roots, SCHEMA_SUFFIXES):
            path = absolute(path)
            present.add(path)
            self._check(path, forget_missing=False, walked=True)
        for gone in [p for p, e in self._files.items() if e.walked and p not in present]:
            del self._files[gone]
            self._changed()

    def _file(self, path: Path) -> tuple[_FileEntry | None, str]:
        """The entry of a file a data source names (read now if it is new or changed)."""
        path = absolute(path)
        self._check(path, forget_missing=True, walked=path in self._files and self._files[path].walked)
        entry = self._files.get(path)
        if entry is not None:
            return entry, ""
        return None, self._refused.get(path) or f"{path}: cannot be read"

    def _check(self, path: Path, forget_missing: bool, walked: bool) -> None:
        if not self.boundary.allows(path):
            # a symlink leading outside (or a path named outside): refused, never opened
            if path not in self._refused:
                self._refused[path] = self.boundary.why_not(path)
            if self._files.pop(path, None) is not None:
                self._changed()
            return
        self._refused.pop(path, None)
        suffix = path.suffix.lower()
        try:
            stamp = sql_sqlite.stamp(path) if suffix in sql_sqlite.SUFFIXES else _stamp(path)
        except OSError as err:
            if forget_missing and path in self._files:
                del self._files[path]
                self._changed()
            if not walked:
                self._refused[path] = f"{path}: {err.strerror or 'cannot be read'}"
            return
        entry = self._files.get(path)
        if entry is not None and entry.stamp == stamp:
            return
        if suffix in sql_ddl_files.SUFFIXES:
            ddl, warnings = sql_ddl_files.read(path, self.boundary)
            self._files[path] = _FileEntry(stamp, ddl, [], warnings, walked)
        elif suffix in sql_sqlite.SUFFIXES:
            schema = sql_sqlite.read(path, self.boundary)
            self._files[path] = _FileEntry(stamp, None, schema.tables, schema.warnings, walked)
        else:
            return
        self._changed()

    def _database(self, dsn: str) -> _DatabaseEntry:
        entry = self._databases.get(dsn)
        if entry is None:
            entry = self._databases[dsn] = _DatabaseEntry()
            self._refresh_databases(force=False)
        return entry

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
        if schema.warnings and not schema.tables:
            kept = f" (keeping the last known schema: {len(entry.tables)} tables)" if entry.ok else ""
            entry.warning = schema.warnings[0] + kept
            self._loaded.clear()
            return
        entry.warning = schema.warnings[0] if schema.warnings else None
        if not entry.ok or schema.tables != entry.tables:
            entry.tables, entry.ok = schema.tables, True
            self._changed()

    def _merge(self, exclude: str | None) -> list[Table]:
        skip = _same_file_test(exclude)
        files = [(p, e) for p, e in sorted(self._files.items()) if e.walked and not skip(p)]
        ddl_results = [e.ddl for _, e in files if e.ddl is not None]
        sqlite_tables = [e.tables for _, e in files if e.ddl is None]
        database_tables = [self._databases[dsn].tables for dsn in self.connections if dsn in self._databases]
        base = merge([*sqlite_tables, *database_tables])
        from_files = resolve(ddl_results, base)
        return sql_names.admitted(merge([from_files, *sqlite_tables, *database_tables]))


def _stamp(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size


def _same_file_test(exclude: Path | str | None):
    """A test for "this is the excluded file" that sees through symlinks."""
    if exclude is None or exclude == "None":
        return lambda path: False
    plain, real = absolute(exclude), Path(os.path.realpath(exclude))
    return lambda path: path == plain or path == real


_CATALOGS: BoundedCache[tuple, SchemaCatalog] = BoundedCache("sql.catalogs", 8)
_CATALOGS_LOCK = threading.Lock()


def catalog_for(roots: Sequence[Path | str], settings: Any = None) -> SchemaCatalog:
    """The shared catalog of a workspace (one per roots + connections + configured folders)."""
    connections = sql_postgres.connections_from(settings)
    allowed = configured_folders(settings, roots)
    key = (tuple(str(absolute(r)) for r in roots), tuple(connections), tuple(str(a) for a in allowed))
    with _CATALOGS_LOCK:
        return _CATALOGS.get_or_make(key, lambda: SchemaCatalog(roots, connections, allowed=allowed))


def configured_folders(settings: Any, roots: Sequence[Path | str] = ()) -> list[Path]:
    """Folders outside the workspace the user's ``gdg.sql.sources`` name (absolute ``ddl``
    and ``sqlite`` paths): their files may be read. The part of a glob before its first
    wildcard is the folder."""
    sql = getattr(settings, "sql", None)
    folders: list[Path] = []
    for entry in getattr(sql, "sources", None) or ():
        for pattern in [*entry.ddl, entry.sqlite]:
            if not pattern or not os.path.isabs(os.path.expanduser(pattern)):
                continue
            parts = Path(os.path.expanduser(pattern)).parts
            static = [p for p in parts[: next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts))]]
            folder = Path(*static) if static else Path("/")
            folders.append(folder if any(c in pattern for c in "*?[") else folder.parent)
    return folders


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
