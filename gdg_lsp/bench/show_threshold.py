"""What a show threshold on the mean token log-probability would buy (issue 28 item 4).

A suggestion whose mean log-probability per token is below the threshold would not be
shown. For each threshold taken at the run's own quantiles this says how many of the shown
suggestions would go, how many of the wrong ones (dismissed by the replayed user,
``replayed_acceptance``: its first word is already not the original's) and how many of the
exact ones: the trade the issue's target names (wrong shown down by 30% or more, for at most
10% fewer exact). The bench measures; the server has no threshold until one meets it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

QUANTILES = (0.1, 0.2, 0.3, 0.4, 0.5)
"""Share of the shown suggestions below each threshold tried."""
WRONG_CUT_TARGET, EXACT_LOSS_LIMIT = 0.30, 0.10


def sweep(rows: Sequence[dict[str, Any]]) -> list[dict[str, float]]:
    """One line per threshold: the threshold, and the share of the shown, the wrong and the
    exact suggestions below it (rows: the quality bench's, with ``mean_logprob`` and
    ``replayed``; those shown and with a log-probability count)."""
    shown = [r for r in rows if r.get("mean_logprob") is not None
             and r.get("replayed", {}).get("outcome", "not shown") != "not shown"]
    if not shown:
        return []
    values = sorted(r["mean_logprob"] for r in shown)
    wrong = [r for r in shown if r["replayed"]["outcome"] == "dismissed"]
    exact = [r for r in shown if r.get("exact")]
    lines = []
    for quantile in QUANTILES:
        threshold = values[min(len(values) - 1, int(quantile * len(values)))]

        def below(group: list[dict[str, Any]]) -> float:
            return sum(r["mean_logprob"] < threshold for r in group) / len(group) if group else 0.0

        lines.append({"threshold": threshold, "hidden": below(shown), "wrong_hidden": below(wrong),
                      "exact_hidden": below(exact), "shown": len(shown), "wrong": len(wrong), "exact": len(exact)})
    return lines


def meets_target(line: dict[str, float]) -> bool:
    return line["wrong_hidden"] >= WRONG_CUT_TARGET and line["exact_hidden"] <= EXACT_LOSS_LIMIT


def markdown(arm: str, lines: list[dict[str, float]]) -> list[str]:
    """The sweep as table rows for ``arm`` (the quality report's section)."""
    return [f"| {arm} | {line['threshold']:.2f} | {line['hidden']:.0%} | {line['wrong_hidden']:.0%} of {line['wrong']} "
            f"| {line['exact_hidden']:.0%} of {line['exact']} | {'yes' if meets_target(line) else 'no'} |"
            for line in lines]
