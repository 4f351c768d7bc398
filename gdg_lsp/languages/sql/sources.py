"""Which database a SQL file is written against: its data source, and so its Γ.

A workspace may hold several databases (one folder per service, a benchmark
with one folder per database); a query must only be completed with the names
of its own. The first of these rules that gives a readable schema wins:

1. **setting**: the entry of ``gdg.sql.sources`` whose ``files`` globs match
   the file (relative to a workspace folder; a glob without ``/`` matches the
   file name anywhere); when two entries claim it, neither (a warning). Its ``ddl`` files are applied in order, over its
   ``sqlite`` database and its ``postgres`` database (a DSN, or the database
   name of one of ``gdg.sql.connections``).
2. **comment**: ``-- gdg: source=NAME`` (an entry's ``name``, or a connection's
   database name) or ``-- gdg: schema=PATH[,PATH]`` (files or folders, relative
   to the file) in the comment lines at the top of the file; ``dialect=`` may
   follow either.
3. **folder**: the schema files beside the file (DDL files and SQLite
   databases, with a ``migrations/`` subfolder), else those of the closest
   folder above it that has any, up to the workspace folder. Each folder is
   looked at as the disk holds it at the request (``catalog.schema_files``), so a
   folder written a moment ago counts; and a nearest folder whose schema files
   cannot be read (refused, a SQLite file that does not open) is still the
   source: its answer is empty with the reason, never a farther database's names.
4. **workspace**: every schema in the workspace, merged; an information
   diagnostic says no source was found and how to choose one when that
   union mixes several databases.

A rule that points at nothing usable (a glob that matches no file, a database
that cannot be opened, a server that refuses, two entries claiming the file)
gives a diagnostic that names the setting or the comment, and the next rule
is tried. Every path is checked against the workspace boundary first, and the
``ddl``/``sqlite`` globs are walked inside it (``expand``).

A resolution keeps the stamps of what it was made from (``Resolution.witness``:
the folders the rules listed, the files they read or found absent), and holds
while they do (``Resolution.holds``: one ``stat`` each); the union's answer
holds while the catalog's does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdg_lsp import folder_walk, stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.sql import dialects, migrations
from gdg_lsp.languages.sql import postgres as sql_postgres
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.catalog import SchemaCatalog, absolute
from gdg_lsp.languages.sql.lexer import tokenize
from gdg_lsp.languages.sql.schema import Table
from gdg_lsp.settings import limits_of

RULES = ("setting", "comment", "folder", "workspace")
SETTING = "gdg.sql.sources"
_DIRECTIVE = re.compile(r"--\s*gdg:\s*(.*)$", re.IGNORECASE)
_PAIR = re.compile(r"([A-Za-z_]+)\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s]+)")


@dataclass(frozen=True)
class DataSource:
    """Where a file's schema comes from."""

    rule: str
    """setting | comment | folder | workspace"""
    label: str
    """What the user is shown: the entry, the comment, the folder, or "the whole workspace"."""
    ddl: tuple[Path, ...] = ()
    """Schema files, in the order they are applied."""
    sqlite: tuple[Path, ...] = ()
    postgres: tuple[str, ...] = ()
    dialect: str = ""
    """Chosen explicitly (an entry's or the comment's ``dialect``); "" to derive it."""
    name: str = ""
    """The name a ``-- gdg: source=`` comment can use for it."""
    unread: tuple[str, ...] = ()
    """Why the schema files it found could not be read (the folder rule answers empty then)."""


@dataclass(frozen=True)
class Note:
    """Something the user should know about a file's data source (becomes a diagnostic)."""

    message: str
    severity: str = "warning"
    line: int = 0
    """The file's line it is about (the comment's line; 0 otherwise)."""


@dataclass
class Resolution:
    source: DataSource
    tables: list[Table]
    dialect: dialects.Dialect
    notes: list[Note] = field(default_factory=list)
    witness: stamps.Witness = field(default_factory=stamps.Witness)
    """The stamps of the folders listed and the files read to make it."""
    version: int | None = None
    """The catalog's version, for an answer from the whole workspace (the union): None otherwise."""
    databases_version: int | None = None
    """The catalog's databases' version, for an answer a PostgreSQL database gave."""

    def holds(self, catalog: SchemaCatalog) -> bool:
        """Whether the disk (and the databases) still say what this was made from."""
        if not self.witness.holds():
            return False
        if self.version is not None:
            catalog.fresh()
            if catalog.version != self.version:
                return False
        if self.databases_version is not None:
            catalog.fresh_databases()
            if catalog.databases_version != self.databases_version:
                return False
        return True

    def describe(self) -> str:
        """One line for hover, explain and the status item."""
        return f"{self.source.label} ({self.source.rule}, {self.dialect.title})"


