"""The P4-16 parser: every corpus program and both library files parse; the
preprocessor keeps offsets; recovery keeps what precedes a cut or a broken item."""

from __future__ import annotations

import pytest
from lark import Tree
from p4_helpers import INCLUDE, corpus_programs, library_types

from gdg_lsp.languages.p4.parser import (
    parse_program,
    parse_text,
    region_key,
    scan_type_names,
    split_items,
)
from gdg_lsp.languages.p4.preprocess import Define, preprocess
from gdg_lsp.languages.p4.symbols import bind
from gdg_lsp.languages.p4.workspace import IncludePaths, analyse


@pytest.mark.parametrize("name", ["core.p4", "v1model.p4"])
def test_library_files_parse_without_error(p4_corpus, name):
    program = parse_program(preprocess((INCLUDE / name).read_text()).code, library_types())
    assert program.items and program.clean, program.errors


def test_every_corpus_program_parses_without_error(p4_corpus):
    programs = corpus_programs()
    assert len(programs) >= 40
    paths = IncludePaths(configured=(INCLUDE,))
    for path in programs:
        analysis = analyse(path.read_text(), path.as_uri(), paths)
        assert analysis.program.clean, (path.name, analysis.program.errors[:3])
        assert all(found is not None and not found.from_facts for _, found in analysis.includes), path.name
        # every top-level declaration produced a tree
        assert all(item.tree is not None for item in analysis.program.items), path.name


def test_preprocessor_keeps_offsets_and_selects_branches():
    source = (
        "#define V 20200408\n"
        "/* a comment */ const bit<8> A = 1;\n"
        "#if V >= 20200408\n"
        "typedef bit<9> New_t;\n"
        "#else\n"
        "typedef bit<9> Old_t;\n"
        "#endif\n"
        "#ifdef NOT_DEFINED\n"
        "const bit<8> B = 2;\n"
        "#elif defined(V) && !defined(W)\n"
        "const bit<8> C = 3;\n"
        "#endif\n"
    )
    pre = preprocess(source)
    assert len(pre.code) == len(source)
    assert pre.code.count("\n") == source.count("\n")
    assert "New_t" in pre.code and "Old_t" not in pre.code
    assert "B = 2" not in pre.code and "C = 3" in pre.code
    assert "comment" not in pre.code
    assert pre.code.index("const bit<8> A") == source.index("const bit<8> A")
    assert [d.name for d in pre.own_defines] == ["V"]


def test_include_hook_receives_macros_and_exports_back():
    seen = {}

    def hook(include, macros):
        seen[include.target] = dict(macros)
        return {"FROM_INCLUDE": Define("FROM_INCLUDE", "7", None, 0)}

    pre = preprocess('#define V1MODEL_VERSION 20200408\n#include <v1model.p4>\n#if FROM_INCLUDE == 7\nconst bit<8> X = 1;\n#endif\n',
                     on_include=hook)
    assert seen["v1model.p4"]["V1MODEL_VERSION"].value == "20200408"
    assert "const bit<8> X" in pre.code
    assert pre.includes[0].system


def test_shift_right_generic_calls_and_comparisons():
    types = frozenset({"h_t", "register"})
    stmt = "x = a >> 2;"
    assert parse_text(stmt, 0, len(stmt), "body_item", types).data == "assignment"
    decl = "register<bit<32>>(512) r;"
    assert parse_text(decl, 0, len(decl), "control_item", types).data == "instantiation"
    call = "bit<8> n = packet.lookahead<h_t>().f;"
    assert parse_text(call, 0, len(call), "body_item", types).data == "var_decl"
    cond = "if (a < b && c > d) { x = 1; } else { x = 2; }"
    assert parse_text(cond, 0, len(cond), "body_item", types).data == "if_statement"


