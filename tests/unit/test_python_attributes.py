"""Attributes as pylint reads them: after ``self.`` at an assignment target a new
attribute may be written only in the class's defining methods (``__init__``, ``__new__``,
``setUp``, ``asyncSetUp``, ``__post_init__``; ``gdg.python.definingAttrMethods``);
elsewhere, and after a module, a class or an instance of a known class, only the
members that exist. A receiver Γ cannot read stays open and the suggestion says so."""

from __future__ import annotations

import textwrap

from gdg_lsp import fragments
from gdg_lsp.documents import Document
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.settings import PythonSettings, Settings, from_json

FRAGMENT = fragments.fragment("python", "statement")

CLASS = """\
import math
import json
from json import JSONDecoder


class Base:
    kind = "b"

    def helper(self):
        self.seen = 1


class Basket(Base):
    size = 1

    def __init__(self, items):
        self.pelnor_items = list(items)
        self.total = 0

    def add(self, item, average):
        <cursor>

    @classmethod
    def make(cls):
        <classmethod>

    def __post_init__(self):
        <post_init>

    def setUp(self):
        <set_up>

    def reset(self):
        <reset>


def outside(basket: Basket):
    other = Basket([])
    <outside>
"""


def hole_at(marker: str, code: str = CLASS, settings: Settings | None = None) -> Hole:
    code = textwrap.dedent(code)
    markers = [m for m in ("<cursor>", "<classmethod>", "<post_init>", "<set_up>", "<reset>", "<outside>", "<init>")
               if m in code]
    for other in markers:
        if other != marker:
            code = code.replace(other, "pass")
    cursor = code.index(marker)
    code = code.replace(marker, "")
    doc = Document("file:///attributes_test.py", "python", 1, code, parse)
    hole = PythonAnalyzer().hole_at(doc.snapshot(), cursor, WorkspaceContext(settings=settings))
    assert isinstance(hole, Hole), hole
    return hole


def accepts(byte_engine, hole: Hole, line: str) -> bool:
    grammar = fragments.instantiate(FRAGMENT, "gamma", hole.gamma, hole.context)
    return full_match(byte_engine.get(grammar.text), line + "\n")


def test_the_reported_attack_is_refused_outside_a_defining_method(byte_engine):
    hole = hole_at("<cursor>")
    assert not accepts(byte_engine, hole, "self.pelor_items_append_to_list_of_items = [item]")
    assert not accepts(byte_engine, hole, "math.stochastic_mean_variance_std_dev = (average + 1) / 2")
    assert accepts(byte_engine, hole, "self.pelnor_items = [item]")  # an attribute the class has
    assert accepts(byte_engine, hole, "self.pelnor_items.append(item)")
    assert accepts(byte_engine, hole, "x = math.pi")


def test_every_target_form_outside_a_defining_method_takes_existing_attributes_only(byte_engine):
    hole = hole_at("<cursor>")
    for existing, new in [
        ("self.total = 1", "self.totl = 1"),
        ("self.total += 1", "self.totl += 1"),
        ("self.total: int = 1", "self.totl: int = 1"),
        ("self.total: int", "self.totl: int"),
        ("del self.total", "del self.totl"),
        ("self.total, self.size = 1, 2", "self.total, self.sizes = 1, 2"),
        ("(self.total, item) = 1, 2", "(self.totl, item) = 1, 2"),
        ("[self.total] = [1]", "[self.totl] = [1]"),
        ("self.total = self.size = 1", "self.total = self.sizes = 1"),
        ("for self.total in item:", "for self.totl in item:"),
        ("for item, self.total in item:", "for item, self.totl in item:"),
        ("with item as self.total:", "with item as self.totl:"),
        ("self.kind = 'x'", "self.knd = 'x'"),  # inherited along the static MRO
        ("self.seen = 2", "self.sean = 2"),  # assigned in a base's method
    ]:
        assert accepts(byte_engine, hole, existing), existing
        assert not accepts(byte_engine, hole, new), new


def test_a_defining_method_may_declare_a_new_attribute(byte_engine):
    for marker in ("<post_init>", "<set_up>"):
        hole = hole_at(marker)
        assert accepts(byte_engine, hole, "self.cache = {}"), marker
        assert accepts(byte_engine, hole, "self.cache: dict = {}"), marker
        assert accepts(byte_engine, hole, "self.first, self.second = 1, 2"), marker
        assert accepts(byte_engine, hole, "for self.index in range(3):"), marker
        assert not accepts(byte_engine, hole, "self.cache += 1"), marker  # a read: it must exist
        assert not accepts(byte_engine, hole, "del self.cache"), marker
        assert not accepts(byte_engine, hole, "x = self.cache"), marker
    init = hole_at("<init>", CLASS.replace("self.total = 0\n", "self.total = 0\n        <init>\n"))
    assert accepts(byte_engine, init, "self.cache = {}")
    assert accepts(byte_engine, init, "with open('f') as self.stream:")


