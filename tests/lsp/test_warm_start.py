"""Warm start: the model loads in the background after `initialized`, told with work-done progress;
an inline request that comes meanwhile waits for it within its budget."""

from __future__ import annotations

import json
import string
import subprocess
import sys
import time

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import STORM_TOKENS, SlowRandomBackend
from gdg_lsp.server import create_server
from gdg_lsp.vocab import ListVocabulary
from tests.lsp.stdio_client import StdioClient

URI = "file:///warm.py"
TEXT = "import os\n\n\ndef total(values, limit):\n    count = len(values)\n    \n"
ASK = {"textDocument": {"uri": URI}, "position": {"line": 5, "character": 4}, "context": {"triggerKind": 1}}


def test_model_load_is_reported_with_work_done_progress(tmp_path):
    client = StdioClient("--dev", stderr=tmp_path / "server.log")
    try:
        client.initialize({"general": {"positionEncodings": ["utf-16"]}, "window": {"workDoneProgress": True}},
                          {"gdg": {"model": "random:3", "maxTokens": 4}})
        create = client.wait_for(lambda m: m.get("method") == "window/workDoneProgress/create", 60)
        token = create["params"]["token"]
        client.send({"jsonrpc": "2.0", "id": create["id"], "result": None})
        progress = lambda kind: client.wait_for(  # noqa: E731
            lambda m: m.get("method") == "$/progress" and m["params"]["token"] == token
            and m["params"]["value"]["kind"] == kind, 120)
        begin = progress("begin")
        assert begin["params"]["value"]["title"] == "gdg-lsp" and "random-3" in begin["params"]["value"]["message"]
        end = progress("end")
        assert "ready" in end["params"]["value"]["message"]
        kinds = [m["params"]["value"]["kind"] for m in client.messages
                 if m.get("method") == "$/progress" and m["params"]["token"] == token]
        assert kinds[0] == "begin" and kinds[-1] == "end" and kinds.count("end") == 1
        status = client.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] == "ready", 10)
        assert status["params"]["model"] == "random-3"
        # a server process settles its heap after the load: the model and libraries are out of the
        # collector's reach, so a full collection no longer walks them (gdg_lsp/heap.py)
        heap = client.request(900, "gdg/status", {})["result"]["heap"]
        assert heap["frozenObjects"] > 10_000 and len(heap["collections"]) == 3
        assert len(heap["longestPauseMs"]) == 3 and all(ms >= 0 for ms in heap["longestPauseMs"])
    finally:
        assert client.close() == 0


def _slow_loading(seconds: float):
    def resolve(settings, progress):
        def load(device):
            progress("converting the model", 50)
            time.sleep(seconds)
            tokens = sorted(set(STORM_TOKENS) | set(string.printable))
            return SlowRandomBackend(ListVocabulary(tokens), 0.0, seed=2)

        return "slow-loading", load

    return resolve


async def _first_ask(load_seconds: float, timeout_ms: int):
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = _slow_loading(load_seconds)
    options = {"maxTokens": 6, "timeoutMs": timeout_ms}
    async with InProcessServer(server=server_obj, initialization_options=options) as server:
        server.open(URI, TEXT)
        await server.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] == "loading", 30)
        began = time.monotonic()
        answer = await server.request("textDocument/inlineCompletion", ASK, timeout=30)
        elapsed = time.monotonic() - began
        assert "result" in answer
        return server_obj.session.worker, elapsed


async def test_a_request_during_the_load_waits_for_the_model():
    worker, elapsed = await _first_ask(load_seconds=0.6, timeout_ms=4000)
    assert worker.stats.decodes == 1  # decoded once the model was there, not answered "not ready"
    assert elapsed >= 0.4


async def test_a_request_during_a_longer_load_is_answered_within_its_budget():
    worker, elapsed = await _first_ask(load_seconds=3.0, timeout_ms=400)
    assert elapsed < 2.0  # answered (empty) when its 400 ms were gone, not when the load ended
    assert worker.stats.decodes == 0


HEAVY = ("torch", "transformers", "xgrammar", "llguidance")
"""What only the model and the grammar engines need: seconds of imports on a 2-core machine."""

SERVE_WITHOUT_A_MODEL = r"""
import asyncio, json, sys
from gdg_lsp.bench.inprocess import InProcessServer

async def main():
    options = {"model": "/nonexistent/model.gguf"}
    async with InProcessServer(initialization_options=options) as server:
        server.open("file:///w.py", "import os\nvalue = 3\nva\n")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": "file:///w.py"}, "position": {"line": 2, "character": 2}})
        labels = [item["label"] for item in answer["result"]["items"]]
    print(json.dumps({"labels": labels, "heavy": [m for m in %r if m in sys.modules]}))

asyncio.run(main())
"""


def test_the_server_answers_before_the_model_and_engines_are_imported():
    """`initialize`, analysis and completion items need none of torch, transformers or the grammar
    engines: the editor's language features work while the model loads (importing them first
    held `initialize` back for 2-3 s)."""
    done = subprocess.run([sys.executable, "-c", SERVE_WITHOUT_A_MODEL % (HEAVY,)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "value" in found["labels"]
    assert found["heavy"] == []


FIRST_STATUS_BEFORE_THE_ENGINE = r"""
import json, sys
from gdg_lsp.service.build import local_service
from gdg_lsp.settings import Settings

class Told(Exception):
    pass

def on_status(status):
    print(json.dumps({"state": status.state, "message": status.message,
                      "heavy": [m for m in %r if m in sys.modules]}))
    raise Told  # the first status is all this test wants: stop before the load

try:
    local_service(Settings(), None, on_status=on_status, resolve_model=lambda settings, progress: (
        "stand-in", lambda device: None))
except Told:
    pass
"""


def test_the_load_is_said_before_the_engine_is_imported():
    """The editor hears `loading` (and the load's progress begins) before torch is imported: that
    import took 3-7 s after `initialize` on a loaded 2-core machine, and VS Code showed only
    "gdg starting" meanwhile."""
    done = subprocess.run([sys.executable, "-c", FIRST_STATUS_BEFORE_THE_ENGINE % (HEAVY,)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    first = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["state"] == "loading" and "stand-in" in first["message"]
    assert first["heavy"] == []
