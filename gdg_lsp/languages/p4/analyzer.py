"""P4-16: the hole at the cursor, Γ there, diagnostics, and statement effects.

The hole is the line under the cursor (from its first character, or from the
start of a statement that began on an earlier line inside open parentheses).
Its fragment is chosen by the block the cursor is in (``p4_blocks``): a
statement in an action, function, apply block or parser state; a case of a
``select``; an element of a table's ``key``; an entry of its ``actions`` list;
a table property. Γ comes from the document with the hole's text blanked out
(so the half-typed line neither breaks the parse nor declares anything),
parsed one top-level declaration at a time with recovery (``p4_parser``), with
its ``#include``s resolved (``p4_workspace``), and extended with the typed
paths of the parameters and locals in scope (``p4_gamma``).
"""

from __future__ import annotations

import bisect
import os
import re
import threading
from collections.abc import Callable, Sequence
from types import MappingProxyType
from typing import Any

from gdg_lsp.boundary import Refused, read_bounded
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import (
    Analyzer,
    Finding,
    Hole,
    NoHole,
    StatementEffects,
    WorkspaceContext,
    run_start,
)
from gdg_lsp.languages.p4 import blocks as p4_blocks
from gdg_lsp.languages.p4.check import check
from gdg_lsp.languages.p4.gamma import (
    PathContext,
    build_gamma,
    derive_paths,
    integer_value,
    sym_bindings,
)
from gdg_lsp.languages.p4.parser import ParseFailure, parse_program, parse_text
from gdg_lsp.languages.p4.preprocess import preprocess
from gdg_lsp.languages.p4.symbols import Sym
from gdg_lsp.languages.p4.types import TypeTable
from gdg_lsp.languages.p4.workspace import MAX_INCLUDE_BYTES, Analysis, IncludePaths, analyse
from gdg_lsp.words import comment_text

KEYWORDS = frozenset({
    "abstract", "action", "actions", "apply", "bit", "bool", "const", "control", "default", "else",
    "entries", "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in", "inout",
    "int", "key", "list", "match_kind", "out", "package", "parser", "priority", "return", "select", "state",
    "string", "struct", "switch", "table", "this", "transition", "true", "tuple", "type", "typedef",
    "value_set", "varbit", "void", "accept", "reject", "hit", "miss", "action_run",
    "default_action", "size", "counters", "meters", "implementation", "support_timeout",
})
"""Words a suggestion may use that are not names (keywords, table properties, apply results)."""

CLOSERS_ONLY = re.compile(r"[\s)\];,}]*")
INDENT_UNIT = "    "
_TRAILING_PATH = re.compile(r"[A-Za-z_][\w.\[\]]*\Z")


_LINE_STARTS: BoundedCache[tuple[str, int, int], tuple[int, ...]] = BoundedCache("p4.include-line-starts", 32)
"""Line starts of included files, by path, modification time and size."""


def _file_starts(uri: str) -> tuple[int, ...]:
    """Where the lines of an included file start, read as its analysis read it (a regular
    file within ``MAX_INCLUDE_BYTES``, never a FIFO, no final link); ``(0,)`` when it is not
    (it changed since: the origins then say line 0)."""
    path = uri_to_path(uri)
    if path is None:
        return (0,)
    try:
        info = os.stat(path)
    except OSError:
        return (0,)

    def read() -> tuple[int, ...]:
        try:
            data = read_bounded(path, MAX_INCLUDE_BYTES)
        except Refused:
            return (0,)
        return tuple(_Lines._starts(data.decode("utf-8", errors="replace")))

    return _LINE_STARTS.get_or_make((str(path), info.st_mtime_ns, info.st_size), read)


class _Lines:
    """Offset → (line, column) for the document and included files (for origins)."""

    def __init__(self, uri: str, text: str) -> None:
        self.uri = uri
        self.text_starts = self._starts(text)
        self._files: dict[str, tuple[int, ...]] = {}

    @staticmethod
    def _starts(text: str) -> list[int]:
        return [0, *(m.end() for m in re.finditer(r"\n", text))]

    def __call__(self, uri: str | None, offset: int) -> tuple[int, int]:
        if uri == self.uri or uri is None:
            starts = self.text_starts
        elif (starts := self._files.get(uri)) is None:  # one look at each file per Γ
            starts = self._files[uri] = _file_starts(uri)
        line = max(0, bisect.bisect_right(starts, offset) - 1)
        return line, offset - starts[line]


