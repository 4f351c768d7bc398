"""Attacks on the protocol's limits: a request id of 5,000 digits, code nested past the
interpreter's recursion limit, and floods that grow the server's queues and stores."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.documents import MAX_OPEN_DOCUMENTS
from gdg_lsp.server.worker import MAX_WAITING, DecodeWorker

OPTIONS = {"model": "/nonexistent/x.gguf", "diagnostics": False}


class _RawWriter:
    """pygls' writer, keeping the bytes (a 5,000-digit id is not something json.loads reads back)."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def close(self) -> None:
        pass


def test_a_request_id_of_5000_digits_is_answered_with_that_id():
    from gdg_lsp.server import create_server

    server = create_server()
    writer = _RawWriter()
    server.protocol.set_writer(writer)
    digits = "7" * 5000
    server.protocol.receive(f'{{"jsonrpc": "2.0", "id": {digits}, "method": "gdg/status"}}'.encode())
    server.protocol.receive(f'{{"jsonrpc": "2.0", "id": -{digits}, "method": "gdg/status"}}'.encode())
    assert len(writer.frames) == 2
    for frame, sign in zip(writer.frames, ("", "-")):
        body = frame.partition(b"\r\n\r\n")[2].decode()
        assert f'"id": {sign}{digits},' in body  # the number itself, not null, not a string
        error = json.loads(body.replace(f"{sign}{digits}", "0"))["error"]
        assert error["code"] == -32600 and "id" in error["message"]
        head = frame.partition(b"\r\n\r\n")[0].decode()
        assert f"Content-Length: {len(body)}" in head


async def test_code_nested_past_the_recursion_limit_is_refused_in_one_line(caplog):
    uri = "file:///deep/b.p4"
    text = "control C() { apply { " + "{" * 2000 + "}" * 2000 + " } }\n"
    caplog.set_level(logging.INFO)
    async with InProcessServer(initialization_options={**OPTIONS, "diagnostics": True}) as server:
        server.open(uri, text, "p4")
        for n in range(3):
            answer = await server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                                 "position": {"line": 0, "character": 9}}, 120)
            assert "result" in answer
        await server.wait_for(lambda m: any("nests deeper" in s for s in server.shown()), 60)
        await asyncio.sleep(1.0)  # the diagnostics run too
    with_traceback = [r for r in caplog.records if r.exc_info]
    assert not with_traceback, with_traceback[0].getMessage()
    refused = [r.getMessage() for r in caplog.records if "nests deeper" in r.getMessage()]
    assert refused and all("\n" not in m for m in refused)
    assert sum("nests deeper" in m for m in server.shown()) == 1  # said once


async def test_the_document_store_is_bounded():
    async with InProcessServer(initialization_options=OPTIONS) as server:
        for n in range(MAX_OPEN_DOCUMENTS + 5):
            server.open(f"file:///flood/{n}.py", f"x{n} = {n}\n")
        store = server.server.session.documents
        assert len(store) == MAX_OPEN_DOCUMENTS
        last = f"file:///flood/{MAX_OPEN_DOCUMENTS + 4}.py"
        assert last not in store
        assert sum("not followed" in m for m in server.shown()) == 5
        answer = await server.request("textDocument/hover", {"textDocument": {"uri": last},
                                                             "position": {"line": 0, "character": 0}})
        assert answer["result"] is None
        server.notify("textDocument/didClose", {"textDocument": {"uri": "file:///flood/0.py"}})
        server.open(last, "y = 1\n")  # room again
        assert last in store


def test_the_decode_queue_is_bounded():
    worker = DecodeWorker(lambda state: None, lambda message, percent: None)
    release = threading.Event()

    class Blocking:
        concurrency = 1

        def model_steps(self) -> int:
            return 0

        def close(self) -> None:
            pass

    worker.service = Blocking()
    try:
        started = threading.Event()
        first = worker.submit("doc-0", lambda service, cancel: started.set() or release.wait(10))
        assert started.wait(10)  # the one decode thread is busy from here on
        jobs = [worker.submit(f"doc-{n}", lambda service, cancel: "decoded") for n in range(1, 1000)]
        waiting = len(worker._pool._queue)
        assert waiting <= MAX_WAITING, waiting
        dropped = [job for job in jobs if job.future.done()]
        assert len(dropped) >= 1000 - 1 - MAX_WAITING
        assert all(job.future.result() is None for job in dropped)  # answered as superseded
        release.set()
        assert first.future.result(10) is True
        assert jobs[-1].future.result(10) == "decoded"
    finally:
        release.set()
        worker.shutdown()
