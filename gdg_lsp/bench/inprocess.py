"""The language server driven in this process: message bodies in, parsed messages out.

The stdio client (``gdg_lsp.bench.lsp_client``) pays a process, a pipe and
two JSON round trips per message; fuzzing tens of thousands of messages that
way takes minutes. Here the bodies go straight to the server's protocol
(``GdgProtocol.receive``, the function the real transport calls with each
frame) and what the server writes is parsed from the bytes it would have put
on stdout. Everything between the frame and the handlers is the real server.

It must be used inside a running asyncio loop (pygls runs async handlers as
tasks on it): ``async with InProcessServer() as server: ...``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from lsprotocol import types


class _Capture:
    """pygls' writer: every ``write`` is one whole frame (headers and body)."""

    def __init__(self, owner: InProcessServer) -> None:
        self._owner = owner

    def write(self, data: bytes) -> None:
        _, _, body = data.partition(b"\r\n\r\n")
        self._owner._received(json.loads(body))

    def close(self) -> None:
        pass


class InProcessServer:
    def __init__(self, *, dev: bool = True, initialization_options: Any = None, root_uri: str | None = None,
                 position_encodings: tuple[str, ...] = ("utf-16",), server: Any = None) -> None:
        from gdg_lsp.server import create_server

        self.server = server or create_server(dev=dev)
        self.protocol = self.server.protocol
        self.protocol.set_writer(_Capture(self))
        self.messages: list[dict[str, Any]] = []
        self._waiting: dict[Any, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._init = (initialization_options, root_uri, position_encodings)
        self.sent = 0

    async def __aenter__(self) -> InProcessServer:
        options, root_uri, encodings = self._init
        caps = {"general": {"positionEncodings": list(encodings)}, "window": {"workDoneProgress": False}}
        await self.request("initialize", {"processId": None, "rootUri": root_uri, "capabilities": caps,
                                          "initializationOptions": options})
        self.notify("initialized", {})
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.server.session.worker.shutdown()
        self.server.session.scheduler.shutdown()  # its analysis threads end too

    # -- sending ------------------------------------------------------------------

    def send_bytes(self, body: bytes) -> None:
        """One message body exactly as a frame would carry it (it may be anything)."""
        self.sent += 1
        self.protocol.receive(body)

    def send(self, message: Any) -> None:
        self.send_bytes(json.dumps(message).encode("utf-8", "surrogatepass"))

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def send_request(self, method: str, params: Any = None, msg_id: Any = None) -> asyncio.Future:
        """Send a request; the future resolves to its response (the whole message)."""
        msg_id = f"inproc-{next(self._ids)}" if msg_id is None else msg_id
        future = self._future(msg_id)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params is not None else {})})
        return future

    async def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return await asyncio.wait_for(self.send_request(method, params), timeout)

    def expect(self, msg_id: Any) -> asyncio.Future:
        """A future for the response to ``msg_id`` (a request sent with ``send``/``send_bytes``)."""
        return self._future(msg_id)

    def _future(self, msg_id: Any) -> asyncio.Future:
        key = _key(msg_id)
        future = self._waiting.get(key)
        if future is None or future.done():
            future = self._waiting[key] = asyncio.get_running_loop().create_future()
        return future

    # -- receiving ----------------------------------------------------------------

    def _received(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if "method" in message or "id" not in message:
            return
        future = self._waiting.pop(_key(message["id"]), None)
        if future is not None and not future.done():
            future.set_result(message)

    def drain(self) -> list[dict[str, Any]]:
        taken, self.messages = self.messages, []
        return taken

    def shown(self) -> list[str]:
        """The window/showMessage texts received so far."""
        return [m["params"]["message"] for m in self.messages if m.get("method") == "window/showMessage"]

    async def settle(self, seconds: float = 0.0) -> None:
        """Let queued tasks (async handlers, call_soon from the worker) run."""
        await asyncio.sleep(seconds)

    async def wait_for(self, predicate, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for message in self.messages[seen:]:
                if predicate(message):
                    return message
            seen = len(self.messages)
            if time.monotonic() > deadline:
                raise TimeoutError("no matching message")
            await asyncio.sleep(0.01)

    async def wait_model(self, timeout: float = 120.0) -> str:
        """The model's final state (``ready`` or ``failed``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.server.session.worker.state.state
            if state in ("ready", "failed"):
                await asyncio.sleep(0.05)  # the announcement is queued on the loop
                return state
            await asyncio.sleep(0.02)
        raise TimeoutError("the model neither loaded nor failed")

    async def quiet(self, timeout: float = 60.0) -> None:
        """Until no work ahead is waiting for its debounce, waiting to start or running (the
        plan made at a document's open included: a figure of steady typing starts after it)."""
        session = self.server.session
        deadline = time.monotonic() + timeout
        await asyncio.sleep(0.05)
        while session.worker.working_ahead() or session.work_ahead_timers:
            if time.monotonic() > deadline:
                raise TimeoutError("work ahead never ended")
            await asyncio.sleep(0.02)

    # -- documents ----------------------------------------------------------------

    def open(self, uri: str, text: str, language_id: str = "python", version: int = 1) -> None:
        self.notify(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": {
            "uri": uri, "languageId": language_id, "version": version, "text": text}})

    def text(self, uri: str) -> str | None:
        doc = self.server.session.documents.find(uri)
        return None if doc is None else doc.text


def _key(msg_id: Any) -> Any:
    # JSON-RPC ids 1 and 1.0 are the same id once they have been through JSON
    return (type(msg_id).__name__ == "str", msg_id)
