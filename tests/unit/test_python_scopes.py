"""Python scope rules, checked against hand-written cases and against pyflakes on the corpus."""

from __future__ import annotations

import collections
import textwrap

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.languages.python.bench import pyflakes_undefined


def snap(code: str, uri: str = "file:///t/mod.py") -> Snapshot:
    code = textwrap.dedent(code)
    return Snapshot(uri, "python", 1, code, parse(code.encode()))


def gamma_names(code: str, marker: str = "#@") -> set[str]:
    s = snap(code)
    offset = s.text.index(marker)
    g = PythonAnalyzer()._gamma(PythonAnalyzer().analysis(s.text, s.tree, s.uri, WorkspaceContext()), offset, s.uri)
    return set(g.names()) - set(g.names(sort="Builtin"))


def test_function_locals_are_ordered_and_shadow_globals():
    names = gamma_names("""
        x = 1
        later = 2
        def f(a):
            y = a
            #@
            x = 3
        z = 4
    """)
    assert {"a", "y", "f", "later", "z"} <= names
    assert "x" not in names  # local to f (assigned below), unbound here: it hides the module's x


def test_module_level_code_sees_only_names_bound_above():
    names = gamma_names("""
        a = 1
        #@
        b = 2
    """)
    assert "a" in names and "b" not in names


def test_class_scope_is_invisible_in_methods():
    names = gamma_names("""
        class C:
            attr = 1
            def m(self):
                #@
                pass
    """)
    assert "self" in names and "C" in names and "attr" not in names
    assert "__class__" in names


def test_enclosing_functions_and_nonlocal_global():
    names = gamma_names("""
        def outer():
            v = 1
            def inner():
                nonlocal v
                global g
                g = 2
                #@
            w = 3
    """)
    assert {"v", "w", "inner", "outer", "g"} <= names


def test_imports_bind_the_right_names():
    names = gamma_names("""
        import os.path as osp, sys
        import xml.dom.minidom
        from .sibling import (a as b, c)
        #@
    """)
    assert {"osp", "sys", "xml", "b", "c"} <= names
    assert "a" not in names and "os" not in names


def test_for_with_except_walrus_and_match_targets():
    names = gamma_names("""
        def f(items):
            for i, (j, *k) in items:
                pass
            with open(items) as (fh, g2):
                pass
            try:
                pass
            except ValueError as err:
                pass
            if (n := len(items)):
                pass
            match items:
                case [first, *rest] if first:
                    pass
            #@
    """)
    assert {"i", "j", "k", "fh", "g2", "err", "n", "first", "rest"} <= names


def test_comprehension_variables_do_not_leak():
    names = gamma_names("""
        def f(xs):
            ys = [x * 2 for x in xs]
            #@
    """)
    assert "ys" in names and "x" not in names


def test_star_import_of_a_standard_library_extension():
    names = gamma_names("""
        from _heapq import *
        #@
    """)
    assert {"heappush", "heappop"} <= names


def test_star_import_of_a_workspace_module_is_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    (tmp_path / "helpers.py").write_text(
        f"__all__ = ['tool']\nopen({str(marker)!r}, 'w').write('imported')\ndef tool(): pass\n")
    code = "from helpers import *\n#@\n"
    s = Snapshot((tmp_path / "main.py").as_uri(), "python", 1, code, parse(code.encode()))
    analyzer = PythonAnalyzer()
    analysis = analyzer.analysis(s.text, s.tree, s.uri, WorkspaceContext(roots=[tmp_path]))
    gamma = analyzer._gamma(analysis, code.index("#@"), s.uri)
    assert "tool" in gamma
    assert not marker.exists()


def test_diagnostics_flag_undefined_names_only():
    s = snap("""
        import os
        def f(a):
            return a + missing + os.sep + len([q for q in a]) + obj.attr
        f(k=1)
    """)
    found = {(f.code, f.data["name"]) for f in PythonAnalyzer().diagnostics(s, WorkspaceContext())}
    # f takes no keyword k (member_warnings.py): a warning of its own kind, not an undefined name
    assert found == {("undefined-name", "missing"), ("undefined-name", "obj"), ("unknown-keyword", "k")}


def test_agrees_with_pyflakes_on_the_corpus(corpus):
    analyzer = PythonAnalyzer()
    disagreements = collections.Counter()
    files = sorted((corpus / "python" / "Lib").glob("*.py"))
    assert len(files) >= 20
    for path in files:
        text = path.read_text(encoding="utf-8")
        s = Snapshot(path.as_uri(), "python", 1, text, parse(text.encode()))
        ours = {(text.count("\n", 0, f.start) + 1, f.data["name"]) for f in analyzer.diagnostics(s, WorkspaceContext())
                if f.code == "undefined-name"}  # module attributes are checked apart (test_python_surfaces)
        theirs = set(pyflakes_undefined(text))
        # pyflakes also checks the strings listed in __all__, which are not references
        all_lines = {i + 1 for i, line in enumerate(text.splitlines()) if "__all__" in line or line.strip().startswith('"')}
        theirs = {t for t in theirs if t[0] not in all_lines or t in ours}
        if ours != theirs:
            disagreements[path.name] = (sorted(ours - theirs)[:3], sorted(theirs - ours)[:3])
    assert not disagreements, disagreements


def test_dunder_methods_of_a_class_are_not_builtins_in_its_methods():
    """``hasattr(builtins, "__init__")`` is true of any module; the name is no builtin
    (a bare ``__init__`` in a method is a NameError), so Γ must not offer it."""
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.python.analyzer import PythonAnalyzer
    from gdg_lsp.languages.python.analyzer import parse as parse_python

    code = "class C:\n    def __init__(self):\n        pass\n\n    def __new__(cls):\n        \n"
    snapshot = Snapshot("file:///c.py", "python", 1, code, parse_python(code.encode()))
    gamma = PythonAnalyzer(incremental=False).gamma_at(snapshot, len(code) - 1, WorkspaceContext())
    assert "cls" in gamma and "len" in gamma
    assert "__init__" not in gamma and "__new__" not in gamma
