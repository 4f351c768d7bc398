"""``gdg-lsp bench perf --only editor --quick`` with the default model: the suggestions shown are
typed through over stdio, answered from the suggestion (fewer decodes than asks), and the
figures add up. No timing thresholds: the targets are judged in docs/PERFORMANCE.md."""

from __future__ import annotations

import json

import pytest

from gdg_lsp.bench import perf


@pytest.mark.slow
def test_typing_a_shown_suggestion_is_answered_without_decoding(tmp_path):
    out = tmp_path / "editor.json"
    assert perf.main(["--only", "editor", "--quick", "--json", str(out)]) == 0
    e = json.loads(out.read_text())["editor"]
    assert e["start_to_first_suggestion_s"] is not None and e["start_to_first_suggestion_s"] >= e["start_to_first_answer_s"]
    assert e["typed_through"]["n"] > 0, "no suggestion was shown to type through"
    assert e["typed_through_server"]["n"] == e["typed_through"]["n"]
    reuse = e["reuse"]
    assert reuse["typedThrough"] + reuse["gammaChanged"] >= 1 and reuse["repeated"] >= 1
    # every typed key and repeated ask answered from the suggestion: decodes only for the first asks
    assert e["decodes_per_ask"] < 1
    assert e["answered_share"] > 0
    # the ask after taking a suggestion: each hole in one arm, or counted as showing nothing
    accepted = e["after_accept"]
    assert accepted["on"]["n"] + accepted["off"]["n"] + accepted["nothing_shown"] >= 2
    assert accepted["off"]["decoded_ahead_share"] == 0.0  # work ahead off decodes nothing ahead
