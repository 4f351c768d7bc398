"""Manners (issue 30 item 5): clean completion items, `.` as a trigger, the keywords the grammar
allows, diagnostics published only when they change, log lines at their levels, and a quiet
exit when the client closes the pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import NO_MODEL
from tests.lsp.scripted_model import prelude
from tests.lsp.stdio_client import StdioClient

STATS = """import math
from collections import Counter


def mean(values):
    return sum(values) / len(values)


def summary(samples, digits=2):
    average = mean(samples)
    ret
"""


async def _complete(server: InProcessServer, uri: str, line: int, character: int) -> list[dict]:
    answer = await server.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    return answer["result"]["items"]


async def test_items_are_a_name_a_kind_and_one_line_and_keywords_come_after_names():
    import gdg_lsp.grammar.engine  # noqa: F401  (a session's model load imports it; keywords wait for it)

    uri = "file:///manners/stats.py"
    async with InProcessServer(initialization_options=NO_MODEL) as server:
        assert server.messages[0]["result"]["capabilities"]["completionProvider"]["triggerCharacters"] == ["."]
        server.open(uri, STATS.replace("    ret\n", "    \n"))
        items = {item["label"]: item for item in await _complete(server, uri, 10, 4)}
        assert items["mean"]["detail"] == "function (values)"
        assert items["Counter"]["detail"] == "import: from collections import Counter"
        assert items["math"]["detail"] == "module math"
        assert items["samples"]["detail"] == "parameter"
        assert items["ValueError"]["detail"] == "builtin exception"
        assert items["summary"]["detail"] == "function (samples, digits=2)"
        internals = ("is_async", "keywords=", "scope", "members", "#")
        assert all("\n" not in i["detail"] and not any(w in i["detail"] for w in internals)
                   and len(i["detail"]) <= 80 for i in items.values())

        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 10, "character": 4}, "end": {"line": 10, "character": 4}}, "text": "r"}]})
        listed = sorted(await _complete(server, uri, 10, 5), key=lambda i: i["sortText"])
        keywords = [i["label"] for i in listed if i["kind"] == 14]  # CompletionItemKind.Keyword
        assert keywords == ["raise", "return"]  # inside a function, where the grammar allows them
        names = [i["label"] for i in listed if i["kind"] != 14]
        assert {"range", "round", "RuntimeError"} <= set(names)
        assert [i["label"] for i in listed[-2:]] == keywords  # after Γ's names
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [
            {"range": {"start": {"line": 10, "character": 5}, "end": {"line": 10, "character": 5}}, "text": "et"}]})
        assert [i["label"] for i in await _complete(server, uri, 10, 7)] == ["return"]

        module_uri = "file:///manners/top.py"  # at module level `return` is not a statement the grammar has
        server.open(module_uri, "import math\nret\n")
        assert "return" not in [i["label"] for i in await _complete(server, module_uri, 1, 3)]


async def test_diagnostics_are_published_only_when_they_change():
    uri = "file:///manners/undef.py"
    text = "def f():\n    return missing_name\n\n"
    async with InProcessServer(initialization_options={**NO_MODEL, "diagnostics": True}) as server:
        server.open(uri, text)

        def published():
            return [m["params"] for m in server.messages
                    if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]

        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60)
        assert [d["message"].split(":")[0] for d in published()[0]["diagnostics"]] == ["undefined name 'missing_name'"]
        for version, character in enumerate(range(0, 3), start=2):  # typing below: the findings stay the same
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"range": {
                                                         "start": {"line": 2, "character": character},
                                                         "end": {"line": 2, "character": character}}, "text": "#"}]})
            await server.settle(0.8)
        assert len(published()) == 1
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 9}, "contentChanges": [
            {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "\n"}]})
        await server.settle(0.8)  # the finding moved a line down: published again
        assert len(published()) == 2 and published()[1]["diagnostics"][0]["range"]["start"]["line"] == 2


def test_log_lines_go_to_the_client_at_their_level_and_only_warnings_to_stderr(tmp_path):
    log_file = tmp_path / "server.log"
    client = StdioClient("--log-file", str(log_file), stderr=tmp_path / "stderr.txt",
                         prelude=prelude("    pass\n"), cwd=os.getcwd())
    try:
        client.initialize(options={"noSuchSetting": 1})
        client.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] == "ready", 120)
        logged = client.wait_for(lambda m: m.get("method") == "window/logMessage"
                                 and "position encoding" in m["params"]["message"], 30)
        assert logged["params"]["type"] == 3  # Info
        warned = client.wait_for(lambda m: m.get("method") == "window/logMessage"
                                 and "noSuchSetting" in m["params"]["message"], 30)
        assert warned["params"]["type"] == 2  # Warning
    finally:
        assert client.close() == 0
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "noSuchSetting" in stderr and " WARNING " in stderr
    assert " INFO " not in stderr and "position encoding" not in stderr
    logged = log_file.read_text()
    assert "position encoding" in logged and "noSuchSetting" in logged and "scripted ready" in logged


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_a_client_that_closes_the_pipe_before_the_shutdown_answer_leaves_no_traceback(tmp_path):
    """Neovim's :qa! sends shutdown and closes the pipe: 3 exits of 4 left a BrokenPipeError
    traceback in its log, the server answering after the pipe closed."""
    process = subprocess.Popen([sys.executable, "-c", prelude("    pass\n") + (
        "import sys\nfrom gdg_lsp.cli import main\nsys.exit(main(['--stdio']))\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=os.getcwd())
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
    process.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    process.stdin.flush()
    process.stdout.readline()  # the initialize answer has begun: the server is up
    time.sleep(1.0)
    process.stdout.close()  # the editor stops reading, then asks to shut down and goes
    process.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    process.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.close()
    assert process.wait(60) in (0, 1)
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
