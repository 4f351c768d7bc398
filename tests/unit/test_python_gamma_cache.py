"""The per-document cache of the Python analyzer (languages/python_cache.py) changes
how fast Γ is ready after a keystroke, never what it is.

Differential: one analyzer keeps its state across edits of a real corpus file (as
the server's does), a second analyses every request from scratch
(``incremental=False``); after each random edit -- lines inserted or deleted in
function bodies, at module level, in class bodies, imports and globals added,
characters typed -- the hole at the edit and at random lines must be identical,
Γ included (frames, names, sorts, attrs, origins).
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gdg_lsp.documents import Document, PositionEncoding
from gdg_lsp.gamma import Binding
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python import cache as python_cache
from gdg_lsp.languages.python import scopes as python_scopes
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.languages.tilelang.analyzer import TileLangAnalyzer
from tests.conftest import CORPUS, PYTHON_CORPUS

WORKSPACE = WorkspaceContext()
FILES = sorted(p for p in PYTHON_CORPUS.rglob("*.py") if 150 <= len(p.read_text(encoding="utf-8").splitlines()) <= 700)[:40]

BODY_LINES = ["value_x = 1", "for item_q in range(3):\n{i}    total_q = item_q", "import json as js_alias",
              "from os import path as op_alias", "global GLOBAL_Z", "GLOBAL_Z = 2", "def inner_w(p):\n{i}    return p",
              "class InnerK:\n{i}    attr_k = 1", "squares = [n * n for n in range(4)]", "with open('f') as fh:\n{i}    pass",
              "(walrus := 5)", "nonlocal missing", "del value_x", "lambda_l = lambda a, b=1: a + b", "x ="]
MODULE_LINES = ["import json", "from collections import OrderedDict as OD", "NEW_CONSTANT = 42",
                "def new_function(a, *args, **kw):\n    return a", "class NewClass(object):\n    field = 1",
                "try:\n    import zlib\nexcept ImportError:\n    zlib = None", "from os.path import *", "if x:"]
CLASS_LINES = ["attr_new = 3", "def method_new(self, q):\n{i}    return q"]


def gamma_key(gamma):
    return [(frame.kind, [(b.name, b.sort, tuple(b.attrs.items()), b.origin) for b in frame])
            for frame in [gamma.global_layer, *gamma.frames]]


def hole_key(hole):
    if not isinstance(hole, Hole):
        return hole
    return (hole.fragment, hole.region_start, hole.cursor, hole.replace_end, hole.typed, hole.indent,
            dict(hole.context), hole.region_path, gamma_key(hole.gamma))


def line_end(text: str, line: int) -> int:
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:line]) + len(lines[line])


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def structure(text: str) -> dict[str, list[int]]:
    """Rows inside function bodies, top-level statement rows, rows inside class bodies."""
    tree = parse(text.encode())
    found: dict[str, list[int]] = {"function": [], "module": [], "class": []}
    for child in tree.root_node.children:
        if child.type not in ("ERROR", "comment"):
            found["module"].append(child.start_point[0])

    def walk(node, kind):
        for child in node.children:
            body = child.child_by_field_name("body") if child.type in ("function_definition", "class_definition") else None
            if body is not None:
                rows = range(body.start_point[0], body.end_point[0] + 1)
                found["function" if child.type == "function_definition" else "class"].extend(rows)
                walk(body, child.type)
            elif child.type not in ("ERROR",):
                walk(child, kind)

    walk(tree.root_node, "module")
    return found


def compare(cached, reference, doc: Document, offset: int) -> None:
    snapshot = doc.snapshot()
    got = cached.hole_at(snapshot, offset, WORKSPACE)
    want = reference.hole_at(snapshot, offset, WORKSPACE)
    assert hole_key(got) == hole_key(want)
    if isinstance(got, Hole):  # gamma_at goes through the hole too, and must hand out its own frames
        again = cached.gamma_at(snapshot, offset, WORKSPACE)
        assert gamma_key(again) == gamma_key(want.gamma)
        again.declare(Binding("zz_leak", "Variable"))
        assert "zz_leak" not in cached.gamma_at(snapshot, offset, WORKSPACE)


@st.composite
def edit_scripts(draw):
    """(file, first hole line, edits): each edit is (change, the line whose end is asked
    next, another line asked after it or None). Edits are drawn against the text as
    edited so far (mostly near the last one, as when typing), so a script is concrete
    data that ``@example`` can pin."""
    path = draw(st.sampled_from(FILES), label="file")
    doc = Document("file:///drawn.py", "python", 1, path.read_text(encoding="utf-8"), parse)
    last = first = draw(st.integers(0, doc.line_count - 1), label="first hole")
    edits = []
    for _ in range(draw(st.integers(1, 8), label="edits")):
        text = doc.text
        lines = text.split("\n")
        places = structure(text)
        kind = draw(st.sampled_from(["function", "function", "function", "type", "module", "class", "delete"]))
        rows = places.get(kind) or places["function"] or [0]
        near = [r for r in rows if abs(r - last) <= 12]
        row = draw(st.sampled_from(near if near and draw(st.booleans(), label="near") else rows))
        if kind == "type":
            col = len(lines[row])
            change = ((row, col, row, col), draw(st.sampled_from(["x", " ", "(", ")", ":", "\n", "\n    ", "a.b", "'"])))
            target = row
        elif kind == "delete":
            change = ((row, 0, row + 1, 0), "")
            target = max(0, row - 1)
        else:
            pool = {"function": BODY_LINES, "module": MODULE_LINES, "class": CLASS_LINES}[kind]
            indent = "" if kind == "module" else indent_of(lines[row])
            new = draw(st.sampled_from(pool)).replace("{i}", indent)
            new = "\n".join(indent + part if not part.startswith(indent) or not indent else part
                            for part in new.split("\n")) if kind != "module" else new
            change = ((row, 0, row, 0), new + "\n")
            target = row
        doc.apply_changes([change], doc.version + 1, PositionEncoding.UTF16)
        last = min(target, doc.line_count - 1)
        other = draw(st.integers(0, doc.line_count - 1), label="hole") if draw(st.booleans(), label="another hole") else None
        edits.append((change, last, other))
        last = other if other is not None else last
    return path, first, tuple(edits)


GLOB_REGRESSION = (PYTHON_CORPUS / "glob.py", 2, (
    (((90, 0, 91, 0), ""), 89, None),  # empties an `if` body: the repaired hole line then breaks the parse
    (((62, 0, 62, 0), "    value_x = 1\n"), 62, None),
))
"""Found by hypothesis: the analysis kept after the first edit came from a tree whose error
recovery put the function's last loop (``for name in ...``) at module level; the second
edit repaired the function, which was then parsed alone up to its old end, and Γ kept the
module binding ``name`` that the whole file's parse no longer has."""


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@example(script=GLOB_REGRESSION)
@given(script=edit_scripts())
def test_cached_gamma_equals_gamma_from_scratch_after_random_edits(script):
    path, first, edits = script
    text = path.read_text(encoding="utf-8")
    cached, reference = PythonAnalyzer(), PythonAnalyzer(incremental=False)
    doc = Document("file:///edited.py", "python", 1, text, parse)
    compare(cached, reference, doc, line_end(text, first))
    for change, line, other in edits:
        doc.apply_changes([change], doc.version + 1, PositionEncoding.UTF16)
        compare(cached, reference, doc, line_end(doc.text, line))
        if other is not None:
            compare(cached, reference, doc, line_end(doc.text, other))


