"""The acceptance protocol over stdio (docs/ACCEPT_PROTOCOL.md), with the counts in gdg/status.

A scripted model writes ``return count + limit`` at the hole. The client does what an editor
does: it draws the item (didShowCompletion), types two characters, asks again (the rest, same
id), accepts a word (didPartiallyAcceptCompletion), accepts the rest (the item's command), then
is shown another suggestion and types past it (dismissed). gdg/status counts exactly that,
and the store in the state folder has it after the session; a file planted there is ignored.
"""

from __future__ import annotations

import json
import os
import stat
import time

from tests.lsp.scripted_model import prelude
from tests.lsp.stdio_client import StdioClient

URI = "file:///acc/total.py"
TEXT = "def total(values, limit):\n    count = len(values)\n    \n"
SCRIPT = "    return count + limit\n"  # the indentation too: the prompt's blank tail is healed


def _ask(client: StdioClient, msg_id: int, line: int, character: int) -> list[dict]:
    answer = client.request(msg_id, "textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2}})
    return answer["result"]["items"]


def _insert(client: StdioClient, version: int, line: int, character: int, text: str) -> None:
    client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": version}, "contentChanges": [
        {"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}},
         "text": text}]})


def _status(client: StdioClient, msg_id: int) -> dict:
    return client.request(msg_id, "gdg/status")["result"]["acceptance"]


def _start(tmp_path, **options) -> StdioClient:
    client = StdioClient(env={"GDG_LSP_STATE_DIR": str(tmp_path / "state")}, stderr=tmp_path / "stderr.txt",
                         prelude=prelude(SCRIPT), cwd=os.getcwd())
    client.init = client.initialize(options={"maxTokens": 40, "maxLines": 1, **options})
    client.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] in ("ready", "failed"), 120)
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": URI, "languageId": "python", "version": 1, "text": TEXT}})
    return client


