"""Attacks through what an included P4 file declares: a cloned repository's header
names what Γ offers in every program that includes it.

The P4 parser cannot produce an odd declaration name (its identifiers are ASCII
words, never a line break), so what is tested is what an include can produce: a
macro name the preprocessor reads as a word but P4 does not (``naïve``), a macro
value holding a bidirectional override or an escape sequence (hover shows it), an
identifier far longer than any name, and a type whose text holds control characters
(the prompt's ``//`` lines show it). None may reach Γ, hover or the grammar; the
prompt's comment lines stay comments."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp import fragments, words
from gdg_lsp.documents import Document
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.p4.analyzer import P4Analyzer
from gdg_lsp.settings import Settings

LONG = "a" * 300
HEADER = (
    "#define naïve 1\n"
    "#define RTLVAL \u202e+1\n"
    "#define ESCVAL \x1b[2J\n"
    "#define GOOD 7\n"
    'header h_t { bit<8> f; bit<("\u202e\x1b")> g; }\n'
    f"const bit<8> {LONG} = 1;\n"
    'extern void ext_fn(in bit<("\u202eX")> v);\n'
)
PROGRAM = '#include "evil.p4"\ncontrol C(inout h_t h) {\n    apply {\n        \n    }\n}\n'


def _hole(root: Path) -> tuple[P4Analyzer, object, Hole]:
    (root / "evil.p4").write_text(HEADER, encoding="utf-8")
    analyzer = P4Analyzer()
    snapshot = Document((root / "prog.p4").as_uri(), "p4", 0, PROGRAM, analyzer.parser()).snapshot()
    hole = analyzer.hole_at(snapshot, PROGRAM.index("        \n") + 8, WorkspaceContext([root], Settings()))
    assert isinstance(hole, Hole), hole
    return analyzer, snapshot, hole


def test_an_include_adds_only_p4_identifiers_to_gamma(tmp_path: Path):
    _, _, hole = _hole(tmp_path)
    names = set(hole.gamma.names())
    assert {"GOOD", "h_t", "ext_fn"} <= names
    for odd in ("naïve", "RTLVAL", "ESCVAL", LONG):
        assert not any(odd in name for name in names), odd
    values = [str(b.attrs) for b in hole.gamma.bindings()]
    assert not any("\u202e" in v and "RTLVAL" in v for v in values)
    rejected = {(r.source, r.name) for r in words.REJECTIONS.all()}
    evil = str((tmp_path / "evil.p4").resolve())
    assert {(evil, "naïve"), (evil, "RTLVAL"), (evil, "ESCVAL"), (evil, LONG)} <= rejected


def test_hover_never_shows_a_rejected_macro(tmp_path: Path):
    analyzer, _, _ = _hole(tmp_path)
    text = PROGRAM.replace("        \n", "        ESCVAL;\n        naïve;\n")
    snapshot = Document((tmp_path / "prog.p4").as_uri(), "p4", 0, text, analyzer.parser()).snapshot()
    workspace = WorkspaceContext([tmp_path], Settings())
    for word in ("ESCVAL", "naïve"):
        assert analyzer.binding_at(snapshot, text.index(word) + 1, workspace) is None, word


def test_the_grammar_offers_no_rejected_name(tmp_path: Path, byte_engine):
    _, _, hole = _hole(tmp_path)
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("p4", hole.fragment), "gamma", hole.gamma,
                                                    hole.context))
    assert accepts(grammar, "h.f = GOOD;")
    for odd in ("naïve", "RTLVAL", "ESCVAL", LONG):
        assert not accepts(grammar, f"h.f = {odd};"), odd


def test_the_prompt_comments_stay_one_line_each_whatever_the_included_types_hold(tmp_path: Path):
    analyzer, snapshot, hole = _hole(tmp_path)
    prompt = analyzer.prompt_context(snapshot, hole, WorkspaceContext([tmp_path], Settings()))
    assert "struct h_t" in prompt and "ext_fn" in prompt, prompt
    for line in prompt.splitlines():
        assert line.startswith("// "), repr(line)
    assert words.comment_text(prompt.replace("\n", " ")) == prompt.replace("\n", " "), repr(prompt)
