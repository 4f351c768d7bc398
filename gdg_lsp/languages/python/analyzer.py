"""Python: the hole at the cursor, Γ there, diagnostics, and statement effects.

The hole is the logical line under the cursor (from its first character, or
from the start of the statement when the line continues an open bracket).
Γ comes from the document with that line blanked out, so that the half-typed
line neither breaks the parse nor declares the name being typed.
"""

from __future__ import annotations

import functools
import hashlib
import keyword
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tree_sitter
import tree_sitter_python

from gdg_lsp import python_ast, stamps
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.gamma import Binding, Frame, Gamma, Origin
from gdg_lsp.languages.base import (
    Analyzer,
    Coverage,
    Finding,
    Hole,
    NoHole,
    StatementEffects,
    ThreadParser,
    WorkspaceContext,
    run_start,
)
from gdg_lsp.languages.python import cache as python_cache
from gdg_lsp.languages.python import classes as python_classes
from gdg_lsp.languages.python import coverage as python_coverage
from gdg_lsp.languages.python import continued as python_continued
from gdg_lsp.languages.python import definitions as python_definitions
from gdg_lsp.languages.python import interpreter, scopes, signatures, surfaces
from gdg_lsp.languages.python import member_warnings
from gdg_lsp.languages.python import members as python_members
from gdg_lsp.languages.python.imports import star_names, unread_reason
from gdg_lsp.languages.suggest import closest
from gdg_lsp.settings import DEFINING_ATTR_METHODS, limits_of

LANGUAGE = tree_sitter.Language(tree_sitter_python.language())

OPENERS = {"if": ("elif", "else"), "for": ("else",), "while": ("else",), "try": ("except", "finally")}

MAX_FIXES = 200
"""Undefined-name diagnostics per document that get a "did you mean" replacement."""

HEADER_WORD = re.compile(r"(async\s+)?(def|class|for|while|if|elif|else|try|except|finally|with|match|case)\b")
CLOSERS_ONLY = re.compile(r"[\s)\]}'\":;,]*")
INDENT_UNIT = "    "


parse = ThreadParser(LANGUAGE)
"""Parse source bytes (incrementally from ``old_tree`` when given)."""


# -- a tiny lexer: is a position inside brackets, a string, or a continued line? --


@dataclass
class LexState:
    depth: int = 0
    in_string: str | None = None  # the open quote, when inside a string
    backslash: bool = False  # the text ends with a line-continuation backslash
    in_comment: bool = False


def lex_state(text: str, start: int, end: int) -> LexState:
    """Bracket depth, open string, comment and continuation after reading text[start:end]."""
    depth = 0
    quote: str | None = None
    i = start
    while i < end:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if text.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
            if ch in "\r\n" and len(quote) == 1:
                quote = None  # an unterminated one-line string ends at the line end
            i += 1
            continue
        if ch == "#":
            nl = min((p for p in (text.find("\n", i, end), text.find("\r", i, end)) if p >= 0), default=-1)
            if nl < 0:
                return LexState(depth, None, False, True)
            i = nl
            continue
        if ch in "\"'":
            triple = text[i : i + 3]
            quote = triple if triple in ('"""', "'''") else ch
            i += len(quote)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        i += 1
    tail = text[start:end].rstrip(" \t")
    backslash = quote is None and (tail.endswith("\\\n") or tail.endswith("\\\r\n") or tail.endswith("\\"))
    return LexState(depth, quote, backslash, False)


def _without_line_comments(text: str) -> str:
    """``text`` with each comment that a line break ends removed (strings are left whole)."""
    if "#" not in text:
        return text
    out: list[str] = []
    i = 0
    quote: str | None = None
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            if text.startswith(quote, i):
                out.append(quote)
                i += len(quote)
                quote = None
                continue
            if ch == "\n" and len(quote) == 1:
                quote = None  # an unterminated one-line string ends at the line end
        elif ch == "#":
            nl = text.find("\n", i)
            if nl < 0:
                out.append(text[i:])  # no line break ends it: left as it is
                break
            i = nl  # the comment goes; the line break stays
            continue
        elif ch in "\"'":
            triple = text[i : i + 3]
            quote = triple if triple in ('"""', "'''") else ch
            out.append(quote)
            i += len(quote)
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    end_n = text.find("\n", offset)
    end_r = text.find("\r", offset)
    ends = [e for e in (end_n, end_r) if e >= 0]
    return start, min(ends) if ends else len(text)


_last_byte = threading.local()


def _byte(text: str, offset: int) -> int:
    """UTF-8 byte offset of code-point ``offset`` in ``text``."""
    if text.isascii():  # O(1) in CPython; most code is ASCII
        return offset
    # A request asks for several offsets of one text, close to each other (the line, the
    # cursor, the hole): count from the last one asked instead of from the start of a
    # text that may be 400 kB (one such encode is ~1 ms).
    memo = getattr(_last_byte, "memo", ())  # the last two texts: the document's, and its repaired copy
    last = next((m for m in memo if m[0] is text), None)
    if last is not None:
        known, known_bytes = last[1], last[2]
        if offset >= known:
            result = known_bytes + len(text[known:offset].encode("utf-8", "surrogatepass"))
        else:
            result = known_bytes - len(text[offset:known].encode("utf-8", "surrogatepass"))
    else:
        result = len(text[:offset].encode("utf-8", "surrogatepass"))
    _last_byte.memo = ((text, offset, result), *(m for m in memo if m[0] is not text))[:2]
    return result


def _char_before(text: str, offset: int, offset_byte: int, byte: int) -> int:
    """Code-point offset of byte offset ``byte`` <= ``offset_byte`` (the byte offset of
    code point ``offset``), reading only the text between them."""
    distance = offset_byte - byte
    if text.isascii() or distance <= 0:
        return offset - distance
    window = text[max(0, offset - distance) : offset].encode("utf-8", "surrogatepass")  # >= distance bytes
    return offset - len(window[len(window) - distance :].decode("utf-8", "surrogatepass"))


