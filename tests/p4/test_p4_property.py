"""The No-Ghost guarantee for P4, as a property: random programs (random header,
struct, parameter, action, table and state names), a random-weight model sampling
under the ctx or gamma grammar of a hole; every name or path the suggestion uses
is in Γ (or is a keyword, or the name the suggestion itself declares)."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4_helpers import hole_in_new_line

from gdg_lsp import fragments
from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder, DecodeSpec
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.p4.analyzer import KEYWORDS

RESERVED = KEYWORDS | {"bool", "packet_in", "packet_out", "apply", "hdr", "meta", "pkt", "inp", "verify",
                       "NoAction", "exact", "lpm", "ternary", "main"}
IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(lambda s: s not in RESERVED)
_NUMBER = re.compile(r"\b(\d+[ws])?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*)\b")
_PATH = re.compile(r"(?<![\w.)\]])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\d+\])*")
_DECLARED = re.compile(r"^\s*(?:const\s+)?(?:(?:bit|int|varbit)\s*<\d+>|bool|error|(?!(?:transition|return|exit|if|else|switch|const)\b)[A-Za-z_]\w*)\s+([A-Za-z_]\w*)")


@st.composite
def programs(draw):
    names = draw(st.lists(IDENT, min_size=22, max_size=22, unique=True))
    it = iter(names)
    headers = []
    for _ in range(draw(st.integers(1, 3))):
        fields = [next(it) for _ in range(draw(st.integers(1, 3)))]
        headers.append((next(it) + "_t", fields))
    members = [next(it) for _ in headers]
    meta_fields = [next(it) for _ in range(draw(st.integers(1, 2)))]
    actions = [(next(it), draw(st.integers(0, 2))) for _ in range(draw(st.integers(1, 2)))]
    table = next(it)
    states = [next(it) for _ in range(draw(st.integers(1, 2)))]
    text = "#include <core.p4>\n"
    for name, fields in headers:
        text += f"header {name} {{\n" + "".join(f"    bit<{8 * (i + 1)}> {f};\n" for i, f in enumerate(fields)) + "}\n"
    text += "struct headers_t {\n" + "".join(f"    {h[0]} {m};\n" for h, m in zip(headers, members)) + "}\n"
    text += "struct meta_t {\n" + "".join(f"    bit<4> {f};\n" for f in meta_fields) + "}\n"
    text += "parser P(packet_in pkt, out headers_t hdr, inout meta_t meta) {\n"
    text += "".join(f"    state {s} {{\n        transition accept;\n    }}\n" for s in ["start", *states])
    text += "}\n"
    text += "control C(inout headers_t hdr, inout meta_t meta, in bit<8> inp) {\n"
    for name, arity in actions:
        params = ", ".join(f"bit<8> p{i}" for i in range(arity))
        text += f"    action {name}({params}) {{\n    }}\n"
    text += f"    table {table} {{\n        key = {{ hdr.{members[0]}.{headers[0][1][0]}: exact; }}\n"
    text += "        actions = { " + "".join(f"{a}; " for a, _ in actions) + "}\n    }\n"
    text += "    apply {\n        inp;\n    }\n}\n"
    where = draw(st.sampled_from(["apply", "state"]))
    return text.replace("        inp;\n", ""), where


def _references(line: str) -> list[str]:
    line = re.sub(r"//.*", "", line)
    declared = _DECLARED.match(line)
    masked = _NUMBER.sub(lambda m: " " * len(m.group()), line)
    refs = []
    for m in _PATH.finditer(masked):
        if m.group() in KEYWORDS or m.group() in ("bit", "int", "varbit", "bool", "select"):
            continue
        if declared and m.start() == declared.start(1) and re.match(r"\s*[=;]", masked[m.end():]):
            continue  # the local this line declares
        refs.append(m.group())
    return refs


def _suggest(p4, tiny_vocab, engine, text, where, seed, rung):
    after = "    apply {\n" if where == "apply" else "    state start {\n"
    hole = hole_in_new_line(p4, text, after, ws=None)
    assert isinstance(hole, Hole) and hole.fragment == "statement"
    grammar = fragments.instantiate(fragments.fragment("p4", "statement"), rung, hole.gamma, hole.context)
    backend = random_backend(tiny_vocab, seed=seed, hidden=32, layers=1)
    result = Decoder(backend).decode(DecodeSpec(tiny_vocab.encode(text[:200]).ids,
                                                grammar=engine.get(grammar),
                                                max_tokens=100, temperature=1.0, seed=seed))
    return hole.gamma, result.text if result.natural else (result.complete_text or "")


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=programs(), seed=st.integers(0, 10_000), rung=st.sampled_from(["ctx", "gamma"]))
def test_suggestions_reference_only_gamma(program, seed, rung, p4, tiny_vocab, tiny_engine):
    text, where = program
    gamma, line = _suggest(p4, tiny_vocab, tiny_engine, text, where, seed, rung)
    known = set(gamma.visible())
    for ref in _references(line):
        assert ref in known, (ref, line, rung)


def test_the_property_sees_references(p4, tiny_vocab, tiny_engine):
    """Not vacuous: over a few seeds, random models do write names and paths."""
    text = _FIXED
    seen = []
    for seed in range(12):
        gamma, line = _suggest(p4, tiny_vocab, tiny_engine, text, "apply" if seed % 2 else "state", seed, "ctx")
        refs = _references(line)
        assert all(r in gamma for r in refs), (line, refs)
        seen += refs
    assert len(seen) >= 4, seen


_FIXED = """#include <core.p4>
header h_t {
    bit<8> f;
    bit<16> g;
}
struct headers_t {
    h_t h;
}
struct meta_t {
    bit<4> m;
}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta) {
    state start {
        transition accept;
    }
    state more {
        transition accept;
    }
}
control C(inout headers_t hdr, inout meta_t meta, in bit<8> inp) {
    action a1(bit<8> p0) {
    }
    table t1 {
        key = { hdr.h.f: exact; }
        actions = { a1; }
    }
    apply {
    }
}
"""
