"""The structure of one SQL statement, read from its tokens: query blocks and their scopes.

A *block* is one SELECT core (or the body of an INSERT, UPDATE or DELETE):
its clauses, its select items (with their aliases), the relations its FROM
brings into scope (tables with their aliases, subqueries with theirs), the
column references in its expressions, and its child blocks (subqueries). The
WITH list of a query belongs to every core of that query.

The reader is tolerant: it reads unfinished statements (an unclosed
parenthesis runs to the end, a clause may be empty), never raises on bad
input, and treats a bare reserved word as a keyword, so ``SELECT a, FROM t``
has an empty second item and a FROM clause (tree-sitter-sql reads FROM as a
column there).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from gdg_lsp.languages.sql.lexer import Token, ident_key, significant, tokenize

SET_OPERATORS = ("union", "intersect", "except")
JOIN_WORDS = ("join", "inner", "left", "right", "full", "outer", "cross", "natural")
QUERY_STARTS = ("select", "with", "values")
_CLAUSE_STARTS = {
    "select": "select", "from": "from", "where": "where", "group": "group by", "having": "having",
    "order": "order by", "limit": "limit", "offset": "offset", "window": "window", "returning": "returning",
}


@dataclass
class Ref:
    """A column reference: ``parts`` are the name tokens (``t.c`` is two)."""

    parts: tuple[Token, ...]
    clause: str
    star: bool = False  # ``t.*``

    @property
    def start(self) -> int:
        return self.parts[0].start

    @property
    def end(self) -> int:
        return self.parts[-1].end


@dataclass
class Relation:
    name_tokens: tuple[Token, ...] = ()
    alias: Token | None = None
    subquery: QueryBlock | None = None
    start: int = 0
    end: int = 0

    @property
    def name(self) -> str | None:
        """The table's spelling (the last part of a schema-qualified name)."""
        return self.name_tokens[-1].text if self.name_tokens else None

    @property
    def written(self) -> str:
        return ".".join(t.text for t in self.name_tokens)

    @property
    def exposed(self) -> str | None:
        """The name columns are qualified with: the alias, else the table name."""
        if self.alias is not None:
            return self.alias.text
        return self.name


@dataclass
class Item:
    tokens: list[Token]
    alias: Token | None
    start: int
    end: int


@dataclass
class CTE:
    name: Token
    columns: list[Token]
    query: QueryBlock | None
    start: int
    end: int


@dataclass
class Clause:
    name: str
    start: int  # offset of the keyword
    end: int  # end of the clause's last token


@dataclass
class QueryBlock:
    kind: str  # select | insert | update | delete | values
    start: int
    end: int
    parent: QueryBlock | None = None
    open_paren: int | None = None  # offset of the "(" the block sits in
    close_paren: int | None = None
    ctes: list[CTE] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    clauses: list[Clause] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    children: list[QueryBlock] = field(default_factory=list)
    target: Relation | None = None
    insert_columns: list[Token] = field(default_factory=list)
    compound_first: QueryBlock | None = None  # the first core of a UNION/INTERSECT/EXCEPT chain
    with_start: int | None = None  # offset of the WITH this core's query starts with

    def clause_at(self, offset: int) -> Clause | None:
        found = None
        for clause in self.clauses:
            if clause.start < offset:
                found = clause
        return found

    def has_clause(self, name: str) -> Clause | None:
        return next((c for c in self.clauses if c.name == name), None)

    def walk(self) -> Iterator[QueryBlock]:
        yield self
        for child in self.children:
            yield from child.walk()

    def visible_ctes(self) -> list[CTE]:
        result: list[CTE] = []
        block: QueryBlock | None = self
        while block is not None:
            result.extend(block.ctes)
            block = block.parent
        return result

    def output_aliases(self) -> list[Token]:
        return [item.alias for item in self.items if item.alias is not None]