def test_a_function_parsed_alone_is_not_trusted_when_indented_code_follows_it():
    """The regression above, step by step: after the first edit the kept analysis has
    errors around ``_iglob`` and the loop after its (recovered) end at module level; the
    second edit must not parse ``_iglob`` alone up to that end."""
    path, first, edits = GLOB_REGRESSION
    cached, reference = PythonAnalyzer(), PythonAnalyzer(incremental=False)
    doc = Document("file:///glob.py", "python", 1, path.read_text(encoding="utf-8"), parse)
    compare(cached, reference, doc, line_end(doc.text, first))
    (change1, line1, _), (change2, line2, _) = edits
    doc.apply_changes([change1], doc.version + 1)
    compare(cached, reference, doc, line_end(doc.text, line1))
    kept = cached._documents.get(doc.uri)
    assert kept.tree.root_node.has_error and "name" in kept.scope_tree.module.decls  # the broken recovery
    doc.apply_changes([change2], doc.version + 1)
    hole = cached.hole_at(doc.snapshot(), line_end(doc.text, line2), WORKSPACE)
    assert hole.gamma.frames[0].kind == "module" and "name" not in hole.gamma.frames[0]
    compare(cached, reference, doc, line_end(doc.text, line2))


def test_each_guard_alone_recognises_the_broken_recovery():
    """Both guards in python_cache reject the kept analysis of the regression on their own:
    the broken ``_iglob`` has errors after it (its module view came from the recovery), and
    indented code follows its recovered end. A clean function followed by an error
    elsewhere, or by code at column 0 (comments aside), is still reused."""
    path, first, edits = GLOB_REGRESSION
    cached = PythonAnalyzer()
    doc = Document("file:///glob.py", "python", 1, path.read_text(encoding="utf-8"), parse)
    doc.apply_changes([edits[0][0]], doc.version + 1)
    cached.hole_at(doc.snapshot(), line_end(doc.text, edits[0][1]), WORKSPACE)
    kept = cached._documents.get(doc.uri)
    root = kept.tree.root_node
    iglob = next(c for c in root.children if c.type == "function_definition" and b"def _iglob" in c.text)
    assert python_cache._broken_with_errors_after(root, iglob)
    assert not python_cache._next_code_is_at_column_0(kept.scope_tree.source, iglob.end_byte)
    clean_then_broken = parse(b"def f(a):\n    return a\n\nY = (\n")
    assert clean_then_broken.root_node.has_error
    assert not python_cache._broken_with_errors_after(clean_then_broken.root_node, clean_then_broken.root_node.child(0))
    source = b"def f(a):\n    return a\n\n    # a comment\n\nY = 1\n"
    assert python_cache._next_code_is_at_column_0(source, source.index(b"a\n") + 1)
    assert python_cache._next_code_is_at_column_0(source, len(source))


