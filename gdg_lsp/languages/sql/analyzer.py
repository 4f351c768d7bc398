"""SQL: the hole at the cursor, Γ there, diagnostics, and the schema the model sees.

Γ has three layers: the schema of the file's data source (``sources.py``
decides which: a ``gdg.sql.sources`` entry, a ``-- gdg:`` comment, the nearest
folder with schema files, or the whole workspace; ``catalog.py`` reads DDL
files, SQLite files and PostgreSQL databases) as the global layer; the tables
and views created earlier in the document; and the statement's own names
(CTEs, FROM subqueries, table aliases, select-list aliases). The source also
sets the dialect the grammar follows (``dialects.py``) and what the model is
shown (``prompt.py``).

The hole is the rest of the query block at the cursor (a statement, or a
subquery up to its ``)``), from its first keyword, so the grammar sees the
whole block typed so far. Which names the grammar offers depends on the FROM
clause: the one written, or, when none is written yet, candidate scopes built
from the most relevant tables (``sql_members``), one grammar copy each.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import tree_sitter
import tree_sitter_sql

from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.gamma import Binding, Frame, Gamma
from gdg_lsp.languages.base import (
    Analyzer,
    Finding,
    Hole,
    NoHole,
    StatementEffects,
    ThreadParser,
    WorkspaceContext,
)
from gdg_lsp.languages.sql import dialects
from gdg_lsp.languages.sql import names as sql_names
from gdg_lsp.languages.sql import prompt as sql_prompt
from gdg_lsp.languages.sql import scratch as sql_scratch
from gdg_lsp.languages.sql import sources as sql_sources
from gdg_lsp.languages.sql import sqlite as sql_sqlite
from gdg_lsp.languages.sql.catalog import catalog_for
from gdg_lsp.languages.sql.ddl import read_ddl, resolve
from gdg_lsp.languages.sql.lexer import (
    RESERVED,
    Token,
    ident_key,
    significant,
    tokenize,
)
from gdg_lsp.languages.sql.lexer import unquote as sql_unquote
from gdg_lsp.languages.sql.members import (
    Scope,
    ScopeTable,
    candidate_scopes,
    one_line,
    rank,
    spellings,
)
from gdg_lsp.languages.sql.schema import Column, Table, bindings
from gdg_lsp.languages.sql.scope import (
    QueryBlock,
    Relation,
    Statement,
    output_names,
    read_statement,
    split_statements,
)
from gdg_lsp.languages.suggest import closest

LANGUAGE = tree_sitter.Language(tree_sitter_sql.language())

QUERY_KEYWORDS = ("select", "with", "insert", "update", "delete", "replace", "values")
PROMPT_SHARE = 0.5
"""Share of the prompt budget (``gdg.contextTokens``) the schema may take."""
CHARS_PER_TOKEN = 3
_NEWLINE_RUN = re.compile(r"[ \t]*(?:\r\n|\r|\n)[\s]*")


parse = ThreadParser(LANGUAGE)
"""Parse source bytes (incrementally from ``old_tree`` when given)."""


def flatten(text: str) -> str:
    """Typed SQL as the grammar reads it: comments and line breaks become blanks."""
    out = []
    for tok in tokenize(text):
        if tok.kind == "comment":
            out.append(" ")
        elif tok.kind == "space" and ("\n" in tok.text or "\r" in tok.text):
            out.append(_NEWLINE_RUN.sub(" ", tok.text))
        else:
            out.append(tok.text)
    return "".join(out)


@dataclass
class _Document:
    text: str
    tokens: list[Token]
    statements: list[tuple[int, int, list[Token]]]


@dataclass
class _Env:
    """What is known before one statement: tables by identity, and Γ's two outer layers."""

    tables: dict[str, Table]
    workspace: list[Table]
    document: list[Table]
    gamma: Gamma
    resolution: sql_sources.Resolution