@dataclass
class Statement:
    start: int
    end: int
    tokens: list[Token]  # significant tokens
    blocks: list[QueryBlock]  # top-level cores, in order
    keyword: str  # the first word, lower case ("" when empty)

    def walk(self) -> Iterator[QueryBlock]:
        for block in self.blocks:
            yield from block.walk()

    def block_at(self, offset: int) -> QueryBlock | None:
        """The innermost block whose extent holds ``offset`` (an unclosed
        subquery, like the statement, runs to the statement's end)."""
        best = None
        for block in self.walk():
            lo = block.open_paren + 1 if block.open_paren is not None else block.start
            hi = block.close_paren if block.close_paren is not None else self.end
            if block.open_paren is None and block.with_start is not None:
                lo = min(lo, block.with_start)
            if lo <= offset <= hi and (best is None or lo >= _lo(best)):
                best = block
        return best


def _lo(block: QueryBlock) -> int:
    return block.open_paren + 1 if block.open_paren is not None else block.start


# -- splitting a document into statements ------------------------------------


def split_statements(text: str, tokens: list[Token] | None = None) -> list[tuple[int, int, list[Token]]]:
    """(start, end, tokens) of each statement; ``end`` is the offset of its ``;``
    (or of the end of the text). Comments and blanks stay in the token lists."""
    tokens = tokenize(text) if tokens is None else tokens
    result: list[tuple[int, int, list[Token]]] = []
    current: list[Token] = []
    start = 0
    for token in tokens:
        if token.kind == "op" and token.text == ";":
            result.append((start, token.start, current))
            current, start = [], token.end
        else:
            current.append(token)
    result.append((start, len(text), current))
    return result


# -- the reader --------------------------------------------------------------


def _matching(toks: list[Token], i: int, hi: int) -> int:
    """Index of the ``)`` closing ``toks[i]`` (``hi`` when it is not closed)."""
    depth = 0
    for j in range(i, hi):
        if toks[j].kind == "op":
            if toks[j].text == "(":
                depth += 1
            elif toks[j].text == ")":
                depth -= 1
                if depth == 0:
                    return j
    return hi


def _starts_query(toks: list[Token], i: int, hi: int) -> bool:
    return i < hi and toks[i].is_word(*QUERY_STARTS)


