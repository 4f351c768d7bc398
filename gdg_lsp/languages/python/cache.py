"""What the Python analyzer keeps per open document so that a keystroke does not
rebuild Γ for the whole file.

Γ at a position inside a function has two parts: what the function chain binds
(its locals, its nested scopes), and everything outside it -- module names and
builtins -- which the function sees *unordered* (its body runs later), so that
part does not depend on where in the function the cursor is. This module keeps:

- ``ModuleView``: the outside part, resolved once per full analysis (each
  module name's first binding, and the builtins no module name hides), as
  ready-made Bindings in name order;
- ``reanalyse_function``: after an edit that stays inside one function body
  (the text outside it is unchanged, only shifted), a new analysis that re-parses
  incrementally from the previous tree and rebuilds the scopes of that function
  only, reusing the module view (its origins moved down by the lines the edit
  added). Anything else -- an edit at module level, in a class body, in a
  signature or decorator, a function using ``global`` -- returns None and the
  caller analyses the whole file, which also makes a fresh module view;
- ``document_states``: the last analysis per document (uri), bounded, dropped on
  didClose.

Correctness is checked differentially (tests/unit/test_python_gamma_cache.py):
Γ from here equals Γ computed from scratch after random edits to real code.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import tree_sitter

from gdg_lsp.caches import BoundedCache
from gdg_lsp.gamma import Binding, Origin
from gdg_lsp.languages.python import scopes

MAX_DOCUMENTS = 16
"""Documents whose last analysis is kept (least recently used dropped first). One
analysis of a 5,000-line module holds 3.4 MB of Python objects (tracemalloc) plus its
tree-sitter tree; the analyzer's digest cache already keeps 16 analyses."""

_SCOPE_WALK = frozenset({"module", "block", "class_definition", "decorated_definition", "if_statement",
                         "elif_clause", "else_clause", "try_statement", "except_clause", "except_group_clause",
                         "finally_clause", "with_statement", "for_statement", "while_statement",
                         "match_statement", "case_clause"})
"""Statements a function definition can sit in without being inside another scope."""

_BUILTIN_BINDINGS: dict[str, Binding] = {}


def builtin_binding(name: str) -> Binding:
    """The Builtin binding of ``name`` (one shared, immutable object per name)."""
    binding = _BUILTIN_BINDINGS.get(name)
    if binding is None:
        binding = _BUILTIN_BINDINGS[name] = Binding(name, "Builtin", {"kind": scopes.builtin_kind(name)})
    return binding


@dataclass(frozen=True)
class ModuleView:
    """Module names and builtins as code inside a function sees them (position-independent)."""

    module: dict[str, Binding]  # name order; each name's first module binding
    builtins: dict[str, Binding]  # name order; builtins that no module name hides
    first_decls: dict[str, scopes.Decl]  # positions as of the analysis that made the view
    starts: dict[str, int]  # byte offset of each binding's identifier in the current text
    star_imports: list[tuple[str, int, int]]
    class_tree: Any = None
    """A whole-file tree whose module-level classes are those of the current text (the
    tree of the analysis that made the view, or of the last whole re-parse): class
    shapes for ``Box.`` and ``Box()`` are read from it (``module_class``)."""
    class_nodes: dict[str, Any] = field(default_factory=dict, compare=False)
    """Module-level class nodes of ``class_tree`` by name (found on first use)."""
    member_memo: dict[Any, dict] = field(default_factory=dict, compare=False)
    """What the member layer learnt of module names and builtins, per surface reader
    (languages/python/members.py): the same for every hole in a function of this text."""

    @classmethod
    def build(cls, module: scopes.Scope, binding_of, tree: Any = None) -> ModuleView:
        """``binding_of(decl, owner)``: the analyzer's Binding for a module declaration;
        ``tree``: the whole-file tree the module scope was read from."""
        names = sorted(module.decls)
        first = {name: module.decls[name][0] for name in names}
        bound = {name: binding_of(decl, module) for name, decl in first.items()}
        hidden = set(first)
        builtin_names = sorted(scopes.BUILTIN_NAMES - hidden)
        return cls(bound, {n: builtin_binding(n) for n in builtin_names}, first,
                   {name: decl.node_start for name, decl in first.items()}, list(module.star_imports), tree)

    def holds(self, name: str, binding: Binding) -> bool:
        """Whether ``binding`` is this view's own binding of ``name`` (a module name or a builtin)."""
        return self.module.get(name) is binding or self.builtins.get(name) is binding

    def module_class(self, name: str) -> Any:
        """The first module-level ``class name`` of ``class_tree``, or None."""
        if self.class_tree is None:
            return None
        if not self.class_nodes:
            for child in self.class_tree.root_node.children:
                node = child
                if node.type == "decorated_definition":
                    node = node.child_by_field_name("definition")
                if node is not None and node.type == "class_definition":
                    ident = node.child_by_field_name("name")
                    if ident is not None and ident.text is not None:
                        self.class_nodes.setdefault(ident.text.decode("utf-8", "replace"), node)
            self.class_nodes.setdefault("", None)  # scanned
        return self.class_nodes.get(name)

    def with_class_tree(self, tree: Any) -> ModuleView:
        """The view reading classes from ``tree`` (a whole re-parse of the current text)."""
        return replace(self, class_tree=tree, class_nodes={}, member_memo={})

    def shifted(self, after: int, delta_bytes: int, delta_rows: int) -> ModuleView:
        """The view after an edit inside a function body that began at byte ``after``:
        bindings declared further down moved by ``delta_rows`` lines (columns stay)."""
        if not delta_bytes and not delta_rows:
            return self
        module = dict(self.module)
        starts = dict(self.starts)
        for name, start in self.starts.items():
            if start <= after:
                continue
            starts[name] = start + delta_bytes
            binding = module[name]
            if delta_rows and binding.origin is not None:
                o = binding.origin
                module[name] = Binding(binding.name, binding.sort, binding.attrs,
                                       Origin(o.uri, o.line + delta_rows, o.character, o.detail))
        memo = {reader: {name: kept for name, kept in names.items() if module.get(name) is kept[1]
                         or self.builtins.get(name) is kept[1]} for reader, names in self.member_memo.items()}
        # (bindings moved by the edit are new objects: what was learnt of them is learnt again)
        return ModuleView(module, self.builtins, self.first_decls, starts, self.star_imports, self.class_tree,
                          self.class_nodes, memo)


