"""The attribute rules, tested as a guarantee: random class shapes (a base and a class with
random class attributes, methods and attributes their methods assign), random method names,
a random set of defining methods (``gdg.python.definingAttrMethods``), a random-weight model
and random seeds. At an assignment target after ``self.``, ``cls.``, the class, an instance
of it or a workspace module, a decoded suggestion never names an attribute the receiver
lacks -- except after ``self.`` inside a defining method, where a new one may be declared.

What exists is judged apart from the analyzer: the class is built by Python itself from the
generated text (the test's own code, never a user's), and an attribute counts when the class
or an instance has it, or a method of the class assigns it."""

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
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.settings import PythonSettings, Settings
from tests.unit.test_python_surfaces_property import MODULE_OBJECT, MaskOnly, _parseable_prefix

RESERVED = {"self", "cls", "rmod", "go", "p", "inst", "outside", "make", "x"}
IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s) and s not in RESERVED)
NAMES = st.lists(IDENT, min_size=1, max_size=3, unique=True)

FORMS = ("{r}.", "x = {r}.", "p, {r}.", "for {r}.", "with p as {r}.", "del {r}.", "{r}.{a} = {r}.")
"""Typed text before the suggestion: plain, chained and tuple targets, for and with targets, del."""

_CACHES: dict = {}


def _class_source(base_attrs, base_methods, class_attrs, init_attrs, methods, method_attrs) -> str:
    lines = ["class Base:"]
    lines += [f"    {a} = 1" for a in base_attrs]
    for m in base_methods:
        lines += [f"    def {m}(self):", f"        self.{m}_b = 1"]
    lines += ["", "", "class K(Base):"]
    lines += [f"    {a} = 1" for a in class_attrs]
    lines += ["    def __init__(self):"] + [f"        self.{a} = 1" for a in init_attrs] + ["        pass"]
    for m, attr in zip(methods, method_attrs):
        lines += [f"    def {m}(self, p):", f"        self.{attr} = p", "        #HOLE-" + m]
    lines += ["    @classmethod", "    def make(cls, p):", "        p = cls", "        #HOLE-make"]
    return "\n".join(lines) + "\n"


def _judge(class_source: str):
    """(class K, an instance, the attributes K's methods assign), as Python builds them."""
    namespace: dict = {}
    exec(compile(class_source, "<generated>", "exec"), namespace)  # the test's own generated text
    klass = namespace["K"]
    assigned = {node.attr for node in ast.walk(ast.parse(class_source))
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}
    return klass, klass(), assigned


def _targets(line: str) -> list[tuple[str, str, bool]]:
    """(receiver, attribute, whether a new one may be declared there) of every attribute the
    statement stores to or deletes; an augmented target reads it first (never a declaration)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(line)
    augmented = {id(node.target) for node in ast.walk(tree) if isinstance(node, ast.AugAssign)}
    return [(node.value.id, node.attr, id(node) not in augmented) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
            and isinstance(node.value, ast.Name)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(base_attrs=NAMES, base_methods=NAMES, class_attrs=NAMES, init_attrs=NAMES, methods=NAMES,
       module_names=NAMES, defining=st.lists(st.integers(0, 2), max_size=2), where=st.integers(0, 4),
       receiver=st.sampled_from(["self", "cls", "K", "inst", "rmod"]), form=st.sampled_from(FORMS),
       seed=st.integers(0, 10_000), data=st.data())
def test_no_new_attribute_at_a_target_outside_the_defining_methods(
        base_attrs, base_methods, class_attrs, init_attrs, methods, module_names, defining, where, receiver, form,
        seed, data, tiny_vocab):
    method_attrs = data.draw(st.lists(IDENT, min_size=len(methods), max_size=len(methods)))
    class_source = _class_source(base_attrs, base_methods, class_attrs, init_attrs, methods, method_attrs)
    klass, instance, assigned = _judge(class_source)
    defining_methods = sorted({methods[i] for i in defining if i < len(methods)})
    place = "make" if receiver == "cls" else ("outside" if receiver == "inst" else
                                              (methods + ["make", "outside"])[where % (len(methods) + 2)])
    if receiver == "self" and place in ("make", "outside"):
        place = methods[0]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "rmod.py").write_text("".join(f"{n} = 1\n" for n in module_names))
        typed = form.format(r=receiver, a=sorted(assigned)[0] if receiver in ("self", "inst") else "")
        if "{r}.{a}" in form and receiver not in ("self", "inst"):
            typed = form.format(r=receiver, a="__doc__")
        code = "import rmod\n\n\n" + class_source + "\n\ndef outside(p):\n    inst = K()\n    #HOLE-outside\n"
        code = code.replace(f"#HOLE-{place}", typed + "<cursor>")
        cursor = code.index("<cursor>")
        code = code.replace("<cursor>", "")
        doc = Document((root / "doc.py").as_uri(), "python", 1, code, parse)
        analyzer = MaskOnly()
        workspace = WorkspaceContext(roots=[root],
                                     settings=Settings(python=PythonSettings(defining_attr_methods=defining_methods)))
        hole = analyzer.hole_at(doc.snapshot(), cursor, workspace)
        assert isinstance(hole, Hole)
        backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
        cache = _CACHES.setdefault(id(tiny_vocab), GrammarCache(tiny_vocab))
        execution = Executor(analyzer, Decoder(backend), cache).run(
            hole, Prompt(tiny_vocab.encode(code[:cursor]).ids, replay=hole.typed), "scope", max_tokens=40,
            max_lines=1, temperature=1.0, seed=seed)
        assert all(trace.rung in ("gamma", None) for trace in execution.statements)
        line = _parseable_prefix(typed + execution.text) if execution.text else None
        if line is None:
            return
        exists = {
            "self": lambda a: hasattr(instance, a) or a in assigned,
            "inst": lambda a: hasattr(instance, a) or a in assigned,
            "cls": lambda a: hasattr(klass, a),
            "K": lambda a: hasattr(klass, a),
            "rmod": lambda a: a in set(module_names) | MODULE_OBJECT,
        }
        for name, attribute, may_declare in _targets(line.strip()):
            if name not in exists or (name == "self" and may_declare and place in defining_methods):
                continue
            assert exists[name](attribute), (name, attribute, place, defining_methods, line)