class _Resolver:
    """Tables behind the relations and CTEs of a statement."""

    def __init__(self, tables: Mapping[str, Table]) -> None:
        self.tables = tables
        self._depth = 0
        self._ctes: dict[int, dict[str, Table]] = {}

    def cte_tables(self, block: QueryBlock) -> dict[str, Table]:
        if id(block) in self._ctes:
            return self._ctes[id(block)]
        found: dict[str, Table] = {}
        self._ctes[id(block)] = found  # a CTE that reads itself sees what is known so far
        for cte in reversed(block.visible_ctes()):
            if self._depth > 8:
                break
            if cte.columns:
                cols = tuple(Column(t.text) for t in cte.columns)
            elif cte.query is not None:
                self._depth += 1
                try:
                    cols = tuple(Column(n) for n in output_names(cte.query, lambda r, q=cte.query: self.columns(r, q)))
                finally:
                    self._depth -= 1
            else:
                cols = ()
            found[ident_key(cte.name.text)] = Table(cte.name.text, cols, "cte", "statement")
        return found

    def table(self, rel: Relation, block: QueryBlock) -> Table | None:
        if rel.subquery is not None:
            if self._depth > 8:
                return None
            self._depth += 1
            try:
                sub = rel.subquery
                cols = tuple(Column(n) for n in output_names(sub, lambda r: self.columns(r, sub)))
            finally:
                self._depth -= 1
            name = rel.alias.text if rel.alias is not None else "(subquery)"
            return Table(name, cols, "subquery", "statement")
        if rel.name is None:
            return None
        key = ident_key(rel.name)
        if len(rel.name_tokens) == 1:
            ctes = self.cte_tables(block)
            if key in ctes:
                return ctes[key]
        if (table := self.tables.get(key)) is not None:
            return table
        # a schema-qualified spelling in Γ (PostgreSQL): "sales.orders"
        written = ident_key(".".join(sql_unquote(t.text) for t in rel.name_tokens))
        return next((t for t in self.tables.values()
                     if ".".join(ident_key(p) for p in _split_qualified(t.name)) == written), None)

    def columns(self, rel: Relation, block: QueryBlock) -> list[str]:
        table = self.table(rel, block)
        return [c.name for c in table.columns] if table is not None else []


def _split_qualified(name: str) -> list[str]:
    toks = [t for t in tokenize(name) if t.kind in ("word", "quoted")]
    return [t.text for t in toks] or [name]


