"""What a show threshold would buy, and where one should be (issue 28 item 4).

A suggestion whose score (``service/confidence.score``: the model's log-probability of its
first statement) is below the threshold is not shown. The bench decodes with
``gdg.showThreshold`` off, so every suggestion is scored; this module then says, for
thresholds at the run's own quantiles, for the one ``calibrate`` picks on these rows and for
the preset's own (what ``auto`` applies), how many of the shown suggestions would go, how
many of the wrong ones (dismissed by the replayed user, ``replayed_acceptance``: its first
word is already not the original's) and how many of the exact ones: the trade the issue's
target names (wrong shown down by 30% or more, for at most 10% fewer exact). A threshold
picked on one run's holes is only believed after it holds on another's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5)
"""Share of the shown suggestions below each threshold tried."""
WRONG_CUT_TARGET, EXACT_LOSS_LIMIT = 0.30, 0.10
SCORE = "score"
"""The row field scored (rows of runs before it existed have ``mean_logprob`` only)."""


def _shown(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get(SCORE) is not None
            and r.get("replayed", {}).get("outcome", "not shown") != "not shown"]


def at(rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, float]:
    """The shares of the shown, wrong and exact suggestions of ``rows`` scored below ``threshold``."""
    shown = _shown(rows)
    wrong = [r for r in shown if r["replayed"]["outcome"] == "dismissed"]
    exact = [r for r in shown if r.get("exact")]

    def below(group: list[dict[str, Any]]) -> float:
        return sum(r[SCORE] < threshold for r in group) / len(group) if group else 0.0

    return {"threshold": threshold, "hidden": below(shown), "wrong_hidden": below(wrong),
            "exact_hidden": below(exact), "shown": len(shown), "wrong": len(wrong), "exact": len(exact)}


def sweep(rows: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """One line per quantile of the shown suggestions' scores (``at`` each)."""
    values = sorted(r[SCORE] for r in _shown(rows))
    if not values:
        return []
    return [at(rows, values[min(len(values) - 1, int(quantile * len(values)))]) for quantile in QUANTILES]


def calibrate(rows: Sequence[dict[str, Any]]) -> dict[str, float] | None:
    """The threshold for ``rows`` with the widest margin: of the thresholds that meet the target
    on them (halfway between two scores, so that none sits on one), the one nearest the middle
    of their range. The edges of that range are where a few holes more of another run tip it
    over (the highest hides the first exact ones, the lowest just enough wrong ones); None when
    no threshold meets the target."""
    values = sorted({r[SCORE] for r in _shown(rows)})
    lines = [at(rows, (lower + upper) / 2) for lower, upper in zip(values, values[1:])]
    meeting = [line for line in lines if meets_target(line)]
    if not meeting:
        return None
    middle = (meeting[0]["threshold"] + meeting[-1]["threshold"]) / 2
    return min(meeting, key=lambda line: abs(line["threshold"] - middle))


def meets_target(line: dict[str, float]) -> bool:
    return line["wrong_hidden"] >= WRONG_CUT_TARGET and line["exact_hidden"] <= EXACT_LOSS_LIMIT


def markdown(arm: str, lines: list[dict[str, float]], label: str = "") -> list[str]:
    """The lines as table rows for ``arm`` (the quality report's section); ``label`` says where
    a threshold came from (a quantile's has none)."""
    return [f"| {arm} | {line['threshold']:.2f}{label} | {line['hidden']:.0%} | {line['wrong_hidden']:.0%} of "
            f"{line['wrong']} | {line['exact_hidden']:.0%} of {line['exact']} | {'yes' if meets_target(line) else 'no'} |"
            for line in lines]
