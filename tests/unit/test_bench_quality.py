"""The quality runner's arithmetic: rates, percentiles, the scope/none ratio, extra oracle facts."""

from __future__ import annotations

from gdg_lsp.bench.quality import markdown, plugins, summarize
from gdg_lsp.latency import percentile


def _row(arm: str, ghosts: list[str], latency: float, **details) -> dict:
    return {"arm": arm, "ghosts": ghosts, "parsed": True, "passed": not ghosts, "exact": False, "suggestion": "x",
            "tokens": 4, "free_bits": 2.0, "latency_ms": latency, "warm_latency_ms": latency / 2, "details": details}


def test_rates_and_latencies_per_arm():
    rows = [_row("none", ["ghost"], 100, executes=False, exact=True), _row("none", [], 300, executes=True),
            _row("scope", [], 110, executes=True), _row("scope", [], 330, executes=True)]
    table = summarize(rows, ["none", "scope"])
    assert table["none"]["ghost_rate"] == 0.5 and table["scope"]["ghost_rate"] == 0.0
    assert table["none"]["oracle_pass_rate"] == 0.5 and table["scope"]["executes_rate"] == 1.0
    assert "exact_rate" not in table["none"]  # exact match has its own column
    text = markdown(table, "# t")
    assert "| arm | executes |" in text and "| scope | 100% |" in text
    assert "scope/none latency ratio (p50): 1.10" in text


def test_percentile_picks_observed_values():
    assert percentile([], 0.5) == 0.0
    assert percentile([5, 1, 3], 0.5) == 3
    assert percentile(list(range(1, 101)), 0.95) == 95


def test_every_language_has_a_plugin():
    assert set(plugins()) == {"python", "sql", "p4", "tilelang", "shell", "jq"}


def test_stop_reasons_are_tallied_per_arm():
    rows = [_row("scope", [], 100, stop_unused=True) | {"stop": "max-lines"},
            _row("scope", [], 100) | {"stop": "timeout"}, _row("scope", [], 100) | {"stop": "max-lines"}]
    table = summarize(rows, ["scope"])
    assert table["scope"]["stops"] == {"max-lines": 2, "timeout": 1}
    assert "| scope | max-lines 2, timeout 1 |" in markdown(table, "# t")
