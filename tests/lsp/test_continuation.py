"""The suggestion after the one shown, decoded ahead (issue 32 item 3, ``work_ahead.continuation``):
accepting the ghost and pressing Enter finds the next one made, the same one a decode there gives."""

from __future__ import annotations

import asyncio
import contextlib
import string
import time

import pytest

from gdg_lsp.backends.models import random_backend
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import STORM_TOKENS
from gdg_lsp.server import create_server
from gdg_lsp.server.work_ahead import after_accept_and_enter
from gdg_lsp.vocab import ListVocabulary
from tests.lsp.test_inline_reuse import TEXT, URI, _ask, _type

LINE, CHARACTER = 5, 4  # the blank line in the function's body


@pytest.mark.parametrize(("text", "start", "end", "inserted", "language", "expected"), [
    ("def f(a):\n    \n", 14, 14, "x = a", "python", ("def f(a):\n    x = a\n    \n", 24)),
    ("def f(a):\n    \n", 14, 14, "if a:", "python", ("def f(a):\n    if a:\n        \n", 28)),
    ("def f(a):\n\t\n", 11, 11, "for b in a:", "python", ("def f(a):\n\tfor b in a:\n\t\t\n", 25)),
    ("SELECT \n", 7, 7, "1;", "sql", ("SELECT 1;\n\n", 10)),
    ("x = f()\n", 6, 6, "a", "python", None),  # inside a line: no whole line's end to go on from
    ("def f(a):\n    \n", 14, 14, "a\nb", "python", None),
    ("def f(a):\n    \n", 14, 14, "  ", "python", None),
])
def test_the_text_after_accepting_and_pressing_enter(text, start, end, inserted, language, expected):
    assert after_accept_and_enter(text, start, end, inserted, language) == expected


SEEDS = range(8)
OPTIONS = {"maxTokens": 16, "maxLines": 1}


def _server(seed: int):
    """A random-weight transformer: its greedy choice is a function of the prompt, so a decode ahead
    and a decode at the ask can be compared (the stress tests' random logits are a stream)."""
    def resolve(settings, progress):
        vocabulary = ListVocabulary(sorted(set(STORM_TOKENS) | set(string.printable)))
        return f"random-{seed}", lambda device: random_backend(vocabulary, seed=seed, hidden=16, layers=1)

    server = create_server(dev=True)
    server.session.worker.resolve_model = resolve
    return server


async def _wait_for(condition, seconds: float = 30.0) -> None:
    began = time.monotonic()
    while not condition():
        assert time.monotonic() - began < seconds, "timed out"
        await asyncio.sleep(0.02)


async def _shown_and_ahead(server: InProcessServer) -> str:
    """The suggestion at the hole, once the continuation decoded ahead for it has ended ("" when
    the model gave nothing to show there)."""
    session = server.server.session
    items = await _ask(server, LINE, CHARACTER)
    shown = items[0]["insertText"] if items else ""
    await _wait_for(lambda: URI not in session.work_ahead_timers and not session.work_ahead_lines.get(URI))
    return shown


def _accept_and_enter(server: InProcessServer, shown: str) -> None:
    """The editor's accept (the ghost inserted at the cursor) and Enter (the line's indent after it)."""
    _type(server, 2, LINE, CHARACTER, shown)
    _type(server, 3, LINE, CHARACTER + len(shown), "\n    ")


async def _decoded_without_work_ahead(seed: int, text: str) -> list[str]:
    async with InProcessServer(server=_server(seed), initialization_options={**OPTIONS, "workAhead": False}) as plain:
        assert await plain.wait_model() == "ready"
        plain.open(URI, text)
        items = await _ask(plain, LINE + 1, 4)
        assert plain.server.session.reuse.stats.ahead == 0
        return [item["insertText"] for item in items]


@contextlib.asynccontextmanager
async def _continued(seed: int):
    """A server for ``seed`` with the document open and the suggestion at the hole shown, once its
    continuation has ended: (server, session, the suggestion), the suggestion "" when nothing
    was shown there or nothing decoded ahead after it (no continuation to take)."""
    async with InProcessServer(server=_server(seed), initialization_options=OPTIONS) as server:
        assert await server.wait_model() == "ready"
        session = server.server.session
        server.open(URI, TEXT)
        shown = await _shown_and_ahead(server)
        usable = "\n" not in shown and shown.strip() and session.reuse.stats.ahead
        yield server, session, shown if usable else ""


async def test_after_accept_and_enter_the_next_suggestion_is_there_without_a_decode():
    continued = 0
    for seed in SEEDS:
        async with _continued(seed) as (server, session, shown):
            if not shown:
                continue
            decodes = session.worker.stats.decodes
            _accept_and_enter(server, shown)
            items = await _ask(server, LINE + 1, 4)
            assert session.worker.stats.decodes == decodes  # answered from the continuation
            assert session.reuse.stats.ahead_served == 1
        # the same text and place in a server that decoded nothing ahead: the same suggestion
        accepted = TEXT.replace("    \n", "    " + shown + "\n    \n", 1)
        assert await _decoded_without_work_ahead(seed, accepted) == [item["insertText"] for item in items]
        continued += 1
    assert continued >= 2, f"only {continued} of {len(SEEDS)} seeds gave a suggestion and one after it"


async def test_another_text_is_decoded_as_before():
    for seed in SEEDS:
        async with _continued(seed) as (server, session, shown):
            if not shown:
                continue
            decodes = session.worker.stats.decodes
            _type(server, 2, LINE, CHARACTER, shown + "  # mine")  # the user's own ending, then Enter
            _type(server, 3, LINE, CHARACTER + len(shown) + 8, "\n    ")
            await _ask(server, LINE + 1, 4)
            assert session.worker.stats.decodes == decodes + 1 and session.reuse.stats.ahead_served == 0
            return
    raise AssertionError("no seed gave a suggestion and one after it")


async def test_nothing_is_decoded_ahead_with_work_ahead_off():
    async with InProcessServer(server=_server(0), initialization_options={**OPTIONS, "workAhead": False}) as server:
        assert await server.wait_model() == "ready"
        session = server.server.session
        server.open(URI, TEXT)
        assert await _ask(server, LINE, CHARACTER) is not None
        await asyncio.sleep(0.5)
        assert session.reuse.stats.ahead == 0 and session.worker.stats.ahead_runs == 0
