"""What keeps a keystroke in a large P4 document cheap changes no answer: large
declarations parsed piece by piece bind exactly as when parsed whole (and an edit inside
one piece re-parses that piece only), and Γ from an analysis bound for one place (the
hole's) is Γ from the whole analysis there."""

from __future__ import annotations

import random
from typing import Any

import pytest
from p4_helpers import INCLUDE, corpus_programs, library_types

from gdg_lsp.bench.costs_workspace import p4_document
from gdg_lsp.languages.p4 import parser as p4_parser
from gdg_lsp.languages.p4.parser import parse_program
from gdg_lsp.languages.p4.preprocess import preprocess
from gdg_lsp.languages.p4.symbols import Scope, bind
from gdg_lsp.languages.p4.workspace import IncludePaths, analyse


def _scope(scope: Scope) -> Any:
    return (scope.kind, scope.name, scope.start, scope.end, scope.forward,
            [(s.name, s.kind, s.start, s.end, s.type, s.direction, s.params, s.ctor_params, s.members and
              [(m.name, m.kind, m.start, m.end, m.type) for m in s.members], repr(sorted(s.info.items())))
             for s in scope.syms],
            [_scope(child) for child in scope.children])


def _bound(code: str, types: set[str], piece_chars: int, monkeypatch) -> Any:
    """Everything the binder makes of ``code``, parsed with pieces from ``piece_chars`` characters."""
    monkeypatch.setattr(p4_parser, "PIECEWISE_CHARS", piece_chars)
    p4_parser._cache.clear()
    p4_parser._pieces.clear()
    program = parse_program(code, types)
    unit = bind(program, code, "file:///t.p4")
    refs = [(r.kind, r.segments, r.scope.kind, r.scope.start, r.call_args, r.writes) for r in unit.refs]
    items = [(i.start, i.end, i.recovered, i.dropped) for i in program.items]
    return _scope(unit.scope), refs, items


def _texts() -> list[str]:
    """Corpus programs as they are, and each with statement lines cut (a program being typed)."""
    rng = random.Random(7)
    texts = []
    for path in corpus_programs():
        text = path.read_text()
        texts.append(text)
        lines = text.split("\n")
        cut = [i for i, line in enumerate(lines) if line.strip().endswith(";") and line.startswith("        ")]
        for i in rng.sample(cut, min(2, len(cut))):
            broken = [*lines]
            broken[i] = broken[i][: len(broken[i]) // 2]  # half a statement: it does not parse
            texts.append("\n".join(broken))
        if cut:
            unclosed = [*lines]
            unclosed[cut[0]] += " if (true) {"  # a block opened and not yet closed
            texts.append("\n".join(unclosed))
    return texts


def test_every_corpus_program_binds_the_same_in_pieces_as_whole(p4_corpus, monkeypatch):
    types = library_types()
    for text in _texts():
        code = preprocess(text).code
        whole = _bound(code, types, 10**9, monkeypatch)
        pieces = _bound(code, types, 0, monkeypatch)
        assert pieces == whole, text[:200]


def test_an_edit_in_one_action_of_a_large_control_parses_that_action_only(monkeypatch):
    text, at = p4_document(60_000)
    code = preprocess(text).code
    parse_program(code)
    parsed = []
    real_parse = p4_parser.parse_text

    def counting(source, start, end, *args, **kwargs):
        parsed.append(end - start)
        return real_parse(source, start, end, *args, **kwargs)

    monkeypatch.setattr(p4_parser, "parse_text", counting)
    middle = code.index("action set_port_200(")
    edited = code[:middle] + code[middle:].replace("meta.seen + 1;", "meta.seen + 2;", 1)
    program = parse_program(edited)
    assert program.clean
    assert sum(parsed) < 2_000, parsed  # the control's header and one action, not 60,000 characters
    # the re-parsed action and the reused ones after it are bound where they are in the text
    unit = bind(program, edited, "file:///t.p4")
    assert any(r.segments[0][:2] == ("meta", edited.index("meta.seen + 2;")) for r in unit.refs)
    last = edited.index("action set_port_") + edited[edited.index("action set_port_"):].rindex("action set_port_")
    assert any(s.kind == "action" and s.start == last + len("action ") for s in unit.scope.children[0].syms)


@pytest.mark.parametrize("typed", ["        hdr.ipv4.ttl = ", "        if (meta.seen == 1) {", "        route."])
def test_a_large_control_being_typed_in_binds_the_same_in_pieces_as_whole(typed, monkeypatch):
    text, at = p4_document(20_000)
    text = text[:at] + typed + "\n" + text[at:]
    code = preprocess(text).code
    assert _bound(code, set(), 0, monkeypatch) == _bound(code, set(), 10**9, monkeypatch)


def _gamma_shape(gamma) -> Any:
    return sorted((b.name, b.sort, repr(sorted(b.attrs.items()))) for b in gamma.visible().values())


def test_gamma_for_one_place_is_gamma_from_the_whole_analysis(p4_corpus, p4):
    paths = IncludePaths(configured=(INCLUDE,))
    rng = random.Random(11)
    checked = 0
    for path in corpus_programs():
        text = path.read_text()
        starts = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        for offset in rng.sample(starts, min(12, len(starts))):
            offset += len(text[offset:]) - len(text[offset:].lstrip(" \t"))
            whole = p4.gamma_for(analyse(text, path.as_uri(), paths), offset)
            focused = p4.gamma_for(analyse(text, path.as_uri(), paths, focus=offset), offset)
            assert _gamma_shape(focused) == _gamma_shape(whole), (path.name, text.count("\n", 0, offset))
            checked += 1
    assert checked > 300
