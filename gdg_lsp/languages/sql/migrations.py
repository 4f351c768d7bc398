"""The order a data source's schema files are applied in, as migration tools order them.

A folder's schema is the replay of its DDL files (``ddl.resolve``): a file
that drops a column must come after the one that created it. Files whose
names carry a version are ordered by it, numerically, the way the tools do:
Flyway ``V1__init.sql``, ``V1_2__add.sql`` (and its repeatable ``R__views.sql``,
applied after every versioned one); numbered ``0001_init.sql``,
``20240101120000_add.sql``, ``3.add.sql``, golang-migrate ``1_init.up.sql``.
Files without a version (``schema.sql``, a baseline dump) come first, by name.
Files that undo a migration (``*.down.sql``, Flyway's ``U2__…``) are never
applied. A folder's ``migrations/`` (``migration/``, ``migrate/``) subfolder
belongs to it and is applied after the folder's own files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

MIGRATION_FOLDERS = ("migrations", "migration", "migrate")
"""Subfolders whose files belong to the schema of the folder that holds them."""

_FLYWAY = re.compile(r"[Vv](\d+(?:[._]\d+)*)__")
_REPEATABLE = re.compile(r"[Rr]__")
_UNDO = re.compile(r"[Uu]\d+(?:[._]\d+)*__")
_NUMBERED = re.compile(r"(\d+)(?=[_.\-])")


def is_undo(path: Path) -> bool:
    """A file that reverts a migration: never part of the schema."""
    name = path.name.lower()
    return name.endswith((".down.sql", ".undo.sql")) or _UNDO.match(path.name) is not None


def version(path: Path) -> tuple[int, ...] | None:
    """The version in a migration file's name, or None."""
    if (m := _FLYWAY.match(path.name)) is not None:
        return tuple(int(part) for part in re.split(r"[._]", m.group(1)))
    if (m := _NUMBERED.match(path.name)) is not None:
        return (int(m.group(1)),)
    return None


def _key(path: Path) -> tuple:
    in_subfolder = path.parent.name.lower() in MIGRATION_FOLDERS
    found = version(path)
    if _REPEATABLE.match(path.name):
        group = 2
    elif found is not None:
        group = 1
    else:
        group = 0
    return (in_subfolder, group, found or (), path.name.lower(), str(path))


def order(paths: Iterable[Path]) -> list[Path]:
    """``paths`` in the order they are applied, undo files left out."""
    return sorted((p for p in paths if not is_undo(p)), key=_key)