def test_show_partial_accept_and_dismiss_are_counted_exactly(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    planted = {"format": 1, "rows": [{"language": "python", "model": "scripted", "shown": 1000, "accepted": 1000}]}
    (state / "acceptance.json").write_text(json.dumps(planted))
    os.chmod(state / "acceptance.json", 0o666)  # another user could have written it: never believed
    client = _start(tmp_path)
    try:
        assert "gdg.didAcceptCompletion" in client.init["result"]["capabilities"]["executeCommandProvider"]["commands"]
        first = _ask(client, 10, 2, 4)
        assert [item["insertText"] for item in first] == ["return count + limit"]
        command = first[0]["command"]
        assert command["command"] == "gdg.didAcceptCompletion" and command["title"]
        item_id = command["arguments"][0]["id"]
        assert command["arguments"][0]["offset"] == 0
        client.notify("textDocument/didShowCompletion", {"item": first[0]})

        _insert(client, 2, 2, 4, "r")
        _insert(client, 3, 2, 5, "e")
        rest = _ask(client, 11, 2, 6)
        assert [item["insertText"] for item in rest] == ["turn count + limit"]
        assert rest[0]["command"]["arguments"] == [{"id": item_id, "offset": 2}]  # the same suggestion
        client.notify("textDocument/didShowCompletion", {"item": rest[0]})  # drawn again: not another showing

        _insert(client, 4, 2, 6, "turn ")  # accept-word: the editor inserts it, then says so
        client.notify("textDocument/didPartiallyAcceptCompletion", {"item": rest[0], "acceptedLength": 5})
        after_word = _ask(client, 15, 2, 11)  # the rest after a partial accept: from the suggestion, no decode
        assert [(i["insertText"], i["command"]["arguments"][0]["id"]) for i in after_word] == [("count + limit", item_id)]
        assert client.request(16, "gdg/status")["result"]["worker"]["decodes"] == 1
        _insert(client, 5, 2, 11, "count + limit")  # the rest accepted: inserted, then the item's command
        accept = rest[0]["command"]
        done = client.request(12, "workspace/executeCommand", {"command": accept["command"],
                                                               "arguments": accept["arguments"]})
        assert "error" not in done

        _insert(client, 6, 2, 24, "\n    ")
        other = _ask(client, 13, 3, 4)
        assert other and other[0]["command"]["arguments"][0]["id"] != item_id
        client.notify("textDocument/didShowCompletion", {"item": other[0]})
        _insert(client, 7, 3, 4, "x")  # not what it shows: dismissed
        counts = _status(client, 14)
        assert counts["enabled"] is True
        session = counts["session"]["all"]
        assert {k: session[k] for k in ("shown", "accepted", "partiallyAccepted", "dismissed", "typedThrough",
                                        "charsAccepted")} == {
            "shown": 2, "accepted": 1, "partiallyAccepted": 0, "dismissed": 1, "typedThrough": 0,
            "charsAccepted": len("turn ") + len("count + limit")}
        assert [(r["language"], r["model"]) for r in counts["session"]["rows"]] == [("python", "scripted")]
        assert counts["total"]["all"]["shown"] == 2  # the planted file's 1000 are not believed
        assert counts["problem"] and "ignored" in counts["problem"]
        assert any("ignored" in m["params"]["message"] for m in client.messages
                   if m.get("method") == "window/showMessage")
    finally:
        assert client.close() == 0
    stored = json.loads((state / "acceptance.json").read_text())
    assert stat.S_IMODE(os.stat(state / "acceptance.json").st_mode) == 0o600
    assert [(r["language"], r["model"], r["shown"], r["accepted"], r["dismissed"]) for r in stored["rows"]] == [
        ("python", "scripted", 2, 1, 1)]
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def test_counting_off_counts_nothing_and_writes_nothing(tmp_path):
    client = _start(tmp_path, stats={"enabled": False})
    try:
        items = _ask(client, 10, 2, 4)
        assert items and items[0]["command"]["command"] == "gdg.didAcceptCompletion"
        client.notify("textDocument/didShowCompletion", {"item": items[0]})
        client.request(11, "workspace/executeCommand", items[0]["command"])
        time.sleep(0.2)
        assert _status(client, 12) == {"enabled": False}
    finally:
        client.close()
    assert not (tmp_path / "state" / "acceptance.json").exists()


async def test_retained_characters_are_counted_on_time_through_later_edits(tmp_path, monkeypatch):
    """The checks run on the event loop at their time (30 s and 2 min; here shortened), with no
    request to wake them, and count what is left of the accepted text where the edits moved it."""
    from gdg_lsp.bench.inprocess import InProcessServer
    from gdg_lsp.server import create_server
    from gdg_lsp.service import acceptance
    from tests.lsp.scripted_model import resolver

    monkeypatch.setenv("GDG_LSP_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(acceptance, "RETENTION_CHECKS", ((0.3, "30s"), (0.8, "2m")))
    server_obj = create_server()
    server_obj.session.worker.resolve_model = resolver(SCRIPT)
    async with InProcessServer(server=server_obj, initialization_options={"maxTokens": 40}) as server:
        assert await server.wait_model() == "ready"
        server.open(URI, TEXT)
        answer = await server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 2, "character": 4}, "context": {"triggerKind": 2}})
        item = answer["result"]["items"][0]
        server.notify("textDocument/didShowCompletion", {"item": item})
        edit = {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 4}},
             "text": item["insertText"]}]}
        server.notify("textDocument/didChange", edit)
        await server.request("workspace/executeCommand", {"command": item["command"]["command"],
                                                          "arguments": item["command"]["arguments"]})
        # a line above moves the accepted text; " + limit" is deleted from it
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 3}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "# n\n"}]})
        server.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 4}, "contentChanges": [
            {"range": {"start": {"line": 3, "character": 16}, "end": {"line": 3, "character": 24}}, "text": ""}]})
        assert server.text(URI).splitlines()[3] == "    return count"
        counts = server.server.session.acceptance.tracker.counts
        await server.settle(0.5)
        assert counts.total()["charsChecked30s"] == 20 and counts.total()["charsRetained30s"] == 12
        assert counts.total()["charsChecked2m"] == 0
        await server.settle(0.6)
        assert counts.total()["charsChecked2m"] == 20 and counts.total()["charsRetained2m"] == 12
