"""The JSON-RPC surface over stdio: capabilities, encodings, hostile messages, fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lsp.stdio_client import StdioClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # the model is not needed here; an unknown model path keeps the server model-free
    client = StdioClient(stderr=tmp_path_factory.mktemp("log") / "stderr.log")
    client.initialize({"general": {"positionEncodings": ["utf-8", "utf-16"]}, "window": {"workDoneProgress": True}},
                      {"gdg": {"model": "/nonexistent/model.gguf"}})
    yield client
    assert client.close() == 0


def test_capabilities_advertise_inline_completion_and_utf8():
    client = StdioClient()
    try:
        caps = client.initialize({"general": {"positionEncodings": ["utf-8", "utf-16"]}})["result"]["capabilities"]
        assert caps["inlineCompletionProvider"] is not None
        assert caps["positionEncoding"] == "utf-8"
        assert caps["textDocumentSync"]["change"] == 2  # incremental
        assert caps["hoverProvider"] and caps["completionProvider"] is not None
    finally:
        client.close()


def test_vs_code_gets_utf16():
    client = StdioClient()
    try:
        caps = client.initialize({})["result"]["capabilities"]
        assert caps.get("positionEncoding", "utf-16") == "utf-16"
    finally:
        client.close()


def test_every_request_is_answered_even_when_malformed(server):
    answer = server.request(101, "textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": {"line": -1, "character": 0}})
    assert answer["error"]["code"] == -32602 and "line" in answer["error"]["message"]
    answer = server.request(102, "textDocument/inlineCompletion", {"textDocument": {"uri": 5}, "position": "here"})
    assert answer["error"]["code"] == -32602
    server.send_raw(b"{this is not json")
    assert server.wait_for(lambda m: m.get("id") is None and m.get("error", {}).get("code") == -32700, 10)
    assert server.request(103, "no/suchMethod", {})["error"]["code"] == -32601
    # and the server is still serving
    assert "result" in server.request(104, "gdg/status", {})


def test_edits_to_unopened_documents_and_positions_past_the_end(server):
    server.notify("textDocument/didChange", {"textDocument": {"uri": "file:///never.py", "version": 2},
                                             "contentChanges": [{"text": "x"}]})
    uri = "file:///p.py"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "a = 1\n"}})
    result = server.request(110, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 99, "character": 99}})
    assert "result" in result
    result = server.request(111, "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {"line": 50, "character": 0},
                                                                   "context": {"triggerKind": 1}})
    assert result["result"] == {"items": []}  # no model here: an empty answer, not an error


def test_utf8_edits_and_hover_positions(server):
    uri = "file:///u.py"
    text = "def f(ʃ😀x):\n    return 1\n"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    # UTF-8 columns: "def f(" is 6 bytes, ʃ 2, 😀 4; replace "return 1" by "return x + y"
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 12}}, "text": "return f + len"}]})
    hover = server.request(120, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}})
    assert "**f** — Function" in hover["result"]["contents"]["value"]
    diags = server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                            and m["params"].get("version") == 2, 10)
    assert diags["params"]["diagnostics"] == []


def test_completion_lists_gamma(server):
    uri = "file:///c.py"
    text = "import os\nvalue = 3\ndef g(arg):\n    va\n"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    result = server.request(130, "textDocument/completion", {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 6}})
    labels = {item["label"] for item in result["result"]["items"]}
    assert "value" in labels and "vars" in labels and "arg" not in labels


def test_completion_after_a_dot_lists_the_receivers_members(server):
    """After `os.pa` the members of `os` that start with `pa` (Γ's Member bindings, from the
    stubs); after the dot of a call's value nothing (its type is not read); after a bare dot
    at the start of a line nothing that names a member."""
    uri = "file:///members.py"
    text = "import os\nos.pa\nlen(x).\n"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})

    def labels(request_id: int, line: int, character: int) -> set[str]:
        result = server.request(request_id, "textDocument/completion",
                                {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
        return {item["label"] for item in result["result"]["items"]}

    members = labels(131, 1, 5)
    assert "path" in members and "pardir" in members and not {"getcwd", "os", "value"} & members, members
    assert labels(132, 2, 7) == set()


def test_unknown_language_is_served_quietly(server):
    uri = "file:///notes.txt"
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "plaintext", "version": 1, "text": "hello"}})
    result = server.request(140, "textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5},
                                                                   "context": {"triggerKind": 1}})
    assert result["result"] == {"items": []}


def test_missing_model_is_reported_and_completion_still_works(server):
    status = server.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] == "failed", 30)
    assert "not found" in status["params"]["message"]
    shown = server.wait_for(lambda m: m.get("method") == "window/showMessage" and "gdg-lsp" in m["params"]["message"], 10)
    assert shown["params"]["type"] == 1


def _match(expected, actual, path="$"):
    """Fixture matching: dicts are subsets, "<any>" matches anything, "<str>" any string."""
    if expected == "<any>":
        return
    if expected == "<str>":
        assert isinstance(actual, str), f"{path}: expected a string, got {actual!r}"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{path}.{key} missing in {actual!r}"
            _match(value, actual[key], f"{path}.{key}")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            _match(e, a, f"{path}[{i}]")
        return
    assert expected == actual, f"{path}: {actual!r} != {expected!r}"


def _matches(expected, actual) -> bool:
    try:
        _match(expected, actual)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_session_replays(fixture, tmp_path):
    session = json.loads(fixture.read_text(encoding="utf-8"))
    client = StdioClient(*session.get("args", []), stderr=tmp_path / "stderr.log")
    try:
        for number, step in enumerate(session["steps"]):
            if "raw" in step:
                client.send_raw(step["raw"].encode("utf-8"))
            elif "send" in step:
                client.send(step["send"])
            if "expect" not in step:
                continue
            expected = step["expect"]
            try:
                client.wait_for(lambda m: _matches(expected, m) and ("id" not in expected or "method" not in m),
                                step.get("timeout", 90))
            except TimeoutError:
                same = [m for m in client.messages
                        if ("id" in expected and m.get("id") == expected["id"]) or m.get("method") == expected.get("method")]
                for candidate in same[-1:]:
                    _match(expected, candidate)  # says what differs
                pytest.fail(f"step {number}: nothing like {expected} arrived; got {same or client.messages[-5:]}")
    finally:
        client.close()