def test_split_items_follows_else_expressions_and_table_lists():
    text = "if (a) { x = 1; } else { x = 2; } y = {1, 2}; key = { f: exact; } t.apply();"
    items = [text[i.start:i.end] for i in split_items(text, 0, len(text))]
    assert items == ["if (a) { x = 1; } else { x = 2; }", "y = {1, 2};", "key = { f: exact; }", "t.apply();"]


def _names(tree: Tree, rule: str) -> list[str]:
    return [str(node.children[0].children[0]) for node in tree.iter_subtrees_topdown()
            if node.data == rule and isinstance(node.children[0], Tree)]


def test_a_program_cut_inside_an_action_keeps_what_precedes_the_cut():
    code = preprocess(
        "header h_t { bit<8> f; }\n"
        "control C(inout h_t h) {\n"
        "    action a(bit<8> v) {\n"
        "        bit<8> tmp = v;\n"
        "        h.f = tmp;\n"
    ).code
    program = parse_program(code)
    control = program.items[-1]
    assert control.tree is not None and control.recovered
    assert _names(control.tree, "action_decl") == ["a"]
    unit = bind(program, code)
    control_sym = unit.top[-1]
    assert (control_sym.name, control_sym.kind, [p.name for p in control_sym.params]) == ("C", "control", ["h"])
    action_scope = unit.scope.innermost(len(code))
    assert action_scope.describe() == "action a"
    assert {s.name for s in action_scope.syms} == {"v", "tmp"}


def test_a_broken_statement_costs_only_itself():
    code = preprocess(
        "control C(inout bit<8> x) {\n"
        "    action a() { x = ; bit<8> kept = 1; }\n"
        "    table t { actions = { a; } }\n"
        "    apply { t.apply(); }\n"
        "}\n"
    ).code
    program = parse_program(code)
    tree = program.items[0].tree
    assert tree is not None
    assert len(program.errors) == 1 and "x = ;" in code[program.errors[0][0]:program.errors[0][1]]
    assert any(node.data == "var_decl" for node in tree.iter_subtrees())
    assert any(node.data == "table_decl" for node in tree.iter_subtrees())


def test_last_good_parse_stands_in_while_a_header_is_edited():
    good = "control C(inout bit<8> x) {\n    apply { x = 1; }\n}\n"
    broken = "control C(inout bit<8> x,, ) {\n    apply { x = 1; }\n}\n"
    memory: dict = {}
    assert parse_program(good, (), memory).clean
    assert region_key(good) == "control C" and "control C" in memory
    without = parse_program(broken)
    assert without.items[0].tree is None
    with_memory = parse_program(broken, (), memory)
    assert with_memory.items[0].tree is not None and with_memory.items[0].stale


def test_type_name_scan_finds_declarations_and_type_parameters():
    code = ("header a_t { }\nstruct s_t { }\nenum bit<8> E { X = 1 }\nextern Reg<T, I> {\n}\n"
            "typedef bit<8> td_t;\nextern void f<O>(out O o);\nparser P(packet_in b);\n")
    assert {"a_t", "s_t", "E", "Reg", "T", "I", "td_t", "O", "P"} <= scan_type_names(code)


def test_one_parser_serves_threads_at_once(p4_corpus):
    """The Lark parser is built once and shared (no table cache on disk): parses on several
    threads at once, each with its own type names, give what the same parses give one by one."""
    from concurrent.futures import ThreadPoolExecutor

    code = preprocess((INCLUDE / "v1model.p4").read_text()).code
    items = [(i.start, i.end) for i in split_items(code, 0, len(code), top_level=True)][:60]
    cases = [(start, end, frozenset(library_types()) if n % 2 else frozenset()) for n, (start, end) in enumerate(items)]

    def parse(case):
        start, end, types = case
        try:
            return parse_text(code, start, end, "declaration", types).pretty()
        except Exception as err:  # a failure must be the same failure
            return f"failed: {err}"

    alone = [parse(case) for case in cases]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(parse, cases)) == alone
