"""The grammar gate for Python: real lines are accepted at the gamma rung with the Γ
the analyzer derives at that line, and the same line with one reference swapped for
a name outside Γ is rejected, by the compiled grammar the decoder uses (each engine's). Members after a
receiver whose members Γ knows (``self.x``, ``os.path.join``) and keywords in calls of
known callees are gated the same way: the line with the member or keyword renamed to one
nothing has is rejected."""

from __future__ import annotations

import ast
import random

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

FILES = ["bisect.py", "fnmatch.py", "genericpath.py", "linecache.py", "glob.py", "copyreg.py", "wave.py", "selectors.py"]
PER_FILE = 4
MEMBER_LINES = 4
"""Extra lines per file drawn among those with an attribute or a keyword argument."""


def _single_line_statements(text: str):
    tree = ast.parse(text)
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, (ast.stmt,)) and node.lineno == node.end_lineno and not hasattr(node, "body"):
            line = lines[node.lineno - 1]
            if ";" in line or line.strip() != ast.get_source_segment(text, node):
                continue
            yield node, line


def _cases(corpus):
    rng = random.Random(2)
    for name in FILES:
        path = corpus / "python" / "Lib" / name
        text = path.read_text(encoding="utf-8")
        candidates = list(_single_line_statements(text))
        chosen = rng.sample(candidates, min(PER_FILE, len(candidates)))
        dotted = [c for c in candidates if c not in chosen and any(
            isinstance(n, (ast.Attribute, ast.keyword)) for n in ast.walk(c[0]))]
        for node, line in chosen + rng.sample(dotted, min(MEMBER_LINES, len(dotted))):
            yield name, text, node, line


def _dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (head := _dotted(node.value)) is not None:
        return f"{head}.{node.attr}"
    return None


def test_gate(corpus, smol_engine):
    analyzer = PythonAnalyzer()
    frag = fragments.fragment("python", "statement")
    checked = rejected = members = keywords = 0
    for name, text, node, line in _cases(corpus):
        indent = line[: len(line) - len(line.lstrip())]
        line_start = sum(len(l) + 1 for l in text.split("\n")[: node.lineno - 1])
        cursor = line_start + len(indent)
        doc = text[:cursor] + text[line_start + len(line):]
        hole = analyzer.hole_at(Snapshot(f"file:///{name}", "python", 1, doc, parse(doc.encode())), cursor, WorkspaceContext())
        assert isinstance(hole, Hole), (name, line)
        grammar = fragments.instantiate(frag, "gamma", hole.gamma, hole.context)
        compiled = smol_engine.get(grammar)
        stmt = line.strip()
        assert full_match(compiled, stmt + "\n"), f"{name}: positive rejected: {stmt!r}"
        checked += 1
        comprehension_spans = [(n.col_offset, n.end_col_offset) for n in ast.walk(node)
                               if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda))]
        for ref in (n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
            if any(a <= ref.col_offset < b for a, b in comprehension_spans):
                continue  # checked after decoding (unbound_references), not by the mask
            start = ref.col_offset - len(indent)
            ghost = "zz_not_in_gamma"
            swapped = stmt[:start] + ghost + stmt[start + len(ref.id):]
            assert not full_match(compiled, swapped + "\n"), f"{name}: ghost accepted: {swapped!r}"
            rejected += 1
        outside = [n for n in ast.walk(node) if not any(a <= getattr(n, "col_offset", -1) < b for a, b in comprehension_spans)]
        for attr in (n for n in outside if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)):
            receiver = _dotted(attr.value)
            owner = hole.gamma.lookup(receiver) if receiver else None
            if owner is None or "members" not in owner.attrs:
                continue  # an open receiver: any attribute (reported as an open position)
            start = attr.end_col_offset - len(attr.attr) - len(indent)
            swapped = stmt[:start] + "zz_no_member" + stmt[start + len(attr.attr):]
            assert stmt[start:start + len(attr.attr)] == attr.attr
            assert not full_match(compiled, swapped + "\n"), f"{name}: member ghost accepted: {swapped!r}"
            members += 1
        for call in (n for n in outside if isinstance(n, ast.Call) and n.keywords):
            callee = _dotted(call.func)
            binding = hole.gamma.lookup(callee) if callee else None
            if binding is None or "keywords" not in binding.attrs:
                continue
            for keyword in (k for k in call.keywords if k.arg is not None):
                start = keyword.col_offset - len(indent)
                swapped = stmt[:start] + "zz_no_keyword" + stmt[start + len(keyword.arg):]
                assert not full_match(compiled, swapped + "\n"), f"{name}: keyword ghost accepted: {swapped!r}"
                keywords += 1
    assert checked >= 30 and rejected >= 30, (checked, rejected)
    print(f"gate: {checked} lines, {rejected} name ghosts, {members} member ghosts, {keywords} keyword ghosts rejected")
    assert members >= 20 and keywords >= 3, (members, keywords)
