"""A shell script and a jq filter over stdio: the server publishes a diagnostic
for a branch that does not exist (with the quick fix to the closest one),
answers hover with where a name came from, and lists Γ names as completion
items; the filter's missing field is warned the same way."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lsp.stdio_client import StdioClient
from tests.lsp.test_workspace_schemas import _diagnostics
from tests.shell.shell_workspace import make_workspace


def test_a_shell_script_gets_diagnostics_quick_fixes_and_hover(tmp_path: Path):
    root = make_workspace(tmp_path / "ws")
    client = StdioClient()
    try:
        options = {"gdg": {"model": "/nonexistent/model.gguf", "shell": {"tools": []}}}
        client.initialize(None, options, root=root.as_uri())
        uri = (root / "deploy.sh").as_uri()
        text = "#!/bin/sh\ngit checkout relase-1.2\nmake lint\njq -r '.items[] | .nmae' data.json\n"
        mark = len(client.messages)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "shellscript",
                                                                "version": 1, "text": text}})
        found = _diagnostics(client, uri, mark)
        assert [(d["code"], d["data"]["name"], d["data"].get("replacement")) for d in found] == [
            ("shell.unknown-ref", "relase-1.2", "release-1.2"), ("jq.unknown-field", "nmae", "name")]
        params = {"textDocument": {"uri": uri}, "range": found[0]["range"], "context": {"diagnostics": [found[0]]}}
        [action] = client.request(10, "textDocument/codeAction", params)["result"]
        assert action["edit"]["documentChanges"][0]["edits"][0]["newText"] == "release-1.2"

        hover = client.request(11, "textDocument/hover", {"textDocument": {"uri": uri},
                                                          "position": {"line": 2, "character": 6}})["result"]
        value = hover["contents"]["value"]
        assert "**make:lint** — MakeTarget" in value and "common.mk" in value

        items = client.request(12, "textDocument/completion", {"textDocument": {"uri": uri},
                                                               "position": {"line": 2, "character": 5}})["result"]
        labels = {item["label"] for item in (items["items"] if isinstance(items, dict) else items)}
        assert {"main", "release-1.2", "build", "lint", "origin"} <= labels and not any("source:" in x for x in labels)
    finally:
        assert client.close() == 0


def test_a_jq_filter_gets_its_missing_field_warned(tmp_path: Path):
    (tmp_path / "orders.json").write_text(json.dumps({"items": [{"name": "a"}]}))
    client = StdioClient()
    try:
        client.initialize(None, {"gdg": {"model": "/nonexistent/model.gguf"}}, root=tmp_path.as_uri())
        uri = (tmp_path / "orders.jq").as_uri()
        mark = len(client.messages)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "jq", "version": 1,
                                                                "text": ".items[] | .nmae\n"}})
        [diagnostic] = _diagnostics(client, uri, mark)
        assert diagnostic["data"]["replacement"] == "name" and diagnostic["range"]["start"]["character"] == 12

        # right after the `.` of a path (nothing name-like before it): the input's fields are items
        result = client.request(5, "textDocument/completion", {"textDocument": {"uri": uri},
                                                               "position": {"line": 0, "character": 12}})["result"]
        labels = {item["label"] for item in (result["items"] if isinstance(result, dict) else result)}
        assert any(label.endswith("name") for label in labels), labels

        # after `.items[].`: the fields of the array's elements, by key (it answered nothing before)
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                 "contentChanges": [{"text": ".items[].\n"}]})
        result = client.request(6, "textDocument/completion", {"textDocument": {"uri": uri},
                                                               "position": {"line": 0, "character": 9}})["result"]
        labels = {item["label"] for item in (result["items"] if isinstance(result, dict) else result)}
        assert labels == {"name"}, labels
    finally:
        assert client.close() == 0
