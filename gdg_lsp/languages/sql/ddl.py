"""Reading schema definitions: CREATE TABLE/VIEW, ALTER TABLE, DROP TABLE/VIEW.

Used for the workspace's ``.sql`` files, for the DDL SQLite keeps in
``sqlite_master``, and for tables created earlier in the document being
edited. Names keep their spelling and quotes. Anything else in the text is
skipped; a statement that cannot be read is skipped with a note, never raised.

``resolve`` replays the statements of several texts in the order given (a
data source's migration files in version order, see ``migrations.py``):
``ALTER TABLE`` adds, drops and renames columns or renames the table, ``DROP``
removes it, a second ``CREATE`` of a name only adds columns. An ALTER whose
table is not created yet is applied once it is (files read in path order need
not be in dependency order). Views and ``CREATE TABLE … AS SELECT`` take their
columns from their query over the final schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gdg_lsp.languages.sql.lexer import Token, ident_key, significant
from gdg_lsp.languages.sql.schema import Column, ForeignKey, Table
from gdg_lsp.languages.sql.scope import (
    QueryBlock,
    Relation,
    output_names,
    read_statement,
    split_statements,
)

_CONSTRAINT_STARTS = ("constraint", "primary", "foreign", "unique", "check", "exclude", "period")
_COLUMN_OPTION_STARTS = ("constraint", "primary", "not", "null", "default", "references", "unique", "check",
                         "collate", "generated", "auto_increment", "autoincrement", "identity", "as",
                         "comment", "on", "character", "charset")


@dataclass
class Alter:
    table: str
    columns: list[Column]
    """Columns added."""
    ddl: str
    line: int
    dropped: list[str] = field(default_factory=list)
    renamed_columns: list[tuple[str, str]] = field(default_factory=list)
    new_name: str | None = None
    """``RENAME TO``: the table's new spelling."""


@dataclass
class Drop:
    """``DROP TABLE`` / ``DROP VIEW``: the names it removes."""

    names: list[str]
    line: int


@dataclass
class PendingView:
    """A view (or CREATE TABLE … AS) whose columns come from its query."""

    name: str
    kind: str
    columns: list[Column]  # an explicit column list, if any
    block: QueryBlock | None
    ddl: str
    line: int
    source: str = ""


@dataclass
class DdlResult:
    tables: list[Table] = field(default_factory=list)
    alters: list[Alter] = field(default_factory=list)
    views: list[PendingView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)
    order: list[Table | Alter | PendingView | Drop] = field(default_factory=list)
    """Every definition above, in the order of the text (what ``resolve`` replays)."""
    dialect_hint: str = ""
    """The engine the text shows it was written for (``dialects.hint``), if any."""

    def __bool__(self) -> bool:
        return bool(self.order)

    def add(self, item: Table | Alter | PendingView | Drop) -> None:
        {Table: self.tables, Alter: self.alters, PendingView: self.views, Drop: self.drops}[type(item)].append(item)
        self.order.append(item)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset)


