"""Suggestions fitted before the text after the cursor: closers the line already has are not
written again, the rest-of-line replacement stays where it is the better edit, and the
document that results is the one the decoded statement describes."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.documents import Document
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.service.suffix import REPEATS_ONLY, fit
from gdg_lsp.settings import Settings

LINE = "    y = g()\n"
AT = LINE.index("(") + 1


def test_closers_the_line_has_are_not_written_again():
    got = fit("x, 1)", LINE, AT, AT + 1)
    assert (got.text, got.end, got.trimmed) == ("x, 1", AT, ")")
    # nested closers and a quote
    line = '    y = g(h(""))\n'
    cur = line.index('"') + 1
    assert fit('a"))', line, cur, cur + 3).text == "a"


def test_the_users_blank_before_the_closers_stays():
    line = "    y = g( )\n"
    got = fit("x, 1)", line, AT, AT + 2)
    assert got.text == "x, 1" and got.end == AT


def test_replacing_the_rest_of_the_line_is_kept_where_it_is_the_better_edit():
    got = fit("x) + 1", LINE, AT, AT + 1)  # the model closed the call and went on
    assert (got.text, got.end) == ("x) + 1", AT + 1)
    two_lines = fit("x)\n    z = y", LINE, AT, AT + 1)  # a multi-line suggestion replaces the rest
    assert two_lines.end == AT + 1 and two_lines.text == "x)\n    z = y"


def test_an_insertion_that_would_close_the_users_bracket_stays_a_replacement():
    got = fit("a, b) == h(c, d)", LINE, AT, AT + 1)  # inserted it would read "a, b) == h(c, d" before ")"
    assert (got.text, got.end) == ("a, b) == h(c, d)", AT + 1)
    own = fit("f(x))", LINE, AT, AT + 1)  # f(x) closes its own bracket: inserted before the user's ")"
    assert (own.text, own.end) == ("f(x)", AT)
    assert fit('")")', LINE, AT, AT + 1).text == '")"'  # a bracket in a string closes nothing


def test_a_suggestion_that_only_repeats_the_suffix_becomes_empty():
    assert fit(")", LINE, AT, AT + 1).text == ""


def test_a_kept_suffix_is_not_duplicated():
    """A hole that replaces nothing (SQL, jq in mid-line): the overlap is dropped."""
    doc = "SELECT f() AS t"
    cur = doc.index(")")
    assert fit("x)", doc, cur, cur).text == "x"
    assert fit("x) AS t", doc, cur, cur).text == "x"
    # never inside a word: "ab" before "abc" is not an overlap of "ab"
    assert fit("ab", "abc", 0, 0).text == "ab"
    assert fit("x a", "a_b", 0, 0).text == "x a"
    assert fit("x", "", 0, 0).text == "x"  # nothing follows: nothing to fit


def test_nothing_follows_nothing_changes():
    assert fit("x = 1", "    \n", 4, 4).text == "x = 1"


CODE = "def f(ab, xy):\n    y = len()\n    return y\n"
CURSOR = CODE.index("len(") + 4


def _apply(code: str, suggestion) -> str:
    return code[: suggestion.start] + suggestion.text + code[suggestion.end :]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
@example(seed=3008)  # greedy wrote ")" back; the sampled retry closed the call and went on
def test_the_fitted_edit_gives_the_decoded_line_and_never_repeats_the_suffix(seed, tiny_vocab):
    """Whatever the model writes at ``len(|)``: applying the item gives the document the
    rest-of-line replacement gives (fitting changes the edit, not the result), and an
    insertion never ends with the ``)`` the line already has."""
    service = CompletionService(random_backend(tiny_vocab, seed=seed, hidden=16, layers=1))
    doc = Document("file:///f.py", "python", 1, CODE, parse)
    replaced = service.complete(doc.snapshot(), CURSOR, Settings(max_tokens=16, suffix=False))
    fitted = service.complete(doc.snapshot(), CURSOR, Settings(max_tokens=16))
    assert replaced.end == CURSOR + 1  # the hole replaces the ")"
    if not replaced.text:
        assert not fitted.text
        return
    if replaced.text.strip() == ")":  # the greedy answer only wrote the ")" back: a sampled one is drawn
        assert (not fitted.text and fitted.reason == REPEATS_ONLY) or _apply(CODE, fitted) != CODE
        return
    assert _apply(CODE, fitted) == _apply(CODE, replaced)
    if fitted.end == CURSOR:  # inserted before the user's ")": the decoder's own ")" is gone
        assert fitted.text + ")" == replaced.text.rstrip(" \t")