@dataclass
class FunctionSpan:
    """The function whose scopes an incremental analysis rebuilt; Γ is only asked inside it."""

    start: int
    end: int
    tree_is_function_only: bool = False
    """The analysis's tree holds this function alone (parsed over its own byte range)."""


# -- finding the function an edit stays in ---------------------------------------------------------


def first_child_ending_after(node: Any, byte: int) -> Any:
    """The first child of ``node`` that ends after ``byte``, or None, by bisection (a module
    has hundreds of children). Not ``Node.first_child_for_byte``: py-tree-sitter 0.26
    crashes the process (segfault) when no child ends after ``byte``."""
    lo, hi = 0, node.child_count
    while lo < hi:
        mid = (lo + hi) // 2
        if node.child(mid).end_byte > byte:
            hi = mid
        else:
            lo = mid + 1
    return node.child(lo) if lo < node.child_count else None


def last_child_starting_before(node: Any, byte: int) -> Any:
    """The last child of ``node`` that starts before ``byte``, or None."""
    after = first_child_ending_after(node, byte)
    if after is not None and after.start_byte < byte:
        return after
    before = after.prev_sibling if after is not None else (node.child(node.child_count - 1) if node.child_count else None)
    return before if before is not None and before.start_byte < byte else None


def _child_covering(node: Any, start: int, end: int) -> Any:
    """The child of ``node`` that holds bytes [start, end]."""
    after = first_child_ending_after(node, start)
    if after is not None and after.start_byte <= start and end <= after.end_byte:
        return after
    before = after.prev_sibling if after is not None else (node.child(node.child_count - 1) if node.child_count else None)
    if before is not None and before.start_byte <= start and end <= before.end_byte:
        return before  # an insertion right at the end of a statement
    return None


def outermost_function(root: Any, start: int, end: int) -> tuple[Any, list[Any]] | None:
    """(the outermost function definition whose body holds bytes [start, end], the
    class definitions around it, outermost first), or None when the range is not
    inside a function body (module level, a class body, a signature, an ERROR node)."""
    classes = []
    node = root
    while True:
        child = _child_covering(node, start, end)
        if child is None or child.type == "ERROR" or child.is_missing:
            return None
        if child.type == "function_definition":
            body = child.child_by_field_name("body")
            if body is None or not (body.start_byte <= start and end <= body.end_byte):
                return None
            return child, classes
        if child.type not in _SCOPE_WALK:
            return None
        if child.type == "class_definition":
            classes.append(child)
        node = child