def test_modules_classes_and_instances_take_existing_members_only(byte_engine):
    for marker in ("<cursor>", "<outside>", "<post_init>"):  # a defining method of Basket says nothing of them
        hole = hole_at(marker)
        for existing, new in [
            ("math.pi = 3", "math.stochastic_mean = 3"),
            ("json.dumps = None", "json.dumpz = None"),
            ("JSONDecoder.decode = None", "JSONDecoder.decoder = None"),
            ("Basket.size = 2", "Basket.sizes = 2"),
            ("Basket.size += 2", "Basket.sizes += 2"),
            ("math.pi, math.e = 1, 2", "math.pi, math.tau2 = 1, 2"),
        ]:
            assert accepts(byte_engine, hole, existing), (marker, existing)
            assert not accepts(byte_engine, hole, new), (marker, new)
    hole = hole_at("<outside>")
    for existing, new in [("other.total = 1", "other.totl = 1"), ("basket.total = 1", "basket.totl = 1"),
                          ("for other.total in []:", "for other.totl in []:")]:
        assert accepts(byte_engine, hole, existing), existing
        assert not accepts(byte_engine, hole, new), new


def test_cls_in_a_classmethod_takes_class_attributes(byte_engine):
    hole = hole_at("<classmethod>")
    assert accepts(byte_engine, hole, "cls.size = 2")
    assert accepts(byte_engine, hole, "cls.kind = 'c'")
    assert not accepts(byte_engine, hole, "cls.registry = []")
    assert not accepts(byte_engine, hole, "cls.total = 0")  # an instance attribute is not the class's


def test_the_defining_methods_are_a_setting(byte_engine):
    settings = Settings(python=PythonSettings(defining_attr_methods=["reset"]))
    assert accepts(byte_engine, hole_at("<reset>", settings=settings), "self.cache = {}")
    assert not accepts(byte_engine, hole_at("<post_init>", settings=settings), "self.cache = {}")
    assert not accepts(byte_engine, hole_at("<reset>"), "self.cache = {}")  # the default list has no reset
    read, problems = from_json({"gdg": {"python": {"definingAttrMethods": ["build"]}}})
    assert problems == [] and read.python.defining_attr_methods == ["build"]
    assert PythonSettings().defining_attr_methods == ["__init__", "__new__", "setUp", "asyncSetUp", "__post_init__"]


def test_a_new_attribute_in_a_defining_method_is_said_and_a_declaration():
    hole = hole_at("<post_init>")
    coverage = PythonAnalyzer().coverage("self.cache = self.total", hole.gamma)
    assert coverage.declared == ["new attribute self.cache (in __post_init__, a defining method)"]
    assert coverage.open == [] and not coverage.ghosts  # a declaration, as `x = ...` is: not an open reference
    assert "self: " in "\n".join(hole.context["receivers"])
    assert "new attributes may be declared (in __post_init__, a defining method)" in "\n".join(hole.context["receivers"])
    # outside the defining methods a new attribute is no declaration but a ghost (the statement is dropped)
    outside = PythonAnalyzer().coverage("self.cache = 1", hole_at("<cursor>").gamma)
    assert outside.ghosts == ["self.cache"] and outside.declared == []
    assert PythonAnalyzer().coverage("math.mean = 1", hole_at("<cursor>").gamma).ghosts == ["math.mean"]
    existing = PythonAnalyzer().coverage("self.total = 1", hole_at("<cursor>").gamma)
    assert existing.ghosts == [] and existing.declared == [] and existing.slotted >= 1


def test_a_receiver_that_cannot_be_read_keeps_new_attributes_open_and_says_why(byte_engine):
    code = "from not_a_module_anywhere import Mystery\n\nclass K(Mystery):\n    def run(self):\n        <cursor>\n"
    hole = hole_at("<cursor>", code)
    assert "members" not in hole.gamma.lookup("self").attrs
    assert accepts(byte_engine, hole, "self.anything = 1")  # open: nothing is known of K's attributes
    coverage = PythonAnalyzer().coverage("self.anything = 1", hole.gamma)
    assert coverage.open == ["new attribute anything of self (class K: its base Mystery cannot be read)"]
    unknown = PythonAnalyzer().coverage("value.anything = 1", hole.gamma)
    assert unknown.open == ["new attribute anything of value"]


def _suggest(hole: Hole, line: str, byte_engine):
    from gdg_lsp.executor import Executor, Prompt
    from gdg_lsp.service.local import Suggestion
    from tests.unit.test_python_surfaces import ScriptedDecoder

    execution = Executor(PythonAnalyzer(), ScriptedDecoder(line, byte_engine), byte_engine).run(
        hole, Prompt([]), "scope", max_tokens=10, max_lines=1)
    return Suggestion(execution.text, hole.cursor, hole.cursor, "python", "scope", rung=execution.rung, hole=hole,
                      execution=execution)


def test_the_label_and_explain_say_what_a_suggestion_declares_and_what_is_open(byte_engine):
    from gdg_lsp.explain import explain_suggestion

    declared = _suggest(hole_at("<post_init>"), "self.cache = {}", byte_engine)
    assert declared.text == "self.cache = {}" and declared.guaranteed and declared.open_positions == []
    assert "declares: new attribute self.cache (in __post_init__, a defining method)" in \
        explain_suggestion(declared, Settings())["text"]
    # gdg/suggestion carries it too (the editors' data)
    assert declared.summary()["coverage"]["declared"] == ["new attribute self.cache (in __post_init__, a defining method)"]
    code = "from not_a_module_anywhere import Mystery\n\nclass K(Mystery):\n    def run(self):\n        <cursor>\n"
    unread = _suggest(hole_at("<cursor>", code), "self.anything = 1", byte_engine)
    assert not unread.guaranteed
    assert unread.open_positions == ["new attribute anything of self (class K: its base Mystery cannot be read)"]