# -- finding the candidates -------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob: ``**`` any folders, ``*`` and ``?`` within one name, ``[…]`` a class."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (close := pattern.find("]", i + 1)) > i:
            body = pattern[i + 1 : close]
            out.append("[" + ("^" + re.escape(body[1:]) if body.startswith("!") else re.escape(body)) + "]")
            i = close + 1
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z")


def matches(pattern: str, path: Path, roots: Sequence[Path]) -> bool:
    """Does ``pattern`` (a ``files`` glob) name ``path``?"""
    pattern = os.path.expanduser(pattern).replace(os.sep, "/")
    regex = _glob_regex(pattern)
    if os.path.isabs(pattern):
        return regex.match(path.as_posix()) is not None
    if "/" not in pattern.rstrip("/"):
        return regex.match(path.name) is not None
    for root in roots:
        try:
            relative = path.relative_to(absolute(root)).as_posix()
        except ValueError:
            continue
        if regex.match(relative) is not None:
            return True
    return False


_WILDCARDS = re.compile(r"[*?\[]")


def expand(pattern: str, roots: Sequence[Path], boundary: Boundary, settings: Any = None,
           witness: stamps.Witness | None = None) -> list[Path]:
    """The files a ``ddl``/``sqlite`` path or glob names (relative ones under each workspace
    folder), walked inside ``boundary`` by ``folder_walk``: a link to a folder is followed only
    where it leads inside, each real folder is matched once per step of the pattern however many
    links lead to it, and the walk is capped (``glob.glob`` followed every link, so two links back
    to their own folder doubled the folders listed per level, and it listed folders outside).
    The walk stops at ``gdg.limits.globFolders`` / ``globMatches`` (``walk_problems`` says so).
    ``witness`` gets the stamps of the folders the walks looked into."""
    return _expanded(pattern, roots, boundary, settings, witness)[0]


def _expanded(pattern: str, roots: Sequence[Path], boundary: Boundary, settings: Any,
              witness: stamps.Witness | None = None) -> tuple[list[Path], list[str]]:
    """``expand``'s files, and why a walk stopped before its end (its bound)."""
    pattern = os.path.expanduser(pattern)
    bases = [Path(os.sep)] if os.path.isabs(pattern) else roots
    limits = limits_of(settings)
    walks = [folder_walk.glob_walk(Path(base), pattern, boundary, f"the glob {pattern!r}",
                                   max_folders=limits.glob_folders, max_matches=limits.glob_matches)
             for base in bases]
    for walk in walks if witness is not None else ():
        for folder, stamp in walk.stamps:
            witness.keep(folder, stamp)
    found = dict.fromkeys(p for walk in walks for p in walk.files)
    cut = [walk.problem for walk in walks if walk.problem is not None and walk.stamps]
    return [absolute(p) for p in found if os.path.isfile(p)], list(dict.fromkeys(cut))


def start_outside(pattern: str, roots: Sequence[Path], boundary: Boundary) -> str | None:
    """Why the path or the folder a glob starts from (its part before the first wildcard) lies
    outside ``boundary`` under every workspace folder (``../elsewhere/*.sql``); None: inside."""
    pattern = os.path.expanduser(pattern)
    parts = Path(pattern).parts
    static = parts[: next((i for i, part in enumerate(parts) if _WILDCARDS.search(part)), len(parts))]
    bases = [Path(os.sep)] if os.path.isabs(pattern) else roots
    starts = [Path(os.path.normpath(Path(base, *static))) for base in bases]
    if not starts or any(boundary.allows(start) for start in starts):
        return None
    return boundary.why_not(starts[0])


def _folder_schema(catalog: SchemaCatalog, folder: Path, exclude: Path | None, witness: stamps.Witness | None = None,
                   unread: list[str] | None = None) -> tuple[list[Path], list[Path]]:
    """(DDL files in the order applied, SQLite files) of ``folder`` and its migrations subfolder,
    as the disk holds them now (``witness`` gets the stamps of the folders and files looked at,
    ``unread`` why the schema files there that could not be read were not)."""
    found = [p for p in catalog.schema_files(folder, witness, exclude, unread) if p != exclude]
    for name in migrations.MIGRATION_FOLDERS:
        found += [p for p in catalog.schema_files(folder / name, witness, exclude, unread) if p != exclude]
    ddl = migrations.order(p for p in found if p.suffix.lower() not in sql_sqlite.SUFFIXES)
    return ddl, [p for p in found if p.suffix.lower() in sql_sqlite.SUFFIXES]