class _Reader:
    def __init__(self, toks: list[Token], text_end: int) -> None:
        self.toks = toks
        self.text_end = text_end

    def end_of(self, hi: int) -> int:
        return self.toks[hi - 1].end if hi > 0 else 0

    # a query: [WITH ...] core (setop core)* [ORDER BY ...] [LIMIT ...]
    def query(self, lo: int, hi: int, parent: QueryBlock | None, paren: int | None) -> list[QueryBlock]:
        toks = self.toks
        i = lo
        ctes: list[CTE] = []
        cte_blocks: list[QueryBlock] = []
        with_start = None
        if i < hi and toks[i].is_word("with"):
            with_start = toks[i].start
            i += 1
            if i < hi and toks[i].is_word("recursive"):
                i += 1
            while i < hi and toks[i].is_identifier:
                name = toks[i]
                i += 1
                columns: list[Token] = []
                if i < hi and toks[i].text == "(":
                    close = _matching(toks, i, hi)
                    columns = [t for t in toks[i + 1 : close] if t.is_identifier]
                    i = close + 1
                if i < hi and toks[i].is_word("as"):
                    i += 1
                while i < hi and toks[i].is_word("not", "materialized"):
                    i += 1
                cte = CTE(name, columns, None, name.start, name.end)
                ctes.append(cte)
                if i < hi and toks[i].text == "(":
                    close = _matching(toks, i, hi)
                    inner = self.query(i + 1, close, parent, toks[i].start)
                    for block in inner:
                        if close < hi:
                            block.close_paren = toks[close].start
                    cte.query = inner[0] if inner else None
                    cte.end = toks[close].end if close < hi else self.end_of(hi)
                    cte_blocks.extend(inner)
                    i = close + 1
                if i < hi and toks[i].text == ",":
                    i += 1
                    continue
                break
        if i >= hi:
            # only a WITH so far: an empty core holds the CTEs (and the cursor after them)
            i = min(i, hi)
            block = QueryBlock("select", toks[i - 1].end if i > lo else (toks[lo].start if lo < len(toks) else 0),
                               self.end_of(hi), parent, paren, ctes=ctes, with_start=with_start)
            block.children.extend(cte_blocks)
            for child in cte_blocks:
                child.parent = block
            return [block]
        cores: list[QueryBlock] = []
        head = toks[i].lower
        if head in ("insert", "update", "delete", "replace"):
            cores = [self.dml(i, hi, parent, paren)]
        else:
            for seg_lo, seg_hi in self._set_segments(i, hi):
                block = self.core(seg_lo, seg_hi, parent, paren)
                if cores:
                    block.compound_first = cores[0]
                cores.append(block)
        for block in cores:
            block.ctes = ctes
            block.with_start = with_start
        if cores:
            cores[0].children[:0] = cte_blocks
            for child in cte_blocks:
                child.parent = cores[0]
        return cores

    def _set_segments(self, lo: int, hi: int) -> list[tuple[int, int]]:
        toks = self.toks
        segments = []
        start = lo
        j = lo
        while j < hi:
            tok = toks[j]
            if tok.text == "(":
                j = _matching(toks, j, hi) + 1
                continue
            if tok.is_word(*SET_OPERATORS):
                segments.append((start, j))
                j += 1
                if j < hi and toks[j].is_word("all", "distinct"):
                    j += 1
                start = j
                continue
            j += 1
        segments.append((start, hi))
        return segments

    # flatten [lo, hi): depth-0 tokens, tokens inside plain parentheses, and
    # subqueries read as child blocks (replaced by one placeholder token)
    def _flatten(self, lo: int, hi: int, block: QueryBlock) -> list[tuple[Token, int]]:
        toks = self.toks
        out: list[tuple[Token, int]] = []
        depth = 0
        j = lo
        while j < hi:
            tok = toks[j]
            if tok.text == "(" and tok.kind == "op":
                if _starts_query(toks, j + 1, hi):
                    close = _matching(toks, j, hi)
                    children = self.query(j + 1, close, block, tok.start)
                    for child in children:
                        child.parent = block
                        if close < hi:
                            child.close_paren = toks[close].start
                    block.children.extend(children)
                    end = toks[close].end if close < hi else self.end_of(hi)
                    out.append((Token("subquery", "(...)", tok.start, end), depth))
                    j = close + 1
                    continue
                out.append((tok, depth))
                depth += 1
                j += 1
                continue
            if tok.text == ")" and tok.kind == "op":
                depth = max(0, depth - 1)
            out.append((tok, depth))
            j += 1
        return out

    def core(self, lo: int, hi: int, parent: QueryBlock | None, paren: int | None) -> QueryBlock:
        toks = self.toks
        # an empty core: the one being typed after a set operator (``... UNION |``)
        first = toks[lo] if lo < hi else None
        block = QueryBlock("values" if first is not None and first.is_word("values") else "select",
                           first.start if first is not None else self.end_of(lo), self.end_of(hi), parent, paren)
        flat = self._flatten(lo, hi, block)
        clauses = self._clauses(flat)
        for name, keyword, body in clauses:
            end = body[-1][0].end if body else keyword.end
            block.clauses.append(Clause(name, keyword.start, end))
            if name == "select":
                self._items(body, block)
            elif name == "from":
                self._from(body, block)
            elif name not in ("limit", "offset"):
                self._refs(body, block, name)
        return block

    @staticmethod
    def _clauses(flat: list[tuple[Token, int]]) -> list[tuple[str, Token, list[tuple[Token, int]]]]:
        result: list[tuple[str, Token, list[tuple[Token, int]]]] = []
        k = 0
        while k < len(flat):
            tok, depth = flat[k]
            name = _CLAUSE_STARTS.get(tok.lower) if tok.kind == "word" and depth == 0 else None
            if name is not None:
                k += 1
                if name in ("group by", "order by") and k < len(flat) and flat[k][0].is_word("by"):
                    k += 1
                result.append((name, tok, []))
                continue
            if result:
                result[-1][2].append((tok, depth))
            k += 1
        return result

    def _items(self, body: list[tuple[Token, int]], block: QueryBlock) -> None:
        for part in _split(body, lambda t, d: d == 0 and t.text == ","):
            toks = [t for t, _ in part]
            if toks and toks[0].is_word("distinct", "all"):
                toks = toks[1:]
            if not toks:
                continue
            alias = None
            expr = toks
            if len(toks) >= 2 and toks[-2].is_word("as") and (toks[-1].is_identifier or toks[-1].kind == "string"):
                alias, expr = toks[-1], toks[:-2]
            elif (len(toks) >= 2 and toks[-1].is_identifier
                  and (toks[-2].is_identifier or toks[-2].kind in ("number", "string", "subquery") or toks[-2].text == ")")
                  and not (len(toks) >= 3 and toks[-3].text == ".")):
                alias, expr = toks[-1], toks[:-1]
            block.items.append(Item(expr, alias, toks[0].start, toks[-1].end))
            self._refs([(t, 0) for t in expr], block, "select")

    def _from(self, body: list[tuple[Token, int]], block: QueryBlock) -> None:
        k = 0
        current: list[tuple[Token, int]] = []
        condition: list[tuple[Token, int]] | None = None
        conditions: list[list[tuple[Token, int]]] = []

        def flush() -> None:
            if current:
                block.relations.append(self._relation([t for t, d in current if d == 0] or [current[0][0]], block))

        while k < len(body):
            tok, depth = body[k]
            if depth == 0 and (tok.text == "," or tok.is_word(*JOIN_WORDS)):
                flush()
                current, condition = [], None
                k += 1
                continue
            if depth == 0 and tok.is_word("on", "using"):
                flush()
                current = []
                condition = []
                conditions.append(condition)
                k += 1
                continue
            (condition if condition is not None else current).append((tok, depth))
            k += 1
        flush()
        for cond in conditions:
            self._refs(cond, block, "on")

    def _relation(self, toks: list[Token], block: QueryBlock) -> Relation:
        rel = Relation(start=toks[0].start, end=toks[-1].end)
        k = 0
        if toks[0].kind == "subquery":
            rel.subquery = next((c for c in block.children if c.open_paren == toks[0].start), None)
            k = 1
        else:
            chain: list[Token] = []
            while k < len(toks) and toks[k].is_identifier:
                chain.append(toks[k])
                if k + 1 < len(toks) and toks[k + 1].text == ".":
                    k += 2
                    continue
                k += 1
                break
            rel.name_tokens = tuple(chain)
        if k < len(toks) and toks[k].is_word("as"):
            k += 1
        if k < len(toks) and toks[k].is_identifier:
            rel.alias = toks[k]
        return rel

    def dml(self, lo: int, hi: int, parent: QueryBlock | None, paren: int | None) -> QueryBlock:
        toks = self.toks
        kind = "insert" if toks[lo].is_word("insert", "replace") else toks[lo].lower
        block = QueryBlock(kind, toks[lo].start, self.end_of(hi), parent, paren)
        flat = self._flatten(lo, hi, block)
        k = 1
        # skip OR REPLACE / OR IGNORE ..., INTO, FROM
        while k < len(flat) and flat[k][0].is_word("or", "rollback", "abort", "replace", "fail", "ignore", "into", "from", "only"):
            k += 1
        target_toks: list[Token] = []
        while k < len(flat) and flat[k][1] == 0 and not flat[k][0].is_word("set", "values", "where", "select", "default", "returning", "using") and flat[k][0].text != "(" and flat[k][0].kind != "subquery":
            target_toks.append(flat[k][0])
            k += 1
        if target_toks:
            block.target = self._relation(target_toks, block)
            block.relations.append(block.target)
            block.clauses.append(Clause("target", target_toks[0].start, target_toks[-1].end))
        if kind == "insert" and k < len(flat) and flat[k][0].text == "(":
            close = k
            while close < len(flat) and not (flat[close][0].text == ")" and flat[close][1] == 0):
                close += 1
            block.insert_columns = [t for t, _ in flat[k + 1 : close] if t.is_identifier]
            block.clauses.append(Clause("columns", flat[k][0].start, flat[min(close, len(flat) - 1)][0].end))
            for col in block.insert_columns:
                block.refs.append(Ref((col,), "columns"))
            k = close + 1
        rest = flat[k:]
        current = "body"
        body: list[tuple[Token, int]] = []
        sections: list[tuple[str, Token | None, list[tuple[Token, int]]]] = []
        for tok, depth in rest:
            if depth == 0 and tok.is_word("set", "values", "where", "returning", "from"):
                sections.append((current, None, body))
                current, body = tok.lower, []
                block.clauses.append(Clause(current, tok.start, tok.end))
                continue
            body.append((tok, depth))
            if block.clauses:
                block.clauses[-1].end = tok.end
        sections.append((current, None, body))
        for name, _, part in sections:
            if name == "set":
                for assignment in _split(part, lambda t, d: d == 0 and t.text == ","):
                    self._refs(assignment, block, "set")
            elif name == "from":
                self._from(part, block)
            elif name in ("where", "returning"):
                self._refs(part, block, name)
        return block

    def _refs(self, part: list[tuple[Token, int]], block: QueryBlock, clause: str) -> None:
        toks = [t for t, _ in part]
        k = 0
        while k < len(toks):
            tok = toks[k]
            if not tok.is_identifier:
                k += 1
                continue
            prev = toks[k - 1] if k > 0 else None
            chain = [tok]
            star = False
            j = k + 1
            while j + 1 < len(toks) and toks[j].text == ".":
                nxt = toks[j + 1]
                if nxt.is_identifier:
                    chain.append(nxt)
                    j += 2
                elif nxt.text == "*":
                    star = True
                    j += 2
                    break
                else:
                    break
            after = toks[j] if j < len(toks) else None
            k = j
            if after is not None and after.text == "(" and not star:
                continue  # a function call
            if after is not None and after.kind == "string" and len(chain) == 1 and tok.kind == "word":
                continue  # a typed literal: DATE '2020-01-01'
            if prev is not None and (prev.is_word("as", "collate") or prev.text == "::"):
                continue  # a CAST target type, an alias, a collation
            if prev is not None and prev.text == "(" and len(chain) == 1 and j >= 3 and toks[j - 3].is_word("extract"):
                continue  # EXTRACT(year FROM …): a field name (toks[j - 1] is it, j - 2 the "(")
            block.refs.append(Ref(tuple(chain), clause, star))


