"""Where Γ is open the server says so and offers the fix, through a live server in this process
(random-weight model: the grammar decides what may be written whatever the weights).

- A jq filter with no known input (``.orders[].courier.``): the suggestion is not guaranteed,
  ``notGuaranteedBecause`` in ``gdg/suggestion`` names the missing input and how to name it,
  and the open path is cut after one more field (it was ``sendTo.sendTo.sendTo…``); the
  ``jq.no-input`` information offers one quick fix per JSON file of the folder (and source
  actions of kind ``source.gdg.jqInput``), and after the fix the fields are Γ's.
- A shell command whose program is not in ``gdg.shell.tools``: "Add cargo to gdg.shell.tools",
  whose command shows the exact setting to add and never writes a settings file."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer

FILTER = ".orders[].courier."
STEP = re.compile(r'\.(?:"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*)|\[\]')
STEPS = re.compile(rf"(?:{STEP.pattern})+")


def _diagnostics_of(uri: str, version: int | None = None):
    return lambda m: (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                      and (version is None or m["params"].get("version") == version))


async def test_a_jq_filter_without_input_is_said_open_and_offered_its_inputs(tmp_path: Path):
    (tmp_path / "orders.json").write_text(json.dumps({"orders": [{"courier": {"name": "x", "phone": "1"}}]}))
    (tmp_path / "couriers.json").write_text(json.dumps([{"id": 1}]))
    (tmp_path / "notes.txt").write_text("not an input")
    uri = (tmp_path / "report.jq").as_uri()
    options = {"model": "random:5", "maxTokens": 24, "maxLines": 1, "timeoutMs": 30000}
    async with InProcessServer(dev=True, initialization_options=options, root_uri=tmp_path.as_uri()) as server:
        assert await server.wait_model() == "ready"
        server.open(uri, FILTER, language_id="jq")
        said = await server.wait_for(_diagnostics_of(uri), 30)
        [missing] = said["params"]["diagnostics"]
        assert missing["code"] == "jq.no-input" and missing["severity"] == 3
        assert "# gdg: input=" in missing["message"]

        position = {"line": 0, "character": len(FILTER)}
        answer = await server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}}, timeout=60)
        summary = server.server.session.last_suggestion
        assert summary["text"], summary  # the seed writes something: the label below is about it
        assert summary["rung"] == "base" and summary["guaranteed"] is False
        assert "no input JSON known for this filter" in summary["notGuaranteedBecause"]
        assert "# gdg: input=" in summary["notGuaranteedBecause"]
        assert answer["result"]["items"], answer
        # from the hole's `.` on, each path is one step: one more field after .courier (the longest
        # path the filter writes, plus one), and as much for a path the suggestion starts itself
        written = "." + summary["text"]
        for path in STEPS.finditer(written):
            assert len(STEP.findall(path.group())) <= 1, (written, path.group())

        params = {"textDocument": {"uri": uri}, "range": missing["range"], "context": {"diagnostics": [missing]}}
        fixes = (await server.request("textDocument/codeAction", params))["result"]
        assert [f["title"] for f in fixes] == ["Read the input from couriers.json (# gdg: input=couriers.json)",
                                               "Read the input from orders.json (# gdg: input=orders.json)"]
        assert all(f["kind"] == "quickfix" and f["diagnostics"] == [missing] for f in fixes)
        sources = (await server.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": missing["range"],
            "context": {"diagnostics": [], "only": ["source.gdg.jqInput"]}}))["result"]
        assert [s["title"] for s in sources] == ["Name the jq input: couriers.json", "Name the jq input: orders.json"]
        [edit] = fixes[1]["edit"]["documentChanges"][0]["edits"]
        assert edit == {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "newText": "# gdg: input=orders.json\n"}

        fixed = edit["newText"] + FILTER
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": fixed}]})
        again = await server.wait_for(_diagnostics_of(uri, 2), 30)
        assert again["params"]["diagnostics"] == []
        explained = (await server.request("gdg/explain", {"textDocument": {"uri": uri},
                                                           "position": {"line": 1, "character": len(FILTER)},
                                                           "decode": False}))["result"]
        assert explained["choice"]["rung"] == "gamma"  # the input's fields now: .name, .phone
        assert "no input" not in json.dumps(explained["hole"]["context"].get("open_reason", ""))
        assert not (tmp_path / ".vscode").exists()


async def test_a_program_not_in_the_tools_setting_gets_the_setting_to_add_and_nothing_is_written(
        tmp_path: Path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    bin_dir = tmp_path / "bin"  # outside the workspace: a program the user has installed
    bin_dir.mkdir()
    cargo = bin_dir / "cargo"
    cargo.write_text("#!/bin/sh\necho ran >> " + str(tmp_path / "ran.log") + "\n")
    cargo.chmod(cargo.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    uri = (root / "build.sh").as_uri()
    text = "#!/bin/sh\ncargo build --release\necho done\ngit status\n"
    options = {"model": "/nonexistent/model.gguf", "shell": {"tools": ["git"]}}
    async with InProcessServer(dev=True, initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(uri, text, language_id="shellscript")

        async def actions_at(line: int, character: int) -> list[dict]:
            at = {"line": line, "character": character}
            return (await server.request("textDocument/codeAction", {
                "textDocument": {"uri": uri}, "range": {"start": at, "end": at},
                "context": {"diagnostics": []}}))["result"] or []

        [action] = await actions_at(1, 2)
        assert action["title"].startswith("Add cargo to gdg.shell.tools") and action["kind"] == "quickfix"
        assert "edit" not in action or action["edit"] is None
        command = action["command"]
        assert command["command"] == "gdg.showSettingToAdd"
        assert command["arguments"] == [{"setting": "gdg.shell.tools", "add": "cargo"}]
        assert await actions_at(2, 1) == [] and await actions_at(3, 1) == []  # a builtin; a listed tool
        assert await actions_at(1, len("cargo bu")) == []  # its operand: no open position there
        assert [a["title"] for a in await actions_at(1, len("cargo build --rel"))] == [action["title"]]

        result = (await server.request("workspace/executeCommand", {
            "command": command["command"], "arguments": command["arguments"]}))["result"]
        assert result["setting"] == "gdg.shell.tools" and result["value"] == ["git", "cargo"]
        assert result["json"] == '"gdg.shell.tools": ["git", "cargo"]'
        await server.settle(0.2)
        assert any('"gdg.shell.tools": ["git", "cargo"]' in m and "user setting" in m for m in server.shown())
        refused = (await server.request("workspace/executeCommand", {
            "command": "gdg.showSettingToAdd", "arguments": [{"setting": "gdg.model", "add": "/tmp/x"}]}))
        assert refused.get("result") is None
    assert not (root / ".vscode").exists() and list(root.iterdir()) == []  # no settings file written
    assert not (tmp_path / "ran.log").exists()  # looked up on PATH, never run