_HEADER = re.compile(r"(?:\s*(?:--[^\n]*|/\*.*?\*/))*", re.DOTALL)


def header_directives(text: str) -> list[tuple[int, dict[str, str]]]:
    """``-- gdg: key=value …`` lines among the comments at the top of a file: (line, pairs)."""
    found = []
    head = _HEADER.match(text, 0, min(len(text), 20_000))
    for tok in tokenize(text, 0, head.end() if head else 0):
        if tok.kind == "space":
            continue
        if tok.kind != "comment":
            break
        m = _DIRECTIVE.match(tok.text.strip()) if tok.text.startswith("--") else None
        if m is not None:
            pairs = {k.lower(): v.strip("\"'") for k, v in _PAIR.findall(m.group(1))}
            if pairs:
                found.append((text.count("\n", 0, tok.start), pairs))
    return found


class _Candidates:
    """The rules' answers for one file, in order, with the notes they raise."""

    def __init__(self, catalog: SchemaCatalog, settings: Any, path: Path | None, text: str) -> None:
        self.catalog = catalog
        self.roots = [absolute(r) for r in catalog.roots]
        self.settings = settings
        self.sql = getattr(settings, "sql", None)
        self.path = absolute(path) if path is not None else None
        self.text = text
        self.notes: list[Note] = []
        self.witness = stamps.Witness()

    def entries(self) -> list[Any]:
        return list(getattr(self.sql, "sources", None) or ())

    def connections(self) -> list[str]:
        return list(getattr(self.sql, "connections", None) or ())

    def _connection_named(self, name: str) -> str | None:
        return next((dsn for dsn in self.connections() if sql_postgres.database_name(dsn) == name), None)

    def from_entry(self, index: int, entry: Any, shown: str, line: int = 0) -> DataSource | None:
        """The data source an entry of gdg.sql.sources describes (its paths expanded and checked)."""
        where = f"{SETTING}[{index}]" + (f" ({entry.name})" if entry.name else "")
        ddl: list[Path] = []
        for pattern in entry.ddl:
            files = self._expand(pattern, where, f"ddl {pattern!r} matches no file", line)
            ddl += [p for p in migrations.order(files) if p not in ddl]
        sqlite: list[Path] = []
        if entry.sqlite:
            sqlite = self._expand(entry.sqlite, where, f"sqlite {entry.sqlite!r} is not a file", line)[:1]
        postgres: list[str] = []
        if entry.postgres:
            dsn = self._connection_named(entry.postgres) if "=" not in entry.postgres and "://" not in entry.postgres else entry.postgres
            if dsn is None:
                self.notes.append(Note(f"{where}: postgres {entry.postgres!r} is neither a DSN nor the database "
                                       f"of one of gdg.sql.connections", "warning", line))
            else:
                postgres = [dsn]
        kept = []
        for file in [*ddl, *sqlite]:
            if self.catalog.boundary.allows(file):
                kept.append(file)
            else:
                self.notes.append(Note(f"{where}: {self.catalog.boundary.why_not(file)}", "warning", line))
        ddl = [p for p in ddl if p in kept]
        sqlite = [p for p in sqlite if p in kept]
        if not (ddl or sqlite or postgres):
            return None
        return DataSource(shown, f"{where}" if not entry.name else f"{entry.name} ({where})", tuple(ddl),
                          tuple(sqlite), tuple(postgres), entry.dialect, entry.name)

    def _expand(self, pattern: str, where: str, none_found: str, line: int) -> list[Path]:
        """``expand``'s files; when there are none, one note: the folder the pattern starts from
        lies outside the boundary (it was never walked), or ``none_found``."""
        files, cut = _expanded(pattern, self.roots, self.catalog.boundary, self.settings, self.witness)
        self.notes += [Note(f"{where}: {why}", "warning", line) for why in cut]  # a bound was hit
        if not files:
            why = start_outside(pattern, self.roots, self.catalog.boundary) or none_found
            self.notes.append(Note(f"{where}: {why}", "warning", line))
        return files

    def setting(self) -> DataSource | None:
        if self.path is None:
            return None
        claiming = [(i, e) for i, e in enumerate(self.entries())
                    if any(matches(glob_, self.path, self.roots) for glob_ in e.files)]
        if len(claiming) > 1:
            shown = " and ".join(f"{SETTING}[{i}]" + (f" ({e.name})" if e.name else "") for i, e in claiming)
            self.notes.append(Note(f"{shown} all claim this file: none is used; narrow their `files` globs "
                                   f"(the next rule decides)", "warning"))
            return None
        if claiming:
            return self.from_entry(*claiming[0], "setting")
        return None

    def comment(self) -> DataSource | None:
        for line, pairs in header_directives(self.text):
            dialect = pairs.get("dialect", "")
            if dialect and dialect not in dialects.DIALECTS:
                self.notes.append(Note(f"-- gdg: dialect={dialect} is not one of {', '.join(dialects.DIALECTS)} "
                                       f"(ignored)", "warning", line))
                dialect = ""
            if "source" in pairs:
                found = self._named(pairs["source"], line)
                if found is not None:
                    return DataSource("comment", found.label, found.ddl, found.sqlite, found.postgres,
                                      dialect or found.dialect, found.name)
            elif "schema" in pairs:
                found = self._schema_paths(pairs["schema"], line)
                if found is not None:
                    return DataSource("comment", found.label, found.ddl, found.sqlite, found.postgres, dialect)
        return None

    def _named(self, name: str, line: int) -> DataSource | None:
        for index, entry in enumerate(self.entries()):
            if entry.name == name:
                return self.from_entry(index, entry, "comment", line)
        dsn = self._connection_named(name)
        if dsn is not None:
            return DataSource("comment", f"PostgreSQL {sql_postgres.redact(dsn)}", postgres=(dsn,), name=name)
        known = [e.name for e in self.entries() if e.name] + [n for d in self.connections() if (n := sql_postgres.database_name(d))]
        self.notes.append(Note(f"-- gdg: source={name}: no entry of {SETTING} has that name and no connection of "
                               f"gdg.sql.connections has that database" + (f" (known: {', '.join(known)})" if known else ""),
                               "warning", line))
        return None

    def _schema_paths(self, value: str, line: int) -> DataSource | None:
        base = self.path.parent if self.path is not None else (self.roots[0] if self.roots else Path.cwd())
        ddl: list[Path] = []
        sqlite: list[Path] = []
        for written in [v for v in value.split(",") if v]:
            target = absolute(base / os.path.expanduser(written))
            self.witness.note(target)
            if not self.catalog.boundary.allows(target):
                self.notes.append(Note(f"-- gdg: schema={written}: {self.catalog.boundary.why_not(target)}", "warning", line))
                continue
            if target.is_dir():
                folder_ddl, folder_sqlite = _folder_schema(self.catalog, target, self.path, self.witness)
                if not (folder_ddl or folder_sqlite):
                    self.notes.append(Note(f"-- gdg: schema={written}: the folder has no schema files", "warning", line))
                ddl += folder_ddl
                sqlite += folder_sqlite
            elif target.is_file():
                (sqlite if target.suffix.lower() in sql_sqlite.SUFFIXES else ddl).append(target)
            else:
                self.notes.append(Note(f"-- gdg: schema={written}: no such file or folder", "warning", line))
        if not (ddl or sqlite):
            return None
        shown = ", ".join(_relative(p, self.roots) for p in [*ddl, *sqlite])
        return DataSource("comment", f"schema {shown}", tuple(ddl), tuple(sqlite))

    def folder(self) -> DataSource | None:
        if self.path is None:
            return None
        folder = self.path.parent
        top = next((root for root in self.roots if folder == root or root in folder.parents), None)
        while True:
            unread: list[str] = []
            ddl, sqlite = _folder_schema(self.catalog, folder, self.path, self.witness, unread)
            if ddl or sqlite or unread:
                return DataSource("folder", f"folder {_relative(folder, self.roots)}", tuple(ddl), tuple(sqlite),
                                  unread=tuple(unread))
            if top is None or folder == top or folder.parent == folder:
                return None
            folder = folder.parent

    def workspace(self) -> DataSource:
        return DataSource("workspace", "the whole workspace (every schema, merged)",
                          postgres=tuple(self.connections()))