class SqlAnalyzer(Analyzer):
    name = "sql"
    grammar_dir = "sql"
    fragment = "statement"
    keywords = RESERVED | frozenset(w.upper() for w in RESERVED)

    def __init__(self) -> None:
        self._documents: BoundedCache[str, _Document] = BoundedCache("sql.documents", 16)
        self._workspace_frames: BoundedCache[tuple, tuple[sql_sources.Resolution, Frame]] = BoundedCache(
            "sql.workspace-frames", 8)
        self._resolutions: BoundedCache[tuple, sql_sources.Resolution] = BoundedCache("sql.data-sources", 64)

    def parser(self) -> Callable[[bytes, Any], Any]:
        return parse

    # -- the document and its environment ----------------------------------------

    def _document(self, text: str) -> _Document:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()

        def make() -> _Document:
            tokens = tokenize(text)
            return _Document(text, tokens, split_statements(text, tokens))

        return self._documents.get_or_make(key, make)

    def resolution(self, snapshot: Snapshot, workspace: WorkspaceContext) -> sql_sources.Resolution:
        """The file's data source and its tables (``sources.py``), kept while the settings, the
        file's ``-- gdg:`` header and what it was read from hold (``Resolution.holds``: the
        stamps of the folders and files it looked at, checked at every request)."""
        sql = getattr(workspace.settings, "sql", None)
        if not workspace.roots and not getattr(sql, "connections", None) and not getattr(sql, "sources", None):
            return sql_sources.Resolution(sql_sources.DataSource("workspace", "no workspace folder"), [], dialects.ANSI)
        catalog = catalog_for(workspace.roots, workspace.settings)
        path = uri_to_path(snapshot.uri)
        header = tuple((line, tuple(sorted(pairs.items())))
                       for line, pairs in sql_sources.header_directives(snapshot.text))
        key = (id(catalog), str(path), header, repr(sql))
        hit = self._resolutions.get(key)
        if hit is not None and hit.holds(catalog):
            return hit
        return self._resolutions.put(key, sql_sources.resolve(catalog, workspace.settings, path, snapshot.text))

    def workspace_tables(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Table]:
        """The tables of the file's data source (Γ's global layer)."""
        return self.resolution(snapshot, workspace).tables

    def _env(self, snapshot: Snapshot, workspace: WorkspaceContext, before: int) -> _Env:
        """Γ's outer layers for a statement starting at ``before``: the data source,
        then the tables the document creates above it."""
        doc = self._document(snapshot.text)
        resolution = self.resolution(snapshot, workspace)
        ws_tables = resolution.tables
        earlier = [s for s in doc.statements if s[1] <= before]
        ddl = read_ddl(snapshot.text, snapshot.uri, earlier)
        document = sql_names.admitted(resolve([ddl], ws_tables)) if ddl else []
        tables = {t.key: t for t in ws_tables}
        for table in document:
            tables[table.key] = table
        key = (id(resolution), str(uri_to_path(snapshot.uri)))
        cached = self._workspace_frames.get(key)
        if cached is None or cached[0] is not resolution:  # the resolution is kept: its id is not reused
            frame = Frame("workspace", bindings(ws_tables, data_source=resolution.describe()))
            cached = self._workspace_frames.put(key, (resolution, frame))
        gamma = Gamma(cached[1], [Frame("document", bindings(document, snapshot.uri))])
        return _Env(tables, ws_tables, document, gamma, resolution)

    @staticmethod
    def _statement_at(doc: _Document, offset: int) -> tuple[int, int, list[Token]]:
        for statement in doc.statements:
            if statement[0] <= offset <= statement[1]:
                return statement
        return doc.statements[-1]

    def _statement_gamma(self, env: _Env, statement: Statement, block: QueryBlock | None, resolver: _Resolver) -> Gamma:
        """Γ inside ``block``: CTEs, FROM subqueries, aliases and select-list aliases."""
        gamma = Gamma(env.gamma.global_layer, env.gamma.frames)
        if block is None:
            return gamma
        derived: list[Table] = list(resolver.cte_tables(block).values())
        names: list[Binding] = []
        chain: list[QueryBlock] = []
        current: QueryBlock | None = block
        while current is not None:
            chain.append(current)
            current = current.parent
        for b in chain:
            for rel in b.relations:
                table = resolver.table(rel, b)
                if rel.subquery is not None and table is not None and rel.alias is not None:
                    derived.append(table)
                elif rel.alias is not None and table is not None:
                    names.append(Binding(rel.alias.text, "Alias", {"table": table.name, "key": ident_key(rel.alias.text)}))
        for alias in block.output_aliases():
            names.append(Binding(alias.text, "OutputAlias", {"key": ident_key(alias.text)}))
        frame = gamma.push("statement", bindings(derived))
        for binding in names:
            frame.declare(binding)
        return gamma

    # -- Γ ---------------------------------------------------------------------------

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        hole = self.hole_at(snapshot, offset, workspace)
        if isinstance(hole, Hole):
            return hole.gamma
        doc = self._document(snapshot.text)
        start, end, tokens = self._statement_at(doc, offset)
        env = self._env(snapshot, workspace, start)
        statement = read_statement(snapshot.text, start, end, tokens)
        return self._statement_gamma(env, statement, statement.block_at(offset), _Resolver(env.tables))

    # -- the hole --------------------------------------------------------------------

    def _in_comment_or_string(self, snapshot: Snapshot, doc: _Document, offset: int) -> str | None:
        for tok in doc.tokens:
            if tok.start >= offset:
                break
            inside = offset < tok.end or (offset == tok.end and not tok.closed)
            if tok.kind == "comment" and (inside or (offset == tok.end and tok.text.startswith("--"))):
                return "inside a comment"
            if tok.kind == "string" and inside:
                return "inside a string"
        tree = snapshot.tree
        if tree is not None:
            b = len(snapshot.text[:offset].encode("utf-8", "surrogatepass"))
            node = tree.root_node.descendant_for_byte_range(b, b)
            while node is not None:
                if node.type in ("comment", "marginalia") and node.start_byte < b:
                    return "inside a comment"
                node = node.parent
        return None

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        doc = self._document(text)
        if (why := self._in_comment_or_string(snapshot, doc, offset)) is not None:
            return NoHole(why)
        s_start, s_end, s_tokens = self._statement_at(doc, offset)
        sig = significant(s_tokens)
        before = [t for t in sig if t.start < offset]
        after = [t for t in sig if t.start >= offset]
        if any(t.start < offset < t.end for t in sig if t.kind in ("word", "number", "op")):
            return NoHole("the cursor is inside a word")
        env = self._env(snapshot, workspace, s_start)
        resolver = _Resolver(env.tables)
        line_start = text.rfind("\n", 0, offset) + 1
        line = text[line_start:offset]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if not before:
            if after:
                return NoHole("the cursor is before a statement (text follows it)")
            statement = read_statement(text, s_start, s_end, s_tokens)
            gamma = self._statement_gamma(env, statement, None, resolver)
            context = self._context(env, gamma, statement, None, None, offset, text, s_start, "statement",
                                    self._semicolon_follows(text, offset, s_end))
            return self._hole(offset, offset, offset, "", indent, "Stmt", gamma, context, ())
        keyword = sig[0].lower if sig[0].kind == "word" else ""
        if keyword not in QUERY_KEYWORDS:
            shown = sig[0].text.upper() if sig[0].kind == "word" else sig[0].text
            return NoHole(f"inside a {shown} statement (only queries and INSERT/UPDATE/DELETE are completed)")
        statement = read_statement(text, s_start, s_end, s_tokens)
        block = statement.block_at(offset) or self._last_block_before(statement, offset)
        if block is None:
            return NoHole("the cursor is not inside a query")
        if block.with_start is not None and not block.clauses and block.kind == "select" and before and before[-1].text == ",":
            return NoHole("declaring a CTE (its name comes next)")
        select_clause, from_clause = block.has_clause("select"), block.has_clause("from")
        if select_clause is not None and from_clause is not None and from_clause.start < offset:
            previous = [t for t in sig if t.end <= from_clause.start]
            if previous and previous[-1].text == ",":
                # tree-sitter-sql reads `SELECT a, FROM t` as a column aliased t; it is an empty item
                return NoHole("the select list ends with a comma before FROM (an item is missing)")
        if before[-1].is_word("as") and block.clause_at(offset) is not None and block.clause_at(offset).name == "select":
            return NoHole("a new name (an alias) is declared here")
        limit = block.close_paren if block.close_paren is not None else s_end
        following = significant(tokenize(text, offset, limit))
        replace_end = offset
        mode = "subquery" if block.open_paren is not None else "statement"
        items_end: tuple[str, bool] | None = None
        suffix = ""
        if following:
            from_clause = block.has_clause("from")
            current = block.clause_at(offset)
            if (block.kind == "select" and from_clause is not None and current is not None and current.name == "select"
                    and following[0].start == from_clause.start):
                gap = text[offset:from_clause.start]
                if "\n" in gap or "\r" in gap:
                    items_end = ("", True)
                else:
                    items_end = (following[0].text, False)
                    replace_end = following[0].end
                mode = "items"
            else:
                line_end = text.find("\n", offset)
                rest = text[offset:] if line_end == -1 else text[offset:line_end]
                if not rest.strip():
                    return NoHole("text follows the cursor in this statement (on the lines below)")
                if env.resolution.dialect.name == "postgres":
                    return NoHole("text follows the cursor: a middle is checked with SQLite, "
                                  "which does not read PostgreSQL")
                suffix = rest.rstrip("\r")  # a mid-line middle: the rest of the statement stays
        elif block.close_paren is not None:
            replace_end = block.close_paren + 1  # the grammar regenerates the ")"
        region_start = block.start if block.start <= offset else offset
        if block.kind == "select" and not block.clauses:
            region_start = offset  # only a WITH list so far: the query starts here
        typed = self.replay_text(text[region_start:offset])
        gamma = self._statement_gamma(env, statement, block, resolver)
        context = self._context(env, gamma, statement, block, resolver, offset, text, s_start, mode,
                                mode == "statement" and self._semicolon_follows(text, offset, s_end), items_end)
        if mode == "statement" and self._semicolon_follows(text, offset, s_end):
            replace_end = s_end + 1
        if suffix:  # what the middle must fit between (SqlAnalyzer.middle_fits)
            context["statement_around"] = (text[s_start:offset], text[offset:s_end])
        sort = {"items": "SelectList", "subquery": "Query"}.get(mode, "Query" if block.kind == "select" else "Stmt")
        # where the region sits, from the statement's own reading: the same while its text is typed
        # (the syntax node at the cursor is the word being typed, and the path is part of the key a
        # shown suggestion is typed through by)
        path = ("statement", keyword) + (("subquery",) if block.open_paren is not None else ())
        return self._hole(region_start, offset, replace_end, typed, indent, sort, gamma, context, path, suffix)

    @staticmethod
    def _semicolon_follows(text: str, offset: int, s_end: int) -> bool:
        return s_end < len(text) and text[s_end] == ";" and not text[offset:s_end].strip()

    @staticmethod
    def _last_block_before(statement: Statement, offset: int) -> QueryBlock | None:
        found = None
        for block in statement.blocks:
            if block.start <= offset:
                found = block
        return found

    def statement_check(self, snapshot: Snapshot, hole: Hole, end: int, inserted: str,
                        workspace: WorkspaceContext) -> bool | None:
        """Whether the statement around the hole, with ``[hole.cursor, end)`` replaced by
        ``inserted``, prepares on the file's SQLite data source (``sqlite.prepares``: read-only,
        never executed). None when the source is not one SQLite file alone (DDL files or a
        server over it, or tables the document itself creates above the statement: the
        database would not have them) or the statement cannot be judged."""
        resolution = self.resolution(snapshot, workspace)
        source = resolution.source
        if len(source.sqlite) != 1 or source.ddl or source.postgres:
            return None
        edited = snapshot.text[: hole.cursor] + inserted + snapshot.text[end:]
        doc = self._document(edited)
        s_start, s_end, _ = self._statement_at(doc, hole.cursor)
        earlier = [s for s in doc.statements if s[1] <= s_start]
        if earlier and read_ddl(edited, snapshot.uri, earlier):
            return None
        boundary = catalog_for(workspace.roots, workspace.settings).boundary
        return sql_sqlite.prepares(source.sqlite[0], boundary, edited[s_start:s_end])

    def _hole(self, region_start: int, offset: int, replace_end: int, typed: str, indent: str,
              sort: str, gamma: Gamma, context: dict[str, Any], path: tuple[str, ...], suffix: str = "") -> Hole:
        return Hole(
            language=self.name, fragment=self.fragment, sort=sort, region_start=region_start, cursor=offset,
            replace_end=replace_end, typed=typed, indent=indent, gamma=gamma, context=MappingProxyType(context),
            region_path=path, suffix=suffix,
        )

    def middle_fits(self, hole: Hole, middle: str) -> bool:
        """The statement with ``middle`` at the cursor and the rest of it after prepares over Γ's
        tables alone (``scratch.prepares``: its syntax, and every table and column it names; the
        file's own database is not opened for it). The grammar saw the middle only as a
        prefix of a query: this is where the text after the cursor is read with it."""
        around = hole.context.get("statement_around")
        if not hole.suffix or not around:
            return False
        before, after = around
        return sql_scratch.prepares(hole.gamma, before + middle + after)

    # -- the hole's context: scopes for the grammar, tables for the prompt ------------

    def _context(self, env: _Env, gamma: Gamma, statement: Statement, block: QueryBlock | None,
                 resolver: _Resolver | None, offset: int, text: str, s_start: int, mode: str,
                 semicolon_follows: bool, items_end: tuple[str, bool] | None = None) -> dict[str, Any]:
        resolver = resolver or _Resolver(env.tables)
        visible = dict(env.tables)
        if block is not None:
            visible.update(resolver.cte_tables(block))
        all_tables = list(visible.values())
        mentioned: list[str] = [cte.name.text for cte in (block.visible_ctes() if block else [])]
        for b in statement.walk():
            for rel in b.relations:
                if rel.name is not None:
                    mentioned.append(rel.name)
        question = text[max(0, s_start - 800) : offset]
        ranked = rank(all_tables, question, mentioned)
        candidates = candidate_scopes(ranked, all_tables)
        written = self._written_scope(block, resolver, offset, text, mode == "items") if block is not None else None
        # subqueries already written before the cursor keep their own FROM (they only serve subqueries)
        inner = [s for b in statement.walk() if b is not block and b.start < offset
                 and (s := self._written_scope(b, resolver, offset, text)) is not None]
        for scope in inner:
            scope.top = False
        if written is not None:
            for scope in candidates:
                scope.top = False
            scopes = [written, *inner, *candidates]
        else:
            scopes = [*inner, *candidates]
        used = self._used_spellings(statement)
        members = [scope.member(gamma, used) for scope in scopes]
        members.sort(key=lambda m: (m["top"] != [""], m["from"], m["target"], m["tables"]))
        fresh = [dict(m, top=[""]) for m in members if m.get("written") is None]
        wide = self._wide_member(gamma, statement, block, resolver, all_tables, used)
        in_play: list[str] = []
        if written is not None:
            in_play.extend(st.table.name for st in written.tables)
        in_play.extend(t.name for t in ranked)
        prompt_ddl = []
        seen = set()
        for name in in_play:
            table = visible.get(ident_key(name))
            if table is not None and table.key not in seen and table.kind != "subquery":
                seen.add(table.key)
                prompt_ddl.append(table.render_ddl())
        resolution = env.resolution
        first = next((t for t in statement.tokens if t.start >= s_start), None)
        question = sql_prompt.question_above(text, first.start if first is not None else s_start)
        dialect_slots = dialects.context(resolution.dialect)
        context: dict[str, Any] = {
            **dialect_slots,
            "data_source": resolution.describe(),
            "prompt_tables": [t.name for t in (visible.get(ident_key(n)) for n in in_play) if t is not None],
            "prompt_question": question,
            "mode_statement": [""] if mode == "statement" else [],
            "mode_subquery": [""] if mode == "subquery" else [],
            "mode_items": [""] if mode == "items" else [],
            "end_newline": [] if semicolon_follows else [""],
            "from_keyword": [items_end[0]] if items_end and items_end[0] else [],
            "items_newline": [""] if items_end and items_end[1] else [],
            "out_aliases": sorted({a.text for a in (block.output_aliases() if block else [])}),
            "item_aliases": sorted({a.text for b in statement.walk() for a in b.output_aliases() if a.kind != "string"}),
            "scopes": members,
            "wide_scope": [wide],
            "open_scope": [{"top": [""]}],
            "prompt_ddl": prompt_ddl,
            "next_statement": {
                **dialect_slots,
                "mode_statement": [""], "mode_subquery": [], "mode_items": [], "end_newline": [""],
                "from_keyword": [], "items_newline": [], "out_aliases": [], "item_aliases": [],
                "scopes": fresh or members,
                "wide_scope": [wide], "open_scope": [{"top": [""]}], "prompt_ddl": prompt_ddl,
            },
        }
        return context

    def _written_scope(self, block: QueryBlock, resolver: _Resolver, offset: int, text: str,
                       from_after_cursor: bool = False) -> Scope | None:
        """The scope the user has already written: a FROM (or DML target) before
        the cursor, or, for a select list, the FROM that follows it."""
        if block.kind in ("insert", "update", "delete") and block.target is not None and block.target.end < offset:
            rel = block.target
            table = resolver.table(rel, block)
            if table is None:
                return None
            exposed = rel.exposed or table.name
            scope = Scope([ScopeTable(table, exposed)], None, top=True,
                          target=flatten(text[rel.start : rel.end]))
            return _Written(scope)
        from_clause = block.has_clause("from")
        if block.kind != "select" or from_clause is None or not block.relations:
            return None
        if from_clause.end >= offset and not from_after_cursor:
            return None
        tables = []
        for rel in block.relations:
            table = resolver.table(rel, block)
            if table is None:
                continue
            tables.append(ScopeTable(table, rel.exposed or table.name))
        start = min(rel.start for rel in block.relations)
        scope = Scope(tables, flatten(text[start : from_clause.end]), top=True)
        return _Written(scope)

    @staticmethod
    def _used_spellings(statement: Statement) -> dict[str, list[str]]:
        used: dict[str, list[str]] = {}
        for tok in statement.tokens:
            if tok.is_identifier and tok.closed:
                bucket = used.setdefault(ident_key(tok.text), [])
                if tok.text not in bucket:
                    bucket.append(tok.text)
        return used

    @staticmethod
    def _wide_member(gamma: Gamma, statement: Statement, block: QueryBlock | None, resolver: _Resolver,
                     tables: Sequence[Table], used: Mapping[str, list[str]]) -> dict[str, Any]:
        columns = gamma.bindings("Column")
        bare = sorted({v for b in columns for v in spellings(b.attrs["column"], used)})
        qualified = {f"{q}.{v}" for b in columns for q in spellings(b.attrs["table"], used)
                     for v in spellings(b.attrs["column"], used)}
        for b in statement.walk():
            for rel in b.relations:
                table = resolver.table(rel, b)
                if table is not None and rel.exposed:
                    qualified.update(f"{rel.exposed}.{v}" for c in table.columns for v in spellings(c.name, used))
        names = sorted({v for t in tables if t.kind != "subquery" for v in spellings(t.name, used) if one_line(v)})
        bare = [b for b in bare if one_line(b)]
        qualified = {q for q in qualified if one_line(q)}
        return {"top": [""], "columns": sorted(set(bare) | qualified), "bare": bare, "from": [],
                "target": names, "any_table": names, "tables": names}

    # -- the model's view ------------------------------------------------------------------

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        tokens = getattr(workspace.settings, "context_tokens", 1024) or 1024
        budget = int(tokens * CHARS_PER_TOKEN * PROMPT_SHARE)
        sql = getattr(workspace.settings, "sql", None)
        if getattr(sql, "prompt", "schema") == "plain":
            return sql_prompt.plain_prompt(list(hole.context.get("prompt_ddl", ())), budget)
        resolution = self.resolution(snapshot, workspace)
        by_key = {t.key: t for t in resolution.tables}
        ordered: list[Table] = []
        for name in [*hole.context.get("prompt_tables", ()), *(t.name for t in resolution.tables)]:
            table = by_key.pop(ident_key(name), None)
            if table is not None:
                ordered.append(table)
        rows: dict[str, list[tuple]] = {}
        # rows are the user's data: shown to a model running here, never sent to a remote engine
        local = getattr(workspace.settings, "backend", "local") == "local"
        for database in resolution.source.sqlite[:1] if local else ():
            # a table the database lacks (defined by a DDL file only) is skipped by sample_rows
            boundary = catalog_for(workspace.roots, workspace.settings).boundary
            rows = sql_sqlite.sample_rows(database, boundary, [t.name for t in ordered[:12] if t.kind == "table"])
        return sql_prompt.schema_prompt(ordered, budget, resolution.dialect,
                                        str(hole.context.get("prompt_question", "")), rows)

    def replay_text(self, raw: str) -> str:
        return flatten(raw)

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        """Cut a suggestion stopped early (budget, timeout) back to a point where the
        statement could end: no half name or quote, no trailing operator, comma,
        dangling keyword or qualifier, no unclosed parenthesis."""
        known = {ident_key(b.name) for b in gamma.bindings()} | {
            ident_key(b.attrs["column"]) for b in gamma.bindings("Column")}
        for _ in range(200):
            toks = significant(tokenize(text))
            if not toks:
                return ""
            last = toks[-1]
            cut = None
            if last.kind in ("quoted", "string") and not last.closed:
                cut = last.start
            elif last.kind == "word" and len(toks) > 1 and toks[-2].text == "::":
                break  # a cast's type name (x::int)
            elif last.kind == "word" and last.lower not in RESERVED and ident_key(last.text) not in known:
                cut = last.start
            elif last.kind == "word" and last.lower in dialects.ALL_FUNCTIONS and ident_key(last.text) not in known:
                cut = last.start  # a function name whose "(" was never written
            elif last.text == ".":
                cut = toks[-2].start if len(toks) > 1 and toks[-2].is_identifier else last.start
            elif last.is_word(*_DANGLING):
                cut = last.start
            elif last.kind == "op" and last.text not in (")", "*"):
                cut = last.start
            elif last.text == "*" and len(toks) > 1 and not (toks[-2].is_word("select", "distinct", "all") or toks[-2].text in ("(", ",", ".")):
                cut = last.start
            elif (opened := _unclosed_paren(toks)) is not None:
                cut = opened
                index = next(i for i, t in enumerate(toks) if t.start == opened)
                if index > 0 and toks[index - 1].kind == "word":
                    cut = toks[index - 1].start  # a function call: its name goes with it
            elif len(toks) > 1 and toks[-2].text == "." and last.kind in ("word", "quoted"):
                break  # a complete qualified name
            if cut is None:
                break
            text = text[:cut].rstrip()
        return text

    def unbound_references(self, statement: str, gamma: Gamma) -> list[str]:
        """Columns a finished (or cut) statement names in a SELECT that has no FROM.

        The grammar only ends a query after its FROM, so this finds statements
        cut by the budget inside their select list: their columns belong to no
        table yet, and the executor drops them rather than suggest them.
        """
        parsed = read_statement(statement, 0, len(statement))
        unbound = []
        for block in parsed.walk():
            if block.kind != "select" or block.has_clause("from") is not None or block.relations:
                continue
            outer = block.parent
            while outer is not None and not outer.relations:
                outer = outer.parent
            if outer is not None:
                continue  # a correlated subquery reads the outer FROM
            unbound.extend(".".join(t.text for t in ref.parts) for ref in block.refs)
        return unbound

    def statement_effects(self, statement: str, hole: Hole, gamma: Gamma) -> StatementEffects:
        # the next line starts a new statement: every candidate scope is open to it
        nxt = hole.context.get("next_statement")
        return StatementEffects(context=dict(nxt) if isinstance(nxt, Mapping) else None)

    # -- hover -------------------------------------------------------------------------------

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> tuple[Binding, int, int] | None:
        doc = self._document(snapshot.text)
        tok = next((t for t in doc.tokens if t.start <= offset <= t.end and t.is_identifier), None)
        if tok is None:
            return None
        s_start, s_end, s_tokens = self._statement_at(doc, offset)
        env = self._env(snapshot, workspace, s_start)
        statement = read_statement(snapshot.text, s_start, s_end, s_tokens)
        block = statement.block_at(offset)
        gamma = self._statement_gamma(env, statement, block, _Resolver(env.tables))
        key = ident_key(tok.text)
        sig = significant(s_tokens)
        index = next((i for i, t in enumerate(sig) if t.start == tok.start), None)
        if index is not None and index >= 2 and sig[index - 1].text == ".":
            qualifier = ident_key(sig[index - 2].text)
            table_name = None
            for b in gamma.bindings("Alias"):
                if b.attrs.get("key") == qualifier:
                    table_name = b.attrs["table"]
            for b in gamma.bindings("Table"):
                if b.attrs.get("key") == qualifier:
                    table_name = b.name
            for b in gamma.bindings("Column"):
                if b.attrs["table"] == table_name and b.attrs["key"] == key:
                    return b, tok.start, tok.end
            return None
        for sort in ("Table", "Alias", "OutputAlias"):
            for b in gamma.bindings(sort):
                if b.attrs.get("key") == key:
                    return b, tok.start, tok.end
        in_scope = set()
        if block is not None:
            resolver = _Resolver(env.tables)
            in_scope = {t.name for rel in block.relations if (t := resolver.table(rel, block)) is not None}
        matches = [b for b in gamma.bindings("Column") if b.attrs["key"] == key]
        preferred = [b for b in matches if b.attrs["table"] in in_scope] or matches
        return (preferred[0], tok.start, tok.end) if preferred else None

    # -- diagnostics ---------------------------------------------------------------------------

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        doc = self._document(snapshot.text)
        findings: list[Finding] = self._source_findings(snapshot, workspace)
        for s_start, s_end, s_tokens in doc.statements:
            sig = significant(s_tokens)
            if not sig or sig[0].lower not in QUERY_KEYWORDS:
                continue
            env = self._env(snapshot, workspace, s_start)
            if not env.tables:
                continue  # no schema known: nothing to check against
            statement = read_statement(snapshot.text, s_start, s_end, s_tokens)
            findings.extend(_check_statement(statement, _Resolver(env.tables)))
        return findings

    def _source_findings(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        """What the data source's rules found wrong or worth knowing, on the line concerned."""
        findings = []
        text = snapshot.text
        for note in self.resolution(snapshot, workspace).notes:
            start = 0
            for _ in range(note.line):
                nxt = text.find("\n", start)
                if nxt < 0:
                    break
                start = nxt + 1
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            findings.append(Finding(start, max(start, end), note.message, "sql.data-source", note.severity,
                                    {"dataSource": True}))
        return findings


class _Written(Scope):
    """The scope the user wrote (marks the member so a following statement drops it)."""

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope.tables, scope.from_text, scope.top, scope.target, scope.extra_qualified)

    def member(self, gamma: Gamma, used: Mapping[str, Sequence[str]] | None = None) -> dict[str, Any]:
        return {**super().member(gamma, used), "written": [""]}


