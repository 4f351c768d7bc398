"""Parsing P4-16 with Lark, one top-level declaration at a time, with recovery.

The input is the *code text* of ``p4_preprocess`` (comments and directives
blanked, offsets unchanged). ``parse_program`` splits it into top-level items
(a declaration ends at its ``;`` or at the ``}`` that closes its body), parses
each item on its own with the LALR parser, and caches the result by the item's
text: an edit re-parses only the declaration it touches.

A large item (over ``PIECEWISE_CHARS``) whose last body holds statements or
declarations (a control, a parser, an action, an apply block) is parsed piece by
piece: its header with an empty body, then each item of the body on its own,
cached by its text (``_pieces``) with positions relative to itself; the body holds
each piece in a ``placed`` node that says where the piece starts (``symbols`` adds
it). So a keystroke inside one action of a control of 1,400 actions re-parses that
action, not the control (a 0.3 M-character control cost 6-12 s per parse). When a
piece does not parse cleanly, the item is parsed whole as before.

An item that does not parse is recovered structurally: its header is parsed
with an empty body (``control C(...) {}``), the body is split into its own
items (statements, table properties, states, ...), each is parsed on its own
(recursively recovered in turn), and the parsed items are put into the empty
body. A body that is never closed (a program cut at the cursor) runs to the
end of the item. So a program cut at any statement still yields every
declaration before the cut, and one broken statement costs only itself.

Type names: like p4c, the lexer must know which names denote types. They are
collected by a textual pre-scan (``scan_type_names``) of the file and handed
in, together with the type names of included files.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from lark import Lark, Token, Tree
from lark.exceptions import LarkError
from lark.lark import PostLex

from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.p4.grammar import GRAMMAR, START_RULES

# -- the type-name pre-scan ---------------------------------------------------------

_NAME = r"[A-Za-z_]\w*"
_TYPE_DECL = re.compile(rf"\b(?:header|header_union|struct|parser|control|package)\s+({_NAME})")
_ENUM_DECL = re.compile(rf"\benum\s+(?:(?:bit|int)\s*<[^<>]*>\s+|({_NAME})\s+(?={_NAME}\s*\{{))?({_NAME})\s*\{{")
_EXTERN_OBJECT = re.compile(rf"\bextern\s+({_NAME})\s*(?:<[^<>]*>\s*)?\{{")
_TYPEDEF = re.compile(rf"(?:^|[;{{}}])\s*(?:typedef|type)\s+[^;{{}}]*?({_NAME})\s*;", re.MULTILINE)
_DECL_TYPE_PARAMS = re.compile(rf"\b(?:extern|parser|control|package|struct|header|header_union)\s+{_NAME}\s*<([^<>]*)>")
_FUNC_TYPE_PARAMS = re.compile(rf"\b{_NAME}\s+{_NAME}\s*<\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*>\s*\(")
_BUILTIN_TYPE_WORDS = frozenset({"bit", "int", "varbit", "bool", "error", "string", "void", "tuple", "list", "match_kind"})


_scans: BoundedCache[str, frozenset[str]] = BoundedCache("p4.type-name-scans", 4)
"""The last scans by code text: an analysis scans its document twice (the parse and the analysis)."""


def scan_type_names(code: str) -> frozenset[str]:
    """Names that the text declares as types (and type parameters), found by regular expressions."""
    return _scans.get_or_make(code, lambda: frozenset(_scan_type_names(code)))


def _scan_type_names(code: str) -> set[str]:
    names: set[str] = set()
    names.update(m.group(1) for m in _TYPE_DECL.finditer(code))
    names.update(m.group(2) for m in _ENUM_DECL.finditer(code))
    names.update(m.group(1) for m in _EXTERN_OBJECT.finditer(code))
    names.update(m.group(1) for m in _TYPEDEF.finditer(code))
    for regex in (_DECL_TYPE_PARAMS, _FUNC_TYPE_PARAMS):
        for m in regex.finditer(code):
            names.update(p.strip() for p in m.group(1).split(",") if p.strip())
    return {n for n in names if n not in _BUILTIN_TYPE_WORDS and re.fullmatch(_NAME, n)}


# -- the lexer's second pass -------------------------------------------------------------

_TYPE_ARG_TOKENS = {"TYPE_IDENTIFIER", "INTEGER", "COMMA", "LESSTHAN", "MORETHAN", "LSQB", "RSQB",
                    "BOOL_T", "ERROR_T", "STRING_T", "INT_T", "BIT_T", "VARBIT_T", "VOID", "TUPLE", "LIST",
                    "UNDERSCORE", "DOT"}
_OPENS_TYPE_ARGS = {"TYPE_IDENTIFIER", "BIT_T", "INT_T", "VARBIT_T", "TUPLE", "LIST", "VALUE_SET"}


class TypeNames(PostLex):
    """Retype tokens the grammar cannot tell apart without knowing the types.

    - a name in ``types`` becomes TYPE_IDENTIFIER (``types`` is per thread);
    - a ``<`` after a plain name that opens type arguments of a call
      (``lookahead<h_t>(``) becomes GENERIC_LT;
    - two adjacent ``>`` outside type arguments become one SHR (``a >> 2``),
      so that ``register<bit<32>>`` still closes two argument lists.
    """

    always_accept = ()

    def __init__(self) -> None:
        self.local = threading.local()

    @property
    def types(self) -> frozenset[str]:
        return getattr(self.local, "types", frozenset())

    @types.setter
    def types(self, value: frozenset[str]) -> None:
        self.local.types = value

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        types = self.types
        tokens = []
        for tok in stream:
            if tok.type == "IDENTIFIER" and tok.value in types:
                tok.type = "TYPE_IDENTIFIER"
            tokens.append(tok)
        angle = 0  # depth of open type-argument lists
        angle_stack: list[bool] = []  # for each open '<': is it a type-argument list?
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.type == "LESSTHAN":
                prev = tokens[i - 1] if i else None
                typed = prev is not None and prev.type in _OPENS_TYPE_ARGS
                if not typed and prev is not None and prev.type == "IDENTIFIER" and self._generic_call(tokens, i):
                    tok.type = "GENERIC_LT"
                    typed = True
                angle_stack.append(typed)
                angle += typed
            elif tok.type == "MORETHAN":
                if angle_stack:
                    angle -= angle_stack.pop()
                elif (i + 1 < len(tokens) and tokens[i + 1].type == "MORETHAN"
                      and tokens[i + 1].start_pos == tok.end_pos):
                    merged = Token.new_borrow_pos("SHR", ">>", tok)
                    merged.end_pos = tokens[i + 1].end_pos
                    merged.end_column = tokens[i + 1].end_column
                    yield merged
                    i += 2
                    continue
            elif tok.type in ("SEMICOLON", "LBRACE", "RBRACE"):
                angle_stack.clear()
                angle = 0
            yield tok
            i += 1

    @staticmethod
    def _generic_call(tokens: Sequence[Token], i: int) -> bool:
        depth = 0
        for j in range(i, min(len(tokens), i + 64)):
            kind = tokens[j].type
            if kind == "LESSTHAN":
                depth += 1
            elif kind == "MORETHAN":
                depth -= 1
                if depth == 0:
                    return j + 1 < len(tokens) and tokens[j + 1].type == "LPAR"
            elif kind not in _TYPE_ARG_TOKENS:
                return False
        return False


# -- the Lark parser (one per process, shared by every thread) ----------------------------
#
# Building the LALR tables takes about 0.4 s, once per process. Lark can cache
# them in a file, but its cache is a pickle that it loads before checking
# anything: a file planted at the cache's path runs code in the server (the
# cache used to live at a fixed name in the shared temp folder). So there is no
# cache at all. The parser is shared: a parse keeps its state in locals (Lark's
# LALR parser and basic lexer make a new state per call) and the post-lexer's
# ``types`` are per thread.

_shared: tuple[Lark, TypeNames] | None = None
_build_lock = threading.Lock()


def _lark() -> tuple[Lark, TypeNames]:
    global _shared
    if _shared is None:
        with _build_lock:
            if _shared is None:
                postlex = TypeNames()
                lark = Lark(
                    GRAMMAR, parser="lalr", lexer="basic", start=list(START_RULES), postlex=postlex,
                    propagate_positions=True, maybe_placeholders=False, cache=False,
                )
                _shared = (lark, postlex)
    return _shared


class ParseFailure(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


_LARK_WHERE = re.compile(r" at line \d+,? column \d+")


def parse_text(text: str, start: int, end: int, rule: str, types: frozenset[str], suffix: str = "") -> Tree:
    """Parse ``text[start:end] + suffix`` with ``rule``; positions are offsets into ``text``."""
    lark, postlex = _lark()
    postlex.types = types
    padded = " " * start + text[start:end] + suffix
    try:
        return lark.parse(padded, start=rule)
    except LarkError as err:
        offset = getattr(err, "pos_in_stream", None)
        if offset is None:
            token = getattr(err, "token", None)
            offset = getattr(token, "start_pos", None) if token is not None else None
        # Lark's "at line L, column C" counts in the padded text (and a piece's own): the
        # finding's range says where, the message says what
        message = _LARK_WHERE.sub("", str(err).splitlines()[0])[:200]
        raise ParseFailure(message, offset if offset is not None else end) from None


# -- splitting text into items ---------------------------------------------------------------

_TOP_KEYWORD_LINE = re.compile(
    r"(?:@\w+(?:\([^\n]*\))?\s*)*(control|parser|header|header_union|struct|enum|typedef|type|extern|package|match_kind|error)\b"
)
_TABLE_LIST_PROPERTY = re.compile(r"\b(key|actions|entries)\s*=\s*$")


@dataclass(frozen=True)
class Item:
    start: int
    end: int
    bodies: tuple[tuple[int, int | None], ...] = ()
    """Each depth-0 body: the offset of its ``{`` and of its ``}`` (None when never closed)."""

    @property
    def closed(self) -> bool:
        return all(close is not None for _, close in self.bodies)


def _skip_string(text: str, i: int, end: int) -> int:
    j = i + 1
    while j < end and text[j] not in '"\n':
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, end)


_STOPS = re.compile(r'[{}";]')
_STOPS_TOP = re.compile(r'[{}";]|\n(?=[^ \t\r\n}])')
"""What the split looks at (everything between is skipped by the regular expression: the
split runs over the whole document on each analysis); at the top level also a line that
may begin with a keyword."""
_NON_BLANK = re.compile(r"[^ \t\r\n]")


def split_items(text: str, start: int, end: int, top_level: bool = False) -> list[Item]:
    """Items of the region: each ends at a depth-0 ``;`` or at the ``}`` closing a
    depth-0 body (unless ``else`` follows). A ``{`` after ``=`` opens an expression
    (``x = {a, b};``), except for a table's ``key``/``actions``/``entries``. At the top
    level a line starting with a top-level keyword in column 0 also ends any
    unclosed item (someone is typing inside the declaration above it)."""
    items: list[Item] = []
    i = start
    item_start: int | None = None
    after = start  # where the next item begins: the first non-blank from here
    depth = 0
    bodies: list[tuple[int, int | None]] = []
    expression_braces: list[bool] = []  # per open brace: does it belong to an expression?

    def finish(at: int) -> None:
        nonlocal item_start, bodies, depth, expression_braces, after
        if item_start is not None:  # (an unclosed body stays unclosed)
            items.append(Item(item_start, at, tuple(bodies)))
        item_start, bodies, depth, expression_braces, after = None, [], 0, [], at

    stops = _STOPS_TOP if top_level else _STOPS
    while (found := stops.search(text, i, end)) is not None:
        i = found.start()
        ch = text[i]
        if ch == "\n":
            if depth > 0 and _TOP_KEYWORD_LINE.match(text, i + 1, min(end, i + 400)):
                finish(i)
            i += 1
            continue
        if item_start is None:
            item_start = _NON_BLANK.search(text, after, i + 1).start()
        if ch == '"':
            i = _skip_string(text, i, end)
            continue
        if ch == "{":
            is_expression = False
            if depth == 0 or expression_braces and expression_braces[-1]:
                before = text[item_start:i].rstrip()
                if before.endswith(("=", ",", "(", "return")) and not _TABLE_LIST_PROPERTY.search(text, item_start, i):
                    is_expression = True
                if expression_braces and expression_braces[-1]:
                    is_expression = True
            if depth == 0 and not is_expression:
                bodies.append((i, None))
            expression_braces.append(is_expression)
            depth += 1
        elif ch == "}":
            if depth == 0:
                # a stray closer: it ends whatever came before it
                finish(i)
                i = after = i + 1
                continue
            depth -= 1
            was_expression = expression_braces.pop() if expression_braces else False
            if depth == 0 and not was_expression:
                if bodies and bodies[-1][1] is None:
                    bodies[-1] = (bodies[-1][0], i)
                j = i + 1
                while j < end and text[j] in " \t\r\n":
                    j += 1
                if text.startswith("else", j) and not (j + 4 < end and (text[j + 4].isalnum() or text[j + 4] == "_")):
                    i += 1
                    continue
                finish(i + 1)
                i += 1
                continue
        elif ch == ";" and depth == 0:
            finish(i + 1)
        i += 1
    if item_start is None and (rest := _NON_BLANK.search(text, after, end)) is not None:
        item_start = rest.start()
    finish(end)
    return items


# -- recovery ------------------------------------------------------------------------

BODY_RULES = {
    "field_body": "struct_field",
    "extern_body": "method_decl",
    "parser_body": "parser_item",
    "state_body": "body_item",
    "select_body": "select_case",
    "control_body": "control_item",
    "table_body": "table_property",
    "key_body": "key_element",
    "actions_body": "action_ref",
    "entries_body": "entry",
    "block_body": "body_item",
    "switch_body": "switch_case",
}
"""For each body node of the grammar: the start rule of the items inside it."""

MAX_RECOVERY_DEPTH = 24

PIECEWISE_CHARS = 4096
"""Items at least this long are parsed piece by piece (when their body allows it)."""
PIECEWISE_BODIES = frozenset({"control_body", "parser_body", "state_body", "block_body"})
"""Bodies whose items the binder reads one by one (``symbols._Binder.members``)."""
PLACED = "placed"
"""The node holding one piece of a body parsed piece by piece: ``meta.start_pos`` is where
the piece starts, relative to the tree it is in; the piece's own positions start at 0."""

_pieces: BoundedCache[tuple[str, str, frozenset[str]], Tree] = BoundedCache(
    "p4.body-pieces", 8192, max_weight=16 << 20, weigh=lambda tree: getattr(tree.meta, "end_pos", 1))
"""Pieces of large bodies by (text, rule, type names it mentions), clean parses only,
weighed by their length in characters."""


def _last_body(tree: Tree) -> Tree | None:
    found = None
    for node in tree.iter_subtrees_topdown():
        if node.data in BODY_RULES:
            found = node
    return found


def _path_to(tree: Tree, target: Tree) -> list[Tree]:
    if tree is target:
        return [tree]
    for child in tree.children:
        if isinstance(child, Tree):
            path = _path_to(child, target)
            if path:
                return [tree, *path]
    return []


@dataclass
class Recovery:
    """What recovery had to give up on: spans of items that parse in no way."""

    dropped: list[tuple[int, int, str]] = field(default_factory=list)
    recovered: int = 0


def _shell(text: str, item: Item, rule: str, types: frozenset[str]) -> tuple[Tree, Tree] | ParseFailure:
    """The item parsed with its last body empty, and that body's node (or why not)."""
    open_at, _ = item.bodies[-1]
    try:
        shell = parse_text(text, item.start, open_at, rule, types, suffix="{}")
    except ParseFailure as err:
        return err
    body = _last_body(shell)
    if body is None:
        return ParseFailure("no body to recover into", item.end)
    return shell, body


def _fill(shell: Tree, body: Tree, children: list[Tree], open_at: int, close_at: int | None, end: int) -> Tree:
    """Put ``children`` into the shell's empty body, which runs from ``open_at`` to ``end``."""
    body.children = children
    body.meta.start_pos, body.meta.end_pos, body.meta.empty = open_at, end, False
    for node in _path_to(shell, body):
        node.meta.end_pos = max(getattr(node.meta, "end_pos", end), end) if close_at is not None else end
        node.meta.empty = False
        # a body never closed runs to the end of the text: the end itself is still inside
        node.meta.unclosed = close_at is None
    return shell


def _piecewise(text: str, item: Item, rule: str, types: frozenset[str], report: Recovery, depth: int) -> Tree | None:
    """The item parsed piece by piece (see the module's docstring), or None when its last body
    is of another kind (or its header does not parse). A piece that does not parse cleanly is
    recovered on its own, and the item counts as recovered, as when it is parsed whole."""
    shell = _shell(text, item, rule, types)
    if isinstance(shell, ParseFailure) or shell[1].data not in PIECEWISE_BODIES:
        return None
    tree, body = shell
    open_at, close_at = item.bodies[-1]
    member_rule = BODY_RULES[body.data]
    children, recovered = [], close_at is None
    for member in split_items(text, open_at + 1, close_at if close_at is not None else item.end):
        piece = text[member.start:member.end]
        key = (piece, member_rule, _relevant_types(piece, types))
        parsed = _pieces.get(key)
        if parsed is None:
            inner = Item(0, len(piece), tuple((o - member.start, None if c is None else c - member.start)
                                              for o, c in member.bodies))
            found = Recovery()
            parsed = parse_item(piece, inner, member_rule, key[2], found, depth + 1)
            if found.recovered or found.dropped:
                recovered = True
                report.recovered += found.recovered
                report.dropped += [(s + member.start, e + member.start, m) for s, e, m in found.dropped]
            elif parsed is not None:
                _pieces.put(key, parsed)
        if parsed is not None:
            placed = Tree(PLACED, [parsed])
            placed.meta.start_pos, placed.meta.end_pos, placed.meta.empty = member.start, member.end, False
            children.append(placed)
    _fill(tree, body, children, open_at, close_at, close_at + 1 if close_at is not None else item.end)
    if recovered:
        tree.meta.recovered = True
        report.recovered += 1
    return tree


def parse_item(text: str, item: Item, rule: str, types: frozenset[str], report: Recovery, depth: int = 0) -> Tree | None:
    """Parse one item with ``rule``, piece by piece when it is large; recover its last body
    when it does not parse."""
    if item.bodies and item.end - item.start >= PIECEWISE_CHARS and depth < MAX_RECOVERY_DEPTH:
        if (tree := _piecewise(text, item, rule, types, report, depth)) is not None:
            return tree
    if item.closed:
        try:
            return parse_text(text, item.start, item.end, rule, types)
        except ParseFailure as err:
            failure = err
    else:
        failure = ParseFailure("unclosed body", item.end)
    if not item.bodies or depth >= MAX_RECOVERY_DEPTH:
        report.dropped.append((item.start, item.end, str(failure)))
        return None
    open_at, close_at = item.bodies[-1]
    shell = _shell(text, item, rule, types)
    if isinstance(shell, ParseFailure):
        report.dropped.append((item.start, item.end, str(shell)))
        return None
    tree, body = shell
    inner_end = close_at if close_at is not None else item.end
    member_rule = BODY_RULES[body.data]
    children: list[Tree] = []
    for member in split_items(text, open_at + 1, inner_end):
        parsed = parse_item(text, member, member_rule, types, report, depth + 1)
        if parsed is not None:
            children.append(parsed)
    _fill(tree, body, children, open_at, close_at, close_at + 1 if close_at is not None else item.end)
    tree.meta.recovered = True
    report.recovered += 1
    return tree


# -- whole programs ---------------------------------------------------------------------

@dataclass
class TopItem:
    start: int
    end: int
    tree: Tree | None
    recovered: bool
    dropped: list[tuple[int, int, str]]
    stale: bool = False
    """The tree is the last good parse of this declaration, not of its current text."""


@dataclass
class Program:
    items: list[TopItem]

    @property
    def errors(self) -> list[tuple[int, int, str]]:
        return [d for item in self.items for d in item.dropped]

    @property
    def clean(self) -> bool:
        return not any(item.recovered or item.dropped for item in self.items)


_cache: BoundedCache[tuple[str, frozenset[str]], tuple[Tree | None, bool, list[tuple[int, int, str]], int]] = \
    BoundedCache("p4.declarations", 2048, max_weight=16 << 20, weigh=lambda parsed: parsed[3])
"""Top-level declarations by (text, type names they mention), weighed by the text's length
(each version of a large control typed into is one entry)."""
_WORDS = re.compile(_NAME)


def _relevant_types(chunk: str, types: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in set(_WORDS.findall(chunk)) if w in types)


_REGION = re.compile(
    r"\s*(?:@\w+(?:\s*\((?:[^()]|\([^()]*\))*\))?\s*)*"
    r"(control|parser|header|header_union|struct|enum|extern|action|package|typedef|type)\s+"
    r"(?:(?:bit|int)\s*<[^>]*>\s*)?(?:void\s+|[A-Za-z_]\w*\s+(?=[A-Za-z_]\w*\s*\())?([A-Za-z_]\w*)"
)


def region_key(chunk: str) -> str | None:
    """A stable name for a top-level declaration while it is edited (``control MyIngress``)."""
    m = _REGION.match(chunk)
    return f"{m.group(1)} {m.group(2)}" if m else None


def parse_program(code: str, types: Iterable[str] = (), memory: dict[str, Tree] | None = None) -> Program:
    """Every top-level item of ``code``, parsed or recovered (cached per item text).

    With ``memory`` (one dict per document, kept by the caller), a declaration
    that parses cleanly is remembered under its ``region_key``; when a later
    version of it does not parse at all (its header is being edited), the last
    good parse stands in for it."""
    all_types = frozenset(types) | scan_type_names(code)
    items = []
    for item in split_items(code, 0, len(code), top_level=True):
        chunk = code[item.start : item.end]
        relevant = _relevant_types(chunk, all_types)
        key = (chunk, relevant)
        hit = _cache.get(key)
        if hit is None:
            local = chunk if item.start == 0 else None
            report = Recovery()
            relative = Item(0, len(chunk), tuple((o - item.start, None if c is None else c - item.start) for o, c in item.bodies))
            tree = parse_item(chunk if local is None else local, relative, "declaration", relevant, report)
            hit = _cache.put(key, (tree, report.recovered > 0, report.dropped, len(chunk)))
        tree, recovered, dropped, _ = hit
        stale = False
        if memory is not None and (region := region_key(chunk)) is not None:
            if tree is not None and not recovered and not dropped:
                memory[region] = tree
            elif tree is None and region in memory:
                tree, recovered, stale = memory[region], True, True
        items.append(TopItem(item.start, item.end, tree, recovered,
                             [(s + item.start, e + item.start, m) for s, e, m in dropped], stale))
    return Program(items)
