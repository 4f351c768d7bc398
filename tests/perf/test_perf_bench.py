"""``gdg-lsp bench perf --quick`` with a random-weight model: every section is
there and its numbers are real measurements (positive, ordered, counters that
add up). No timing thresholds: the targets are judged in docs/PERFORMANCE.md
on a quiet machine, not in CI."""

from __future__ import annotations

import json

import pytest

from gdg_lsp.bench import engines, perf
from gdg_lsp.grammar.engine import DEFAULT, ENGINES


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("perf") / "perf.json"
    assert perf.main(["--model", "random", "--quick", "--no-cold", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_decode_arms_side_by_side(report):
    engines = report["decode"]
    assert len(engines) == 1
    (arms,) = engines.values()
    # the scope arm with the default grammar engine, and again with the other one
    other = f"scope/{next(e for e in ENGINES if e != DEFAULT)}"  # the engine `auto` does not pick
    assert list(arms) == ["none", "syntax", "scope", other]
    for arm, m in arms.items():
        assert m["holes"] == report["holes"] == 2
        assert 0 < m["tokens"] <= 2 * report["max_tokens"]
        assert m["tokens_per_s"] > 0 and m["model_step_ms"] > 0 and m["mask_step_ms"] > 0
        assert 0 < m["warm_p50_ms"] <= m["warm_p95_ms"]
        assert m["first_p50_ms"] > 0
    assert arms["none"]["warm_ratio_vs_none"] == 1.0
    ratio = arms["scope"]["warm_p50_ms"] / arms["none"]["warm_p50_ms"]
    assert arms["scope"]["warm_ratio_vs_none"] == pytest.approx(ratio)
    assert arms["none"]["rungs"] == ["none"] and arms["syntax"]["rungs"] == ["base"]
    assert set(arms["scope"]["rungs"]) <= {"pin", "ctx", "gamma", "base"}
    assert arms[other]["rungs"] == arms["scope"]["rungs"]  # both engines accept the same texts


def test_drafts_are_measured_against_stepping(report):
    d = report["drafts"]  # --model random is a lean fp32 model: it drafts
    assert d["holes"] == report["holes"] and d["draft_tokens"] > 0
    assert d["steps_forwards_per_token"] > 0 and 0 < d["drafts_forwards_per_token"] <= d["steps_forwards_per_token"]
    assert 0 <= d["draft_acceptance"] <= 1 and 0 <= d["same_suggestions"] <= d["holes"]
    assert d["ratio_vs_steps"] == pytest.approx(d["drafts_ms_per_token"] / d["steps_ms_per_token"])


def test_first_ask_with_nothing_cached_is_measured_both_ways(report):
    n = report["new_prompt"]
    assert n["holes"] == report["holes"]
    assert n["overlapped_p50_ms"] > 0 and n["sequential_p50_ms"] > 0
    assert n["overlapped_ratio_vs_sequential"] == pytest.approx(n["overlapped_p50_ms"] / n["sequential_p50_ms"])
    assert "prefill during the compile" in perf.render(report)


def test_grammar_cost_against_gamma_size_per_engine(report):
    g = report["grammar"]
    assert g["engines"] == ["llguidance", "xgrammar"]  # --quick leaves the static baseline out
    rows = g["rows"]
    assert [r["names"] for r in rows] == [10, 100, 1000]
    sizes = [r["gamma_size"] for r in rows]
    assert sizes == sorted(sizes) and all(r["gamma_size"] >= r["names"] for r in rows)
    for r in rows:
        assert r["rung"] == "gamma" and r["instantiate_ms"] > 0
        for engine in g["engines"]:
            m = r["engines"][engine]
            assert m["compile_ms"] > 0 and m["first_mask_ms"] > 0
            assert m["new_gamma_p50_ms"] >= m["compile_ms"] + m["first_mask_ms"] - 1e-3
            assert 0 < m["cache_hit_ms"] < m["compile_ms"]
    t = g["per_token"]
    assert t["tokens"] > 5 and t["model_step_ms"] > 0
    for engine in g["engines"]:
        m = t["engines"][engine]
        assert m["mask_ms"] > 0 and m["check_ms"] > 0
        assert m["mask_pct_of_step"] == pytest.approx(100 * m["mask_ms"] / t["model_step_ms"], rel=1e-3)
    assert g["static"]["llguidance_template_lark_ms"] > 0 and g["static"]["llguidance_template_lark_chars"] > 1000
    assert "llguidance new Γ" in perf.render(report) and "xgrammar new Γ" in perf.render(report)


def test_keystroke_path_against_file_size(report):
    rows = report["keystroke"]
    lines = [r["lines"] for r in rows]
    assert lines == sorted(lines) and lines[-1] >= 4000
    for r in rows:
        assert r["keystrokes"] == 12 and r["gamma_size"] > 0
        assert 0 < r["total_p50_ms"] <= r["total_p95_ms"]
        assert r["reparse_p95_ms"] > 0 and r["gamma_p95_ms"] > 0
        assert r["first_hole_ms"] > 0 and 0 < r["cpu_p50_ms"] <= r["cpu_p95_ms"]


def test_batch_section_compares_one_at_a_time_with_batched(report):
    batch = report["batch"]
    assert list(batch) == ["1", "2"]  # --quick
    for k, row in batch.items():
        assert row["requests"] == int(k)
        for arm in perf.BATCH_ARMS:
            m = row[arm]
            assert m["tokens"] > 0 and m["tokens_per_s"] > 0
            assert 0 < m["latency_p50_ms"] <= m["latency_max_ms"] <= m["wall_s"] * 1000 + 1
        # greedy decoding: the arms decode the same number of tokens (the same suggestions)
        assert row["batched"]["tokens"] == row["per-doc"]["tokens"]
        assert row["batched_vs_shared"] == pytest.approx(row["batched"]["tokens_per_s"] / row["shared"]["tokens_per_s"])
    assert max(int(rows) for rows in batch["2"]["batch_sizes"]) <= 2
    assert set(batch["1"]["batch_sizes"]) == {"1"}


def test_no_recompilation_while_typing(report):
    t = report["typing"]
    assert t["keystrokes"] == len(t["typed"])
    # every request looked its grammar up: compiled once per distinct text, hit otherwise
    assert t["compiles"] == t["distinct_grammars"] >= 1
    assert t["recompilations"] == 0
    assert t["compiles"] + t["cache_hits"] >= t["keystrokes"]
    # typing a statement does not change Γ at the cursor: nothing compiled after the first key
    assert t["distinct_grammars"] == t["distinct_grammars_first_key"]
    assert t["compiles_after_first_key"] == 0


def test_lsp_round_trips_and_memory(report):
    lsp = report["lsp"]
    assert "cold_first_suggestion_s" not in lsp  # --no-cold
    assert 0 < lsp["warm_ready_s"] <= lsp["warm_first_suggestion_s"]
    assert lsp["requests"] == 8 and 0 <= lsp["with_suggestion"] <= 8
    assert 0 < lsp["rtt_p50_ms"] <= lsp["rtt_p95_ms"]
    # the server reported each request (gdg/suggestion): its own time is inside the round trip
    assert 0 < lsp["server_total_p50_ms"] and lsp["overhead_p50_ms"] >= 0
    assert lsp["tokens_mean"] > 0
    assert lsp["server_peak_rss_mb"] > 50
    assert lsp["server_exit_code"] == 0
    assert report["peak_rss_mb"] > 50


def test_engines_side_by_side(report):
    """The random model is no GGUF file: llama.cpp is left out with a reason, the lean
    engines are raced at 1 and 2 threads, fp32 lean is the reference."""
    e = report["engine_comparison"]
    assert e["note"] and "lean engines only" in e["note"]
    assert e["cpu"]["cores"] >= 1 and set(e["cpu"]["flags"]) <= set(engines.CPU_FLAGS)
    assert list(e["by_threads"]) == ["1", "2"]
    for block in e["by_threads"].values():
        assert block["base"] == "lean" and list(block["engines"]) == ["lean", "lean-packed"]
        for m in block["engines"].values():
            assert m["steps"] == 2 * 4 and m["step_ms"] > 0 and m["prefill_ms"] > 0 and m["prompt_tokens"] == 128
        assert block["engines"]["lean"]["step_vs_base"] == 1.0
    agreement = e["agreement"]
    assert agreement["lean"]["agreement"] == 1.0 and agreement["lean"]["positions"] == 2 * 4
    assert 0 <= agreement["lean-packed"]["agreement"] <= 1


def test_member_surfaces_section(report):
    su = report["surfaces"]
    m = su["module_500"]
    assert m["members"] >= 500 and 0 < m["cached_p50_ms"] <= m["cached_p95_ms"] and m["first_ms"] > 0
    for arm in ("off", "on"):
        k = su["keystroke"][arm]
        assert k["keys"] > 0 and 0 < k["p50_ms"] <= k["p95_ms"] and k["enter_ms"] > 0
    assert su["keystroke"]["on_vs_off_p50"] == pytest.approx(su["keystroke"]["on"]["p50_ms"] / su["keystroke"]["off"]["p50_ms"], rel=0.05)
    rows = su["grammar"]
    assert len(rows) == 3 and all(r["with_ms"] > 0 and r["without_ms"] > 0 and r["members"] > 0 for r in rows)
    assert "### surfaces" in perf.render(report)


def test_rendered_tables(report):
    text = perf.render(report)
    for heading in ("### engines", "### decode", "### batch", "### grammar", "### keystroke", "### typing", "### LSP over stdio", "peak RSS"):
        assert heading in text
    decode = text.split("### decode", 1)[1].split("\n### ", 1)[0]  # one row per arm (other tables have arms too)
    rows = [line.split(" | ")[0] for line in decode.splitlines() if line.startswith("| ")]
    assert rows.count("| none") == 1 and rows.count("| scope") == 1 and rows.count(f"| scope/{next(e for e in ENGINES if e != DEFAULT)}") == 1


def test_only_the_keystroke_section_loads_no_model(tmp_path):
    """`--only keystroke` runs in seconds: no model, no other section; typing past one
    statement presses Enter, which is reported apart."""
    out = tmp_path / "keys.json"
    assert perf.main(["--only", "keystroke", "--file-lines", "100", "--keystrokes", "20", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert "decode" not in report and "grammar" not in report and "model" not in report
    (row,) = report["keystroke"]
    assert row["keystrokes"] == 20 and row["enter_keys"] == 1 and row["enter_p50_ms"] > 0
    assert row["gamma_size"] > 0 and 0 < row["total_p50_ms"] <= row["total_p95_ms"]


def test_editor_replay_over_stdio(report):
    """The editor section's quick form (a random model: its suggestions are often empty, so the
    typed-through figures may be empty; tests/perf/test_perf_editor.py types through a real one)."""
    from gdg_lsp.bench import editor

    e = report["editor"]
    assert e["holes"] == 2 and e["first_ask"]["n"] == 2 and e["repeated_ask"]["n"] == 2
    assert e["asks"] == 4 + e["typed_through"]["n"] and e["typed_through"]["n"] <= 2 * e["keys_per_hole"]
    assert 0 < e["first_ask"]["p50_ms"] <= e["first_ask"]["p95_ms"]
    assert 0 < e["repeated_ask"]["p50_ms"] <= e["repeated_ask"]["p95_ms"]
    assert e["start_to_first_answer_s"] > 0 and e["start_asks"] >= 1
    assert 0 <= e["answered_share"] <= 1 and e["decodes_per_ask"] >= 0
    assert set(e["targets"]) == set(editor.TARGETS) | {"fresh_first_asks_answered_share"}
    assert all(t["met"] == (t["value"] is not None and t["value"] <= t["limit"])
               for name, t in e["targets"].items() if name in editor.TARGETS)
    share = e["targets"]["fresh_first_asks_answered_share"]
    assert share["met"] == (share["value"] >= editor.MIN_ANSWERED) and 0 <= e["first_ask_answered_share"] <= 1
    assert e["server_exit_code"] == 0
    assert e["heap"]["frozenObjects"] > 0 and e["heap"]["longestPauseMs"][2] >= 0  # the server settled its heap
    assert "### editor: typing replayed over stdio" in perf.render(report)
    for key, arms in (("work_ahead", ("on", "off")), ("gamma_change", ("scope", "none"))):
        ahead = e[key]  # one new line per arm in the quick form
        for arm in arms:
            assert ahead[arm]["n"] == 1 and ahead[arm]["p50_ms"] > 0 and ahead[arm]["prefilled_tokens_p50"] >= 0
            server = ahead[arm]["server_p50_ms"]  # where the request's time went, by the server's account
            assert set(server) == set(editor.SERVER_PHASES) and all(v >= 0 for v in server.values())
            assert sum(server.values()) <= ahead[arm]["p50_ms"] and ahead[arm]["decoded_tokens_p50"] >= 0
            assert set(ahead[arm]["decode_p50_ms"]) == set(editor.DECODE_PHASES)
            assert 0 <= ahead[arm]["planned_ahead_share"] <= 1
        assert ahead["p50_ratio"] == pytest.approx(ahead[arms[0]]["p50_ms"] / ahead[arms[1]]["p50_ms"], rel=0.01)
    assert e["work_ahead"]["p50_ratio_on_off"] == e["work_ahead"]["p50_ratio"]
    assert "gdg.workAhead on and off" in perf.render(report) and "gdg.constraint scope and none" in perf.render(report)