_DANGLING = ("and", "or", "not", "where", "on", "join", "inner", "left", "right", "full", "outer", "cross", "natural",
             "by", "group", "order", "having", "as", "in", "like", "glob", "between", "is", "from", "select",
             "distinct", "all", "limit", "offset", "set", "values", "into", "case", "when", "then", "else",
             "union", "intersect", "except", "exists", "using", "with", "insert", "update", "delete", "escape",
             "ilike", "returning", "cast", "extract")


def _unclosed_paren(toks: Sequence[Token]) -> int | None:
    """Offset of the last ``(`` that is not closed, if any."""
    stack: list[int] = []
    for tok in toks:
        if tok.kind == "op" and tok.text == "(":
            stack.append(tok.start)
        elif tok.kind == "op" and tok.text == ")" and stack:
            stack.pop()
    return stack[-1] if stack else None


# -- diagnostics ---------------------------------------------------------------------------------


def _finding(tok: Token, message: str, code: str, replacement: str | None, candidates: Sequence[str]) -> Finding:
    data: dict[str, Any] = {"name": tok.text, "candidates": sorted(set(candidates))[:20]}
    if replacement is not None:
        data["replacement"] = replacement
        message += f"; did you mean {replacement}?"
    return Finding(tok.start, tok.end, message, code, "warning", data)


