"""Candidate FROM scopes for a query whose FROM is not written yet, and relevance.

The statement grammar is instantiated once per *scope* (a family member, see
``gdg_lsp.fragments``): a set of tables with the FROM clause that joins them
and the column references that are valid under it. When the user has written
the FROM, there is one scope (theirs). When not, the candidates are the most
relevant tables alone, and pairs and junction-table triples of them joined on
their foreign keys, with the aliases T1, T2, T3; the grammar then keeps the
select list consistent with the FROM the suggestion writes.

Every name in a scope comes from Γ: columns are read from the ``Column``
bindings of the scope's tables.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.sql.lexer import ident_key, is_plain, unquote
from gdg_lsp.languages.sql.schema import Table

MAX_SCOPE_TABLES = 8
"""Tables that may appear in a candidate scope (the most relevant ones)."""
MAX_SCOPES = 24
"""Candidate scopes per grammar (each is a copy of the statement rules)."""


@dataclass
class ScopeTable:
    table: Table
    exposed: str
    """What its columns are qualified with: the alias, or the table's spelling."""


@dataclass
class Scope:
    tables: list[ScopeTable]
    from_text: str | None
    """The FROM clause as one literal (None: the grammar writes it freely)."""
    top: bool = True
    target: str | None = None
    """The INSERT/UPDATE/DELETE target spelling, when the scope is one table."""
    extra_qualified: list[str] = field(default_factory=list)

    def _from_spellings(self, used: Mapping[str, Iterable[str]]) -> list[str]:
        if self.from_text is None or not one_line(self.from_text):
            return []
        if len(self.tables) == 1 and self.from_text == self.tables[0].table.name:
            return spellings(self.from_text, used)  # one table: any spelling of its name
        return [self.from_text]

    def columns_by_table(self, gamma: Gamma) -> list[tuple[ScopeTable, list[str]]]:
        result = []
        for st in self.tables:
            cols = [b.attrs["column"] for b in gamma.bindings("Column", table=st.table.name)]
            if not cols:
                cols = [c.name for c in st.table.columns]
            result.append((st, cols))
        return result

    def member(self, gamma: Gamma, used: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
        """The slot answers of this scope (one member of the grammar family).

        ``used``: spellings the statement already uses, by identity; they are
        offered next to the declared ones (``name`` for ```Name```).
        """
        used = used or {}
        # a name with a line break cannot be written in a one-line suggestion
        per_table = [(st, [c for c in cols if one_line(c)]) for st, cols in self.columns_by_table(gamma)]
        counts: dict[str, int] = {}
        for _, cols in per_table:
            for key in {ident_key(c) for c in cols}:
                counts[key] = counts.get(key, 0) + 1
        bare = sorted({v for _, cols in per_table for c in cols if counts[ident_key(c)] == 1 for v in spellings(c, used)})
        qualified = sorted({f"{q}.{v}" for st, cols in per_table for q in spellings(st.exposed, used)
                            for c in cols for v in spellings(c, used)} | set(self.extra_qualified))
        target_cols = [v for st, cols in per_table for c in cols for v in spellings(c, used)] if self.target else []
        return {
            "top": [""] if self.top else [],
            "columns": sorted(set(bare) | set(qualified)),
            "bare": sorted(set(target_cols)),
            "from": self._from_spellings(used),
            "target": [self.target] if self.target and one_line(self.target) else [],
            "any_table": [],
            "tables": [st.table.name for st in self.tables],
        }


def one_line(name: str) -> bool:
    return "\n" not in name and "\r" not in name


def spellings(name: str, used: Mapping[str, Iterable[str]] | None = None) -> list[str]:
    """Ways to write a reference to the identifier declared as ``name``.

    The declared spelling, quotes included, always. A quoted name that is a
    plain word also bare when that means the same identifier: for backticks
    and brackets (MySQL, SQLite, SQL Server compare names without case) and
    for lower-case names (which PostgreSQL's folding leaves alone). The bare
    word in lower case too, when case cannot matter: the name was declared
    unquoted (every engine folds or ignores its case) or in backticks or
    brackets (engines that ignore case) — small models write ``age`` for
    ``Age``, and refusing it pushed them to ``*``. And the spellings of the
    same identifier the statement already uses.
    """
    found = [name]
    inner = unquote(name)
    if inner != name and is_plain(inner) and (name[0] in "`[" or inner == inner.lower()):
        found.append(inner)
    if is_plain(inner) and (inner == name or name[0] in "`[") and inner.lower() not in found and is_plain(inner.lower()):
        found.append(inner.lower())
    if used:
        found.extend(u for u in used.get(ident_key(name), ()) if u not in found)
    return found


# -- relevance ----------------------------------------------------------------

_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(text: str) -> set[str]:
    """Lower-case word stems of identifiers and prose (``Song_Name`` -> song, name)."""
    found = set()
    for word in _SPLIT.findall(text):
        word = word.lower()
        if len(word) > 3 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if len(word) > 1:
            found.add(word)
    return found


def rank(tables: Sequence[Table], context: str, mentioned: Iterable[str] = ()) -> list[Table]:
    """Tables ordered by relevance to ``context`` (the question, the statement):
    tables the statement already names first, then by shared words (a table's
    own name counts three times its columns'), then in schema order."""
    ctx = words(context)
    first = {ident_key(m) for m in mentioned}

    def score(item: tuple[int, Table]) -> tuple[int, float, int]:
        index, table = item
        own = len(words(unquote(table.name)) & ctx)
        cols = sum(len(words(unquote(c.name)) & ctx) for c in table.columns)
        return (0 if table.key in first else 1, -(3 * own + min(cols, 6)), index)

    return [t for _, t in sorted(enumerate(tables), key=score)]


# -- candidate scopes -------------------------------------------------------------


def _aliases(taken: set[str], count: int) -> list[str]:
    names: list[str] = []
    n = 1
    while len(names) < count:
        candidate = f"T{n}"
        if candidate.casefold() not in taken:
            names.append(candidate)
        n += 1
    return names


def _on(left: str, right: str, left_cols: Sequence[str], right_cols: Sequence[str]) -> str:
    return " AND ".join(f"{left}.{a} = {right}.{b}" for a, b in zip(left_cols, right_cols))


@dataclass(frozen=True)
class _Edge:
    child: Table  # holds the foreign key
    parent: Table
    child_cols: tuple[str, ...]
    parent_cols: tuple[str, ...]


def _edges(tables: Sequence[Table], by_key: Mapping[str, Table]) -> list[_Edge]:
    chosen = {t.key for t in tables}
    edges = []
    for table in tables:
        for fk in table.foreign_keys:
            parent = by_key.get(ident_key(fk.ref_table))
            if parent is None or parent.key not in chosen or parent.key == table.key:
                continue
            parent_cols = fk.ref_columns or tuple(c for c in fk.columns)
            # spell the columns as the tables declare them
            child_cols = tuple((table.column(c) or _named(c)).name for c in fk.columns)
            parent_cols = tuple((parent.column(c) or _named(c)).name for c in parent_cols)
            if len(child_cols) == len(parent_cols) and all(table.column(c) for c in child_cols) and all(parent.column(c) for c in parent_cols):
                edges.append(_Edge(table, parent, child_cols, parent_cols))
    return edges


def _named(name: str):
    from gdg_lsp.languages.sql.schema import Column

    return Column(name)


def candidate_scopes(ranked: Sequence[Table], all_tables: Sequence[Table], *, max_tables: int = MAX_SCOPE_TABLES,
                     max_scopes: int = MAX_SCOPES) -> list[Scope]:
    """Single tables, foreign-key pairs and junction triples of the top ``max_tables``."""
    top = list(ranked[:max_tables])
    by_key = {t.key: t for t in all_tables}
    taken = {t.key for t in all_tables}
    t1, t2, t3 = _aliases(taken, 3)
    scopes: list[Scope] = [
        Scope([ScopeTable(t, t.name)], t.name, target=t.name if t.kind == "table" else None) for t in top
    ]
    edges = _edges(top, by_key)
    pairs: list[Scope] = []
    for edge in edges:
        for first, second, first_cols, second_cols in (
            (edge.child, edge.parent, edge.child_cols, edge.parent_cols),
            (edge.parent, edge.child, edge.parent_cols, edge.child_cols),
        ):
            text = f"{first.name} AS {t1} JOIN {second.name} AS {t2} ON {_on(t1, t2, first_cols, second_cols)}"
            pairs.append(Scope([ScopeTable(first, t1), ScopeTable(second, t2)], text))
    triples: list[Scope] = []
    for a in edges:
        for b in edges:
            # a junction table J holds foreign keys to two other tables: A <- J -> C
            if a is b or a.child.key != b.child.key or a.parent.key == b.parent.key:
                continue
            junction, left, right = a.child, a.parent, b.parent
            text = (f"{left.name} AS {t1} JOIN {junction.name} AS {t2} ON {_on(t1, t2, a.parent_cols, a.child_cols)}"
                    f" JOIN {right.name} AS {t3} ON {_on(t2, t3, b.child_cols, b.parent_cols)}")
            triples.append(Scope([ScopeTable(left, t1), ScopeTable(junction, t2), ScopeTable(right, t3)], text))
    return (scopes + pairs + triples)[:max_scopes]
