"""The SQL schema model every source produces, and its bindings in Γ.

A ``Table`` keeps each name as it must be written in a query: the exact
spelling of the declaration, quotes included (```Song_Name```, ``"order
details"``, ``[Col X]``), so that a suggestion drawn from Γ reproduces it.
``ident_key`` gives the identity used to match a reference against it.

In Γ a table is a binding of sort ``Table`` named by its spelling; a column is
a binding of sort ``Column`` named ``<table>.<column>`` (the qualified
reference, unique in Γ even when two tables share a column name) with the
attrs ``table`` and ``column`` holding the two spellings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gdg_lsp.gamma import Binding, Origin
from gdg_lsp.languages.sql.lexer import ident_key


@dataclass(frozen=True)
class Column:
    name: str
    """Spelling, quotes included as declared."""
    type: str = ""


@dataclass(frozen=True)
class ForeignKey:
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    name: str
    """Spelling, quotes included as declared (schema-qualified when it needs to be)."""
    columns: tuple[Column, ...] = ()
    kind: str = "table"
    """table | view | cte | subquery"""
    source: str = ""
    """Where the definition was read (a path, ``sqlite:<path>``, ``postgres:<dsn>``, a URI)."""
    foreign_keys: tuple[ForeignKey, ...] = ()
    ddl: str = ""
    """The definition as text (what the model is shown)."""
    line: int = 0
    complete: bool = True
    """False when the column list may be partial (``SELECT *`` from an unknown table)."""

    @property
    def key(self) -> str:
        return ident_key(self.name)

    def column(self, name: str) -> Column | None:
        key = ident_key(name)
        return next((c for c in self.columns if ident_key(c.name) == key), None)

    def with_columns(self, extra: Iterable[Column]) -> Table:
        known = {ident_key(c.name) for c in self.columns}
        added = tuple(c for c in extra if ident_key(c.name) not in known)
        return Table(self.name, self.columns + added, self.kind, self.source, self.foreign_keys,
                     self.ddl, self.line, self.complete)

    def render_ddl(self) -> str:
        """The DDL shown to the model: the original text when there is one."""
        if self.ddl:
            return self.ddl.strip().rstrip(";") + ";"
        lines = [f"    {c.name}{' ' + c.type if c.type else ''}" for c in self.columns]
        for fk in self.foreign_keys:
            target = f"{fk.ref_table} ({', '.join(fk.ref_columns)})" if fk.ref_columns else fk.ref_table
            lines.append(f"    FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {target}")
        keyword = "VIEW" if self.kind == "view" else "TABLE"
        return f"CREATE {keyword} {self.name} (\n" + ",\n".join(lines) + "\n);"


@dataclass
class Schema:
    tables: list[Table] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def merge(layers: Sequence[Iterable[Table]]) -> list[Table]:
    """Tables of several sources; the first definition of a name wins, later ones
    only add columns it lacks (an ALTER elsewhere, a database with more columns)."""
    merged: dict[str, Table] = {}
    for layer in layers:
        for table in layer:
            if table.key in merged:
                merged[table.key] = merged[table.key].with_columns(table.columns)
            else:
                merged[table.key] = table
    return list(merged.values())


def bindings(tables: Iterable[Table], uri: str | None = None, data_source: str | None = None) -> list[Binding]:
    """Γ bindings for ``tables``: one per table, one per column (``data_source``: the
    file's data source they come from, shown by hover)."""
    result: list[Binding] = []
    shown = {"data_source": data_source} if data_source else {}
    for table in tables:
        origin = Origin(uri or table.source or None, table.line, 0, table.kind)
        result.append(Binding(table.name, "Table", {
            "key": table.key, "kind": table.kind, "source": table.source,
            "columns": tuple(c.name for c in table.columns), **shown,
        }, origin))
        for col in table.columns:
            result.append(Binding(f"{table.name}.{col.name}", "Column", {
                "table": table.name, "column": col.name, "key": ident_key(col.name), "type": col.type, **shown,
            }, origin))
    return result
