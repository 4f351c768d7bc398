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
