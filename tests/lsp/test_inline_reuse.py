"""Typed-through and repeated asks over the LSP: answered from the suggestion shown, without a decode,
and never once Γ has changed."""

from __future__ import annotations

import contextlib
import string
from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import STORM_TOKENS, SlowRandomBackend
from gdg_lsp.server import create_server
from gdg_lsp.vocab import ListVocabulary

URI = "file:///reuse.py"
TEXT = "import os\n\n\ndef total(values, limit):\n    count = len(values)\n    \n"
LINE, CHARACTER = 5, 4  # the blank line in the body


def _random_model(step_seconds: float = 0.0):
    """Random logits over a small vocabulary that can spell any printable ASCII (SQL prompts hold '?')."""
    def resolve(settings, progress):
        tokens = sorted(set(STORM_TOKENS) | set(string.printable))
        return "random-ascii", lambda device: SlowRandomBackend(ListVocabulary(tokens), step_seconds, seed=1)

    return resolve


def _server(step_seconds: float = 0.0):
    server = create_server(dev=True)
    server.session.worker.resolve_model = _random_model(step_seconds)
    return server


async def _ask(server: InProcessServer, line: int, character: int, uri: str = URI) -> list[dict]:
    answer = await server.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 2}})
    return answer["result"]["items"]


def _type(server: InProcessServer, version: int, line: int, character: int, text: str, uri: str = URI) -> None:
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
        {"range": {"start": {"line": line, "character": character}, "end": {"line": line, "character": character}},
         "text": text}]})


async def _first_suggestion(server: InProcessServer, uri: str, line: int, character: int, tries: int = 12,
                            least: int = 2) -> str:
    """A suggestion of one line and at least ``least`` characters (the random model sometimes ends
    at once; asking again decodes again)."""
    session = server.server.session
    for _ in range(tries):
        items = await _ask(server, line, character, uri)
        if items and len(items[0]["insertText"]) >= least and "\n" not in items[0]["insertText"]:
            return items[0]["insertText"]
        session.reuse.forget(uri)  # a repeated ask would be answered from it: decode a new one
        session.reuse._results.clear()
    raise AssertionError("the random model gave no usable suggestion")


@contextlib.asynccontextmanager
async def _showing_a_suggestion():
    """A server with the model ready, the document open and a suggestion shown at the hole:
    (server, session, the suggestion, decodes so far)."""
    async with InProcessServer(server=_server(), initialization_options={"maxTokens": 12, "maxLines": 1}) as server:
        assert await server.wait_model() == "ready"
        session = server.server.session
        server.open(URI, TEXT)
        shown = await _first_suggestion(server, URI, LINE, CHARACTER)
        yield server, session, shown, session.worker.stats.decodes


async def test_typing_the_suggestion_is_answered_with_its_rest_without_decoding():
    async with _showing_a_suggestion() as (server, session, shown, decodes):

        version, column = 2, CHARACTER
        for typed in range(1, len(shown)):
            _type(server, version, LINE, column, shown[typed - 1])
            version, column = version + 1, column + 1
            items = await _ask(server, LINE, column)
            assert [item["insertText"] for item in items] == [shown[typed:]]
            assert items[0]["range"]["start"] == {"line": LINE, "character": column}
        assert session.worker.stats.decodes == decodes  # not one decode for the keys typed
        assert session.reuse.stats.typed_through == len(shown) - 1

        # asking again where nothing changed: the same answer, still no decode
        again = await _ask(server, LINE, column)
        assert [item["insertText"] for item in again] == [shown[-1]]
        assert session.reuse.stats.repeated == 1 and session.worker.stats.decodes == decodes


