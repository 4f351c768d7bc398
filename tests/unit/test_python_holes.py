"""Where the hole is, what is typed, and which keywords the context allows."""

from __future__ import annotations

import textwrap

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, lex_state, parse


def hole(code: str, marker: str = "|"):
    code = textwrap.dedent(code)
    offset = code.index(marker)
    code = code.replace(marker, "", 1)
    s = Snapshot("file:///t.py", "python", 1, code, parse(code.encode()))
    return PythonAnalyzer().hole_at(s, offset, WorkspaceContext())


def test_statement_start_in_a_function():
    h = hole("""
        def f(a):
            |
    """)
    assert isinstance(h, Hole)
    assert h.typed == "" and h.indent == "    " and h.sort == "Stmt"
    assert h.context["kw_return"] == ["return"] and h.context["kw_loop_control"] == []
    assert "a" in h.gamma and h.region_path[-1] == "function f"


def test_typed_text_and_the_name_being_assigned_is_not_in_gamma():
    h = hole("""
        def f(a):
            result = a.sp|
    """)
    assert h.typed == "result = a.sp"
    assert "result" not in h.gamma


def test_continuation_line_inside_brackets():
    h = hole("""
        def f(a, b):
            value = max(a,
                        b|
    """)
    assert isinstance(h, Hole)
    assert h.typed == "value = max(a, b"


def test_no_hole_in_comments_and_strings():
    assert isinstance(hole("x = 1  # note |\n"), NoHole)
    assert isinstance(hole('x = "inside |string"\n'), NoHole)
    assert isinstance(hole('def f():\n    """doc\n    |more\n    """\n'), NoHole)


def test_fstring_field_is_code():
    assert isinstance(hole('x = 1\ny = f"{x|}"\n'), Hole)


def test_closers_after_the_cursor_are_replaced_other_text_is_not():
    code = "def f(a):\n    print(a|)\n"
    h = hole(code)
    assert isinstance(h, Hole) and h.replace_end > h.cursor and not h.suffix
    mid = hole("x = 1\ny = x | + 2  # sum\n")  # other text stays: a mid-line hole before it
    assert isinstance(mid, Hole) and mid.replace_end == mid.cursor and mid.suffix == " + 2  # sum"
    assert isinstance(hole("x = 1\ny = x| + 2\n"), Hole)  # after a whole name: `x.real`, `x * 3`...
    assert isinstance(hole("x = 1\ny = x|x + 2\n"), NoHole)  # inside one


def test_loop_and_continuation_keywords():
    h = hole("""
        def f(xs):
            for x in xs:
                if x:
                    pass
                |
    """)
    assert h.context["kw_loop_control"] == ["break", "continue"]
    assert h.context["kw_elif"] == ["elif"] and h.context["kw_else"] == ["else"]
    h = hole("""
        try:
            pass
        except ValueError:
            pass
        |
    """)
    assert h.context["kw_except"] and h.context["kw_else"] and h.context["kw_finally"]
    assert h.context["kw_return"] == []


def test_lex_state():
    assert lex_state("f(a, [b", 0, 7).depth == 2
    assert lex_state("x = '''abc", 0, 10).in_string == "'''"
    assert lex_state("x = 1 \\\n", 0, 8).backslash
    assert lex_state("x = 1  # (", 0, 10).in_comment
    assert lex_state("x = '#('", 0, 8).depth == 0


def test_only_python3_string_prefixes_are_strings(byte_cache):
    """`ur''` is Python 2's: read as one string, `return u` + `r''` hid the name u (found by
    tests/unit/test_invented_names.py with a random-weight model)."""
    from gdg_lsp import fragments
    from gdg_lsp.grammar.engine import full_match

    h = hole("""
        def f(a):
            |
    """)
    grammar = byte_cache.get(fragments.instantiate(fragments.fragment("python", "statement"), "gamma", h.gamma,
                                                   h.context).text)
    for good in ("return u'x'", "return rb'x'", "return Br'x'", "return f'{a}'", "return rf'{a}'", "return b'x'"):
        assert full_match(grammar, good + "\n"), good
    for bad in ("return ur'x'", "return ub'x'", "return bu'x'"):
        assert not full_match(grammar, bad + "\n"), bad