def _check_statement(statement: Statement, resolver: _Resolver) -> list[Finding]:
    findings: list[Finding] = []
    known_tables = [t.name for t in resolver.tables.values()]
    for block in statement.walk():
        ctes = resolver.cte_tables(block)
        for rel in block.relations:
            if rel.subquery is not None or not rel.name_tokens:
                continue
            if resolver.table(rel, block) is None:
                tok = rel.name_tokens[-1]
                options = known_tables + [c.name for c in ctes.values()]
                findings.append(_finding(tok, f"unknown table {tok.text}", "sql.unknown-table",
                                         closest(tok.text, options, key=ident_key), options))
        findings.extend(_check_refs(block, resolver))
    return findings


def _scope_chain(block: QueryBlock, resolver: _Resolver) -> list[list[tuple[Relation, Table | None]]]:
    chain = []
    current: QueryBlock | None = block
    while current is not None:
        chain.append([(rel, resolver.table(rel, current)) for rel in current.relations])
        current = current.parent
    return chain


def _check_refs(block: QueryBlock, resolver: _Resolver) -> list[Finding]:
    findings: list[Finding] = []
    chain = _scope_chain(block, resolver)
    aliases = {ident_key(a.text) for a in block.output_aliases()}
    complete = all(table is not None and table.complete and (table.columns or table.kind != "subquery")
                   for level in chain for _, table in level)
    for ref in block.refs:
        name_tok = ref.parts[-1]
        if ref.star or not ref.parts:
            continue
        if len(ref.parts) == 1:
            if ref.clause == "columns" or ref.clause == "set":
                pass
            if ident_key(name_tok.text) in aliases and ref.clause != "select":
                continue
            if not chain or not chain[0] and len(chain) == 1:
                continue  # no FROM: nothing to resolve against
            found = any(table is not None and table.column(name_tok.text) is not None
                        for level in chain for _, table in level)
            if found or not complete:
                continue
            options = [c.name for level in chain for _, table in level if table is not None for c in table.columns]
            findings.append(_finding(name_tok, f"unknown column {name_tok.text}", "sql.unknown-column",
                                     closest(name_tok.text, options, key=ident_key), options))
            continue
        qualifier = ref.parts[-2]
        target: Table | None = None
        matched = False
        for level in chain:
            for rel, table in level:
                if rel.exposed is not None and ident_key(rel.exposed) == ident_key(qualifier.text):
                    target, matched = table, True
                    break
                if rel.name is not None and rel.alias is None and ident_key(rel.name) == ident_key(qualifier.text):
                    target, matched = table, True
                    break
            if matched:
                break
        if not matched:
            if len(ref.parts) > 2:
                continue  # schema.table.column: not resolved here
            options = [rel.exposed for level in chain for rel, _ in level if rel.exposed]
            if not options:
                continue
            findings.append(_finding(qualifier, f"unknown table or alias {qualifier.text}", "sql.unknown-table",
                                     closest(qualifier.text, options, key=ident_key), options))
            continue
        if target is None or not target.complete or (target.kind == "subquery" and not target.columns):
            continue
        if target.column(name_tok.text) is None:
            options = [c.name for c in target.columns]
            findings.append(_finding(name_tok, f"unknown column {name_tok.text} in {target.name}",
                                     "sql.unknown-column", closest(name_tok.text, options, key=ident_key), options))
    return findings
