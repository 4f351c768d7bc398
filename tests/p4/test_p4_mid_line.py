"""Mid-line P4 holes: the text after the cursor stays, and a middle ends only where the statement,
with that text after it, parses as a P4 statement and any path it runs into the suffix with is in Γ.

A scripted model writes a fixed middle and then wants to stop; the cases show where that stop is
taken and where it is refused.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4_helpers import BASIC, snapshot, workspace
from test_p4_property import _DECLARED

from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.languages.base import NoHole
from gdg_lsp.languages.p4.analyzer import KEYWORDS
from gdg_lsp.languages.p4.parser import ParseFailure, parse_text
from tests.tilelang.tl_scripted import NoisyBackend, ScriptedBackend

ANCHOR = "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;\n"


def _program(line: str) -> tuple[str, int]:
    """BASIC with ``line`` (its cursor marked ``@``) in place of the forward action's ttl line."""
    assert ANCHOR in BASIC
    cursor = BASIC.index(ANCHOR) + line.index("@")
    return BASIC.replace(ANCHOR, line.replace("@", "", 1), 1), cursor


def _hole(p4, line: str):
    text, cursor = _program(line)
    return text, cursor, p4.hole_at(snapshot(p4, text), cursor, workspace())


def _middle(p4, line: str, script: str, engine, vocab) -> str:
    text, cursor, hole = _hole(p4, line)
    executor = Executor(p4, Decoder(ScriptedBackend(vocab, text[:cursor] + script)), engine)
    prompt = Prompt(vocab.encode(text[:cursor]).ids, replay=hole.typed)
    return executor.run(hole, prompt, "scope", max_tokens=32, max_lines=1).text


def test_text_after_the_cursor_makes_a_mid_line_hole_that_keeps_it(p4):
    _, cursor, hole = _hole(p4, "        hdr.ipv4.ttl = @ - 1;\n")
    assert hole.suffix == " - 1;" and hole.replace_end == cursor


@pytest.mark.parametrize("line, script", [
    ("        hdr.ipv4.ttl = @ - 1;\n", "hdr.ipv4.ttl"),
    ("        hdr.ipv4.ttl = @ + hdr.ipv4.ttl;\n", "hdr.ipv4.ttl"),
    ("        @ = port;\n", "standard_metadata.egress_spec"),
    ("        hdr.ipv4.ttl = hdr.ipv4.@ - 1;\n", "ttl"),
    ("        @.count(0);\n", "hits"),  # a name before the user's own member call
])
def test_the_middle_ends_where_the_statement_parses_with_the_rest(p4, line, script, tiny_vocab, tiny_engine):
    assert _middle(p4, line, script, tiny_engine, tiny_vocab) == script


@pytest.mark.parametrize("line, script", [
    ("        hdr.ipv4.ttl = @ * 2;\n", "hdr.ipv4.ttl +"),  # `+ * 2` is no expression
    ("        hdr.ipv4.@ = 1;\n", "ttl + 1"),  # the left side of an assignment is no sum
])
def test_a_middle_never_ends_where_the_statement_does_not_parse(p4, line, script, tiny_vocab, tiny_engine):
    middle = _middle(p4, line, script, tiny_engine, tiny_vocab)
    assert middle != script
    if middle:
        assert _parses(p4, line, middle), middle


def test_a_path_joined_with_the_suffix_must_be_in_gamma(p4):
    """``meta.`` before the user's ``ttl``: the grammar saw ``meta.`` only; ``meta.ttl`` is no path."""
    _, _, hole = _hole(p4, "        hdr.ipv4.ttl = @ttl - 1;\n")
    assert p4.middle_fits(hole, "hdr.ipv4.")
    assert not p4.middle_fits(hole, "meta.")


@pytest.mark.parametrize("line, why", [
    ("        hdr.ipv4.t@tl = 1;\n", "inside a name"),
])
def test_where_no_middle_is_decoded_the_reason_says_why(p4, line, why):
    _, _, hole = _hole(p4, line)
    assert isinstance(hole, NoHole) and why in hole.reason


def test_only_a_statement_is_completed_mid_line(p4):
    text = BASIC.replace("            TYPE_IPV4: parse_ipv4;", "            TYPE_IPV4: parse_ipv4; // x", 1)
    cursor = text.index("TYPE_IPV4: parse_ipv4;")
    hole = p4.hole_at(snapshot(p4, text), cursor, workspace())
    assert isinstance(hole, NoHole) and "only a statement" in hole.reason


def _parses(p4, line: str, middle: str) -> bool:
    statement = line.replace("@", middle, 1).strip()
    try:
        parse_text(statement, 0, len(statement), "body_item", frozenset(p4._last_types))
    except ParseFailure:
        return False
    return True


PATHS = ("hdr.ipv4.ttl", "hdr.ipv4.protocol", "meta.nhop", "port", "dstAddr", "hdr.ipv4.ghost", "meta.ttl",
         "nothere", "1", "8w3")
JOINS = (" + ", " - ", " & ", " == ", ", ", "(", ")", " ")
LINES = ("        hdr.ipv4.ttl = @ - 1;\n", "        hdr.ipv4.ttl = @ + hdr.ipv4.ttl;\n",
         "        hdr.ipv4.ttl = hdr.ipv4.@ - 1;\n", "        @ = port;\n", "        meta.nhop = (bit<32>)@ + 1;\n")
_PATH = re.compile(r"(?<![\w.)\]])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(words=st.lists(st.integers(0, len(PATHS) - 1), min_size=1, max_size=3),
       joins=st.lists(st.sampled_from(JOINS), max_size=2), line=st.sampled_from(LINES), seed=st.integers(0, 10_000))
def test_every_p4_middle_parses_and_names_only_gamma(p4, words, joins, line, seed, tiny_vocab, tiny_engine):
    """A noisy model that wants random middles of real and invented paths: whatever is emitted
    leaves a statement that parses with the rest of its line, and every path in it (the user's
    own text aside) is in Γ or a keyword."""
    script = "".join(PATHS[w] + (joins[i] if i < len(joins) else "") for i, w in enumerate(words))
    text, cursor, hole = _hole(p4, line)
    backend = NoisyBackend(ScriptedBackend(tiny_vocab, text[:cursor] + script), seed=seed, scale=1.5)
    executor = Executor(p4, Decoder(backend), tiny_engine)
    prompt = Prompt(tiny_vocab.encode(text[:cursor]).ids, replay=hole.typed)
    middle = executor.run(hole, prompt, "scope", max_tokens=24, max_lines=1).text
    if not middle:
        return
    assert _parses(p4, line, middle), middle
    filled = line.replace("@", middle, 1)
    at = line.index("@")
    names = set(hole.gamma.names()) | KEYWORDS | {"bit"}
    if declared := _DECLARED.match(filled):  # `headers h = port;`: the middle declares a local
        names.add(declared.group(1))
    for m in _PATH.finditer(filled):
        if m.start() < at + len(middle) and m.end() > at:  # a path the middle wrote (part of)
            assert m.group() in names, (middle, m.group())
