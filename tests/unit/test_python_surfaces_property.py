"""The member guarantee, tested as a guarantee: a workspace module and a class with random
members, a random-weight model, random seeds; after a receiver whose surface Γ knows
(``rmod.``, ``self.``), no suggestion names a member the receiver does not have
(checked with Python's own ``ast`` against the members written into the files)."""

from __future__ import annotations

import ast
import keyword
import tempfile
import warnings
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Document
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s) and s not in ("self", "rmod", "go", "p"))

MODULE_OBJECT = {"__name__", "__doc__", "__file__", "__spec__", "__loader__", "__package__", "__dict__",
                 "__builtins__", "__cached__"}
INSTANCE_OBJECT = set(dir(object)) | {"__dict__", "__module__", "__weakref__"}

_CACHES: dict = {}


def _attributes(source: str) -> list[tuple[str, str]]:
    """(receiver, attribute) of every attribute read in ``source`` whose receiver is a plain
    name, outside comprehensions and lambdas (where the grammar leaves names open and the
    analyzer checks them afterwards: not what this test is about)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    inside = {id(n) for scope in ast.walk(tree)
              if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda))
              for n in ast.walk(scope)}
    return [(node.value.id, node.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in inside
            and isinstance(node.value, ast.Name)]


class MaskOnly(PythonAnalyzer):
    """The analyzer without its after-the-fact check (``coverage`` ghosts drop a statement):
    what reaches the output is what the mask allowed."""

    def coverage(self, statement, gamma):
        return None


def _parseable_prefix(line: str) -> str | None:
    """The longest prefix of ``line`` that parses (a budget may cut a suggestion)."""
    for end in range(len(line), 0, -1):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(line[:end].strip() + ("\n    pass" if line[:end].rstrip().endswith(":") else ""))
            return line[:end]
        except SyntaxError:
            continue
    return None


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(functions=st.lists(IDENT, min_size=1, max_size=5, unique=True), values=st.lists(IDENT, max_size=4, unique=True),
       attrs=st.lists(IDENT, min_size=1, max_size=5, unique=True), typed=st.sampled_from(["x = rmod.", "rmod.", "y = self.", "self."]),
       seed=st.integers(0, 10_000))
def test_no_member_after_a_known_receiver_is_outside_its_surface(functions, values, attrs, typed, seed, tiny_vocab):
    values = [v for v in values if v not in functions]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "rmod.py").write_text("".join(f"def {f}(a):\n    return a\n\n" for f in functions)
                                      + "".join(f"{v} = 1\n" for v in values))
        setters = "".join(f"        self.{a} = 1\n" for a in attrs)
        code = f"import rmod\n\n\nclass K:\n    def __init__(self):\n{setters}\n    def go(self, p):\n        {typed}"
        doc = Document((root / "doc.py").as_uri(), "python", 1, code, parse)
        analyzer = MaskOnly()
        hole = analyzer.hole_at(doc.snapshot(), len(code), WorkspaceContext(roots=[root]))
        assert isinstance(hole, Hole)
        surface = {"rmod": set(functions) | set(values) | MODULE_OBJECT,
                   "self": set(attrs) | {"go", "__init__"} | INSTANCE_OBJECT}
        known = {name[len("rmod."):] for name in hole.gamma.names("Member") if name.startswith("rmod.")}
        assert known == surface["rmod"]  # Γ's surface is the module's (the reader is tested here too)
        backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
        cache = _CACHES.setdefault(id(tiny_vocab), GrammarCache(tiny_vocab))
        execution = Executor(analyzer, Decoder(backend), cache).run(
            hole, Prompt(tiny_vocab.encode(code).ids, replay=hole.typed), "scope", max_tokens=40, max_lines=1,
            temperature=1.0, seed=seed)
        assert all(trace.rung in ("gamma", None) for trace in execution.statements)
        line = _parseable_prefix(typed + execution.text) if execution.text else None
        if line is None:
            return
        for receiver, attribute in _attributes(line):
            if receiver in surface:
                assert attribute in surface[receiver], (receiver, attribute, line)
