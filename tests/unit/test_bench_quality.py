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


def test_attribute_ghosts_get_a_column_for_every_arm():
    rows = [_row("none", [], 100, attribute_ghosts=["json.dumpz"], attributes_judged=2),
            _row("none", [], 100, attribute_ghosts=[], attributes_judged=1),
            _row("scope", [], 100, attribute_ghosts=[], attributes_judged=3),
            _row("scope", [], 100, attribute_ghosts=[], attributes_judged=0)]
    table = summarize(rows, ["none", "scope"])
    assert table["none"]["attribute_ghost_suggestions"] == 1 and table["none"]["attribute_ghost_rate"] == 0.5
    assert table["scope"]["attribute_ghosts"] == 0 and table["scope"]["attributes_judged"] == 3
    text = markdown(table, "# t")
    assert "| none | 1 (50%) | 1 | 3 |" in text and "| scope | 0 (0%) | 0 | 3 |" in text


def test_the_attribute_oracle_imports_in_its_own_process_and_reads_classes():
    """Modules are judged by a separate process (nothing is imported here); ``self`` by the
    class's source, its bases in the file and standard-library bases."""
    import sys

    from gdg_lsp.languages.python.bench import attribute_ghosts_on_line

    source = ("import os\nimport json as js\nimport wave\nfrom threading import Thread\n\n"
              "class W(Thread):\n    size = 1\n\n    def __init__(self):\n        self.count = 0\n\n"
              "    def go(self, a, json):\n"
              "        x = os.path.jion(a) + js.dumps(a) + self.count + self.sise + self.start() + wave.Wave_read + json.x\n")
    before = set(sys.modules)
    ghosts, judged = attribute_ghosts_on_line(source, 13)
    assert ghosts == ["os.path.jion", "self.sise"]
    assert judged == 7  # os.path, os.path.jion, js.dumps, self.count, self.sise, self.start, wave.Wave_read (not json.x: a parameter)
    assert "wave" not in set(sys.modules) - before
