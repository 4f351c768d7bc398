"""The shell and jq bench plug-ins: holes are cut deterministically from the
corpora, and the oracles (real git, make, package.json, jq) pass the gold and
catch a ghost."""

from __future__ import annotations

from gdg_lsp.languages.jq import bench as jq_bench
from gdg_lsp.languages.shell import bench as shell_bench


def test_shell_holes_and_oracle():
    cases = shell_bench.cut_holes(shell_bench.HERE_CORPUS, 0, 0)
    assert [c.case_id for c in cases] == [c.case_id for c in shell_bench.cut_holes(shell_bench.HERE_CORPUS, 0, 0)]
    assert {c.meta["kind"] for c in cases} >= {"ref", "remote", "script", "branch"}
    for case in cases:
        verdict = shell_bench.check(case, case.expected)
        assert verdict.parsed and not verdict.ghosts, (case.case_id, verdict)
    by_kind = {c.meta["kind"]: c for c in cases}
    assert shell_bench.check(by_kind["ref"], "no-such-branch").ghosts == ["no-such-branch"]
    assert shell_bench.check(by_kind["script"], "no-such-script").ghosts == ["no-such-script"]
    assert shell_bench.check(by_kind["remote"], "nowhere main").ghosts == ["nowhere"]
    assert shell_bench.references("make build lint > log && make -n ghost") == [
        ("target", "build"), ("target", "lint"), ("target", "ghost")]
    # operators written against a word end the command or redirect, as in the shell
    assert shell_bench.references("git checkout ;fake.f for") == []
    assert shell_bench.references("git checkout main;make build 2>/dev/null|tee x") == [
        ("ref", "main"), ("target", "build")]
    assert shell_bench.references("make lint 2>&1 >>log; git push origin 'v1.2'") == [
        ("target", "lint"), ("remote", "origin"), ("ref", "v1.2")]
    # '#' begins a comment only at a word's start
    assert shell_bench.simple_commands("make build#x lint # deploy") == [["make", "build#x", "lint"]]


def test_make_targets_are_judged_by_make_itself(tmp_path):
    (tmp_path / "Makefile").write_text("build:\n\techo b\n%.o: %.c\n\tcc $<\n")
    assert shell_bench._exists("target", "build", tmp_path)
    assert not shell_bench._exists("target", "deploy", tmp_path)


def test_jq_holes_and_oracle():
    cases = jq_bench.cut_holes(jq_bench.HERE_CORPUS, 0, 0)
    assert len(cases) >= 30 and all(c.text.endswith(".") for c in cases)
    for case in cases:
        verdict = jq_bench.check(case, case.expected)
        assert verdict.parsed and verdict.passed and not verdict.ghosts, (case.case_id, verdict)
    assert jq_bench.ghosts(".items[].nmae", {"items": [{"name": 1}]}) == ["nmae"]
    assert jq_bench.ghosts("{x: .nmae}", {"name": 1}) == ["nmae"]
    assert jq_bench.ghosts(".items[].name", {"items": [{"name": 1}]}) == []
    # a comment reads nothing, whether the program is a path expression or not; a string's '#' is no comment
    assert jq_bench.ghosts(".name # .nmae", {"name": 1}) == [] and jq_bench.ghosts("..+2#7,.nmae", {"name": 1}) == []
    assert jq_bench.ghosts('"#" + .nmae', {"name": 1}) == ["nmae"]
