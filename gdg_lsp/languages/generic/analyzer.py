"""The analyzer of a language taught by a fragment file (languages/generic/definition.py).

What it does:

- parses with the language's tree-sitter grammar;
- **holes**: a hole opens where a fragment's trigger text (its ``[hole]
  trigger``, such as ``tl.load(``) stands before the cursor, on the cursor's line
  or up to ``LOOKBACK_LINES`` above it while its brackets are still open, outside
  the node types of ``no_holes_in`` (comments, strings). The region starts at the
  trigger; the fragment whose trigger starts last (the innermost) wins;
- **Γ**: the names the ``declare`` queries capture, each with the sort its rule
  gives and the attributes ``value`` (the type of the ``@value`` node: what the
  name was assigned), ``callee`` (when that value is a call: the called
  expression's text), ``annotation`` (the ``@type`` node's text), empty strings
  when absent, plus the rule's fixed ``attrs``; and the ``builtins``. A name
  belongs to the innermost ``scopes`` node around it (its outer one for rules
  marked ``outer``, such as a function's own name) and is visible inside that
  node: in the innermost scope of the cursor only once declared (or always,
  for ``hoist`` rules: functions, imports), in enclosing scopes wherever it is
  declared (Python's rule for a function body reading module names). Names
  declared on the cursor's own line are not visible (that line is being written).

A language that claims another's documents (``claims``: Triton claims Python
files that import triton) is that language plus its triggers: away from a
trigger, every question (holes, Γ for completion items, diagnostics, hover,
statement effects) goes to the claimed language's own analyzer.

What it does not do (its limits): no types (a member after a dot is whatever
the fragment allows there, not checked against the object), no imports
followed into other files, no flow analysis (a name assigned in one branch is
visible after the ``if``), no diagnostics, and one statement per suggestion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import tree_sitter

from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot
from gdg_lsp.gamma import Binding, Frame, Gamma, Origin
from gdg_lsp.languages.base import Analyzer, Hole, NoHole, ThreadParser, WorkspaceContext
from gdg_lsp.languages.generic.definition import Definition, compiled_queries, load_grammar

LOOKBACK_LINES = 8
MATCH_LIMIT = 4096
MAX_VALUE_TEXT = 64
_CLOSERS = re.compile(r"[\s)\]}'\"]*\Z")


@dataclass(frozen=True)
class _Decl:
    binding: Binding
    scope: tuple[int, int] | None  # byte range of the scope node; None: the file
    start: int  # byte offset of the name
    line: int
    hoist: bool


class GenericAnalyzer(Analyzer):
    def __init__(self, definition: Definition) -> None:
        self.definition = definition
        self.name = definition.name
        self.grammar_dir = definition.name
        self.keywords = frozenset(definition.keywords)
        self._language = load_grammar(definition.tree_sitter)
        self._queries = compiled_queries(definition)
        self._parse = ThreadParser(self._language)
        self._decls: BoundedCache[tuple, list[_Decl]] = BoundedCache(f"generic.{definition.name}.decls", 32)

    def parser(self) -> Callable[[bytes, Any], Any]:
        return self._parse

    @property
    def base(self) -> Analyzer | None:
        """The claimed language's analyzer (None for a language of its own)."""
        if self.definition.claims is None:
            return None
        from gdg_lsp import languages

        return languages.analyzer(self.definition.claims[0])

    # -- Γ -----------------------------------------------------------------------------------

    def _tree(self, snapshot: Snapshot) -> Any:
        tree = snapshot.tree
        # opened before the language was known, or parsed by the claimed language's parser
        if not isinstance(tree, tree_sitter.Tree) or tree.language != self._language:
            tree = self._parse(snapshot.text.encode("utf-8", "surrogatepass"))
        return tree

    def declarations(self, snapshot: Snapshot) -> list[_Decl]:
        key = (snapshot.uri, snapshot.version, len(snapshot.text), hash(snapshot.text))
        found = self._decls.get(key)
        if found is None:
            found = self._declarations(self._tree(snapshot), snapshot.text.encode("utf-8", "surrogatepass"), snapshot.uri)
            self._decls.put(key, found)
        return found

    def _declarations(self, tree: Any, source: bytes, uri: str) -> list[_Decl]:
        scopes = set(self.definition.scopes)
        out: list[_Decl] = []

        def scope_of(node: Any) -> Any:
            node = node.parent
            while node is not None and node.type not in scopes:
                node = node.parent
            return node

        def text(node: Any) -> str:
            return source[node.start_byte:node.end_byte].decode("utf-8", "replace")

        for declare, query in zip(self.definition.declares, self._queries):
            cursor = tree_sitter.QueryCursor(query, match_limit=MATCH_LIMIT)
            for _, captures in cursor.matches(tree.root_node):
                value = (captures.get("value") or [None])[0]
                annotation = (captures.get("type") or [None])[0]
                callee = value.child_by_field_name("function") if value is not None and value.type == "call" else None
                attrs = {"value": value.type if value is not None else "",
                         "callee": text(callee)[:MAX_VALUE_TEXT] if callee is not None else "",
                         "annotation": text(annotation)[:MAX_VALUE_TEXT] if annotation is not None else "",
                         **dict(declare.attrs)}
                for name_node in captures.get("name", ()):
                    name = text(name_node)
                    if not name or len(name) > 256:
                        continue
                    scope = scope_of(name_node)
                    if declare.outer and scope is not None:
                        scope = scope_of(scope)
                    row, column = name_node.start_point
                    line_start = name_node.start_byte - column
                    origin = Origin(uri, row, len(source[line_start:name_node.start_byte].decode("utf-8", "replace")))
                    out.append(_Decl(Binding(name, declare.sort, attrs, origin),
                                     (scope.start_byte, scope.end_byte) if scope is not None else None,
                                     name_node.start_byte, row, declare.hoist))
        out.sort(key=lambda d: d.start)
        return out

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext | None = None) -> Gamma:
        base = self.base
        if base is not None:
            return base.gamma_at(snapshot, offset, workspace or WorkspaceContext())
        return self.declared_gamma(snapshot, offset)

    def declared_gamma(self, snapshot: Snapshot, offset: int) -> Gamma:
        """Γ at ``offset`` from the ``declare`` queries (the module docstring)."""
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        pos = len(text[:offset].encode("utf-8", "surrogatepass"))
        line = text.count("\n", 0, offset)
        decls = self.declarations(snapshot)
        scopes = sorted({d.scope for d in decls if d.scope is not None and d.scope[0] <= pos <= d.scope[1]},
                        key=lambda s: (s[0], -s[1]))
        innermost = scopes[-1] if scopes else None
        global_layer = Frame("builtins", [Binding(name, "Builtin", {"value": "", "callee": "", "annotation": ""})
                                          for name in self.definition.builtins])
        frames = {scope: Frame(f"scope {scope[0]}") for scope in scopes}
        module = Frame("file")
        for decl in decls:
            if decl.line == line:
                continue  # the line being written
            if decl.scope is not None and decl.scope not in frames:
                continue  # a scope the cursor is not in
            if decl.scope == innermost and decl.start >= pos and not decl.hoist:
                continue  # not declared yet
            (module if decl.scope is None else frames[decl.scope]).declare(decl.binding)
        return Gamma(global_layer, [module, *(frames[s] for s in scopes)][-32:])

    # -- the hole ----------------------------------------------------------------------------

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        triggers = self.definition.triggers
        if not triggers and self.base is None:
            return NoHole(f"no fragment of {self.name} is loaded (its fragment files say which text opens a hole)")
        line_start = text.rfind("\n", 0, offset) + 1
        window_start = line_start
        for _ in range(LOOKBACK_LINES):
            if window_start == 0:
                break
            window_start = text.rfind("\n", 0, window_start - 1) + 1
        best: tuple[int, Any] | None = None
        for trigger in triggers:
            at = text.rfind(trigger.text, window_start, offset)
            while at >= 0:
                if at + len(trigger.text) <= offset and _still_open(text[at:offset], trigger.text) and (
                        at >= line_start or _still_open(text[at:line_start], trigger.text)):
                    if best is None or at > best[0]:
                        best = (at, trigger)
                    break
                at = text.rfind(trigger.text, window_start, at)
        if best is None:
            if (base := self.base) is not None:
                return base.hole_at(snapshot, offset, workspace)
            shown = ", ".join(repr(t.text) for t in triggers[:6])
            return NoHole(f"no {self.name} fragment starts here (a hole opens after {shown})")
        start, trigger = best
        tree = self._tree(snapshot)
        where = len(text[:start].encode("utf-8", "surrogatepass"))
        node = tree.root_node.descendant_for_byte_range(where, where)
        while node is not None:
            if node.type in self.definition.no_holes_in:
                return NoHole(f"inside a {node.type}")
            node = node.parent
        line_end = text.find("\n", offset)
        line_end = len(text) if line_end < 0 else line_end
        replace_end = line_end if _CLOSERS.match(text[offset:line_end]) else offset
        line = text[line_start:line_end]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        typed = self.replay_text(text[start:offset])
        return Hole(self.name, trigger.fragment, trigger.anchor, start, offset, replace_end, typed, indent,
                    self.declared_gamma(snapshot, start), region_path=(trigger.fragment,))

    def replay_text(self, raw: str) -> str:
        """A region that continues on the next lines reads as one line (as the fragment was induced)."""
        return re.sub(r"[ \t]*\n[ \t]*", " ", raw)

    # -- the claimed language's questions ----------------------------------------------------

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext):
        base = self.base
        return base.binding_at(snapshot, offset, workspace) if base is not None else None

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext):
        base = self.base
        return base.diagnostics(snapshot, workspace) if base is not None else []

    def forget(self, uri: str) -> None:
        if (base := self.base) is not None:
            base.forget(uri)

    def statement_effects(self, statement: str, hole: Hole, gamma: Gamma):
        base = self.base
        if base is not None and hole.language != self.name:
            return base.statement_effects(statement, hole, gamma)
        return super().statement_effects(statement, hole, gamma)

    def unbound_references(self, statement: str, gamma: Gamma) -> list[str]:
        base = self.base
        return base.unbound_references(statement, gamma) if base is not None else []

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        base = self.base
        return base.trim_partial(text, gamma) if base is not None else super().trim_partial(text, gamma)

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        base = self.base
        if base is not None and hole.language != self.name:
            return base.prompt_context(snapshot, hole, workspace)
        return ""

    def next_indents(self, statement: str, hole: Hole, current_indent: str):
        base = self.base
        if base is not None and hole.language != self.name:
            return base.next_indents(statement, hole, current_indent)
        return (current_indent,)


def _still_open(text: str, trigger: str) -> bool:
    """True while the brackets the trigger opened are not all closed in ``text`` (a trigger
    without brackets is open until the end of its line)."""
    opened = sum(trigger.count(c) for c in "([{") - sum(trigger.count(c) for c in ")]}")
    if opened <= 0:
        return "\n" not in text
    depth = 0
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth <= 0 and ch in ")]}":
            return False
    return True
