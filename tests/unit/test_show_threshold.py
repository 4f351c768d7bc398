"""The show-threshold sweep of the quality bench: what hiding the least confident suggestions
would cost in exact ones and save in wrong ones."""

from __future__ import annotations

from gdg_lsp.bench.show_threshold import markdown, meets_target, sweep


def _row(logprob: float | None, outcome: str, exact: bool = False) -> dict:
    return {"mean_logprob": logprob, "exact": exact, "replayed": {"outcome": outcome, "characters": 0}}


def test_a_confidence_that_separates_wrong_from_exact_meets_the_target():
    # the wrong ones are the least confident: hiding the lowest tenth removes wrong ones only
    rows = [_row(-3.0 + i * 0.01, "dismissed") for i in range(4)] + \
           [_row(-0.5 + i * 0.01, "dismissed") for i in range(6)] + \
           [_row(-0.1 + i * 0.001, "accepted", exact=True) for i in range(10)] + [_row(None, "dismissed")]
    lines = sweep(rows)
    first = lines[0]
    assert first["shown"] == 20 and first["wrong"] == 10 and first["exact"] == 10  # no log-probability: left out
    assert first["hidden"] == 0.1 and first["wrong_hidden"] == 0.2 and first["exact_hidden"] == 0.0
    assert not meets_target(first)
    second = lines[1]  # the lowest fifth: 4 of the 10 wrong, no exact one
    assert second["wrong_hidden"] == 0.4 and second["exact_hidden"] == 0.0 and meets_target(second)
    assert markdown("scope", [second])[0].endswith("| 40% of 10 | 0% of 10 | yes |")


def test_a_confidence_that_does_not_separate_them_never_meets_it():
    rows = [_row(-1.0 + i * 0.05, "dismissed" if i % 2 else "accepted", exact=not i % 2) for i in range(20)]
    assert not any(meets_target(line) for line in sweep(rows))


def test_nothing_shown_is_no_sweep():
    assert sweep([_row(-1.0, "not shown"), _row(None, "accepted")]) == []
