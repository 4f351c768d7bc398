"""Members after a dot and keyword arguments in Python, read statically (issue 23).

Γ at a hole holds, for each receiver whose surface is known, its members as qualified
names (``json.dumps``, ``self.size``, ``os.path.join``) and, for callees whose
signature is known, their keyword names; the statement grammar at the gamma rung
admits exactly those after the receiver's dot and in the callee's call (the compiled
grammar is asked, as the decoder would). Unknown receivers stay open, and the
suggestion reports such positions.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from gdg_lsp import fragments
from gdg_lsp.documents import Document
from gdg_lsp.gamma import Binding
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python import interpreter, surfaces
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.settings import PythonSettings, Settings
from tests.python_env import add_package, make_env, set_version

FRAGMENT = fragments.fragment("python", "statement")


def hole_in(code: str, workspace: WorkspaceContext | None = None, analyzer: PythonAnalyzer | None = None) -> Hole:
    """The hole at the line ``<cursor>`` marks (the marker removed)."""
    code = textwrap.dedent(code)
    cursor = code.index("<cursor>")
    code = code.replace("<cursor>", "")
    doc = Document("file:///member_test.py", "python", 1, code, parse)
    hole = (analyzer or PythonAnalyzer()).hole_at(doc.snapshot(), cursor, workspace or WorkspaceContext())
    assert isinstance(hole, Hole), hole
    return hole


def accepts(byte_cache, hole: Hole, line: str) -> bool:
    grammar = fragments.instantiate(FRAGMENT, "gamma", hole.gamma, hole.context)
    return full_match(byte_cache.get(grammar.text), line + "\n")


STDLIB = """\
import json
import os.path
import argparse as ap

def main(argv):
    <cursor>
"""


def test_stdlib_module_members_are_gamma_and_nothing_else_follows_the_dot(byte_cache):
    hole = hole_in(STDLIB)
    gamma = hole.gamma
    assert {"json.dumps", "json.loads", "json.JSONDecoder", "os.path.join", "os.getcwd", "ap.ArgumentParser"} <= set(
        gamma.names("Member"))
    assert "json.dumpz" not in gamma and "os.path.jion" not in gamma
    assert gamma.lookup("json").attrs["members"].startswith("module json")
    for good in ("text = json.dumps(argv)", "path = os.path.join(argv, 'x')", "cwd = os.getcwd()",
                 "parser = ap.ArgumentParser(prog='x', description=argv)", "json.loads(argv)[0]"):
        assert accepts(byte_cache, hole, good), good
    for ghost in ("text = json.dumpz(argv)", "path = os.path.jion(argv, 'x')", "parser = ap.Parser()",
                  "parser = ap.ArgumentParser(programme='x')", "json.nothing"):
        assert not accepts(byte_cache, hole, ghost), ghost


def test_receiver_with_unknown_type_stays_open_and_is_reported(byte_cache):
    hole = hole_in(STDLIB)
    # the result of a call has no known surface: any attribute follows, and the analyzer says so
    line = "text = json.dumps(argv).anything_at_all()"
    assert accepts(byte_cache, hole, line)
    coverage = PythonAnalyzer().coverage(line, hole.gamma)
    assert coverage.open == ["attribute anything_at_all after json.dumps(argv)"]
    assert not coverage.ghosts and coverage.slotted >= 3


CLASSES = """\
class Base:
    kind = "b"

    def helper(self, value, *, flag=False):
        self.seen = value

    @property
    def label(self):
        return self.kind


class Box(Base):
    size = 1

    def __init__(self, width, height=2):
        self.width = width
        self.area = width * height

    def grow(self, by):
        before = self.size
        <cursor>
        return before


def make():
    return Box(3)
