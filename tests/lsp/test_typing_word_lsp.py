"""The word being typed is not flagged (server/typing_point.py): typing ``return``, the run of
the pause after ``re`` underlined ``re`` as an undefined name under VS Code's ghost. Held back
while it is a start of a name of Γ or a keyword and the last edit ended there; published after
an edit elsewhere or a pause of ``HOLD_SECONDS``; a start of nothing is published at once."""

from __future__ import annotations

import time

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import NO_MODEL
from gdg_lsp.server import typing_point

TEXT = "def summary(samples):\n    average = len(samples)\n    \n"
OPTIONS = {**NO_MODEL, "diagnostics": True}


def _type(server: InProcessServer, uri: str, version: int, line: int, character: int, text: str) -> None:
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
        {"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}},
         "text": text}]})


def _flagged(server: InProcessServer, uri: str) -> list[str]:
    """The names the last diagnostics published for ``uri`` call undefined."""
    last = [m["params"] for m in server.messages
            if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri][-1]
    return [d["data"]["name"] for d in last["diagnostics"] if d.get("code") == "undefined-name"]


async def _opened(server: InProcessServer, uri: str) -> None:
    server.open(uri, TEXT)
    await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                          and m["params"]["uri"] == uri, 60)


async def test_a_keyword_being_typed_waits_for_a_pause():
    uri = "file:///typing/pause.py"
    async with InProcessServer(initialization_options=OPTIONS) as server:
        await _opened(server, uri)
        _type(server, uri, 2, 2, 4, "r")
        _type(server, uri, 3, 2, 5, "e")
        typed = time.monotonic()
        await server.settle(1.0)  # the debounced run came and went
        assert _flagged(server, uri) == []  # `re` starts `return`: being typed
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and m["params"]["diagnostics"], 10)
        assert _flagged(server, uri) == ["re"]  # left alone: published without another edit
        assert time.monotonic() - typed >= typing_point.HOLD_SECONDS - 0.1


async def test_a_name_being_typed_is_published_once_an_edit_goes_elsewhere():
    uri = "file:///typing/elsewhere.py"
    async with InProcessServer(initialization_options=OPTIONS) as server:
        await _opened(server, uri)
        _type(server, uri, 2, 2, 4, "return aver")  # a start of `average`, Γ's
        await server.settle(0.9)
        assert _flagged(server, uri) == []
        _type(server, uri, 3, 0, 0, "# note\n")  # the user moved on: an edit on another line
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and m["params"]["diagnostics"], 5)
        assert _flagged(server, uri) == ["aver"]


async def test_a_start_of_nothing_is_published_at_once():
    uri = "file:///typing/nothing.py"
    async with InProcessServer(initialization_options=OPTIONS) as server:
        await _opened(server, uri)
        _type(server, uri, 2, 2, 4, "return zq")  # no name of Γ nor keyword begins so
        began = time.monotonic()
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and m["params"]["diagnostics"], 5)
        assert _flagged(server, uri) == ["zq"]
        assert time.monotonic() - began < typing_point.HOLD_SECONDS
