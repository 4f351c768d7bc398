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


# -- usefulness: mid-line holes, edit similarity, prompt variants ---------------------------------


class _Item:
    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end = text, start, end


def test_midline_holes_are_cut_between_a_calls_parentheses(corpus):
    from gdg_lsp.languages.python import bench

    cases = bench.cut_midline_holes(corpus, 6, seed=3)
    assert len(cases) == 6
    for case in cases:
        assert case.text[case.cursor - 1 : case.cursor + 1] == "()" and case.expected.endswith(")")
        assert len(case.expected) > 1
        # the original line put back parses; the hole as cut, with nothing typed, too
        assert bench.check(case, case.expected).parsed
        assert not bench.check(case, case.expected + ")").parsed  # the closer twice does not


def test_an_accepted_item_is_judged_on_the_line_it_leaves(corpus):
    from gdg_lsp.bench.quality import applied, changes_the_hole, edit_similarity, repeats_suffix
    from gdg_lsp.languages.python import bench

    case = bench.cut_midline_holes(corpus, 1, seed=0)[0]
    args = case.expected[:-1]
    inserted = _Item(args, case.cursor, case.cursor)  # before the user's ")"
    replaced = _Item(case.expected, case.cursor, case.cursor + 1)  # over it
    doubled = _Item(case.expected, case.cursor, case.cursor)  # the ")" again, before the user's
    assert applied(case, inserted) == applied(case, replaced) == case.expected
    assert edit_similarity(applied(case, inserted), case.expected) == 1.0
    assert applied(case, doubled) == case.expected + ")"
    assert repeats_suffix(case, doubled) and not repeats_suffix(case, inserted) and not repeats_suffix(case, replaced)
    assert 0.0 < edit_similarity("abcd", "abce") < 1.0
    own = _Item("f(x)", case.cursor, case.cursor)  # closes its own bracket: not a repeat
    assert not repeats_suffix(case, own)
    assert not changes_the_hole(case, ")") and changes_the_hole(case, "x)")


def test_prompt_variants_are_reported_side_by_side():
    from gdg_lsp.bench.quality import PROMPT_VARIANTS, _variants, parse_args
    from gdg_lsp.languages.python import bench

    args = parse_args(["--prompt", "prefix-only,suffix", "--holes", "midline"])
    assert _variants(bench, args) == ["prefix-only", "suffix"] and PROMPT_VARIANTS["prefix-only"]["suffix"] is False
    rows = [dict(_row("scope/prefix-only", [], 100), suggestion="a", similarity=0.5, repeats_suffix=True, answered=True),
            dict(_row("scope/suffix", [], 100), suggestion="", similarity=0.0, answered=False)]
    table = summarize(rows, ["scope/prefix-only", "scope/suffix"])
    assert table["scope/prefix-only"]["answered"] == 1 and table["scope/suffix"]["answered"] == 0
    text = markdown(table, "# t")
    assert "| scope/prefix-only | 1/1 | 0% | 0.50 | 100% | 1 |" in text
    assert "| scope/suffix | 0/1 | 0% | 0.00 | 0% | 0 |" in text