DEFINITIONS_SHARE = 0.25
"""Share of the prompt budget (``gdg.contextTokens``, about 3 characters a token) the
definitions of imported names from other files may take."""

MAX_GAMMAS_PER_ANALYSIS = 64

_CLASS_BODY_BLOCKS = frozenset({"block", "decorated_definition", "if_statement", "elif_clause", "else_clause",
                                 "try_statement", "except_clause", "finally_clause", "with_statement"})

_SHAPES: BoundedCache[bytes, python_classes.ClassShape] = BoundedCache("python.class-shapes", 512)


def _shape(node: Any) -> python_classes.ClassShape:
    """The shape of a document class (kept by the digest of its text: unchanged classes
    are not read again after an edit elsewhere)."""
    holder = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
    key = hashlib.blake2b(holder.text or b"", digest_size=16).digest()
    return _SHAPES.get_or_make(key, lambda: python_classes.shape_from_tree(node))


def _attribute_targets(root: Any) -> list[str]:
    """``a.b`` assigned to at the top of a statement (``self.size = 1``, ``self.a, self.b = ...``,
    ``for self.i in ...:``, ``with ... as self.f:``)."""
    found = []
    stack = [target for stmt in root.named_children for target in _statement_targets(stmt)]
    while stack:
        target = stack.pop()
        if target.type == "attribute":
            obj = target.child_by_field_name("object")
            attr = target.child_by_field_name("attribute")
            if obj is not None and obj.type == "identifier" and attr is not None:
                found.append(f"{obj.text.decode()}.{attr.text.decode()}")
        elif target.type in python_coverage.TARGET_CONTAINERS:
            stack.extend(target.named_children)
    return found


def _statement_targets(stmt: Any) -> list[Any]:
    """The target nodes one statement assigns: every left side of an assignment chain, a
    ``for``'s target, a ``with``'s ``as`` targets."""
    if stmt.type == "for_statement":
        return [t for t in (stmt.child_by_field_name("left"),) if t is not None]
    if stmt.type == "with_statement":
        clause = next((c for c in stmt.named_children if c.type == "with_clause"), None)
        return [target for item in (clause.named_children if clause is not None else ())
                for pattern in item.named_children if pattern.type == "as_pattern"
                for alias in pattern.named_children if alias.type == "as_pattern_target"
                for target in alias.named_children]
    node = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else stmt
    targets = []
    while node is not None and node.type in ("assignment", "augmented_assignment"):
        if (left := node.child_by_field_name("left")) is not None:
            targets.append(left)
        right = node.child_by_field_name("right")
        node = right if right is not None and right.type == "assignment" else None
    return targets


def defining_methods(workspace: WorkspaceContext) -> frozenset[str]:
    """The methods in which ``self.new = ...`` declares an attribute (``gdg.python.definingAttrMethods``)."""
    python = getattr(getattr(workspace, "settings", None), "python", None)
    return frozenset(getattr(python, "defining_attr_methods", DEFINING_ATTR_METHODS))


@functools.lru_cache(maxsize=256)
def _package_of(uri: str, roots: tuple[Any, ...]) -> str | None:
    """The dotted package a document is in, relative to the workspace folder holding it
    (for ``from . import x``); None when it is in none."""
    path = uri_to_path(uri)
    if path is None:
        return None
    for root in roots:
        try:
            parts = path.resolve().relative_to(Path(root).resolve()).parts
        except (ValueError, OSError):
            continue
        return ".".join(parts[:-1])
    return None


@dataclass
class _Analysis:
    tree: Any
    scope_tree: scopes.ScopeTree
    text: str
    view: python_cache.ModuleView | None = None
    """Module names and builtins as seen from inside a function (made on first use)."""
    span: python_cache.FunctionSpan | None = None
    """Set when only this function's scopes were rebuilt (python_cache): Γ only inside it."""
    gammas: dict[tuple[int, str], Gamma] = field(default_factory=dict)
    member_gammas: dict[tuple, tuple[int, tuple[Gamma, Any]]] = field(default_factory=dict)
    """Γ with its member layer (members.py) per position and surface reader, with the reader's
    generation it was made at."""
    chains: dict[int, tuple[scopes.Scope, ...]] = field(default_factory=dict)
    bytes_at: dict[int, int] = field(default_factory=dict)
    star_witness: stamps.Witness = field(default_factory=stamps.Witness)
    """The stamps of the star imports' sources and of the candidates looked at before them: the
    analysis is used only while they hold (a module changed on disk binds other names)."""

    def byte(self, offset: int) -> int:
        """``_byte(self.text, offset)``, remembered (every keystroke on a line asks the same)."""
        found = self.bytes_at.get(offset)
        if found is None:
            if len(self.bytes_at) >= MAX_GAMMAS_PER_ANALYSIS:
                self.bytes_at.clear()
            found = self.bytes_at[offset] = _byte(self.text, offset)
        return found

    def chain(self, pos: int) -> tuple[scopes.Scope, ...]:
        """The scopes around byte ``pos``, innermost first (remembered: finding them walks
        the module's list of scopes, and each keystroke on a line asks the same)."""
        found = self.chains.get(pos)
        if found is None:
            if len(self.chains) >= MAX_GAMMAS_PER_ANALYSIS:
                self.chains.clear()
            found = self.chains[pos] = tuple(self.scope_tree.scope_at(pos).chain())
        return found


