"""SuggestionReuse: which later asks a shown suggestion answers, and that Γ is compared before it does."""

from __future__ import annotations

import dataclasses

from gdg_lsp.documents import Snapshot
from gdg_lsp.gamma import Binding
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service.suggestion_reuse import SuggestionReuse, hole_key
from gdg_lsp.settings import Settings

URI = "file:///r.py"
BEFORE = "def f(alpha, beta):\n    total = "
AFTER = ")\n\nx = 1\n"


def _snapshot(text: str, version: int = 1) -> Snapshot:
    return Snapshot(URI, "python", version, text, parse(text.encode()))


def _hole(text: str, offset: int):
    return PythonAnalyzer().hole_at(_snapshot(text), offset, WorkspaceContext())


def _shown(reuse: SuggestionReuse, suggestion: str = "alpha + beta", settings: Settings | None = None):
    text = BEFORE + AFTER
    reuse.remember(_snapshot(text), len(BEFORE), len(BEFORE) + 1, suggestion, settings or Settings(),
                   _hole(text, len(BEFORE)))
    return text


def test_each_typed_start_is_answered_with_the_rest_and_its_range_moves():
    reuse = SuggestionReuse()
    _shown(reuse)
    for typed in range(1, len("alpha + beta")):
        text = BEFORE + "alpha + beta"[:typed] + AFTER
        offset = len(BEFORE) + typed
        candidate = reuse.candidate(_snapshot(text, 1 + typed), offset, Settings())
        assert candidate is not None and candidate.kind == "typed-through"
        shown = reuse.confirm(candidate, _hole(text, offset))
        assert shown is not None
        assert shown.suggestion == "alpha + beta"[typed:]
        assert (shown.start, shown.end) == (offset, offset + 1)  # the ")" after the cursor moved along
    assert reuse.stats.typed_through == len("alpha + beta") - 1


def test_a_partial_accept_of_a_word_is_typed_through():
    reuse = SuggestionReuse()
    _shown(reuse)
    text = BEFORE + "alpha " + AFTER  # VS Code's "accept next word" inserts the word and its blank
    candidate = reuse.candidate(_snapshot(text), len(BEFORE) + 6, Settings())
    assert candidate is not None and candidate.shown.suggestion == "+ beta"


def test_other_edits_settings_and_the_whole_suggestion_are_not_answered():
    reuse = SuggestionReuse()
    text = _shown(reuse)
    here = len(BEFORE)
    assert reuse.candidate(_snapshot(BEFORE + "alx" + AFTER), here + 3, Settings()) is None  # left the suggestion
    assert reuse.candidate(_snapshot(BEFORE + "al" + AFTER), here + 1, Settings()) is None  # cursor not after it
    assert reuse.candidate(_snapshot("#\n" + BEFORE + "a" + AFTER), here + 3, Settings()) is None  # edit elsewhere
    assert reuse.candidate(_snapshot(BEFORE + "alpha + beta" + AFTER), here + 12, Settings()) is None  # all typed
    assert reuse.candidate(_snapshot(BEFORE + "a" + AFTER), here + 1, Settings(max_lines=3)) is None
    assert reuse.candidate(_snapshot(text), here, Settings(model="other")) is None
    repeated = reuse.candidate(_snapshot(text), here, Settings())
    assert repeated is not None and repeated.kind == "repeated" and repeated.shown.suggestion == "alpha + beta"


def test_a_changed_gamma_refuses_the_answer():
    reuse = SuggestionReuse()
    _shown(reuse)
    text = BEFORE + "a" + AFTER
    offset = len(BEFORE) + 1
    candidate = reuse.candidate(_snapshot(text), offset, Settings())
    hole = _hole(text, offset)
    smaller = hole.gamma.overlay()
    smaller.pop()  # the function's frame (alpha and beta) is gone
    assert reuse.confirm(candidate, dataclasses.replace(hole, gamma=smaller)) is None
    larger = hole.gamma.overlay()
    larger.declare(Binding("gamma_new", "Variable"))
    assert reuse.confirm(candidate, dataclasses.replace(hole, gamma=larger)) is None
    assert reuse.confirm(candidate, object()) is None  # no hole there any more
    assert reuse.stats.gamma_changed == 3 and reuse.stats.typed_through == 0
    assert reuse.confirm(candidate, hole) is not None


def test_hole_key_sees_attributes_and_context():
    hole = _hole(BEFORE + AFTER, len(BEFORE))
    retyped = hole.gamma.overlay()
    retyped.pop()
    retyped.push("function", [Binding("alpha", "Variable", {"type": "int"}), Binding("beta", "Variable")])
    assert hole_key(dataclasses.replace(hole, gamma=retyped)) != hole_key(hole)
    assert hole_key(dataclasses.replace(hole, context={"extra": 1})) != hole_key(hole)
    assert hole_key(dataclasses.replace(hole, typed="al", cursor=hole.cursor + 2)) == hole_key(hole)


def test_what_is_kept_is_bounded():
    reuse = SuggestionReuse(max_documents=2, max_results=3)
    hole = _hole(BEFORE + AFTER, len(BEFORE))
    for n in range(10):
        snapshot = Snapshot(f"file:///d{n}.py", "python", 1, BEFORE + AFTER, None)
        reuse.remember(snapshot, len(BEFORE), len(BEFORE), "x", Settings(), hole)
    assert len(reuse._shown) == 2 and len(reuse._results) == 3


def test_a_frame_that_grew_changes_the_key():
    """The binding digests are kept between keys; a declaration into a frame changes the key."""
    from gdg_lsp.gamma import Gamma

    shared = _hole(BEFORE + AFTER, len(BEFORE))
    own = Gamma(shared.gamma.global_layer.copy(), [frame.copy() for frame in shared.gamma.frames])
    hole = dataclasses.replace(shared, gamma=own)  # frames of its own: the analyzer's are not touched
    before = hole_key(hole)
    assert hole_key(hole) == before == hole_key(shared)  # from the kept digests
    own.global_layer.declare(Binding("declared_later", "Variable"))
    assert hole_key(hole) != before
    own.frames[-1].declare(Binding("declared_inside", "Variable"))
    assert len({before, hole_key(hole), hole_key(shared)}) == 2
