"""The one wrapper around LSP handlers: a failing handler is answered, said once, and timed."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from gdg_lsp.errors import NestingLimitError
from gdg_lsp.server.handlers import handles, timings_payload


class _Session:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def show(self, message, kind=None) -> None:
        self.shown.append(message)


class _Server:
    def __init__(self) -> None:
        self.session = _Session()


def test_a_failing_handler_is_answered_with_its_empty_result_and_said_once():
    @handles("test broken", empty=lambda: "empty")
    def broken(ls, params):
        raise KeyError("analyzer bug")

    ls = _Server()
    assert broken(ls, None) == "empty" and broken(ls, None) == "empty"
    assert len(ls.session.shown) == 1 and "test broken failed: KeyError" in ls.session.shown[0]
    assert timings_payload()["test broken"]["n"] == 2


def test_limits_are_refused_in_one_line_and_protocol_errors_reach_the_client():
    @handles("test limit", empty=list)
    def deep(ls, params):
        raise NestingLimitError(33, 32)

    ls = _Server()
    assert deep(ls, None) == [] and "no completion here" in ls.session.shown[0]

    @handles("test params")
    def invalid(ls, params):
        raise JsonRpcInvalidParams("position.line must be an integer")

    with pytest.raises(JsonRpcInvalidParams):
        invalid(ls, None)


def test_async_handlers_are_wrapped_and_cancellation_propagates():
    @handles("test async", empty=lambda: None)
    async def slow(ls, params):
        if params == "fail":
            raise RuntimeError("boom")
        await asyncio.sleep(10)

    ls = _Server()

    async def main():
        assert await slow(ls, "fail") is None
        task = asyncio.ensure_future(slow(ls, "wait"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert timings_payload()["test async"]["n"] == 2


def test_background_handlers_run_on_a_snapshot_off_the_loop_and_drop_moved_results():
    import threading

    from lsprotocol import types

    from gdg_lsp.documents import DocumentStore
    from gdg_lsp.server.scheduler import Scheduler

    ls = _Server()
    ls.session.documents = DocumentStore()
    ls.session.scheduler = Scheduler()
    doc = ls.session.documents.open("file:///a.py", "python", 1, "x = 1\n")
    gate = threading.Event()
    seen = []

    @handles("test background", empty=lambda: "empty", background=True, moved=lambda: "moved")
    def analyse(ls, params, snapshot):
        seen.append((threading.get_ident(), snapshot.text))
        assert gate.wait(10)
        if snapshot.text == "boom":
            raise RuntimeError("analyzer bug")
        return snapshot.text

    def params(uri="file:///a.py"):
        return types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 0))

    async def main():
        gate.set()
        assert await analyse(ls, params()) == "x = 1\n"
        assert await analyse(ls, params("file:///closed.py")) == "empty"
        gate.clear()
        task = asyncio.ensure_future(analyse(ls, params()))
        while not seen[1:]:
            await asyncio.sleep(0.01)
        doc.apply_changes([(None, "y = 2\n")], 2)  # an edit arrives while it analyses
        gate.set()
        assert await task == "moved"
        doc.apply_changes([(None, "boom")], 3)
        assert await analyse(ls, params()) == "empty"

    asyncio.run(main())
    assert all(thread != threading.get_ident() for thread, _ in seen)
    assert [text for _, text in seen] == ["x = 1\n", "x = 1\n", "boom"]
    assert any("test background failed: RuntimeError" in m for m in ls.session.shown)
    ls.session.scheduler.shutdown()