def _matching(toks: Sequence[Token], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].kind == "op" and toks[j].text == "(":
            depth += 1
        elif toks[j].kind == "op" and toks[j].text == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def _split_commas(toks: Sequence[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in toks:
        if tok.kind == "op" and tok.text == "(":
            depth += 1
        elif tok.kind == "op" and tok.text == ")":
            depth -= 1
        if depth == 0 and tok.kind == "op" and tok.text == ",":
            parts.append([])
        else:
            parts[-1].append(tok)
    return [p for p in parts if p]


def _name(toks: Sequence[Token], i: int) -> tuple[str | None, int]:
    """A possibly schema-qualified name at ``i``: (its last part's spelling, next index)."""
    last = None
    while i < len(toks) and (toks[i].kind in ("word", "quoted")):
        last = toks[i].text
        if i + 1 < len(toks) and toks[i + 1].text == ".":
            i += 2
            continue
        i += 1
        break
    return last, i


def _ident_list(toks: Sequence[Token]) -> tuple[str, ...]:
    return tuple(t.text for t in toks if t.kind in ("word", "quoted"))


def _column(toks: list[Token]) -> tuple[Column | None, ForeignKey | None]:
    if not toks or toks[0].kind not in ("word", "quoted"):
        return None, None
    name = toks[0].text
    type_parts: list[str] = []
    i = 1
    while i < len(toks) and not toks[i].is_word(*_COLUMN_OPTION_STARTS):
        if toks[i].text == "(":
            close = _matching(toks, i)
            type_parts[-1:] = [(type_parts[-1] if type_parts else "") + "(" + ",".join(t.text for t in toks[i + 1 : close] if t.text != ",") + ")"]
            i = close + 1
            continue
        type_parts.append(toks[i].text)
        i += 1
    fk = None
    for j in range(i, len(toks)):
        if toks[j].is_word("references"):
            ref, k = _name(toks, j + 1)
            ref_cols: tuple[str, ...] = ()
            if k < len(toks) and toks[k].text == "(":
                ref_cols = _ident_list(toks[k + 1 : _matching(toks, k)])
            if ref is not None:
                fk = ForeignKey((name,), ref, ref_cols)
            break
    return Column(name, " ".join(type_parts)), fk


def _is_constraint(part: list[Token]) -> bool:
    first = part[0]
    if first.is_word("constraint", "primary", "foreign", "unique", "check", "exclude", "period"):
        return True
    # MySQL index lines (KEY name (cols)); a column may be named key or index
    return first.is_word("key", "index", "fulltext", "spatial") and any(t.text == "(" for t in part[1:3])


def _constraint_fk(toks: list[Token]) -> ForeignKey | None:
    for i, tok in enumerate(toks):
        if tok.is_word("foreign") and i + 2 < len(toks) and toks[i + 1].is_word("key"):
            j = i + 2
            if toks[j].text != "(":
                j += 1  # MySQL: FOREIGN KEY name (cols)
            if j >= len(toks) or toks[j].text != "(":
                return None
            close = _matching(toks, j)
            cols = _ident_list(toks[j + 1 : close])
            k = close + 1
            if k < len(toks) and toks[k].is_word("references"):
                ref, m = _name(toks, k + 1)
                ref_cols: tuple[str, ...] = ()
                if m < len(toks) and toks[m].text == "(":
                    ref_cols = _ident_list(toks[m + 1 : _matching(toks, m)])
                if ref is not None and cols:
                    return ForeignKey(cols, ref, ref_cols)
    return None


def read_ddl(text: str, source: str = "", statements: Iterable[tuple[int, int, list[Token]]] | None = None) -> DdlResult:
    """Every schema definition in ``text``, in order."""
    result = DdlResult()
    for start, end, tokens in statements if statements is not None else split_statements(text):
        toks = significant(tokens)
        if not toks or not toks[0].is_word("create", "alter", "drop"):
            continue
        try:
            _read_one(text, start, end, toks, source, result)
        except (IndexError, ValueError) as err:  # a malformed statement is skipped, never fatal
            result.notes.append(f"{source or 'document'} line {_line_of(text, toks[0].start) + 1}: skipped ({err})")
    return result


def _read_one(text: str, start: int, end: int, toks: list[Token], source: str, result: DdlResult) -> None:
    ddl = text[toks[0].start : toks[-1].end]
    line = _line_of(text, toks[0].start)
    i = 1
    if toks[0].is_word("drop"):
        if not toks[i].is_word("table", "view"):
            return
        i += 1
        if toks[i].is_word("if") and toks[i + 1].is_word("exists"):
            i += 2
        names = [n for part in _split_commas(toks[i:]) if (n := _name(part, 0)[0]) is not None]
        if names:
            result.add(Drop(names, line))
        return
    if toks[0].is_word("alter"):
        if not toks[i].is_word("table"):
            return
        i += 1
        if toks[i].is_word("if") and toks[i + 1].is_word("exists"):
            i += 2
        if toks[i].is_word("only"):
            i += 1
        name, i = _name(toks, i)
        if name is None:
            return
        alter = Alter(name, [], ddl, line)
        for part in _split_commas(toks[i:]):
            _alter_action(part, alter)
        if alter.columns or alter.dropped or alter.renamed_columns or alter.new_name:
            result.add(alter)
        return
    while toks[i].is_word("or", "replace", "temp", "temporary", "unlogged", "global", "local", "materialized", "recursive", "virtual"):
        i += 1
    kind = toks[i].lower
    if kind not in ("table", "view"):
        return
    i += 1
    if toks[i].is_word("if") and toks[i + 1].is_word("not") and toks[i + 2].is_word("exists"):
        i += 3
    name, i = _name(toks, i)
    if name is None:
        return
    if kind == "table" and i < len(toks) and toks[i].is_word("using"):
        return  # a virtual table module (fts5, rtree): columns are module-specific
    explicit: list[Column] = []
    if i < len(toks) and toks[i].text == "(" and kind == "view":
        close = _matching(toks, i)
        explicit = [Column(n) for n in _ident_list(toks[i + 1 : close])]
        i = close + 1
    if kind == "table" and i < len(toks) and toks[i].text == "(":
        close = _matching(toks, i)
        columns: list[Column] = []
        fks: list[ForeignKey] = []
        for part in _split_commas(toks[i + 1 : close]):
            if _is_constraint(part):
                if (fk := _constraint_fk(part)) is not None:
                    fks.append(fk)
                continue
            column, fk = _column(part)
            if column is not None:
                columns.append(column)
            if fk is not None:
                fks.append(fk)
        result.add(Table(name, tuple(columns), "table", source, tuple(fks), ddl, line))
        return
    # CREATE VIEW … AS query / CREATE TABLE … AS query
    while i < len(toks) and not toks[i].is_word("as"):
        i += 1
    if i >= len(toks) - 1:
        return
    statement = read_statement(text, toks[i + 1].start, end)
    block = statement.blocks[0] if statement.blocks else None
    result.add(PendingView(name, "view" if kind == "view" else "table", explicit, block, ddl, line, source))


def _alter_action(part: list[Token], alter: Alter) -> None:
    """One comma-separated action of an ALTER TABLE, recorded on ``alter``."""
    k = 0
    if part[k].is_word("add"):
        k += 1
        if k < len(part) and part[k].is_word("column"):
            k += 1
        if k + 2 < len(part) and part[k].is_word("if") and part[k + 1].is_word("not") and part[k + 2].is_word("exists"):
            k += 3
        if k < len(part) and part[k].is_word(*_CONSTRAINT_STARTS):
            return
        column, _ = _column(part[k:])
        if column is not None:
            alter.columns.append(column)
    elif part[k].is_word("drop"):
        k += 1
        if k < len(part) and part[k].is_word("constraint", "primary", "foreign", "unique", "check", "index", "key"):
            return
        if k < len(part) and part[k].is_word("column"):
            k += 1
        if k + 1 < len(part) and part[k].is_word("if") and part[k + 1].is_word("exists"):
            k += 2
        if k < len(part) and part[k].kind in ("word", "quoted"):
            alter.dropped.append(part[k].text)
    elif part[k].is_word("rename"):
        k += 1
        if k < len(part) and part[k].is_word("to", "as"):
            new_name, _ = _name(part, k + 1)
            alter.new_name = new_name
            return
        if k < len(part) and part[k].is_word("column"):
            k += 1
        if k + 2 < len(part) and part[k + 1].is_word("to") and part[k + 2].kind in ("word", "quoted"):
            alter.renamed_columns.append((part[k].text, part[k + 2].text))


def _altered(target: Table, alter: Alter) -> Table:
    columns = list(target.with_columns(alter.columns).columns)
    dropped = {ident_key(c) for c in alter.dropped}
    columns = [c for c in columns if ident_key(c.name) not in dropped]
    for old, new in alter.renamed_columns:
        columns = [Column(new, c.type) if ident_key(c.name) == ident_key(old) else c for c in columns]
    return Table(alter.new_name or target.name, tuple(columns), target.kind, target.source, target.foreign_keys,
                 (target.ddl + "\n" + alter.ddl).strip(), target.line, target.complete)


def resolve(results: Sequence[DdlResult], base: Iterable[Table] = (), source_of: Sequence[str] | None = None) -> list[Table]:
    """Tables of several DDL texts replayed in order (see the module docstring), with
    views' columns taken from their queries over everything known (``base`` included)."""
    known = {t.key: t for t in base}
    state: dict[str, Table | PendingView] = {}
    waiting: list[Alter] = []

    def apply(alter: Alter) -> bool:
        key = ident_key(alter.table)
        target = state.get(key) or known.get(key)
        if not isinstance(target, Table):
            return False
        state.pop(key, None)
        updated = _altered(target, alter)
        state[updated.key] = updated
        return True

    for result in results:
        for item in result.order:
            if isinstance(item, Table):
                current = state.get(item.key)
                state[item.key] = current.with_columns(item.columns) if isinstance(current, Table) else current or item
                waiting = [a for a in waiting if not apply(a)] if waiting else waiting
            elif isinstance(item, PendingView):
                state.setdefault(ident_key(item.name), item)
            elif isinstance(item, Alter):
                if not apply(item):
                    waiting.append(item)
            else:
                for name in item.names:
                    state.pop(ident_key(name), None)
    for alter in waiting:
        apply(alter)  # its table never appeared: nothing to alter
    tables = {key: t for key, t in state.items() if isinstance(t, Table)}
    for key, view in list(state.items()):
        if not isinstance(view, PendingView):
            continue
        if view.columns:
            columns = tuple(view.columns)
        elif view.block is not None:
            def columns_of(rel: Relation) -> list[str]:
                table = tables.get(ident_key(rel.name or "")) or known.get(ident_key(rel.name or ""))
                return [c.name for c in table.columns] if table else []
            columns = tuple(Column(n) for n in output_names(view.block, columns_of))
        else:
            columns = ()
        state[key] = tables[key] = Table(view.name, columns, view.kind, view.source, (), view.ddl, view.line)
    return [t for t in state.values() if isinstance(t, Table)]