def common_span(old: bytes, new: bytes) -> tuple[int, int, int]:
    """(start, old_end, new_end): the one region where ``old`` and ``new`` differ, by
    bisection (``startswith`` of a memoryview compares at memcmp speed without copying)."""
    view = memoryview(new)
    limit = min(len(old), len(new))
    lo, hi = 0, limit
    while lo < hi:  # longest common prefix
        mid = (lo + hi + 1) // 2
        if old.startswith(view[:mid]):
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, limit - prefix
    while lo < hi:  # longest common suffix not overlapping the prefix
        mid = (lo + hi + 1) // 2
        if old.endswith(view[len(new) - mid :]):
            lo = mid
        else:
            hi = mid - 1
    return prefix, len(old) - lo, len(new) - lo


def _point(source: bytes, offset: int, row: int, row_start: int) -> tuple[tuple[int, int], int, int]:
    """tree-sitter point of ``offset``, counting from a known (row, row_start) before it."""
    row += source.count(b"\n", row_start, offset)
    nl = source.rfind(b"\n", row_start, offset)
    if nl >= 0:
        row_start = nl + 1
    return (row, offset - row_start), row, row_start


@dataclass
class Incremental:
    tree: Any
    scope_tree: scopes.ScopeTree
    view: ModuleView
    span: FunctionSpan


_function_parser = threading.local()


def _parse_function_alone(language: Any, source: bytes, start: int, end: int, start_point: tuple[int, int],
                          end_point: tuple[int, int]) -> Any:
    """``source`` parsed over bytes [start, end) only (positions stay those of the whole
    text): tens of microseconds for a function, where re-parsing the file incrementally
    takes milliseconds at 5,000 lines."""
    parser = getattr(_function_parser, "parser", None)
    if parser is None:
        parser = _function_parser.parser = tree_sitter.Parser(language)
    parser.included_ranges = [tree_sitter.Range(start_point, end_point, start, end)]
    return parser.parse(source)


def _next_code_is_at_column_0(source: bytes, end: int) -> bool:
    """Whether the first line after byte ``end`` that holds code (not blank, not only a
    comment) starts at column 0, or no such line follows. Only then does a function that
    ends at ``end`` in a parse of its own bytes end there in the whole file's parse too:
    an indented line after it would continue its body."""
    nl = source.find(b"\n", end)
    while nl >= 0:
        line_end = source.find(b"\n", nl + 1)
        line = source[nl + 1 : line_end if line_end >= 0 else len(source)]
        stripped = line.lstrip(b" \t\f\r")
        if stripped and not stripped.startswith(b"#"):
            return len(stripped) == len(line)
        nl = line_end
    return True


def _broken_with_errors_after(root: Any, top: Any) -> bool:
    """Whether top-level node ``top`` (holding the edited function) and another top-level
    node both have errors. Error recovery around a broken function can push the code
    after it to module level (an indented ``for`` read as a module statement binds a
    module name), so a module view read from such a tree belongs to that text alone, not
    to the text with the function repaired. An error elsewhere, after a function that
    parsed cleanly, starts from a clean top-level state and is the same in both texts."""
    if not root.has_error or not top.has_error:
        return False
    return any(child.has_error and child.id != top.id for child in root.children)


def _function_alone(old_fn: Any, old_tree_root: Any, delta: int, new_source: bytes, start: int, new_end: int,
                    language: Any) -> Any:
    """The edited function parsed over its own bytes, or None where that parse could
    differ from the whole file's. Only an undecorated function at column 0 of the module
    qualifies, followed by code at column 0 (checked: after a broken function the next
    lines may be indented): the parser starts it in the state the whole-file parse has
    there (after a complete top-level statement, indentation 0), and the function ends
    where the next column-0 line begins. The result must be one error-free function
    spanning the range: a line dedented out of it, a bracket or string left open, shows
    up as a second statement or an error, and the whole file is parsed instead."""
    if old_fn.start_point[1] != 0 or old_fn.parent is None or old_fn.parent.id != old_tree_root.id:
        return None
    fn_start, fn_end = old_fn.start_byte, old_fn.end_byte + delta
    if not _next_code_is_at_column_0(new_source, fn_end):
        return None
    row = old_fn.start_point[0]
    end_point = _point(new_source, fn_end, row, fn_start)[0]
    tree = _parse_function_alone(language, new_source, fn_start, fn_end, (row, 0), end_point)
    root = tree.root_node
    if root.has_error or root.child_count != 1:
        return None
    fn = root.child(0)
    if fn.type != "function_definition" or fn.start_byte != fn_start or fn.end_byte != fn_end:
        return None
    return tree