def _relative(path: Path, roots: Iterable[Path]) -> str:
    """``path`` as the user knows it: relative to its workspace folder (the folder's own name for itself)."""
    for root in roots:
        try:
            relative = path.relative_to(root).as_posix()
        except ValueError:
            continue
        return root.name if relative == "." else relative
    return str(path)


# -- resolving ---------------------------------------------------------------------------------


def resolve(catalog: SchemaCatalog, settings: Any, path: Path | None, text: str) -> Resolution:
    """The data source of the file at ``path`` (with text ``text``) and its tables."""
    candidates = _Candidates(catalog, settings, path, text)
    exclude = candidates.path
    chosen = _written_dialect(text)  # `-- gdg: dialect=…` alone applies to whichever source wins
    for rule in (candidates.setting, candidates.comment, candidates.folder):
        source = rule()
        if source is None:
            continue
        loaded = catalog.load(source.ddl, source.sqlite, source.postgres, exclude, candidates.witness)
        if source.rule == "folder" and (loaded.failed or not (source.ddl or source.sqlite)):
            # the nearest folder with schema files is this file's database, read or not: a farther
            # folder's or the union's names would be another database's
            why = "; ".join(dict.fromkeys([*source.unread, *loaded.warnings])) or "nothing could be read"
            candidates.notes.append(Note(f"{source.label}: its schema files could not be read ({why}); no table "
                                         f"names are offered until they can be (a farther folder's would be "
                                         f"another database's)"))
            return Resolution(source, [], dialects.get(chosen) if chosen else dialects.ANSI, candidates.notes,
                              candidates.witness)
        if loaded.failed:
            candidates.notes.extend(Note(f"{source.label}: {w}") for w in loaded.warnings)
            candidates.notes.append(Note(f"{source.label}: nothing could be read; the next rule decides "
                                         f"(see docs/sql.md, data sources)"))
            continue
        candidates.notes.extend(Note(f"{source.label}: {w}") for w in loaded.warnings if source.rule != "folder")
        dialect = dialects.get(chosen) if chosen else _dialect(source, loaded.dialect_hints)
        return Resolution(source, loaded.tables, dialect, candidates.notes, candidates.witness,
                          databases_version=catalog.databases_version if source.postgres else None)
    source = candidates.workspace()
    tables = catalog.tables(exclude=exclude)
    databases = len(catalog.folders_with_schemas()) + len(source.postgres)
    if databases > 1:
        candidates.notes.append(Note(
            f"No SQL data source found for this file: its names come from every schema of the workspace "
            f"({databases} databases merged). Choose one with the code action “Choose the SQL data source for "
            f"this file”, a `-- gdg: source=NAME` or `-- gdg: schema=PATH` comment at the top, {SETTING}, "
            f"or a schema file beside it.", "information"))
    dialect = dialects.get(chosen) if chosen else _dialect(source, catalog.dialect_hints())
    return Resolution(source, tables, dialect, candidates.notes, candidates.witness, version=catalog.version)