"""


def test_self_members_follow_the_static_mro(byte_cache):
    hole = hole_in(CLASSES)
    members = {n for n in hole.gamma.names("Member") if n.startswith("self.")}
    assert {"self.width", "self.area", "self.size", "self.grow", "self.helper", "self.seen", "self.kind",
            "self.label", "self.__class__", "self.__dict__"} <= members
    assert "self.nothere" not in members
    assert accepts(byte_cache, hole, "self.helper(self.width, flag=True)")
    # grow is no defining method (__init__ is): a target after self. is an attribute that exists
    assert not accepts(byte_cache, hole, "self.new_attr = self.area + 1")
    assert accepts(byte_cache, hole, "self.area = self.area + 1")
    init = hole_in(CLASSES.replace("        <cursor>\n", "").replace(
        "self.area = width * height\n", "self.area = width * height\n        <cursor>\n"))
    assert accepts(byte_cache, init, "self.new_attr = self.area + 1")
    assert not accepts(byte_cache, hole, "self.helpr(self.width)")
    assert not accepts(byte_cache, hole, "x = self.widht")
    assert not accepts(byte_cache, hole, "self.helper(1, flg=True)")  # no known callee has `flg`


def test_instances_of_known_classes_and_constructor_keywords(byte_cache):
    code = CLASSES.replace("def make():\n    return Box(3)", "def make():\n    b = Box(3)\n    <cursor>").replace(
        "        <cursor>\n", "")
    hole = hole_in(code)
    assert {"b.width", "b.grow", "b.seen", "Box.size", "Box.helper"} <= set(hole.gamma.names("Member"))
    assert "Box.width" not in hole.gamma  # an instance attribute is not the class's
    assert hole.gamma.lookup("Box").attrs["keywords"] == ("height", "width")
    assert accepts(byte_cache, hole, "c = Box(width=2, height=3)")
    assert not accepts(byte_cache, hole, "c = Box(depth=2)")
    assert accepts(byte_cache, hole, "b.grow(2)")
    assert not accepts(byte_cache, hole, "b.shrink(2)")


def test_keyword_arguments_of_functions_builtins_and_open_callees(byte_cache):
    hole = hole_in("""\
        def area(width, height=1, /, *, unit="m"):
            return width

        def scale(factor, **options):
            return factor

        def main(items):
            <cursor>
        """)
    assert hole.gamma.lookup("area").attrs["keywords"] == ("unit",)  # width, height are positional-only
    assert "keywords" not in hole.gamma.lookup("scale").attrs  # **options: any keyword
    assert accepts(byte_cache, hole, "x = area(items, 2, unit='cm')")
    assert not accepts(byte_cache, hole, "x = area(width=items)")
    assert accepts(byte_cache, hole, "print(items, end='', sep=', ')")
    assert not accepts(byte_cache, hole, "print(items, ending='')")
    assert accepts(byte_cache, hole, "x = sorted(items, key=len, reverse=True)")
    assert not accepts(byte_cache, hole, "x = sorted(items, reversed=True)")
    assert accepts(byte_cache, hole, "x = scale(2, anything=1)")  # open: reported, not restricted
    coverage = PythonAnalyzer().coverage("x = scale(2, anything=1)", hole.gamma)
    assert coverage.open == ["keyword anything of scale"]
    # a keyword another callee has passes the grammar (one set for all known callees)
    # and is caught once the statement is complete
    assert PythonAnalyzer().coverage("x = area(items, end='')", hole.gamma).ghosts == ["area(end=)"]


def test_a_suggestion_grows_members_and_instances():
    analyzer = PythonAnalyzer()
    in_init = CLASSES.replace("        <cursor>\n", "").replace(
        "self.area = width * height\n", "self.area = width * height\n        <cursor>\n")
    hole = hole_in(in_init, analyzer=analyzer)
    gamma = hole.gamma.overlay()
    effects = analyzer.statement_effects("self.cache = {}", hole, gamma)  # __init__ may declare it
    assert [b.name for b in effects.declarations] == ["self.cache"]
    for binding in effects.declarations:
        gamma.declare(binding)
    assert "self.cache" in gamma
    assert [b.name for b in analyzer.statement_effects("for self.index in range(3):", hole, gamma).declarations] == [
        "self.index"]
    # in grow, an ordinary method, a new attribute adds nothing (the grammar never writes one there)
    grow = hole_in(CLASSES, analyzer=analyzer)
    assert analyzer.statement_effects("self.cache = {}", grow, grow.gamma.overlay()).declarations == []
    effects = analyzer.statement_effects("other = Box(2)", hole, gamma)
    names = {b.name for b in effects.declarations}
    assert {"other", "other.width", "other.grow"} <= names
    assert "members" in next(b for b in effects.declarations if b.name == "other").attrs
    # `json.x = 1` on an unknown receiver adds nothing
    assert analyzer.statement_effects("unknown.x = 1", hole, gamma).declarations == []


def test_open_receivers_explain_why():
    hole = hole_in("""\
        import not_a_module_anywhere
        from json import JSONDecoder

        class Dyn:
            def __getattr__(self, name):
                return name

            def use(self):
                <cursor>
        """)
    receivers = "\n".join(hole.context["receivers"])
    assert "not_a_module_anywhere: module not_a_module_anywhere: open (not found" in receivers
    assert "self: instance of Dyn: open (class Dyn: the class defines __getattr__)" in receivers
    assert "members" not in hole.gamma.lookup("self").attrs
    assert hole.gamma.lookup("JSONDecoder").attrs["members"].startswith("class JSONDecoder")


# -- installed packages: read, never imported -------------------------------------------------------


@pytest.fixture
def env(tmp_path):
    """A virtual environment with package ``pkgx`` (whose import writes MARKER) and a
    workspace folder beside it."""
    python, site = make_env(tmp_path / "env")
    marker = tmp_path / "MARKER"
    add_package(site, "pkgx", "1.0", "def run(a, *, fast=False):\n    return a\n\nVALUE = 1\n", marker)
    (site / "pkgx" / "sub.py").write_text("def helper():\n    return 2\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    interpreter.forget()
    yield python, site, marker, workspace
    interpreter.forget()


def test_a_package_in_a_venv_is_read_and_never_imported(env, byte_cache):
    python, site, marker, workspace = env
    settings = Settings(python=PythonSettings(interpreter=str(python)))
    ws = WorkspaceContext(roots=[workspace], settings=settings)
    hole = hole_in("import pkgx\nimport pkgx.sub\n\ndef f(a):\n    <cursor>\n", ws)
    assert {"pkgx.run", "pkgx.VALUE", "pkgx.sub", "pkgx.sub.helper"} <= set(hole.gamma.names("Member"))
    assert hole.gamma.lookup("pkgx.run").attrs["keywords"] == ("a", "fast")
    assert accepts(byte_cache, hole, "x = pkgx.run(a, fast=True)")
    assert not accepts(byte_cache, hole, "x = pkgx.walk(a)")
    assert "version 1.0" in "\n".join(hole.context["receivers"])
    assert not marker.exists(), marker.read_text()
    assert "pkgx" not in sys.modules


def test_the_interpreter_setting_is_asked_once_and_a_workspace_executable_is_never_run(env, monkeypatch):
    python, site, marker, workspace = env
    calls = []
    real = interpreter._ask
    monkeypatch.setattr(interpreter, "_ask", lambda exe: calls.append(exe) or real(exe))
    first = interpreter.resolve(str(python), [workspace])
    again = interpreter.resolve(str(python), [workspace])
    assert first is again and len(calls) == 1 and first.how == "asked"
    assert site in first.site
    # a `python` inside the workspace (a cloned repository may ship one) is read, not run
    inside = workspace / ".venv"
    inside_python, inside_site = make_env(inside)
    os.unlink(inside_python)
    inside_python.write_text(f"#!/bin/sh\n{shell_trap(marker)}")  # would write the marker if run
    inside_python.chmod(0o755)
    found = interpreter.resolve("", [workspace])  # the default: the workspace's .venv
    assert found.how == "static" and "not run" in (found.problem or "")
    assert inside_site in found.site and len(calls) == 1
    assert not marker.exists()


def shell_trap(marker: Path) -> str:
    return f"echo ran > {marker}\n"


def test_a_version_change_invalidates_the_cached_surface(env):
    python, site, marker, workspace = env
    search = interpreter.search_path_for(python, [workspace])
    reader = surfaces.SurfaceReader(search, [workspace], revalidate_s=0.0)
    before = reader.module("pkgx")
    assert before.version == "1.0" and "run" in before.members
    init = site / "pkgx" / "__init__.py"
    stat = init.stat()
    init.write_text("def walk(a):\n    return a\n")
    os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same modification time...
    with open(init, "a") as f:  # ...and the same size: only the version says it changed
        f.write(" " * (stat.st_size - init.stat().st_size))
    os.utime(init, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = reader.module("pkgx")  # the same mtime and size, but the file's ctime moved: read again
    assert again is not before and "walk" in again.members and "run" not in again.members
    set_version(site, "pkgx", "2.0")
    after = reader.module("pkgx")
    assert after is not again and after.version == "2.0" and "walk" in after.members


def test_member_gamma_is_kept_between_keystrokes(monkeypatch):
    """A second request on the same line reads no surface again (the member layer is kept
    with the analysis)."""
    analyzer = PythonAnalyzer()
    hole_in(STDLIB, analyzer=analyzer)
    reads = []
    real = surfaces.SurfaceReader._read
    monkeypatch.setattr(surfaces.SurfaceReader, "_read", lambda self, *a: reads.append(a) or real(self, *a))
    hole_in(STDLIB, analyzer=analyzer)
    assert reads == []


# -- diagnostics ------------------------------------------------------------------------------------


def test_unknown_module_attributes_are_warned_with_the_closest_real_name():
    code = "import os\nimport json as js\n\nx = os.path.jion('a')\ny = js.loadss('1')\nos.custom = 1\nz = os.getcwd()\n"
    doc = Document("file:///d.py", "python", 1, code, parse)
    findings = [f for f in PythonAnalyzer().diagnostics(doc.snapshot(), WorkspaceContext()) if f.code == "unknown-member"]
    assert [(code[f.start:f.end], f.data.get("replacement")) for f in findings] == [("jion", "join"), ("loadss", "loads")]
    off = WorkspaceContext(settings=Settings(python=PythonSettings(member_warnings=False)))
    assert not [f for f in PythonAnalyzer().diagnostics(doc.snapshot(), off) if f.code == "unknown-member"]


def test_tilelang_keeps_its_own_surface():
    from gdg_lsp.languages.tilelang.analyzer import TileLangAnalyzer

    code = "import json\nimport tilelang.language as T\n\ndef f(a):\n    \n"
    doc = Document("file:///k.py", "tilelang", 1, code, parse)
    hole = TileLangAnalyzer().hole_at(doc.snapshot(), code.index("    \n") + 4, WorkspaceContext())
    assert not hole.gamma.names("Member") and "members" not in hole.gamma.lookup("json").attrs


def test_binding_in_an_inner_scope_hides_the_module_surface():
    hole = hole_in("import json\n\ndef f(json):\n    <cursor>\n")
    assert "json.dumps" not in hole.gamma and "members" not in hole.gamma.lookup("json").attrs
    assert isinstance(hole.gamma.lookup("json"), Binding) and hole.gamma.lookup("json").sort == "Parameter"


# -- honest labels ---------------------------------------------------------------------------------


class ScriptedDecoder:
    """Writes a fixed line after the typed text -- after checking that the grammar the
    executor compiled accepts it, so the line is one the masked decoder could produce."""

    def __init__(self, line: str, byte_cache) -> None:
        self.line = line
        self.byte_cache = byte_cache

    def decode(self, spec):
        from gdg_lsp.decoding.engine import STOP_NEWLINE, DecodeResult

        assert full_match(spec.grammar, spec.replay + self.line + "\n"), self.line
        return DecodeResult(text=self.line, region_text=spec.replay + self.line + "\n", stop_reason=STOP_NEWLINE)


def test_a_suggestion_is_labelled_guaranteed_only_when_no_reference_position_was_open(byte_cache):
    from gdg_lsp.executor import Executor, Prompt
    from gdg_lsp.service.local import Suggestion

    analyzer = PythonAnalyzer()
    hole = hole_in(STDLIB, analyzer=analyzer)
    labels = {}
    for line in ("text = json.dumps(argv)", "text = json.dumps(argv).upper()", "text = str(argv).zfill(width=3)"):
        execution = Executor(analyzer, ScriptedDecoder(line, byte_cache), byte_cache).run(
            hole, Prompt([]), "scope", max_tokens=10, max_lines=1)
        suggestion = Suggestion(execution.text, hole.cursor, hole.cursor, "python", "scope", rung=execution.rung,
                                hole=hole, execution=execution)
        summary = suggestion.summary()
        assert summary["rung"] == "gamma" and summary["openPositions"] == suggestion.open_positions
        labels[line] = (suggestion.guaranteed, summary["openPositions"], summary["coverage"]["slotted"])
    assert labels["text = json.dumps(argv)"] == (True, [], 3)
    assert labels["text = json.dumps(argv).upper()"][:2] == (False, ["attribute upper after json.dumps(argv)"])
    assert labels["text = str(argv).zfill(width=3)"][0] is False
    assert sorted(labels["text = str(argv).zfill(width=3)"][1]) == ["attribute zfill after str(argv)",
                                                                    "keyword width of str(argv).zfill"]


def test_abstract_bases_and_methods_defined_under_an_if_still_know_self():
    hole = hole_in("""\
        import abc

        class Shape(abc.ABC):
            sides = 0

        class Square(Shape, metaclass=abc.ABCMeta):
            def __init__(self):
                self.width = 1

            if True:
                def area(self):
                    <cursor>
        """)
    assert {"self.width", "self.sides", "self.area"} <= set(hole.gamma.names("Member"))
    dynamic = hole_in("class Meta(type):\n    pass\n\nclass K(metaclass=Meta):\n    def f(self):\n        <cursor>\n")
    assert "members" not in dynamic.gamma.lookup("self").attrs  # an unknown metaclass may add anything


def test_no_member_warning_on_working_code(corpus):
    """The corpus is the standard library of this interpreter's version (code that runs):
    its module attributes all exist, or are guarded for another platform; the members its
    classes and instances read, and the keywords its calls pass, exist too."""
    analyzer = PythonAnalyzer()
    warned = []
    for path in sorted((corpus / "python" / "Lib").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        doc = Document(path.as_uri(), "python", 1, text, parse)
        warned += [(path.name, text[f.start:f.end]) for f in analyzer.diagnostics(doc.snapshot(), WorkspaceContext())
                   if f.code in ("unknown-member", "unknown-keyword")]
    assert warned == []


def test_platform_and_hasattr_guarded_attributes_are_not_warned_but_are_not_members():
    code = ("import os\nimport select\n\nif hasattr(os, 'frobnicate'):\n    os.frobnicate()\n"
            "q = select.kqueue()\nw = os.startfile\n")
    doc = Document("file:///p.py", "python", 1, code, parse)
    found = [code[f.start:f.end] for f in PythonAnalyzer().diagnostics(doc.snapshot(), WorkspaceContext())
             if f.code == "unknown-member"]
    assert found == []  # frobnicate is guarded; kqueue (BSD) or startfile (Windows) exist on another platform
    if sys.platform == "linux":
        hole = hole_in("import select\n\ndef f(a):\n    <cursor>\n")
        assert "select.kqueue" not in hole.gamma and "select.epoll" in hole.gamma  # Γ is this platform's


def test_tilelang_api_members_count_as_slotted():
    from gdg_lsp.languages.tilelang.analyzer import TileLangAnalyzer

    code = "import tilelang.language as T\n\ndef f(a):\n    \n"
    doc = Document("file:///k.py", "tilelang", 1, code, parse)
    analyzer = TileLangAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), code.index("    \n") + 4, WorkspaceContext())
    coverage = analyzer.coverage("x = T.ceildiv(a, 2)", hole.gamma)
    assert coverage.open == [] and coverage.ghosts == [] and coverage.slotted >= 2


def test_a_chained_assignment_is_no_way_around_a_receivers_members(byte_cache):
    """`x = self.` must go on with a member: `x = self.anything = 1` (a new attribute as
    the second target of a chain) is refused, even in __init__, where the first target may
    still declare one."""
    hole = hole_in(CLASSES)
    assert not accepts(byte_cache, hole, "size = self.anything = 1")
    assert accepts(byte_cache, hole, "self.width = size = 1")
    init = hole_in(CLASSES.replace("        <cursor>\n", "").replace(
        "self.area = width * height\n", "self.area = width * height\n        <cursor>\n"))
    assert accepts(byte_cache, init, "self.anything = size = 1")
    assert not accepts(byte_cache, init, "size = self.anything = 1")
    assert accepts(byte_cache, hole, "size = self.width = 1")  # an existing member is a reference-shaped target
    assert accepts(byte_cache, hole, "a = b = self.width")