def _split(part: list[tuple[Token, int]], is_sep) -> list[list[tuple[Token, int]]]:
    result: list[list[tuple[Token, int]]] = [[]]
    for tok, depth in part:
        if is_sep(tok, depth):
            result.append([])
        else:
            result[-1].append((tok, depth))
    return result


def read_statement(text: str, start: int, end: int, tokens: list[Token] | None = None) -> Statement:
    """The structure of the statement ``text[start:end]``."""
    toks = significant(tokens if tokens is not None else tokenize(text, start, end))
    keyword = toks[0].lower if toks and toks[0].kind == "word" else ""
    if not toks:
        return Statement(start, end, toks, [], keyword)
    reader = _Reader(toks, end)
    try:
        blocks = reader.query(0, len(toks), None, None) if keyword in ("select", "with", "values", "insert", "update", "delete", "replace") else []
    except (RecursionError, IndexError):  # absurd nesting or a reader bug: no structure rather than a crash
        blocks = []
    return Statement(start, end, toks, blocks, keyword)


def output_names(block: QueryBlock, columns_of) -> list[str]:
    """The column names a SELECT core yields (for views, CTEs and FROM subqueries).

    ``columns_of(relation)`` gives the column spellings of a relation in scope
    (for ``*`` and ``t.*``); an expression without an alias that is not a
    column reference yields no usable name and is left out.
    """
    names: list[str] = []
    for item in block.items:
        if item.alias is not None:
            alias = item.alias
            names.append(alias.text if alias.kind != "string" else '"' + alias.text[1:-1] + '"')
            continue
        toks = item.tokens
        if len(toks) == 1 and toks[0].text == "*":
            for rel in block.relations:
                names.extend(columns_of(rel))
            continue
        if len(toks) == 3 and toks[1].text == "." and toks[2].text == "*":
            qualifier = ident_key(toks[0].text)
            for rel in block.relations:
                if rel.exposed is not None and ident_key(rel.exposed) == qualifier:
                    names.extend(columns_of(rel))
            continue
        ref_toks = [t for t in toks if t.text != "."]
        if toks and all(t.is_identifier or t.text == "." for t in toks) and ref_toks:
            names.append(ref_toks[-1].text)
    seen: set[str] = set()
    unique = []
    for name in names:
        if ident_key(name) not in seen:
            seen.add(ident_key(name))
            unique.append(name)
    return unique
