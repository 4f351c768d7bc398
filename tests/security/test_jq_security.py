"""Attacks through the input a jq filter is said to read: a path out of the
workspace, a symlink out of it, an input too large or too deeply nested."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.jq import schema
from gdg_lsp.languages.jq.analyzer import JqAnalyzer
from gdg_lsp.settings import JqInput, JqSettings, Settings


def _hole(root: Path, text: str, settings: Settings | None = None) -> Hole:
    hole = JqAnalyzer().hole_at(Snapshot((root / "f.jq").as_uri(), "jq", 1, text, None), len(text),
                                WorkspaceContext([root], settings or Settings()))
    assert isinstance(hole, Hole)
    return hole


def test_inputs_outside_the_workspace_are_not_read(tmp_path: Path):
    root, outside = tmp_path / "ws", tmp_path / "secret"
    root.mkdir()
    outside.mkdir()
    (outside / "keys.json").write_text(json.dumps({"api_token": "x"}))
    os.symlink(outside / "keys.json", root / "f.json")  # the same-stem input is a link out
    for text, settings in ((f"# gdg: input={outside / 'keys.json'}\n.", None), ("# gdg: input=../secret/keys.json\n.", None),
                           (".", None), (".", Settings(jq=JqSettings([JqInput("*.jq", "../secret/*.json")])))):
        hole = _hole(root, text, settings)
        assert not hole.gamma.bindings("Field"), text
        assert "api_token" not in str(hole.context)


def test_a_huge_or_deeply_nested_input_is_sampled_within_the_bound(tmp_path: Path):
    root = tmp_path
    with (root / "f.json").open("w") as handle:
        handle.write("[")
        for i in range(60_000):
            handle.write(json.dumps({"id": i, "payload": "x" * 40}) + ",")
        handle.write('{"late": 1}]')
    assert (root / "f.json").stat().st_size > 3 * schema.MAX_BYTES
    hole = _hole(root, ".[].")
    assert sorted(b.attrs["key"] for b in hole.gamma.bindings("Field") if b.attrs["parent"] == ".[]") == ["id", "payload"]
    assert "sampled" in hole.context["input"]
    (root / "f.json").write_text("[" * 200_000 + "]" * 200_000)
    hole = _hole(root, ".")  # Python's parser gives up on the nesting: nothing is known, nothing crashes
    assert not hole.gamma.bindings("Field")


def test_the_jq_bench_writes_nothing_through_a_folder_planted_in_the_shared_temp_folder(tmp_path, monkeypatch):
    """The jq bench writes each hole's program and input to files. A folder planted first at a
    fixed name in the shared temporary folder, with links where those files go and a fragment
    file for the server to read, must not receive them: they go to the process's own folder."""
    from gdg_lsp.languages.jq import bench as jq_bench

    shared = tmp_path / "shared-tmp"
    planted = shared / "gdg-bench-jq"
    (planted / ".gdg" / "fragments").mkdir(parents=True)
    (planted / ".gdg" / "fragments" / "planted.toml").write_text("# planted\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file\n")
    for line in range(1, 3000):
        for suffix in (".json", ".jq"):
            (planted / f"jq-test-{line:04d}{suffix}").symlink_to(victim)
    monkeypatch.setattr("tempfile.tempdir", str(shared))
    monkeypatch.setattr("gdg_lsp.languages.cases._SCRATCH", [])

    cases = jq_bench.cut_holes(jq_bench.HERE_CORPUS, 0, 0)
    assert cases
    assert victim.read_text() == "the user's own file\n"
    for case in cases:
        (root,) = case.meta["workspace_roots"]
        assert not Path(root).is_relative_to(planted)
        assert not (Path(root) / ".gdg").exists()