def _written_dialect(text: str) -> str:
    for _, pairs in header_directives(text):
        if pairs.get("dialect") in dialects.DIALECTS:
            return pairs["dialect"]
    return ""


def _dialect(source: DataSource, hints: Sequence[str]) -> dialects.Dialect:
    if source.dialect:
        return dialects.get(source.dialect)
    if source.sqlite and not source.postgres:
        return dialects.SQLITE
    if source.postgres and not source.sqlite:
        return dialects.POSTGRES
    return dialects.get(dialects.decide(hints))


def choices(catalog: SchemaCatalog, settings: Any, path: Path | None) -> list[tuple[str, str]]:
    """What a file could be bound to, for "Choose the SQL data source": (title, the
    ``-- gdg:`` directive that binds it). Named entries, connections, folders with schemas."""
    candidates = _Candidates(catalog, settings, path, "")
    found: list[tuple[str, str]] = []
    for index, entry in enumerate(candidates.entries()):
        if entry.name:
            found.append((f"{entry.name} ({SETTING}[{index}])", f"source={entry.name}"))
    for dsn in candidates.connections():
        if (name := sql_postgres.database_name(dsn)) and not any(d == f"source={name}" for _, d in found):
            found.append((f"{name} (PostgreSQL {sql_postgres.redact(dsn)})", f"source={name}"))
    base = path.parent if path is not None else None
    for folder in catalog.folders_with_schemas()[:200]:
        if folder.name.lower() in migrations.MIGRATION_FOLDERS:
            folder = folder.parent
        shown = _relative(folder, candidates.roots)
        written = os.path.relpath(folder, base) if base is not None else str(folder)
        directive = f"schema={Path(written).as_posix()}"
        if not any(d == directive for _, d in found):
            found.append((f"folder {shown}", directive))
    return found
