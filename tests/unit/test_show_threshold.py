"""Staying silent when the model doubts its suggestion (``gdg.showThreshold``, issue 28 item 4):
the server's threshold, and the quality bench's sweep and calibration of one."""

from __future__ import annotations

import dataclasses

import pytest

from gdg_lsp import settings as settings_module
from gdg_lsp.backends import presets
from gdg_lsp.bench import show_threshold
from gdg_lsp.documents import Document
from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service import confidence
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings

CODE = "def f(ab):\n    x = ab\n    "


def _ask(service: CompletionService, **options) -> object:
    doc = Document("file:///t.py", "python", 1, CODE, parse)
    return service.complete(doc.snapshot(), len(CODE), Settings(max_tokens=12, **options))


def test_a_suggestion_below_the_threshold_is_not_shown_and_says_why(random_backend):
    service = CompletionService(random_backend)
    shown = _ask(service, show_threshold="off")
    assert shown.text.strip(), "the random model wrote nothing: the test would prove nothing"
    value = confidence.score(shown.execution)
    assert value is not None and value < 0  # a sampled token of a random model is never certain

    hidden = _ask(service, show_threshold=f"{value / 2:.6f}")  # above this suggestion's score
    assert hidden.text == ""
    assert hidden.reason.startswith("low-confidence") and "gdg.showThreshold" in hidden.reason

    below = _ask(service, show_threshold=f"{value * 2:.6f}")  # below it: shown as decoded
    assert below.text == shown.text and below.reason is None


def test_each_alternative_is_judged_on_its_own(random_backend):
    """With several candidates a doubted one drops out of the list and the others stay."""
    service = CompletionService(random_backend)
    every = _ask(service, show_threshold="off", candidates=4)
    scores = sorted(confidence.score(c.execution) for c in every.candidates)
    assert len(set(scores)) >= 2, "fewer than two distinct candidates: the test would prove nothing"
    cut = (scores[0] + scores[-1]) / 2
    kept = _ask(service, show_threshold=f"{cut:.6f}", candidates=4)
    assert kept.candidates and all(confidence.score(c.execution) >= cut for c in kept.candidates)
    assert any(d["why"].startswith("low-confidence") for d in kept.dropped)


def test_auto_applies_the_threshold_measured_for_the_weights_at_a_lines_end_only(monkeypatch):
    calibrated = dataclasses.replace(presets.SMOLLM2, show_thresholds=(("python", -4.5),))
    monkeypatch.setattr(presets, "PRESETS", (calibrated, *presets.PRESETS[1:]))
    weights = calibrated.label  # what the loaded model's name says it runs
    at_line_end = Hole("python", "stmt", "Stmt", 0, 0, 0, "", "", Gamma())
    assert confidence.threshold(Settings(), "python", at_line_end, weights) == -4.5
    assert confidence.threshold(Settings(), "sql", at_line_end, weights) is None  # not measured there
    assert confidence.threshold(Settings(show_threshold="off"), "python", at_line_end, weights) is None
    assert confidence.threshold(Settings(show_threshold="-2"), "sql", at_line_end, "mine") == -2.0
    mid_line = dataclasses.replace(at_line_end, suffix=") + 1")
    assert confidence.threshold(Settings(), "python", mid_line, weights) is None  # scored past its cut
    assert confidence.threshold(Settings(), "python", at_line_end, "mine") is None  # no preset: nothing measured
    assert confidence.threshold(Settings(backend="remote"), "python", at_line_end, weights) is None


def test_auto_hides_what_the_weights_doubt_through_the_service(random_backend, monkeypatch):
    """A random model loaded under a preset's name, with a threshold above its suggestion's
    score measured for it: ``auto`` hides it, ``off`` shows it."""
    service = CompletionService(random_backend)
    shown = _ask(service, show_threshold="off")
    value = confidence.score(shown.execution)
    assert shown.text.strip() and value is not None
    calibrated = dataclasses.replace(presets.SMOLLM2, label=random_backend.name,
                                     show_thresholds=(("python", value / 2),))
    monkeypatch.setattr(presets, "PRESETS", (calibrated, *presets.PRESETS[1:]))
    hidden = _ask(service)
    assert hidden.text == "" and hidden.reason.startswith("low-confidence")


@pytest.mark.parametrize("value", ["x", "1", "inf", "nan", ""])
def test_a_bad_threshold_is_refused_with_the_default_kept(value):
    got, problems = settings_module.from_json({"showThreshold": value})
    assert got.show_threshold == "auto" and problems and "showThreshold" in problems[0]


def test_calibration_takes_the_middle_of_the_thresholds_that_meet_the_target():
    rows = [_row(-20, "dismissed"), _row(-9, "dismissed"), _row(-8, "accepted", True), _row(-6, "dismissed"),
            *(_row(-0.5 - i / 10, "accepted", True) for i in range(9)), _row(-0.1, "dismissed")]
    # meeting it: -8.5 (2 of 4 wrong, no exact), -7 (and 1 of 10 exact), -3.65 (3 of 4 wrong);
    # the middle of -8.5 .. -3.65 is nearest -7
    picked = show_threshold.calibrate(rows)
    assert picked is not None and picked["threshold"] == pytest.approx(-7)
    assert picked["wrong_hidden"] == 0.5 and picked["exact_hidden"] == 0.1
    assert show_threshold.at(rows, -100)["hidden"] == 0.0


def _row(score: float | None, outcome: str, exact: bool = False) -> dict:
    return {"score": score, "exact": exact, "replayed": {"outcome": outcome, "characters": 0}}


def test_a_confidence_that_separates_wrong_from_exact_meets_the_target():
    # the wrong ones are the least confident: hiding the lowest tenth removes wrong ones only
    rows = [_row(-3.0 + i * 0.01, "dismissed") for i in range(4)] + \
           [_row(-0.5 + i * 0.01, "dismissed") for i in range(6)] + \
           [_row(-0.1 + i * 0.001, "accepted", exact=True) for i in range(10)] + [_row(None, "dismissed")]
    lines = show_threshold.sweep(rows)
    first = lines[0]
    assert first["shown"] == 20 and first["wrong"] == 10 and first["exact"] == 10  # no score: left out
    assert first["hidden"] == 0.1 and first["wrong_hidden"] == 0.2 and first["exact_hidden"] == 0.0
    assert not show_threshold.meets_target(first)
    second = lines[1]  # the lowest fifth: 4 of the 10 wrong, no exact one
    assert second["wrong_hidden"] == 0.4 and second["exact_hidden"] == 0.0 and show_threshold.meets_target(second)
    assert show_threshold.markdown("scope", [second])[0].endswith("| 40% of 10 | 0% of 10 | yes |")


def test_a_confidence_that_does_not_separate_them_never_meets_it():
    rows = [_row(-1.0 + i * 0.05, "dismissed" if i % 2 else "accepted", exact=not i % 2) for i in range(20)]
    assert not any(show_threshold.meets_target(line) for line in show_threshold.sweep(rows))
    picked = show_threshold.calibrate(rows)
    assert picked is None or not show_threshold.meets_target(picked)


def test_nothing_shown_is_no_sweep():
    assert show_threshold.sweep([_row(-1.0, "not shown"), _row(None, "accepted")]) == []
    assert show_threshold.calibrate([_row(-1.0, "not shown")]) is None
