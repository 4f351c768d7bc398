"""The workspace's SQL schema files and databases, read once and kept fresh.

``SchemaCatalog`` owns one workspace's sources: the ``.sql`` and SQLite files
under its folders, the PostgreSQL databases of ``gdg.sql.connections``, and
any file or database a data source names (``sources.py``). It answers from
memory, and checks the disk at every request, with stamps (``gdg_lsp.stamps``:
mtime, size, inode, ctime; one ``stat`` each) rather than reads:

- a folder's schema files (``schema_files``, what the nearest-folder rule asks of
  each folder from the document up) are its listing, kept with the folder's stamp
  and listed again when the stamp moves: a ``schema.sql`` written into a new
  folder is seen by the next request that looks there;
- a file is read again when its stamp moves (a racy stamp, one taken within
  ``stamps.RACY_S`` of the file's change, is never trusted);
- the union (``tables``) keeps the stamp of every folder the walk of the
  workspace listed: a moved one is listed again (its new subfolders walked), and
  the stamp of every walked file that defines tables is compared (what it defined
  can go at once: never a ghost), of the others ``ROTATING_PER_CHECK`` in turn (one
  that gains a CREATE TABLE in place adds names within a few requests; a file added
  or removed moves its folder's stamp at once), while there are at most
  ``MAX_STAMPS_PER_CHECK`` folders and schema files; past that the whole walk runs
  again at most every ``rescan_after`` seconds.

Databases are re-introspected at most every ``database_refresh_after`` seconds.
The server calls ``refresh(paths)`` when it learns that files changed
(``workspace/didChangeWatchedFiles``, ``didSave``, its own watcher);
``refresh(databases=True)`` forces a new introspection. A database that is down,
hangs or refuses keeps its last known schema and adds a warning.

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

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.sql import ddl_files as sql_ddl_files
from gdg_lsp.languages.sql import names as sql_names
from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.ddl import DdlResult, resolve
from gdg_lsp.languages.sql.schema import Schema, Table, merge

SCHEMA_SUFFIXES = sql_ddl_files.SUFFIXES + sql_sqlite.SUFFIXES
MAX_STAMPS_PER_CHECK = 4096
"""Folders and schema files whose stamps the union compares at every request (a few µs each); a
workspace with more is walked again at most every ``rescan_after`` seconds instead."""
ROTATING_PER_CHECK = 32
"""Walked files that define no table (queries) whose stamps one union check compares, in turn."""


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
    failed: bool = False
    """It could not be read (refused, cut, not openable): a source that is there, unread."""

    @property
    def is_schema(self) -> bool:
        """The file defines tables: DDL statements, or a SQLite database that opened."""
        return bool(self.ddl) if self.ddl is not None else bool(self.tables) or not self.warnings


@dataclass
class _Folder:
    """A folder the walk listed: its stamp before the listing, what the listing held."""

    stamp: stamps.Stamp
    files: tuple[Path, ...]
    subfolders: tuple[Path, ...]


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
        rescan_after: float = 30.0,
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
        self.databases_version = 0
        """Grows when a database's tables change (a cached answer that used one is stale)."""
        self._scanned = float("-inf")
        self._walked: dict[Path, _Folder] = {}
        self._rotation = 0
        """Where the union's next check of the files that define no table begins."""
        self._listings: BoundedCache[Path, tuple[stamps.Stamp, tuple[Path, ...]]] = BoundedCache(
            "sql.folder-listings", 4096)
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
        """Check the union against the disk now (the stamps of the folders walked and the files
        read; a moved folder listed again) and the databases' age."""
        with self._lock:
            within = len(self._walked) + sum(e.is_schema for e in self._files.values()) <= MAX_STAMPS_PER_CHECK
            if not self._walked or (not within and time.monotonic() - self._scanned >= self.rescan_after):
                self._rescan()
            elif within:
                self._check_walk()
            self._refresh_databases(force=False)

    def fresh_databases(self) -> None:
        """Re-introspect the databases that are due (what an answer that used one checks)."""
        with self._lock:
            self._refresh_databases(force=False)

    def schema_files(self, folder: Path, witness: stamps.Witness | None = None, exclude: Path | None = None,
                     unread: list[str] | None = None) -> list[Path]:
        """The schema files directly in ``folder`` (DDL files and SQLite databases), by name,
        as the disk holds them now: the folder's listing (kept while its stamp holds) and each
        file's stamp. ``witness`` gets the folder's and every listed file's stamp; ``unread``
        why each schema file there (``exclude`` aside) could not be read: refused by the
        boundary, too large, a SQLite file that does not open -- a source there, unread."""
        with self._lock:
            found = []
            for path in self._listed(absolute(folder), witness):
                entry = self._files.get(path)
                if entry is not None and entry.is_schema:
                    found.append(path)
                elif unread is not None and path != exclude:
                    if entry is None and path in self._refused:
                        unread.append(self._refused[path])
                    elif entry is not None and entry.failed:
                        unread.extend(entry.warnings or [f"{path}: cannot be read"])
            return found

    def folders_with_schemas(self) -> list[Path]:
        """Every folder of the workspace that holds schema files (for choosing a source)."""
        with self._lock:
            self.fresh()
            if self._folders is None:
                index: dict[Path, list[Path]] = {}
                for path, entry in self._files.items():
                    if entry.walked and entry.is_schema:
                        index.setdefault(path.parent, []).append(path)
                self._folders = {k: sorted(v) for k, v in index.items()}
            return sorted(self._folders)

    def load(self, ddl: Sequence[Path], sqlite: Sequence[Path] = (), postgres: Sequence[str] = (),
             exclude: Path | str | None = None, witness: stamps.Witness | None = None) -> Loaded:
        """One data source's schema: ``ddl`` replayed in order over its databases' tables.
        Each file's stamp is compared first (``witness`` gets them)."""
        with self._lock:
            skip = _same_file_test(exclude)
            checked: dict[Path, tuple[_FileEntry | None, str]] = {}
            for path in [*ddl, *sqlite]:
                if not skip(path):
                    if witness is not None:
                        self._witness(witness, absolute(path))
                    checked[path] = self._file(path)
            if postgres:
                self._refresh_databases(force=False)
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
                entry, why = checked[path]
                if entry is None:
                    warnings.append(why)
                    failed = True
                    continue
                warnings.extend(entry.warnings)
                if entry.ddl is not None:
                    results.append(entry.ddl)
                    hints.append(entry.ddl.dialect_hint)
            for path in sqlite:
                if skip(path):
                    continue
                entry, why = checked[path]
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
                        self._check(path, forget_missing=True, walked=self._walkable(path))
                    self._listings.pop(path.parent)  # a file came or went there: list it again
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

    def _walkable(self, path: Path) -> bool:
        """Whether the walk of the workspace would find ``path`` (under a workspace folder,
        through no hidden or skipped folder)."""
        for root in (absolute(r) for r in self.roots):
            if path == root:
                return True
            try:
                parts = path.relative_to(root).parts
            except ValueError:
                continue
            return not any(p.startswith(".") or p in sql_ddl_files.SKIPPED_DIRS for p in parts[:-1])
        return False

    def _changed(self) -> None:
        self.version += 1
        self._merged.clear()
        self._loaded.clear()
        self._folders = None

    def _witness(self, witness: stamps.Witness, path: Path) -> None:
        witness.note(path)
        if path.suffix.lower() in sql_sqlite.SUFFIXES:
            witness.note(f"{path}-wal", follow=False)

    def _listed(self, folder: Path, witness: stamps.Witness | None) -> tuple[Path, ...]:
        """The schema-suffixed files of ``folder`` now, each checked against its stamp."""
        stamp = witness.note(folder) if witness is not None else stamps.of(folder)
        known = self._listings.get(folder)
        if known is not None and known[0] == stamp:  # a racy stamp equals none
            files = known[1]
        else:
            files = self._list(folder)[0] if stamp is not None else ()
            self._listings.put(folder, (stamp, files))
        for path in files:
            if witness is not None:
                self._witness(witness, path)
            entry = self._files.get(path)
            self._check(path, forget_missing=True, walked=entry.walked if entry is not None else self._walkable(path))
        return files

    def _list(self, folder: Path) -> tuple[tuple[Path, ...], tuple[Path, ...], int]:
        """(schema-suffixed files, subfolders the walk enters, entries seen) of one folder."""
        files, subfolders, seen = [], [], 0
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    seen += 1
                    if seen > sql_ddl_files.MAX_FILES_VISITED:
                        break  # a folder of a million entries costs no more than the walk's bound
                    try:
                        if entry.is_dir(follow_symlinks=False):  # links to folders are not followed
                            if not entry.name.startswith(".") and entry.name not in sql_ddl_files.SKIPPED_DIRS:
                                subfolders.append(folder / entry.name)
                        elif entry.name.lower().endswith(SCHEMA_SUFFIXES):
                            files.append(folder / entry.name)  # a FIFO or a link too: judged when read
                    except OSError:
                        continue
        except OSError:
            pass
        return tuple(sorted(files)), tuple(sorted(subfolders)), seen

    def _rescan(self) -> None:
        """Walk the workspace folders again: every folder listed (its stamp kept), every schema
        file checked, the ones no longer found forgotten."""
        self._scanned = time.monotonic()
        self._walked = {}
        present: set[Path] = set()
        budget = [sql_ddl_files.MAX_FILES_VISITED]
        for root in self.roots:
            root = absolute(root)
            if root.is_file():
                if root.suffix.lower() in SCHEMA_SUFFIXES:
                    present.add(root)
                    self._check(root, forget_missing=False, walked=True)
                continue
            self._walk_from(root, present, budget)
        for gone in [p for p, e in self._files.items() if e.walked and p not in present]:
            del self._files[gone]
            self._changed()

    def _walk_from(self, top: Path, present: set[Path], budget: list[int]) -> None:
        """List ``top`` and the folders under it (depth first, by name, within ``budget``)."""
        stack = [top]
        while stack and budget[0] > 0:
            folder = stack.pop()
            stamp = stamps.of(folder)
            files, subfolders, seen = self._list(folder)
            budget[0] -= 1 + seen
            self._walked[folder] = _Folder(stamp, files, subfolders)
            for path in files:
                present.add(path)
                self._check(path, forget_missing=False, walked=True)
            stack.extend(reversed(subfolders))

    def _check_walk(self) -> None:
        """The per-request check of the union: each walked folder's stamp (a moved one listed
        again: files that came are read, files that went forgotten, new subfolders walked, gone
        ones dropped) and each walked file's stamp."""
        for folder, known in list(self._walked.items()):
            if folder not in self._walked:
                continue  # dropped with a parent that went
            stamp = stamps.of(folder)
            if stamp == known.stamp:  # a racy stamp equals none
                continue
            if stamp is None:
                self._drop_walked(folder)
                continue
            files, subfolders, _ = self._list(folder)
            self._walked[folder] = _Folder(stamp, files, subfolders)
            for path in set(known.files) - set(files):
                if (entry := self._files.get(path)) is not None and entry.walked:
                    del self._files[path]
                    self._changed()
            for path in files:
                self._check(path, forget_missing=True, walked=True)
            for gone in set(known.subfolders) - set(subfolders):
                self._drop_walked(gone)
            present: set[Path] = set()
            budget = [sql_ddl_files.MAX_FILES_VISITED]
            for new in sorted(set(subfolders) - set(known.subfolders)):
                self._walk_from(new, present, budget)
        schema, others = [], []
        for path, entry in self._files.items():
            if entry.walked:
                (schema if entry.is_schema or entry.failed else others).append(path)
        if others:
            start = self._rotation % len(others)
            schema += (others + others)[start:start + min(ROTATING_PER_CHECK, len(others))]
            self._rotation = start + ROTATING_PER_CHECK
        for path in schema:
            self._check(path, forget_missing=True, walked=True)

    def _drop_walked(self, folder: Path) -> None:
        """Forget a folder that went, with everything under it."""
        for known in [f for f in self._walked if f == folder or folder in f.parents]:
            del self._walked[known]
        for path in [p for p, e in self._files.items() if e.walked and folder in p.parents]:
            del self._files[path]
            self._changed()

    def _file(self, path: Path) -> tuple[_FileEntry | None, str]:
        """The entry of a file a data source names (read now if it is new or changed)."""
        path = absolute(path)
        entry = self._files.get(path)
        self._check(path, forget_missing=True, walked=entry.walked if entry is not None else False)
        entry = self._files.get(path)
        if entry is not None:
            return entry, ""
        return None, self._refused.get(path) or f"{path}: cannot be read"

    def _check(self, path: Path, forget_missing: bool, walked: bool) -> None:
        suffix = path.suffix.lower()
        stamp = _stamp(path, sqlite=suffix in sql_sqlite.SUFFIXES)
        entry = self._files.get(path)
        if entry is not None and stamp is not None and entry.stamp == stamp:
            # the very file judged and read before (the same inode on the same device, unchanged):
            # a link swapped to lead elsewhere would stamp as another file
            return
        if not self.boundary.allows(path):
            # a symlink leading outside (or a path named outside): refused, never opened
            if path not in self._refused:
                self._refused[path] = self.boundary.why_not(path)
            if self._files.pop(path, None) is not None:
                self._changed()
            return
        self._refused.pop(path, None)
        if stamp is None:
            if forget_missing and path in self._files:
                del self._files[path]
                self._changed()
            if not walked:
                self._refused[path] = f"{path}: cannot be read"
            return
        if suffix in sql_ddl_files.SUFFIXES:
            ddl, warnings = sql_ddl_files.read(path, self.boundary)
            new = _FileEntry(stamp, ddl, [], warnings, walked, failed=bool(warnings) and not ddl.notes)
        elif suffix in sql_sqlite.SUFFIXES:
            schema = sql_sqlite.read(path, self.boundary)
            failed = bool(schema.warnings) and not schema.tables and not schema.warnings[0].endswith(
                sql_sqlite.NOT_SQLITE)
            new = _FileEntry(stamp, None, schema.tables, schema.warnings, walked, failed=failed)
        else:
            return
        self._files[path] = new
        if entry is None or (entry.ddl, entry.tables, entry.warnings, entry.walked) != \
                (new.ddl, new.tables, new.warnings, new.walked):
            self._changed()  # read again and the same (a racy stamp): nothing moved

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
            self.databases_version += 1
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


def _stamp(path: Path, sqlite: bool) -> tuple | None:
    """A schema file's stamps (a SQLite file's with its ``-wal`` file's, never followed:
    ``sqlite.stamp``); None when it is missing."""
    stamp = stamps.of(path)
    if stamp is None:
        return None
    return (stamp, stamps.of(f"{path}-wal", follow=False)) if sqlite else (stamp,)


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