async def test_a_key_that_leaves_the_suggestion_decodes_again():
    async with _showing_a_suggestion() as (server, session, shown, decodes):
        other = "Q" if shown[0] != "Q" else "Z"
        _type(server, 2, LINE, CHARACTER, other)
        await _ask(server, LINE, CHARACTER + 1)
        # work ahead may decode at the edit before the ask does: either way a decode, not reuse
        assert session.worker.stats.decodes > decodes
        assert session.reuse.stats.typed_through == 0 and session.reuse.stats.repeated == 0


async def test_a_gamma_change_stops_reuse(tmp_path: Path):
    """The workspace schema loses a column: Γ at the position is no longer the one the suggestion
    was decoded under, so a repeated ask is not answered from it (a decode runs instead)."""
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT);\n")
    uri = (tmp_path / "query.sql").as_uri()
    # random text seldom ends a SQL statement: a short time budget cuts it, and what is cut by
    # time is shown (its longest prefix of whole names)
    options = {"maxTokens": 48, "maxLines": 1, "timeoutMs": 400}
    async with InProcessServer(server=_server(0.02), initialization_options=options,
                               root_uri=tmp_path.as_uri()) as server:
        assert await server.wait_model() == "ready"
        session = server.server.session
        server.open(uri, "SELECT ", language_id="sql")
        # about one ask in five gives two characters or more here (5 of 24 with either grammar
        # engine, fewer under load: it depends on how many steps fit the budget); any suggestion
        # shown will do for this test, which is about serving it again, not typing it
        shown = await _first_suggestion(server, uri, 0, 7, tries=40, least=1)
        again = await _ask(server, 0, 7, uri)
        assert [item["insertText"] for item in again] == [shown]  # unchanged Γ: served again
        assert session.reuse.stats.repeated == 1

        schema.write_text("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n")  # email leaves Γ
        server.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": schema.as_uri(), "type": 2}]})
        await server.settle(0.5)
        decodes = session.worker.stats.decodes
        await _ask(server, 0, 7, uri)
        assert session.reuse.stats.gamma_changed == 1 and session.reuse.stats.repeated == 1
        assert session.worker.stats.decodes == decodes + 1


async def test_typing_the_start_of_a_sql_suggestion_is_answered_with_its_rest(tmp_path: Path):
    """The first key typed into a shown SQL suggestion is answered from it: the hole's key no
    longer moves with the word being typed (its region path was the syntax node at the cursor,
    and its prompt's tables are ranked by what the statement names). VS Code showed another
    ghost after the first key, decoded again: `(1, 2, 3);` became `(1, 2, 3, 4, 5);`. The ghost
    is put on screen as the server does after a decode (``reuse.remember`` with the plan's
    digest), so that it begins with a word whatever the random model would have written."""
    from gdg_lsp.service.plan import analyse

    (tmp_path / "schema.sql").write_text("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);\n"
                                         "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER);\n")
    uri = (tmp_path / "customers.sql").as_uri()
    text = "-- the names of customers\nSELECT "
    ghost = "name FROM customers WHERE city = 'Lyon';"
    async with InProcessServer(server=_server(), initialization_options={"maxTokens": 12, "maxLines": 1},
                               root_uri=tmp_path.as_uri()) as server:
        assert await server.wait_model() == "ready"
        session = server.server.session
        server.open(uri, text, language_id="sql")
        await server.quiet()
        snapshot = session.documents.find(uri).snapshot()
        analysis = analyse(snapshot, len(text), session.workspace)
        session.reuse.remember(snapshot, len(text), len(text), ghost, session.settings_for(uri), analysis.digest,
                               item_id="shown")
        decodes = session.worker.stats.decodes
        for typed in range(1, 4):  # n, a, m: inside the first word
            _type(server, 1 + typed, 1, 6 + typed, ghost[typed - 1], uri)
            items = await _ask(server, 1, 7 + typed, uri)
            assert [item["insertText"] for item in items] == [ghost[typed:]]
        assert session.reuse.stats.typed_through == 3 and session.reuse.stats.gamma_changed == 0
        assert session.worker.stats.decodes == decodes