def _typing_document():
    code = textwrap.dedent("""\
        import os
        from json import loads as parse_json

        LIMIT = 10

        class Box:
            size = 1

            def grow(self, by):
                before = self.size
                self.size += by
                return before

        def helper(a, b=LIMIT):
            total = a + b
            return total

        def main(argv):
            first = argv[0]

        AFTER = 2

        def later():
            return AFTER
        """)
    lines = code.split("\n")
    lines[19] = "    "  # dedent empties blank lines; the cursor line is indented in main's body
    return Document("file:///typing.py", "python", 1, "\n".join(lines), parse)


def test_typing_inside_a_function_rebuilds_only_that_function(monkeypatch):
    """After the first request, Enter and keys inside ``main`` never analyse the whole
    file again; Γ stays equal to the one from scratch (origins of AFTER and later
    move down with the new lines)."""
    doc = _typing_document()
    cached, reference = PythonAnalyzer(), PythonAnalyzer(incremental=False)
    line = 19
    compare(cached, reference, doc, doc.offset_at(line, 4))
    whole = []
    real_build = python_scopes.build
    monkeypatch.setattr(python_scopes, "build", lambda *a: whole.append(1) or real_build(*a))
    for step, key in enumerate("second = first\nthird = [x for x in second]\nif third:\n    print(third)"):
        col = len(doc.line_text(line))
        doc.apply_changes([((line, col, line, col), key)], doc.version + 1)
        if key == "\n":
            line += 1
            indent = "        " if doc.line_text(line - 1).rstrip().endswith(":") else "    "
            doc.apply_changes([((line, 0, line, 0), indent)], doc.version + 1)
        snapshot = doc.snapshot()
        offset = doc.offset_at(line, len(doc.line_text(line)))
        before = len(whole)
        got = cached.hole_at(snapshot, offset, WORKSPACE)
        assert len(whole) == before, f"key {step} ({key!r}) analysed the whole file"
        monkeypatch.setattr(python_scopes, "build", real_build)
        assert hole_key(got) == hole_key(reference.hole_at(snapshot, offset, WORKSPACE))
        monkeypatch.setattr(python_scopes, "build", lambda *a: whole.append(1) or real_build(*a))
    h = cached.hole_at(doc.snapshot(), offset, WORKSPACE)
    assert {"first", "second", "third", "LIMIT", "helper", "Box", "parse_json"} <= set(h.gamma.names())
    assert h.gamma.lookup("AFTER").origin.line == reference.hole_at(doc.snapshot(), offset, WORKSPACE).gamma.lookup("AFTER").origin.line