def reanalyse_function(old_source: bytes, old_tree: Any, view: ModuleView, new_source: bytes, pos: int,
                       parse, language: Any = None, old_tree_is_function_only: bool = False) -> Incremental | None:
    """The analysis of ``new_source`` when it differs from ``old_source`` only inside
    one function body that also holds byte ``pos`` of the new text; None otherwise.

    With ``language``, a top-level function is parsed over its own bytes (its tree then
    holds that function alone); else, and where that does not apply, the whole text is
    re-parsed incrementally from ``old_tree`` (which must then be a whole-file tree)."""
    start, old_end, new_end = common_span(old_source, new_source)
    found = outermost_function(old_tree.root_node, start, old_end)
    if found is None:
        return None
    old_fn = found[0]
    top = old_fn
    while top.parent is not None and top.parent.id != old_tree.root_node.id:
        top = top.parent
    if _broken_with_errors_after(old_tree.root_node, top):
        return None  # the module view was read from a recovery around the broken function
    # a `global` statement binds module names from inside a function: the module view would change
    if b"global" in old_source[old_fn.start_byte:old_fn.end_byte]:
        return None
    delta = new_end - old_end
    if language is not None and not found[1]:
        alone = _function_alone(old_fn, old_tree.root_node, delta, new_source, start, new_end, language)
        if alone is not None:
            inner = outermost_function(alone.root_node, start, new_end)
            fn = alone.root_node.child(0)
            if (inner is not None and inner[0].id == fn.id and fn.start_byte <= pos < fn.end_byte
                    and b"global" not in new_source[fn.start_byte:fn.end_byte]):
                row_delta = new_source.count(b"\n", start, new_end) - old_source.count(b"\n", start, old_end)
                view = view.shifted(start, delta, row_delta)
                scope_tree = _function_scopes(fn, [], alone.root_node, new_source, view)
                return Incremental(alone, scope_tree, view, FunctionSpan(fn.start_byte, fn.end_byte, True))
    if old_tree_is_function_only:
        return None  # an incremental re-parse needs the whole file's tree
    start_point, row, row_start = _point(old_source, start, 0, 0)
    old_end_point = _point(old_source, old_end, row, row_start)[0]
    new_end_point = _point(new_source, new_end, row, row_start)[0]
    tree = old_tree.copy()
    tree.edit(start_byte=start, old_end_byte=old_end, new_end_byte=new_end, start_point=start_point,
              old_end_point=old_end_point, new_end_point=new_end_point)
    tree = parse(new_source, tree)
    found = outermost_function(tree.root_node, start, new_end)
    if found is None:
        return None
    fn, classes = found
    # the same function, grown or shrunk by the edit, and the same top-level statements:
    # the text around it is unchanged, so everything outside it parses as before
    if (fn.start_byte != old_fn.start_byte or fn.end_byte != old_fn.end_byte + delta
            or tree.root_node.child_count != old_tree.root_node.child_count
            or not fn.start_byte <= pos < fn.end_byte
            or b"global" in new_source[fn.start_byte:fn.end_byte]):
        return None
    delta_rows = new_end_point[0] - old_end_point[0]
    view = view.shifted(start, delta, delta_rows).with_class_tree(tree)  # a class around fn may have changed
    scope_tree = _function_scopes(fn, classes, tree.root_node, new_source, view)
    return Incremental(tree, scope_tree, view, FunctionSpan(fn.start_byte, fn.end_byte))


def _function_scopes(fn: Any, classes: Iterable[Any], root: Any, source: bytes, view: ModuleView) -> scopes.ScopeTree:
    """A scope tree holding the module's first bindings, the classes around ``fn`` (empty:
    a function does not see class bodies) and ``fn``'s own scopes, built from its subtree."""
    module = scopes.Scope("module", "<module>", 0, max(root.end_byte, len(source)) + 1)
    module.decls = {name: [decl] for name, decl in view.first_decls.items()}
    module.star_imports = list(view.star_imports)
    parent = module
    for cls in classes:
        name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        inner = scopes.Scope("class", scopes._text(name) or "<class>", body.start_byte if body else cls.end_byte,
                             cls.end_byte, parent)
        parent.children.append(inner)
        parent = inner
    builder = scopes._Builder(source)
    builder.v_function_definition(fn, parent)
    return scopes.ScopeTree(module, builder.references, source)


# -- the store -----------------------------------------------------------------------------------


def document_states(limit: int = MAX_DOCUMENTS) -> BoundedCache[str, Any]:
    """The last analysis of each open document (by URI), for the next keystroke to start from."""
    return BoundedCache("python.document-states", limit)