class PythonAnalyzer(Analyzer):
    name = "python"
    grammar_dir = "python"
    fragment = "statement"
    keywords = scopes.KEYWORDS
    names_too = frozenset(keyword.softkwlist)

    parse_functions_alone = True
    """After an edit inside a top-level function, parse that function alone (its analysis's
    tree then holds only it; python_cache)."""

    def __init__(self, incremental: bool = True) -> None:
        """``incremental=False`` analyses every request from scratch (the reference the
        per-document cache is tested against)."""
        self._cache: BoundedCache[tuple, _Analysis] = BoundedCache("python.analyses", 16)
        self.incremental = incremental
        self._documents = python_cache.document_states()

    def forget(self, uri: str) -> None:
        self._documents.pop(uri)

    def parser(self) -> Callable[[bytes, Any], Any]:
        return parse

    # -- analysis (cached by the text's digest) -------------------------------

    def analysis(self, text: str, tree: Any, uri: str, workspace: WorkspaceContext) -> _Analysis:
        # star imports are resolved in the document's folders and within the source bound: both key it
        key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(), uri,
               tuple(map(str, workspace.roots)), limits_of(workspace.settings).source_bytes)
        if (hit := self._cache.get(key)) is not None and hit.star_witness.holds():
            return hit
        source = text.encode("utf-8", "surrogatepass")
        if callable(tree):  # made only on a miss (an incremental re-parse costs milliseconds)
            tree = tree()
        if tree is None:
            tree = parse(source)
        scope_tree = scopes.build(tree, source)
        witness = self._resolve_star_imports(scope_tree, uri, workspace)
        return self._cache.put(key, _Analysis(tree, scope_tree, text, star_witness=witness))

    def _resolve_star_imports(self, tree: scopes.ScopeTree, uri: str, workspace: WorkspaceContext) -> stamps.Witness:
        """Binds the names of the star imports whose sources can be read; the stamps they were read by."""
        module = tree.module
        unresolved = []
        witness = stamps.Witness()
        for name, level, pos in module.star_imports:
            names = star_names(name, level, uri_to_path(uri), workspace.roots,
                               limits_of(workspace.settings).source_bytes, witness)
            if names is None:
                unresolved.append((name, level, pos))
                continue
            for imported in names:
                module.bind(scopes.Decl(imported, "Import", pos, pos, 0, 0, {"module": "." * level + name, "star": True}))
        module.star_imports = unresolved
        return witness

    def _repaired(self, snapshot: Snapshot, start: int, end: int, workspace: WorkspaceContext) -> tuple[_Analysis, int]:
        """Analysis of the document with [start, end) replaced by ``pass`` (offset of the hole in it).

        Typing on one line leaves this text unchanged, so the document's last one is
        reused as is; after an edit inside one function body only that function is
        analysed again (python_cache); anything else analyses the whole file.
        """
        text = snapshot.text
        repaired = text[:start] + "pass" + text[end:]
        if not self.incremental:
            return self._repaired_whole(snapshot, repaired, start, end, workspace), start
        uri = snapshot.uri
        pos = _byte(text, start)  # the repaired text has the same prefix
        last = self._documents.get(uri)
        if last is not None and not last.star_witness.holds():
            last = None  # a star-imported module changed on disk: its names are read again
        if last is not None and last.text == repaired and (last.span is None or last.span.start <= pos < last.span.end):
            return last, start
        analysis = None
        if last is not None:
            source = repaired.encode("utf-8", "surrogatepass")
            found = python_cache.reanalyse_function(
                last.scope_tree.source, last.tree, self._view(last, uri), source, pos, parse,
                LANGUAGE if self.parse_functions_alone else None,
                last.span is not None and last.span.tree_is_function_only)
            if found is not None:
                # one function's body changed: the module's star imports did not (none is in a function)
                analysis = _Analysis(found.tree, found.scope_tree, repaired, found.view, found.span,
                                     star_witness=last.star_witness)
        if analysis is None:
            analysis = self._repaired_whole(snapshot, repaired, start, end, workspace)
        self._documents.put(uri, analysis)
        return analysis, start

    def _repaired_whole(self, snapshot: Snapshot, repaired: str, start: int, end: int,
                        workspace: WorkspaceContext) -> _Analysis:
        text = snapshot.text

        def tree() -> Any:  # the document's tree with the hole's line edited to `pass`, re-parsed
            if snapshot.tree is None:
                return None
            edited = snapshot.tree.copy()
            start_b, end_b = _byte(text, start), _byte(text, end)
            row = text.count("\n", 0, start)
            column = start_b - _byte(text, text.rfind("\n", 0, start) + 1)
            old_rows = text.count("\n", start, end)
            old_end_col = (end_b - _byte(text, text.rfind("\n", 0, end) + 1)) if old_rows else column + end_b - start_b
            edited.edit(start_byte=start_b, old_end_byte=end_b, new_end_byte=start_b + 4,
                        start_point=(row, column), old_end_point=(row + old_rows, old_end_col),
                        new_end_point=(row, column + 4))
            return parse(repaired.encode("utf-8", "surrogatepass"), edited)

        return self.analysis(repaired, tree, snapshot.uri, workspace)

    def _view(self, analysis: _Analysis, uri: str) -> python_cache.ModuleView:
        if analysis.view is None:
            analysis.view = python_cache.ModuleView.build(
                analysis.scope_tree.module, lambda decl, owner: self._binding(decl, analysis, uri, owner),
                analysis.tree)
        return analysis.view

    def _current(self, snapshot: Snapshot, workspace: WorkspaceContext) -> _Analysis:
        return self.analysis(snapshot.text, snapshot.tree, snapshot.uri, workspace)

    # -- Γ ---------------------------------------------------------------------

    def _gamma(self, analysis: _Analysis, offset: int, uri: str) -> Gamma:
        """Γ at ``offset`` of the analysed text: remembered per analysis and position (each
        caller gets its own frames), resolved from the module view inside a function."""
        pos = analysis.byte(offset)
        key = (pos, uri)
        gamma = analysis.gammas.get(key)
        if gamma is None:
            gamma = self._function_gamma(analysis, pos, uri) if self.incremental else None
            if gamma is None:
                if analysis.span is not None:  # _repaired keeps the hole inside the rebuilt function
                    raise AssertionError("Γ asked outside the function an incremental analysis covers")
                gamma = self._reference_gamma(analysis, pos, uri)
            if len(analysis.gammas) >= MAX_GAMMAS_PER_ANALYSIS:
                analysis.gammas.clear()
            analysis.gammas[key] = gamma
        return Gamma(gamma.global_layer.copy(), [frame.copy() for frame in gamma.frames])

    def _function_gamma(self, analysis: _Analysis, pos: int, uri: str) -> Gamma | None:
        """Γ at ``pos`` inside a function: only the names its function chain binds are
        resolved; module names and builtins come from the module view (a function sees
        them unordered, so they do not depend on ``pos``). None outside functions."""
        tree = analysis.scope_tree
        scope = tree.scope_at(pos)
        chain = list(scope.chain())
        outermost = max((i for i, s in enumerate(chain) if s.kind == "function"), default=None)
        if outermost is None:
            return None
        view = self._view(analysis, uri)
        inner = chain[: outermost + 1]
        inner_ids = {id(s) for s in inner}
        local: set[str] = set()
        for s in inner:
            local.update(s.decls)
            local.update(s.globals)
        framed: dict[int, list[Binding]] = {id(s): [] for s in chain}
        module_extra: dict[str, Binding] = {}
        builtin_extra: dict[str, Binding] = {}
        for name in sorted(local):
            found = tree.resolve(name, pos, scope)
            if found == "builtin":
                builtin_extra[name] = python_cache.builtin_binding(name)
            elif isinstance(found, scopes.Decl):
                owner = tree._owner(found, scope) or chain[-1]
                if id(owner) in inner_ids:
                    framed[id(owner)].append(self._binding(found, analysis, uri, owner))
                elif found is view.first_decls.get(name):
                    module_extra[name] = view.module[name]
                else:  # `global x` resolved to a later module binding (full analyses only)
                    module_extra[name] = self._binding(found, analysis, uri, owner)
        module = [b for n, b in view.module.items() if n not in local]
        builtin = [b for n, b in view.builtins.items() if n not in local]
        if module_extra:
            module = sorted([*module, *module_extra.values()], key=lambda b: b.name)
        if builtin_extra:
            builtin = sorted([*builtin, *builtin_extra.values()], key=lambda b: b.name)
        framed[id(chain[-1])] = module
        return Gamma(Frame("builtins", builtin),
                     [Frame(s.kind if s.kind == "module" else f"{s.kind} {s.name}", framed[id(s)])
                      for s in reversed(chain)])

    def _reference_gamma(self, analysis: _Analysis, pos: int, uri: str) -> Gamma:
        """Γ by resolving every visible name (outside functions, and the reference)."""
        tree = analysis.scope_tree
        frames: dict[int, Frame] = {}
        order: list[scopes.Scope] = list(reversed(list(tree.scope_at(pos).chain())))
        for scope in order:
            frames[id(scope)] = Frame(scope.kind if scope.kind == "module" else f"{scope.kind} {scope.name}")
        builtin_frame = Frame("builtins")
        for name, owner, found in tree.visible(pos):
            if owner is None:
                builtin_frame.declare(Binding(name, "Builtin", {"kind": scopes.builtin_kind(name)}))
            else:
                frames.setdefault(id(owner), Frame(owner.kind)).declare(self._binding(found, analysis, uri, owner))
        return Gamma(builtin_frame, [frames[id(s)] for s in order if id(s) in frames])

    @staticmethod
    def _binding(decl: scopes.Decl, analysis: _Analysis, uri: str, owner: scopes.Scope) -> Binding:
        attrs = {k: v for k, v in decl.attrs.items() if v is not None}
        attrs["scope"] = owner.kind if owner.kind == "module" else f"{owner.kind} {owner.name}"
        origin = None
        if not decl.attrs.get("implicit") and not decl.attrs.get("star"):
            source = analysis.scope_tree.source
            line_start = decl.node_start - decl.col
            column = len(source[line_start : decl.node_start].decode("utf-8", "replace"))
            origin = Origin(uri, decl.row, column)
        return Binding(decl.name, decl.sort, attrs, origin)

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        hole = self.hole_at(snapshot, offset, workspace)
        if isinstance(hole, Hole):
            return hole.gamma
        analysis = self._current(snapshot, workspace)
        return self._with_members(analysis, offset, snapshot.uri, self._gamma(analysis, offset, snapshot.uri),
                                  workspace)[0]

    # -- members after a dot, keyword names of callees (members.py) ---------------------------

    member_surfaces = True
    """Γ holds the members of receivers whose surface is known, and callees' keyword
    names (TileLang has its own ``T.*`` surface and grammar: it turns this off)."""

    def surface_reader(self, workspace: WorkspaceContext) -> surfaces.SurfaceReader:
        """The module surfaces of the interpreter ``gdg.python.interpreter`` names."""
        python = getattr(getattr(workspace, "settings", None), "python", None)
        search = interpreter.resolve(getattr(python, "interpreter", "") or "", workspace.roots)
        reader = surfaces.reader_for(search, workspace.roots, limits_of(workspace.settings).source_bytes)
        reader.changed()  # the workspace modules' surfaces whose files moved are read again
        return reader

    def _with_members(self, analysis: _Analysis, offset: int, uri: str, gamma: Gamma, workspace: WorkspaceContext
                      ) -> tuple[Gamma, python_members.Report | None]:
        """``gamma`` (Γ at ``offset`` of the analysed text) with its member layer, kept per
        analysis and position (each keystroke on a line asks the same)."""
        if not self.member_surfaces:
            return gamma, None
        reader = self.surface_reader(workspace)
        pos = analysis.byte(offset)
        defining = defining_methods(workspace)
        key = (pos, uri, reader, defining)  # the reader itself (an id could be reused by a later one)
        kept = analysis.member_gammas.get(key)
        # kept while the reader has read no module since (a workspace module changed on disk is read anew)
        found = kept[1] if kept is not None and kept[0] == reader.generation else None
        if found is None:
            layer = python_members.MemberLayer(reader, lambda b: self._class_shape(analysis, b, pos, uri),
                                               _package_of(uri, tuple(workspace.roots)))
            # module names and builtins as functions see them (the view's bindings) have the same
            # surfaces at every hole: what the layer learns of them is kept with the view
            view = analysis.view
            memo = view.member_memo.setdefault(reader, {}) if view is not None else None
            extended, report = layer.extend(gamma, self._enclosing_method(analysis, pos, defining), memo,
                                            view.holds if view is not None else None)
            report.described = tuple(report.lines())
            found = extended, report
            if len(analysis.member_gammas) >= MAX_GAMMAS_PER_ANALYSIS:
                analysis.member_gammas.clear()
            analysis.member_gammas[key] = (reader.generation, found)
        extended, report = found
        return Gamma(extended.global_layer.copy(), [frame.copy() for frame in extended.frames]), report

    def _class_node(self, analysis: _Analysis, binding: Binding, pos: int, uri: str) -> Any:
        """The tree-sitter node of the class a Class binding at ``pos`` names, or None."""
        if binding.attrs.get("scope") == "module":
            return self._view(analysis, uri).module_class(binding.name)
        found = analysis.scope_tree.resolve(binding.name, pos)
        if not isinstance(found, scopes.Decl):
            return None
        ident = analysis.tree.root_node.descendant_for_byte_range(found.node_start, found.node_start)
        node = ident.parent if ident is not None else None
        return node if node is not None and node.type == "class_definition" else None

    def _class_shape(self, analysis: _Analysis, binding: Binding, pos: int, uri: str
                     ) -> python_classes.ClassShape | None:
        node = self._class_node(analysis, binding, pos, uri)
        return _shape(node) if node is not None else None

    @staticmethod
    def _enclosing_method(analysis: _Analysis, pos: int, defining: frozenset[str] = frozenset(),
                          shape_of: Callable[[Any], python_classes.ClassShape] = _shape
                          ) -> python_members.Enclosing | None:
        """The method around ``pos`` (functions nested in it included): what ``self.``/``cls.``
        may be followed by, and whether it is one of the ``defining`` methods."""
        node = analysis.tree.root_node.descendant_for_byte_range(pos, pos)
        while node is not None:
            if node.type == "function_definition":
                cls = node.parent  # up through the blocks of the class body (`if ...:` around a method)
                while cls is not None and cls.type in _CLASS_BODY_BLOCKS:
                    cls = cls.parent
                if cls is not None and cls.type == "class_definition":
                    decorators = signatures.tree_decorators(node)
                    params = signatures.tree_parameters(node.child_by_field_name("parameters"))
                    if "staticmethod" in decorators or not params or params[0][1] not in ("positional", "posonly"):
                        return None
                    method = signatures.text(node.child_by_field_name("name"))
                    role = "class" if "classmethod" in decorators or method in (
                        "__new__", "__init_subclass__", "__class_getitem__") else "instance"
                    first = next(ident for _, ident, _, _ in map(signatures.parameter_parts, node.child_by_field_name(
                        "parameters").named_children) if ident is not None)
                    first_at = first.start_byte
                    return python_members.Enclosing(params[0][0], role, shape_of(cls), method, method in defining,
                                                    first_at)
            node = node.parent
        return None

    # -- the hole ----------------------------------------------------------------

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        line_start, line_end = _line_bounds(text, offset)
        if (why := self._in_comment_or_string(snapshot, offset, line_start)) is not None:
            return NoHole(why)
        line = text[line_start:line_end]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        first = line_start + len(indent)
        if offset < first:
            first = offset
            indent = text[line_start:offset]
        region_start = first
        logical = self._logical_line_start(snapshot, line_start)
        if isinstance(logical, NoHole):
            return logical
        if logical < line_start:  # the line continues an open bracket or a backslash
            prev_start, _ = _line_bounds(text, logical)
            prev_line = text[prev_start:]
            indent = prev_line[: len(prev_line) - len(prev_line.lstrip(" \t"))]
            region_start = prev_start + len(indent)
        rest = text[offset:line_end]
        # Only closers after the cursor: the grammar writes them again and the hole replaces the
        # rest of the line. Other text stays: a mid-line hole, whose middle must fit before it.
        mid_line = bool(rest.strip()) and not CLOSERS_ONLY.fullmatch(rest)
        if mid_line and offset > line_start and re.fullmatch(r"\w\w", text[offset - 1 : offset + 1]):
            return NoHole("the cursor is inside a name")
        replace_end = line_end if rest.strip() and not mid_line else offset
        typed = self.replay_text(text[region_start:offset])
        analysis, hole_pos = self._repaired(snapshot, region_start, line_end, workspace)
        gamma = self._gamma(analysis, hole_pos, snapshot.uri)
        gamma, report = self._with_members(analysis, hole_pos, snapshot.uri, gamma, workspace)
        context = self._keyword_context(text, line_start, indent, analysis, hole_pos)
        # A line inside brackets opened on a line above may end wherever Python lets a line
        # break there (after a comma, an opening bracket, an operator): the statement goes on
        # below, as the lines after the hole usually show. Elsewhere the line ends the statement.
        inside_brackets = logical < line_start and lex_state(text, logical, line_start).depth > 0
        context["line_break"] = ["\n"] if inside_brackets else []
        if inside_brackets:  # what binds names the line may read before their binder (continued.py)
            context["statement_rest"] = self._statement_rest(text, logical, line_end)
        context["kwargs"] = list(report.keywords) if report is not None else []
        context["receivers"] = list(report.described) if report is not None else []
        path = tuple(
            s.kind if s.kind == "module" else f"{s.kind} {s.name}"
            for s in reversed(analysis.chain(analysis.byte(hole_pos)))
        )
        return Hole(
            language=self.name, fragment=self.fragment, sort="Stmt", region_start=region_start,
            cursor=offset, replace_end=replace_end, typed=typed, indent=indent, gamma=gamma,
            context=MappingProxyType(context), region_path=path, suffix=rest.rstrip("\r") if mid_line else "",
        )

    def middle_fits(self, hole: Hole, middle: str) -> bool:
        """The statement with ``middle`` at the cursor and the rest of it after (the line's rest,
        and the lines below through its closing bracket when it continues one) parses, and every
        name the middle reads, as the whole statement reads it, is in Γ. The grammar saw the
        middle only as a prefix: its last word may be the start of a name (``ave`` of
        ``average``) that the suffix ends, and the statement reads it as a name."""
        if not hole.suffix:
            return False
        if lex_state(hole.typed + middle, 0, len(hole.typed) + len(middle)).in_comment:
            return False  # the rest of the line would be read as the comment's text
        below = str(hole.context.get("statement_rest", ""))
        statement = hole.typed + middle + self.replay_text(hole.suffix + ("\n" + below if below else ""))
        stripped = statement.strip()
        module = self._as_module(statement)
        source = module.encode()
        tree = parse(source)
        # tree-sitter reads some lines CPython refuses (a positional argument after a keyword one)
        if tree.root_node.has_error or not python_ast.parses(source):
            return False
        at = module.find(stripped) + len(hole.typed) - (len(statement) - len(statement.lstrip()))
        start = len(module[:at].encode())
        end = start + len(middle.encode())
        return all(ref.name in hole.gamma or any(ref.name in scope.decls for scope in ref.scope.chain()
                                                 if scope.kind != "module")  # a comprehension's, a lambda's
                   for ref in scopes.build(tree, source).references if ref.start < end and ref.end > start)

    @staticmethod
    def _in_comment_or_string(snapshot: Snapshot, offset: int, line_start: int) -> str | None:
        text = snapshot.text
        if lex_state(text, line_start, offset).in_comment:
            return "inside a comment"
        tree = snapshot.tree
        if tree is None:
            return None
        b = _byte(text, offset)
        node = tree.root_node.descendant_for_byte_range(b, b)
        while node is not None:
            if node.type == "interpolation":
                return None  # an f-string field is code
            if node.type == "string" and node.start_byte < b < node.end_byte and not node.has_error:
                return "inside a string"
            node = node.parent
        return None

    MAX_LOOKBACK = 20_000
    MAX_REST_LINES = 40
    """Lines below the cursor's line read for the rest of a statement continued over lines."""

    @staticmethod
    def _statement_rest(text: str, logical_start: int, line_end: int) -> str:
        """The lines after ``line_end`` (the cursor's line end) that belong to the statement
        starting at ``logical_start``, through the line where its brackets close; "" when they
        do not close within ``MAX_REST_LINES`` lines."""
        pos = line_end + 1
        for _ in range(PythonAnalyzer.MAX_REST_LINES):
            if pos > len(text):
                break
            nxt = text.find("\n", pos)
            end = len(text) if nxt < 0 else nxt
            state = lex_state(text, logical_start, end)
            if state.depth == 0 and not state.backslash and state.in_string is None:
                return text[line_end + 1 : end]
            if nxt < 0:
                break
            pos = nxt + 1
        return ""

    def unbound_in_continued(self, statement: str, line_start: int, hole: Hole, gamma: Gamma) -> list[str]:
        """Names the line ``statement[line_start:]`` reads that neither Γ nor the statement as the
        document goes on below it binds (the line ended inside brackets: continued.py)."""
        whole = statement + "\n" + str(hole.context.get("statement_rest", ""))
        return python_continued.unbound_on_line(statement[line_start:], whole, gamma)

    @staticmethod
    def _logical_line_start(snapshot: Snapshot, line_start: int) -> int | NoHole:
        """Start of the logical line that the physical line at ``line_start`` belongs to.

        Lexes forward from the start of the top-level statement around the line
        (tree-sitter keeps those even around errors), noting at each line start
        whether a bracket, a backslash or a triple-quoted string is still open.
        """
        text = snapshot.text
        anchor = max(0, line_start - PythonAnalyzer.MAX_LOOKBACK)
        if snapshot.tree is not None:
            b = _byte(text, line_start)
            last = python_cache.last_child_starting_before(snapshot.tree.root_node, b)  # a bisection
            if last is not None:
                anchor = max(anchor, _char_before(text, line_start, b, last.start_byte))
        anchor = text.rfind("\n", 0, anchor) + 1 if anchor else 0
        logical = anchor
        pos = anchor
        while pos < line_start:
            nxt = text.find("\n", pos, line_start)
            if nxt < 0:
                break
            state = lex_state(text, logical, nxt + 1)
            if state.depth == 0 and not state.backslash and state.in_string is None:
                logical = nxt + 1  # a complete logical line ended here
            pos = nxt + 1
        if logical < line_start:
            state = lex_state(text, logical, line_start)
            if state.in_string is not None and len(state.in_string) == 3:
                return NoHole("inside a multi-line string")
        return logical

    def _keyword_context(self, text: str, line_start: int, indent: str, analysis: _Analysis, pos: int) -> dict[str, list[str]]:
        chain = analysis.chain(analysis.byte(pos))
        in_function = bool(chain) and chain[0].kind == "function"
        in_loop = self._in_loop(text, line_start, len(indent))
        context: dict[str, list[str]] = {
            "kw_return": ["return"] if in_function else [],
            "kw_yield": ["yield"] if in_function else [],
            "kw_loop_control": ["break", "continue"] if in_loop else [],
            "kw_elif": [], "kw_else": [], "kw_except": [], "kw_finally": [],
        }
        for word in self._continuations(text, line_start, len(indent)):
            context[f"kw_{word}"] = [word]
        return context

    @staticmethod
    def _previous_lines(text: str, line_start: int):
        """(indent width, stripped text) of earlier non-blank, non-comment lines, nearest first."""
        end = line_start
        while end > 0:
            start = max(text.rfind("\n", 0, end - 1), text.rfind("\r", 0, end - 1)) + 1
            line = text[start:end].rstrip("\r\n")
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                yield len(line) - len(line.lstrip(" \t")), stripped
            end = start

    def _in_loop(self, text: str, line_start: int, width: int) -> bool:
        for indent, stripped in self._previous_lines(text, line_start):
            if indent >= width:
                continue
            width = indent
            m = HEADER_WORD.match(stripped)
            if m is None or not stripped.endswith(":"):
                continue
            word = m.group(2)
            if word in ("def", "class"):
                return False
            if word in ("for", "while"):
                return True
            if width == 0:
                return False
        return False

    def _continuations(self, text: str, line_start: int, width: int) -> Sequence[str]:
        """Clause keywords that may continue the compound statement just above at this indentation."""
        clauses: list[str] = []
        body_seen = False
        for indent, stripped in self._previous_lines(text, line_start):
            if indent > width:
                body_seen = True
                continue
            if indent < width or not body_seen:
                break
            m = HEADER_WORD.match(stripped)
            if m is None:
                break
            word = m.group(2)
            clauses.append(word)
            if word in OPENERS:
                break
            body_seen = False
        if not clauses or clauses[-1] not in OPENERS:
            return ()
        opener, last = clauses[-1], clauses[0]
        if opener == "if":
            return ("elif", "else") if last in ("if", "elif") else ()
        if opener in ("for", "while"):
            return ("else",) if last == opener else ()
        if last == "try":
            return ("except", "finally")
        if last == "except":
            return ("except", "else", "finally")
        if last == "else":
            return ("finally",)
        return ()

    def replay_text(self, raw: str) -> str:
        # Inside brackets (or after a backslash) a line break is only a blank; a comment at the
        # end of a line above is nothing (the one-line grammar has no place for it mid-statement).
        return re.sub(r"\\?(?:\r\n|\r|\n)[ \t]*", " ", _without_line_comments(raw))

    # -- hover -----------------------------------------------------------------

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> tuple[Binding, int, int] | None:
        text = snapshot.text
        start = run_start(text, offset)
        end = offset
        while end < len(text) and (text[end].isalnum() or text[end] == "_"):
            end += 1
        name = text[start:end]
        if not name or not name.isidentifier():
            return None
        analysis = self._current(snapshot, workspace)
        pos = _byte(text, start)
        tree = analysis.scope_tree
        scope = tree.scope_at(pos)
        found = tree.resolve(name, _byte(text, end), scope)
        if isinstance(found, scopes.Decl):
            owner = tree._owner(found, scope) or tree.module
            return self._binding(found, analysis, snapshot.uri, owner), start, end
        if found == "builtin":
            return Binding(name, "Builtin", {"kind": scopes.builtin_kind(name)}), start, end
        # a declaration site itself (def name, parameter) resolves from after it
        for decl in scope.decls.get(name, ()):
            if decl.node_start == pos:
                return self._binding(decl, analysis, snapshot.uri, scope), start, end
        return None

    # -- diagnostics -------------------------------------------------------------

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        analysis = self._current(snapshot, workspace)
        tree = analysis.scope_tree
        source = tree.source
        findings = []
        for ref in tree.references:
            if tree.resolve(ref.name, ref.start, ref.scope) is not None:
                continue
            start = len(source[: ref.start].decode("utf-8", "replace"))
            message = f"undefined name '{ref.name}': nothing with this name exists here"
            data = {"name": ref.name}
            # only names visible at the reference are candidates: the fix is never a ghost.
            # Each lookup resolves every visible name (~1 ms): a file full of unknown names
            # gets fixes for its first MAX_FIXES only, so diagnostics stay cheap.
            if len(findings) < MAX_FIXES and (
                    fix := closest(ref.name, (name for name, _, _ in tree.visible(ref.start)))) is not None:
                data["replacement"] = fix
                message += f"; did you mean {fix}?"
            findings.append(Finding(start, start + len(ref.name), message, "undefined-name", "warning", data))
        python = getattr(getattr(workspace, "settings", None), "python", None)
        if self.member_surfaces and getattr(python, "member_warnings", True):
            findings += self._member_findings(analysis, snapshot.uri, workspace)
        return findings + self._unread_star_sources(tree, snapshot.uri, workspace)

    def _member_findings(self, analysis: _Analysis, uri: str, workspace: WorkspaceContext) -> list[Finding]:
        """Reads of members that do not exist and keywords a known callee does not take
        (member_warnings.py), with Γ's member layer as a hole there would have it."""
        reader = self.surface_reader(workspace)
        package = _package_of(uri, tuple(workspace.roots))
        tree = analysis.scope_tree
        layers: dict[int, tuple[python_members.MemberLayer, Gamma]] = {}
        class_shapes: dict[tuple[int, int], python_classes.ClassShape] = {}

        def shape_of(node: Any) -> python_classes.ClassShape:  # _shape digests the class's text: once a class here
            key = (node.start_byte, node.end_byte)
            if key not in class_shapes:
                class_shapes[key] = _shape(node)
            return class_shapes[key]

        def layer_at(pos: int) -> tuple[python_members.MemberLayer, Gamma]:
            # one per function: what a name means there (a class, a base) does not depend on the
            # place, and a Γ per reference costs ~0.5 ms; outside functions, one per module
            scope = next((s for s in tree.scope_at(pos).chain() if s.kind in ("function", "module")), tree.module)
            if id(scope) not in layers:
                shapes: dict[tuple, python_classes.ClassShape | None] = {}

                def shape(binding: Binding) -> python_classes.ClassShape | None:
                    key = (binding.name, binding.origin)
                    if key not in shapes:
                        shapes[key] = self._class_shape(analysis, binding, pos, uri)
                    return shapes[key]

                offset = len(tree.source[:pos].decode("utf-8", "replace"))
                layers[id(scope)] = (python_members.MemberLayer(reader, shape, package), self._gamma(analysis, offset, uri))
            return layers[id(scope)]

        return member_warnings.findings(member_warnings.Probe(
            tree, analysis.tree.root_node, reader, layer_at,
            lambda decl, owner: self._binding(decl, analysis, uri, owner),
            lambda pos: self._enclosing_method(analysis, pos, shape_of=shape_of), shape_of))

    @staticmethod
    def _unread_star_sources(tree: scopes.ScopeTree, uri: str, workspace: WorkspaceContext) -> list[Finding]:
        """A star import whose source was found but not read (outside the workspace, too large)."""
        findings = []
        for name, level, end in tree.module.star_imports:
            why = unread_reason(name, level, uri_to_path(uri), workspace.roots,
                                limits_of(workspace.settings).source_bytes)
            if why is not None:
                line = tree.source[tree.source.rfind(b"\n", 0, end) + 1 : end].decode("utf-8", "replace")
                stop = len(tree.source[:end].decode("utf-8", "replace"))
                start = stop - len(line)
                findings.append(Finding(start, stop, f"from {'.' * level}{name} import *: {why}", "import-not-read"))
        return findings

    # -- the executor's questions ------------------------------------------------

    def statement_effects(self, statement: str, hole: Hole, gamma: Gamma) -> StatementEffects:
        stripped = statement.strip()
        m = HEADER_WORD.match(stripped)
        word = m.group(2) if m else None
        source = self._as_module(statement)
        syntax = parse(source.encode())
        tree = scopes.build(syntax, source.encode())
        declarations = []
        block_bindings: list[Binding] = []
        for name, decls in tree.module.decls.items():
            decl = decls[0]
            if decl.attrs.get("implicit"):
                continue
            binding = Binding(name, decl.sort, {k: v for k, v in decl.attrs.items() if v is not None})
            grown = python_members.declare(gamma, binding)  # `x = Box()`: x is an instance of Box
            declarations.extend(grown or [binding])
        for target in _attribute_targets(syntax.root_node):  # `self.new = ...`: self has a member more
            declarations.extend(python_members.declare(gamma, Binding(target, "Variable")))
        opens = None
        if stripped.endswith(":") and word in ("def", "class"):
            opens = "function" if word == "def" else "class"
            for child in tree.module.children:
                for name, decls in child.decls.items():
                    if not decls[0].attrs.get("implicit"):
                        block_bindings.append(Binding(name, decls[0].sort, dict(decls[0].attrs)))
        context = dict(hole.context)
        for key in ("kw_elif", "kw_else", "kw_except", "kw_finally"):
            context[key] = []
        if word in ("for", "while") and stripped.endswith(":"):
            context["kw_loop_control"] = ["break", "continue"]
        if word == "def":
            context.update(kw_return=["return"], kw_yield=["yield"], kw_loop_control=[])
        return StatementEffects(declarations, opens, block_bindings, context)

    def coverage(self, statement: str, gamma: Gamma) -> Coverage | None:
        source = self._as_module(statement).encode()
        return python_coverage.coverage(parse(source), source, gamma)

    @staticmethod
    def _as_module(statement: str) -> str:
        """A statement as a small module that parses: a header gets a body, a clause the
        statement it continues."""
        stripped = statement.strip()
        source = stripped + ("\n    pass\n" if stripped.endswith(":") else "\n")
        m = HEADER_WORD.match(stripped)
        word = m.group(2) if m else None
        if word in ("elif", "else", "except", "finally"):
            source = ("if True:\n    pass\n" if word in ("elif", "else") else "try:\n    pass\n") + source
        return source

    def unbound_references(self, statement: str, gamma: Gamma) -> list[str]:
        """Names used inside a comprehension or lambda of the statement that nothing binds."""
        line = statement.strip()
        if not line or not re.search(r"\b(for|lambda)\b", line):
            return []
        source = (line + ("\n    pass\n" if line.endswith(":") else "\n")).encode()
        scope_tree = scopes.build(parse(source), source)
        inner = [s for s in scope_tree.module.children if s.kind in ("comprehension", "lambda")]
        missing = []
        for ref in scope_tree.references:
            if not any(s.start <= ref.start < s.end for s in inner):
                continue
            found = scope_tree.resolve(ref.name, ref.start, ref.scope)
            if isinstance(found, scopes.Decl) and not found.attrs.get("implicit"):
                continue  # bound by the statement itself
            if ref.name in gamma:
                continue
            missing.append(ref.name)
        return missing

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        """Stubs of the definitions, in the workspace's other files, of the names imported
        and used near the cursor (``definitions``), within their share of the budget."""
        if not getattr(workspace.settings, "definitions", True):
            return ""
        imported = [(b.name, str(b.attrs["module"]), str(b.attrs["imported"]))
                    for b in hole.gamma.bindings("Import", has=("module", "imported"))]
        if not imported:
            return ""
        used = python_definitions.names_near(snapshot.text, hole.region_start, hole.cursor)
        tokens = getattr(workspace.settings, "context_tokens", 1024) or 1024
        return python_definitions.context(imported, used, uri_to_path(snapshot.uri), workspace.roots,
                                          int(tokens * 3 * DEFINITIONS_SHARE),
                                          limits_of(workspace.settings).source_bytes)

    def next_indents(self, statement: str, hole: Hole, current_indent: str) -> Sequence[str]:
        if statement.rstrip().endswith(":"):
            return (current_indent + INDENT_UNIT,)
        options = [current_indent]
        width = len(current_indent)
        while width > len(hole.indent):
            width = max(len(hole.indent), width - len(INDENT_UNIT))
            options.append(current_indent[:width])
        return tuple(options)