def _in_comment(text: str, line_start: int, offset: int) -> bool:
    """Is ``offset`` inside a comment? (a block comment opened and not closed before it,
    or a ``//`` earlier on its line outside a string)"""
    opened = text.rfind("/*", 0, offset)
    if opened >= 0 and text.rfind("*/", opened + 2, offset) < 0 and not (offset == opened + 1):
        if text.rfind("//", text.rfind("\n", 0, opened) + 1, opened) < 0:
            return True
    quote = False
    i = line_start
    while i < offset - 1:
        ch = text[i]
        if ch == '"':
            quote = not quote
        elif ch == "\\" and quote:
            i += 1
        elif ch == "/" and text[i + 1] == "/" and not quote:
            return True
        i += 1
    return False


def _describe(block: p4_blocks.OpenBlock) -> str:
    if block.kind in ("control", "parser", "action", "table", "state", "function"):
        m = re.search(r"(?:control|parser|action|table|state)\s+([A-Za-z_]\w*)|([A-Za-z_]\w*)\s*(?:<[^>]*>)?\s*\(", block.header)
        if m:
            return f"{block.kind} {m.group(1) or m.group(2)}"
    return block.kind


class P4Analyzer(Analyzer):
    name = "p4"
    grammar_dir = "p4"
    keywords = KEYWORDS

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_types: frozenset[str] = frozenset()
        # per document: the last good parse of each declaration
        self._memory: BoundedCache[str, dict] = BoundedCache("p4.declaration-memory", 32)
        self._types_for_effects: BoundedCache[str, tuple[TypeTable, dict[str, str], bool]] = \
            BoundedCache("p4.types-for-effects", 8)

    # -- parsing on every keystroke: warms the per-declaration cache ------------------

    def parser(self) -> Callable[[bytes, Any], Any]:
        def parse(source: bytes, old_tree: Any = None) -> Any:
            try:
                code = preprocess(source.decode("utf-8", "replace")).code
                return parse_program(code, self._last_types)
            except Exception:  # the store must never fail on a keystroke
                return None

        return parse

    # -- analysis -------------------------------------------------------------------------

    def analysis(self, text: str, uri: str, workspace: WorkspaceContext, focus: int | None = None) -> Analysis:
        """The analysis of ``text``; with ``focus``, one for Γ at that offset only (``analyse``)."""
        memory = self._memory.get_or_make(uri, dict)
        result = analyse(text, uri, IncludePaths.from_workspace(workspace), memory, focus)
        self._last_types = result.types
        return result

    def type_table(self, analysis: Analysis, offset: int | None = None) -> TypeTable:
        syms = analysis.included_syms(offset)
        syms += analysis.unit.top if offset is None else analysis.unit.top_before(offset)
        return TypeTable(syms)

    @staticmethod
    def _blocks(analysis: Analysis, offset: int) -> p4_blocks.BlockContext:
        key = ("blocks", offset)
        if key not in analysis.memo:
            analysis.memo[key] = p4_blocks.block_context(analysis.pre.code, offset)
        return analysis.memo[key]

    def gamma_for(self, analysis: Analysis, offset: int) -> Gamma:
        """Γ at ``offset`` (computed once per analysis and offset; callers overlay it)."""
        key = ("gamma", offset)
        if key not in analysis.memo:
            analysis.memo[key] = self._gamma(analysis, offset)
        return analysis.memo[key]

    def _gamma(self, analysis: Analysis, offset: int) -> Gamma:
        macros = analysis.macros_before(offset)
        macro_values = {d.name: d.value for d in macros if d.params is None}
        # constant values, for header stack sizes such as `h_t[NUM]`
        constants = {s.name: s.info["value"] for s in analysis.unit.top_before(offset) if "value" in s.info}
        types = self.type_table(analysis, offset)
        ctx = PathContext(types, False, lambda text: integer_value(text, macro_values, constants))
        return build_gamma(analysis.included_syms(offset), macros, analysis.unit.scope, offset, ctx,
                           _Lines(analysis.uri, analysis.text))

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        hole = self.hole_at(snapshot, offset, workspace)
        if isinstance(hole, Hole):
            return hole.gamma
        return self.gamma_for(self.analysis(snapshot.text, snapshot.uri, workspace), offset)

    # -- the hole ---------------------------------------------------------------------------

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        line_start = text.rfind("\n", 0, offset) + 1
        line_end = text.find("\n", offset)
        line_end = len(text) if line_end < 0 else line_end
        if _in_comment(text, line_start, offset):
            return NoHole("inside a comment")
        line = text[line_start:line_end]
        if line.lstrip().startswith("#"):
            return NoHole("inside a preprocessor directive")
        if text[line_start:offset].count('"') % 2 == 1:
            return NoHole("inside a string")
        rest = text[offset:line_end]
        mid_line = bool(rest.strip()) and not CLOSERS_ONLY.fullmatch(rest)
        if mid_line and _is_word(text[offset - 1 : offset]) and _is_word(rest[:1]):
            return NoHole("the cursor is inside a name")
        # a closing brace after the cursor stays; other closers are regenerated; a mid-line
        # hole's text after the cursor stays whole (``middle_fits`` reads it)
        replace_end = offset if (mid_line or not rest.strip() or "}" in rest) else line_end
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        first = line_start + len(indent)
        if offset < first:
            first, indent = offset, text[line_start:offset]
        region_start = first
        # `} else ...`: the closing brace belongs to the block above, the hole starts after it
        if text.startswith("}", first):
            region_start = first + 1
            while region_start < offset and text[region_start] in " \t":
                region_start += 1
        # The region's text is left out of the analysed text (Γ is taken where the region
        # starts, so no offset before it moves): every keystroke in one region gives the
        # same text, so the analysis, the blocks and Γ are computed once per region.
        cut_end = line_end if mid_line else replace_end if replace_end > offset else offset
        analysis = self.analysis(text[:region_start] + text[cut_end:], snapshot.uri, workspace, region_start)
        blocks = self._blocks(analysis, region_start)
        code = analysis.pre.code  # the document's code up to region_start
        segment = blocks.segment_start
        while segment < region_start and code[segment].isspace():
            segment += 1
        if segment < line_start and p4_blocks.paren_depth(code, segment, line_start) > 0:
            region_start = segment  # a statement continued over lines
            prev_start = text.rfind("\n", 0, segment) + 1
            prev = text[prev_start:]
            indent = prev[: len(prev) - len(prev.lstrip(" \t"))]
            analysis = self.analysis(text[:region_start] + text[cut_end:], snapshot.uri, workspace, region_start)
            blocks = self._blocks(analysis, region_start)
            code = analysis.pre.code
        typed = self.replay_text(text[region_start:offset])
        chosen = self._fragment_for(blocks)
        if isinstance(chosen, NoHole):
            return chosen
        fragment_name, sort = chosen
        if mid_line and fragment_name != "statement":
            return NoHole("the cursor is in the middle of a line (text follows it; only a statement is "
                          "completed there)")
        gamma = self.gamma_for(analysis, region_start)
        context = self._context(fragment_name, blocks, analysis, gamma, region_start, code)
        path = tuple(_describe(b) for b in blocks.stack)
        return Hole(
            language=self.name, fragment=fragment_name, sort=sort, region_start=region_start,
            cursor=offset, replace_end=replace_end, typed=typed, indent=indent, gamma=gamma,
            context=MappingProxyType(context), region_path=path, suffix=rest.rstrip("\r") if mid_line else "",
        )

    def middle_fits(self, hole: Hole, middle: str) -> bool:
        """The statement with ``middle`` at the cursor and the rest of the line after it parses as a
        P4 statement, and a path whose member the suffix writes after the middle's dot (``meta.``
        before ``ttl``) is one Γ holds: the grammar saw the middle's part of it only. (A middle
        that ends on a name before the suffix's ``.emit(…)`` wrote that name under the grammar;
        the member is the user's own text.)"""
        if not hole.suffix or hole.fragment != "statement":
            return False
        typed = hole.typed + middle
        statement = typed + self.replay_text(hole.suffix)
        start = len(typed)
        while start > 0 and (_is_word(statement[start - 1]) or statement[start - 1] == "."):
            start -= 1
        end = len(typed)
        while end < len(statement) and (_is_word(statement[end]) or statement[end] == "."):
            end += 1
        joined = statement[start:end].strip(".")
        if typed.endswith(".") and len(typed) < end and joined and not joined[0].isdigit() \
                and joined not in hole.gamma and joined not in self.keywords:
            return False
        return self._statement_tree(statement.strip(), hole.gamma) is not None

    @staticmethod
    def _fragment_for(blocks: p4_blocks.BlockContext) -> tuple[str, str] | NoHole:
        inner = blocks.innermost
        if inner is None:
            return NoHole("at the top level: declarations are not completed")
        kind = inner.kind
        if kind in p4_blocks.STATEMENT_BLOCKS:
            return "statement", "Stmt"
        if kind == "select":
            return "select_case", "SelectCase"
        if kind == "key":
            return "key_entry", "KeyElement"
        if kind == "actions":
            return "action_ref", "ActionRef"
        if kind == "table":
            return "table_property", "TableProperty"
        reasons = {
            "expression": "inside an expression in braces",
            "entries": "inside a table's entries (not completed)",
            "control": "in a control's declarations (only statements, tables and lists are completed)",
            "parser": "in a parser's declarations (only statements and selects are completed)",
            "switch": "between the cases of a switch",
            "fields": "in a type's field list", "enum": "in an enum", "extern": "in an extern declaration",
            "idlist": "in a list of errors or match kinds",
        }
        return NoHole(reasons.get(kind, f"in a {kind} block"))

    def _context(self, fragment: str, blocks: p4_blocks.BlockContext, analysis: Analysis, gamma: Gamma,
                 offset: int, code: str) -> dict[str, Any]:
        kinds = blocks.kinds()
        in_parser = blocks.in_parser
        context: dict[str, Any] = {}
        if fragment == "statement":
            in_control = "control" in kinds or ("apply" in kinds)
            context["callable_sorts"] = ["ExternFunction", "Function", "Method"] + ([] if in_parser else ["Action"])
            context["kw_transition"] = ["transition"] if in_parser else []
            context["kw_return"] = ["return"] if not in_parser and any(k in ("action", "function", "apply") for k in kinds) else []
            # a value is returned from functions only (actions and controls return nothing)
            context["kw_return_value"] = ["return"] if "function" in kinds else []
            context["kw_exit"] = ["exit"] if not in_parser and in_control and "function" not in kinds else []
            closed = blocks.last_closed
            header = " ".join(closed.header.split()) if closed else ""
            opens_if = closed is not None and re.match(r"(\}\s*)?(else\s+)?if\b", header) is not None
            context["kw_else"] = ["else"] if opens_if else []
        elif fragment in ("action_ref", "table_property"):
            table = next((b for b in reversed(blocks.stack) if b.kind == "table"), None)
            listed = self._listed_actions(code, table.open if table else offset, offset, analysis)
            if fragment == "action_ref":
                context["unlisted_actions"] = [a for a in gamma.names("Action") if a not in listed]
            else:
                actions = [a for a in listed if a in gamma]
                context["table_actions"] = actions
                context["table_action_pin"] = actions if len(actions) == 1 else []
        key = f"{analysis.uri}#{id(analysis)}#{offset}"
        macro_values = {d.name: d.value for d in analysis.macros_before(offset) if d.params is None}
        self._types_for_effects.put(key, (self.type_table(analysis, offset), macro_values, in_parser))
        context["analysis_key"] = key
        return context

    @staticmethod
    def _listed_actions(code: str, table_open: int, offset: int, analysis: Analysis) -> list[str]:
        """Actions named in the table's ``actions = { ... }`` (read from the text: the
        table is being edited, so its declaration may not parse)."""
        depth, i = 0, table_open
        end = len(code)
        while i < len(code):
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
            i += 1
        body = code[table_open:end]
        m = re.search(r"\bactions\s*=\s*\{([^}]*)\}?", body)
        if m is None:
            return []
        text = re.sub(r"@\w+(\([^)]*\))?", " ", m.group(1))
        return [w for w in re.findall(r"[A-Za-z_]\w*", text)]

    def replay_text(self, raw: str) -> str:
        return re.sub(r"(?:\r\n|\r|\n)[ \t]*", " ", raw)

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        """Cut a suggestion that stopped early so that it ends on a whole name or path."""
        match = _TRAILING_PATH.search(text)
        if match is None:
            return text
        word = match.group()
        while word and not (word in gamma or word in self.keywords):
            cut = max(word.rfind("."), word.rfind("["))
            if cut <= 0:
                word = ""
                break
            word = word[:cut]
        return text[: match.start()] + word if word else text[: match.start()].rstrip(" \t")

    # -- prompt -------------------------------------------------------------------------------

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        """Included declarations the model cannot see in the document: the struct and
        header fields and the callables' signatures, as P4 comments."""
        gamma = hole.gamma
        lines: list[str] = []
        structs: dict[str, list[str]] = {}
        for binding in gamma.global_layer:
            if binding.sort == "Field":
                structs.setdefault(binding.attrs["parent"], []).append(f"{binding.attrs['type']} {binding.attrs['field']};")
        # types are the included file's text: escaped, so no character of it ends the comment
        for name, fields in sorted(structs.items()):
            lines.append("// " + comment_text(f"struct {name} {{ {' '.join(fields)} }}"))
        calls = []
        for binding in gamma.global_layer:
            if binding.sort in ("ExternFunction", "Action") and not binding.name.startswith("_"):
                calls.append(f"{binding.name}({binding.attrs.get('params', '')})")
        if calls:
            lines.append("// functions: " + comment_text("; ".join(sorted(set(calls)))))
        text = "\n".join(lines)
        return text[:1200] + "\n" if text else ""

    # -- hover ----------------------------------------------------------------------------------

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> tuple[Binding, int, int] | None:
        text = snapshot.text
        start = run_start(text, offset, "_.")
        end = offset
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        path = text[start:end].strip(".")
        if not path:
            return None
        gamma = self.gamma_for(self.analysis(text, snapshot.uri, workspace), start)
        binding = gamma.lookup(path)
        if binding is None:
            word_start = max(text.rfind(".", start, offset) + 1, start)
            binding = gamma.lookup(text[word_start:end])
            start = word_start
        if binding is None:
            return None
        return binding, start, end

    # -- diagnostics ------------------------------------------------------------------------------

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        analysis = self.analysis(snapshot.text, snapshot.uri, workspace)
        return check(analysis, self.type_table(analysis))

    # -- the executor's questions -------------------------------------------------------------------

    def statement_effects(self, statement: str, hole: Hole, gamma: Gamma) -> StatementEffects:
        stripped = statement.strip()
        declarations: list[Binding] = []
        tree = self._statement_tree(stripped, gamma)
        if tree is not None and tree.data in ("var_decl", "const_decl"):
            name_node = next((c for c in tree.children if getattr(c, "data", None) == "name"), None)
            type_node = next((c for c in tree.children if hasattr(c, "data") and c.data not in ("name",)), None)
            if name_node is not None and type_node is not None:
                name = str(name_node.children[0])
                type_text = re.sub(r"\s+", "", stripped[type_node.meta.start_pos : type_node.meta.end_pos])
                kind = "variable" if tree.data == "var_decl" else "constant"
                sym = Sym(name, kind, -1, -1, type=type_text)
                declarations += sym_bindings(sym)
                entry = self._types_for_effects.get(str(hole.context.get("analysis_key", "")))
                if entry is not None and kind == "variable":
                    types, macros, in_parser = entry
                    ctx = PathContext(types, in_parser, lambda t: integer_value(t, macros, {}))
                    declarations += derive_paths(declarations[:1], ctx)
        opens = "block" if stripped.endswith("{") else None
        context = dict(hole.context)
        context["kw_else"] = []
        return StatementEffects(declarations, opens, (), context)

    def _statement_tree(self, stripped: str, gamma: Gamma) -> Any:
        """``stripped`` read as one statement (a block it opens closed for the reading), or None."""
        try:
            return parse_text(stripped, 0, len(stripped), "body_item",
                              frozenset(gamma.names("Type")) | self._last_types, suffix=" }" * stripped.endswith("{"))
        except ParseFailure:
            return None

    def next_indents(self, statement: str, hole: Hole, current_indent: str) -> Sequence[str]:
        stripped = statement.strip()
        if re.search(r"\b(select|switch)\b.*\{$", stripped):
            return ()  # select cases and switch labels are other fragments: stop here
        if stripped.endswith("{"):
            return (current_indent + INDENT_UNIT,)
        return (current_indent,)


def _is_word(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")