def test_module_level_edit_analyses_the_whole_file_again(monkeypatch):
    doc = _typing_document()
    cached = PythonAnalyzer()
    cached.hole_at(doc.snapshot(), doc.offset_at(19, 4), WORKSPACE)
    doc.apply_changes([((4, 0, 4, 0), "EXTRA = 1\n")], doc.version + 1)
    calls = []
    real_build = python_scopes.build
    monkeypatch.setattr(python_scopes, "build", lambda *a: calls.append(1) or real_build(*a))
    h = cached.hole_at(doc.snapshot(), doc.offset_at(20, 4), WORKSPACE)
    assert calls and "EXTRA" in h.gamma


def test_global_statement_in_the_edited_function_falls_back(monkeypatch):
    doc = _typing_document()
    cached, reference = PythonAnalyzer(), PythonAnalyzer(incremental=False)
    cached.hole_at(doc.snapshot(), doc.offset_at(19, 4), WORKSPACE)
    doc.apply_changes([((19, 4, 19, 4), "global LIMIT\n    LIMIT = 3\n    ")], doc.version + 1)
    compare(cached, reference, doc, doc.offset_at(21, 4))


def test_forget_drops_the_document_and_the_store_is_bounded():
    cached = PythonAnalyzer()
    doc = _typing_document()
    cached.hole_at(doc.snapshot(), doc.offset_at(19, 4), WORKSPACE)
    assert len(cached._documents) == 1
    cached.forget(doc.uri)
    assert len(cached._documents) == 0
    limit = cached._documents.limit
    for i in range(limit + 3):
        other = Document(f"file:///d{i}.py", "python", 1, "def f(a):\n    \n", parse)
        cached.hole_at(other.snapshot(), other.offset_at(1, 4), WORKSPACE)
    assert len(cached._documents) == limit


@pytest.mark.parametrize("path", sorted((CORPUS / "tilelang").rglob("*.py"))[:3] or [None])
def test_tilelang_typing_in_a_kernel_matches_from_scratch(path):
    if path is None:
        pytest.fail("no TileLang corpus files")
    text = path.read_text(encoding="utf-8")
    cached, reference = TileLangAnalyzer(), TileLangAnalyzer(incremental=False)
    doc = Document("file:///kernel.py", "python", 1, text, parse)
    rows = structure(text)["function"]
    row = rows[len(rows) // 2]
    indent = indent_of(doc.line_text(row))
    doc.apply_changes([((row, 0, row, 0), indent + "\n")], doc.version + 1)
    for key in "acc = A":
        col = len(doc.line_text(row))
        doc.apply_changes([((row, col, row, col), key)], doc.version + 1)
        compare(cached, reference, doc, doc.offset_at(row, len(doc.line_text(row))))
    doc.apply_changes([((row, len(doc.line_text(row)), row, len(doc.line_text(row))), "\n" + indent)], doc.version + 1)
    compare(cached, reference, doc, doc.offset_at(row + 1, len(doc.line_text(row + 1))))


def test_cursor_on_a_trailing_blank_line_past_every_statement():
    """The hole's anchor is found by bisection over the module's statements; on a blank
    line after the last one no statement ends after the cursor (py-tree-sitter's
    first_child_for_byte crashed the process there)."""
    doc = Document("file:///tail.py", "python", 1, "def f(a):\n    x = 1\n    \n\n", parse)
    for line in (2, 3, 4):
        compare(PythonAnalyzer(), PythonAnalyzer(incremental=False), doc, doc.offset_at(line, 4))


def test_a_top_level_function_is_parsed_alone_and_edits_that_leave_it_are_caught():
    """After an edit inside a top-level function only that function is parsed (its own
    byte range); a line dedented out of it, a bracket left open at its end, or a hole in
    another function must still give Γ from scratch."""
    doc = _typing_document()
    cached, reference = PythonAnalyzer(), PythonAnalyzer(incremental=False)
    compare(cached, reference, doc, doc.offset_at(19, 4))
    doc.apply_changes([((19, 4, 19, 4), "second = first\n    ")], doc.version + 1)
    compare(cached, reference, doc, doc.offset_at(20, 4))
    span = cached._documents.get(doc.uri).span
    assert span is not None and span.tree_is_function_only
    edits = [((20, 0, 20, 0), "LEAVES = 1\n"),  # dedented: ends main, a module binding now
             ((21, 0, 21, 0), "    opened = (first,\n"),  # an open bracket runs into the next lines
             ((22, 0, 22, 0), "\n")]
    for change in edits:
        doc.apply_changes([change], doc.version + 1)
        for line in (change[0][0], doc.line_count - 2, 15):
            compare(cached, reference, doc, doc.offset_at(line, len(doc.line_text(line))))
