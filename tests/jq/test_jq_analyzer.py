"""jq: the input's shape (sampled with a bound), which input a filter reads, the
walk that types each path by nesting, holes, diagnostics and hover."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.jq import inputs, schema
from gdg_lsp.languages.jq.analyzer import JqAnalyzer, input_choices
from gdg_lsp.languages.jq.flow import walk
from gdg_lsp.languages.jq.lexer import significant, tokenize
from gdg_lsp.settings import JqInput, JqSettings, Settings

ORDERS = {"items": [{"name": "a", "id": 1, "tags": ["x"], "price": {"amount": 3}}], "meta": {"count": 1, "next page": None}}


def _workspace(root: Path, settings: Settings | None = None) -> WorkspaceContext:
    return WorkspaceContext([root], settings or Settings())


def _snapshot(path: Path, text: str) -> Snapshot:
    return Snapshot(path.as_uri(), "jq", 1, text, None)


def test_a_large_input_is_sampled_and_the_sample_is_reported(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(schema, "MAX_BYTES", 4096)
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"id": i, "name": f"n{i}"} for i in range(2000)] + [{"late": True}]))
    sample = schema.read_samples([big])
    assert sample.root.elements is not None and set(sample.root.elements.keys) == {"id", "name"}
    assert "sampled" in sample.note and "records" in sample.note
    lines = tmp_path / "lines.json"
    lines.write_text("\n".join(json.dumps({"k": i}) for i in range(3)))
    assert "whole file, 3 values" in schema.read_samples([lines]).note


def test_the_input_comes_from_a_comment_then_settings_then_the_same_stem(tmp_path: Path):
    (tmp_path / "filters").mkdir()
    for name in ("a.json", "b.json", "filters/f.json", "filters/f.jq"):
        (tmp_path / name).write_text("{}")
    doc = tmp_path / "filters" / "f.jq"
    settings = Settings(jq=JqSettings(inputs=[JqInput("filters/*.jq", "b.json")]))
    assert inputs.input_files(doc, "# gdg: input=../a.json\n.x", [tmp_path], settings) == [tmp_path / "a.json"]
    assert inputs.input_files(doc, ".x", [tmp_path], settings) == [tmp_path / "b.json"]
    assert inputs.input_files(doc, ".x", [tmp_path], Settings()) == [tmp_path / "filters" / "f.json"]
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text("{}")
    os.symlink(outside, tmp_path / "filters" / "link.json")
    assert inputs.input_files(doc, "# gdg: input=link.json\n.", [tmp_path], Settings()) == [tmp_path / "filters" / "f.json"]


def test_paths_are_typed_by_nesting_through_pipes_select_map_and_brackets():
    builder = schema._Builder()
    builder.add(ORDERS)
    root = builder.root

    def node_at_end(program: str) -> str | None:
        flow = walk(significant(tokenize(program)), root)
        step = flow.last_step
        node = step.applied_to if step is not None else flow.segment
        return node.path if node is not None else None

    assert node_at_end(".items[].") == ".items[]"
    assert node_at_end(".items[] | select(.id > 0) | .") == ".items[]"
    assert node_at_end(".items | map(.") == ".items[]"
    assert node_at_end(".items[0].price.") == ".items[].price"
    assert node_at_end("[.items[] | {n: .name, p: .") == ".items[]"
    assert node_at_end("reduce .items[] as $i (0; .") is None  # the accumulator: unknown
    assert node_at_end(".items[] as $i | .") == "."


def test_holes_offer_only_the_fields_of_the_node(tmp_path: Path, byte_engine):
    (tmp_path / "orders.json").write_text(json.dumps(ORDERS))
    doc = tmp_path / "orders.jq"
    text = "# totals\n.items[] | select(.id > 0) | .pr"
    hole = JqAnalyzer().hole_at(_snapshot(doc, text), len(text), _workspace(tmp_path))
    assert isinstance(hole, Hole) and hole.typed == ".pr" and hole.context["node"] == ".items[]"
    assert "orders.json: whole file" in hole.context["input"]
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("jq", "filter"), "gamma", hole.gamma,
                                                    hole.context))
    assert accepts(grammar, ".price.amount\n") and accepts(grammar, ".price | .amount | tostring\n")
    assert not accepts(grammar, ".prize\n") and not accepts(grammar, ".meta\n")
    text = "map(.na"
    (tmp_path / "list.json").write_text(json.dumps([{"name": 1}]))
    hole = JqAnalyzer().hole_at(_snapshot(tmp_path / "list.jq", text), len(text), _workspace(tmp_path))
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("jq", "filter"), "gamma", hole.gamma,
                                                    hole.context))
    assert accepts(grammar, ".name)\n") and not accepts(grammar, ".nam)\n")
    assert isinstance(JqAnalyzer().hole_at(_snapshot(doc, ".a # c"), 6, _workspace(tmp_path)), NoHole)


def test_missing_fields_are_warned_with_the_closest_key_and_hover_shows_the_input(tmp_path: Path):
    (tmp_path / "orders.json").write_text(json.dumps(ORDERS, indent=1))
    text = '.items[] | {name, n: .nmae, c: .price.amuont} | .meta."next pag"'
    snap = _snapshot(tmp_path / "orders.jq", text)
    found = JqAnalyzer().diagnostics(snap, _workspace(tmp_path))
    assert [(text[f.start:f.end], f.data.get("replacement")) for f in found] == [("nmae", "name"), ("amuont", "amount")]
    binding, start, end = JqAnalyzer().binding_at(snap, text.index("price") + 1, _workspace(tmp_path))
    assert binding.name == ".items[].price" and binding.origin.uri == (tmp_path / "orders.json").as_uri()
    assert binding.origin.line == (tmp_path / "orders.json").read_text().split('"price"')[0].count("\n")


def test_the_prompt_names_the_input_paths_and_is_never_empty(tmp_path: Path):
    (tmp_path / "orders.json").write_text(json.dumps(ORDERS))
    analyzer, context = JqAnalyzer(), _workspace(tmp_path)
    hole = analyzer.hole_at(_snapshot(tmp_path / "orders.jq", ""), 0, context)
    prompt = analyzer.prompt_context(_snapshot(tmp_path / "orders.jq", ""), hole, context)
    assert prompt.startswith("# jq filter over orders.json: ") and ".items[].price.amount (number)" in prompt
    bare = analyzer.hole_at(_snapshot(tmp_path / "none.jq", ""), 0, context)
    assert analyzer.prompt_context(_snapshot(tmp_path / "none.jq", ""), bare, context) == "# jq filter\n"


def test_with_no_input_known_the_fields_are_said_open_and_an_open_path_is_bounded(tmp_path: Path, byte_engine):
    """The issue's case: after `.orders[].courier.` with no input, the base rung wrote
    `sendTo.sendTo.sendTo…`. The reason is in the hole (notGuaranteedBecause takes it), and an
    open path takes at most one step more than the longest path the filter writes."""
    text = ".orders[].courier."
    analyzer, context = JqAnalyzer(), _workspace(tmp_path)
    hole = analyzer.hole_at(_snapshot(tmp_path / "report.jq", text), len(text), context)
    assert hole.context["open_reason"] == "no input JSON known for this filter: add `# gdg: input=…`"
    choice = fragments.choose(fragments.fragment("jq", "filter"), hole.gamma, hole.context, hole.typed, "scope",
                              byte_engine.get, accepts)
    assert choice.rung == "base" and not choice.guaranteed
    base = byte_engine.get(choice.grammar)
    assert accepts(base, ".sendTo\n") and accepts(base, ".sendTo | length\n")
    for degenerate in (".sendTo.sendTo\n", ".sendTo.sendTo.sendTo.sendTo\n", ".sendTo[]\n", ". | .a.a\n"):
        assert not accepts(base, degenerate), degenerate
    # a filter that writes a longer path elsewhere lets a fresh one be as long, plus one
    text = ".meta.page.next.url\n."
    hole = analyzer.hole_at(_snapshot(tmp_path / "report.jq", text), len(text), context)
    base = byte_engine.get(fragments.instantiate(fragments.fragment("jq", "filter"), "base", hole.gamma, hole.context))
    assert accepts(base, ".a.b.c.d.e\n") and not accepts(base, ".a.b.c.d.e.f\n")
    # with the input known, π's base rung (a field the input lacks was typed) keeps its six steps
    (tmp_path / "orders.json").write_text(json.dumps(ORDERS))
    text = ".nothing."
    hole = analyzer.hole_at(_snapshot(tmp_path / "orders.jq", text), len(text), context)
    assert "open_reason" not in hole.context
    base = byte_engine.get(fragments.instantiate(fragments.fragment("jq", "filter"), "base", hole.gamma, hole.context))
    assert accepts(base, ".a.b.c.d.e.f\n")


def test_a_filter_without_input_gets_the_information_and_the_folder_s_json_files(tmp_path: Path):
    for name in ("b.json", "a.json", "notes.txt", "with space.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text("{}")
    os.symlink(tmp_path / "a.json", tmp_path / "link.json")
    analyzer, context = JqAnalyzer(), _workspace(tmp_path)
    [finding] = analyzer.diagnostics(_snapshot(tmp_path / "report.jq", ".x | .y\n.z"), context)
    assert finding.code == "jq.no-input" and finding.severity == "information"
    assert (finding.start, finding.end) == (0, len(".x | .y"))
    assert analyzer.diagnostics(_snapshot(tmp_path / "report.jq", "   \n"), context) == []
    assert input_choices(tmp_path / "report.jq", [tmp_path]) == ["a.json", "b.json"]  # no link, no blank, no folder
    assert input_choices(tmp_path.parent / "elsewhere.jq", [tmp_path]) == []  # outside the workspace: not listed
    named = _snapshot(tmp_path / "report.jq", "# gdg: input=a.json\n.x")
    assert analyzer.diagnostics(named, context) == []
