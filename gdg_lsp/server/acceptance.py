"""What editors say about a suggestion (docs/ACCEPT_PROTOCOL.md), counted for the user alone.

- Every inline item served carries ``command`` ``gdg.didAcceptCompletion`` with one argument
  ``{"id", "offset"}``: its id (unique per item served; the rest of an item typed through
  keeps it) and how many characters of the suggestion as first served come before its text.
  The server advertises the command (``executeCommandProvider``); editors run it after
  inserting the item (VS Code through vscode-languageclient, Neovim with ``client:exec_cmd``).
- ``textDocument/didShowCompletion`` ``{item}``: the item was drawn.
- ``textDocument/didPartiallyAcceptCompletion`` ``{item, acceptedLength}``: the first
  ``acceptedLength`` UTF-16 units of the item's ``insertText`` (as the message carries it)
  were inserted, counted from its start (cumulative, as VS Code reports them).
- Dismissals and typed-through items are inferred from the edits and the next answers;
  retained characters are counted 30 s and 2 min after an accept (``service/acceptance.py``).

The counts are in ``gdg/status`` (``acceptance``: this session's and, with the store, the
user's totals) and in ``gdg-lsp stats``; they are kept in the user's state folder
(``service/acceptance_store.py``), written a few seconds after they change and at the end
of the session, and sent nowhere. ``gdg.stats.enabled`` false (a user-only setting) stops
the counting and the writing; the items still carry their command.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any

from lsprotocol import types

from gdg_lsp.private_folder import NotPrivate
from gdg_lsp.server.handlers import handles, param
from gdg_lsp.service.acceptance import Table, Tracker
from gdg_lsp.service.acceptance_store import MAX_NAME, AcceptanceStore

log = logging.getLogger(__name__)

COMMAND = "gdg.didAcceptCompletion"
TITLE = "gdg-lsp: accepted"
DID_SHOW = "textDocument/didShowCompletion"
DID_PARTIALLY_ACCEPT = "textDocument/didPartiallyAcceptCompletion"
WRITE_AFTER_S = 5.0
"""A change is written to the store at most this long after it (at the end of the session too)."""


def new_id() -> str:
    return secrets.token_hex(8)


def command(item_id: str, offset: int) -> types.Command:
    """The accept command of an item: ``offset`` characters of its suggestion came before its text."""
    return types.Command(title=TITLE, command=COMMAND, arguments=[{"id": item_id, "offset": offset}])


class Acceptance:
    """One session's statistics: what the tracker counted, what the store holds, the timers."""

    def __init__(self, store: AcceptanceStore | None = None) -> None:
        self.tracker = Tracker()
        self.store = store or AcceptanceStore()
        self._saved = Table()
        """The tracker's counts as last written (what is new since is the next write)."""
        self._stored: Table | None = None
        """What the store held after this session's last read or write (None: not read yet)."""
        self._write_timer: asyncio.TimerHandle | None = None
        self._check_timer: asyncio.TimerHandle | None = None
        self._told: set[str] = set()

    def stored(self, ls) -> Table:
        if self._stored is None:
            self._stored = self.store.read()
            self._tell(ls, self.store.problem)
        return self._stored

    def _tell(self, ls, problem: str | None) -> None:
        if problem and problem not in self._told and len(self._told) < 16:
            self._told.add(problem)
            ls.session.show(f"gdg-lsp: {problem}", types.MessageType.Warning)

    def write(self, ls) -> None:
        """Add what was counted since the last write to the store, now (the end of the session)."""
        self._write_timer = None
        counts, before = self.tracker.counts.copy(), self._saved
        self._saved = counts
        self._written(ls, before, self._add(counts.minus(before)))

    def _add(self, delta: Table) -> Table | Exception | None:
        """The store with ``delta`` added (any thread: the file alone), the error, or None for nothing to add."""
        if not delta.rows:
            return None
        try:
            return self.store.add(delta)
        except (NotPrivate, OSError) as err:
            return err

    def _written(self, ls, before: Table, outcome: Table | Exception | None) -> None:
        """A write ended; ``before``: what was saved before it (taken as saved again when it failed)."""
        if isinstance(outcome, Exception):
            self._saved = before  # (counted as written when it began: a write meanwhile adds only what is newer)
            self._tell(ls, f"the acceptance statistics cannot be kept in {self.store.folder}: {outcome}")
        elif outcome is not None:
            self._stored = outcome
            self._tell(ls, self.store.problem)

    def changed(self, ls) -> None:
        """Counts changed: write them soon, and wake up for the next retention check."""
        loop = ls.session.loop
        if loop is None or not loop.is_running():
            return
        if self._write_timer is None:
            self._write_timer = loop.call_later(WRITE_AFTER_S, self._write_soon, ls)
        self._arm_checks(ls)

    def _write_soon(self, ls) -> None:
        """The counts are copied on the loop (which changes them); the file is written on a thread."""
        self._write_timer = None
        counts, before = self.tracker.counts.copy(), self._saved
        delta = counts.minus(before)
        if not delta.rows:
            return
        self._saved = counts
        done = ls.session.loop.run_in_executor(None, self._add, delta)
        done.add_done_callback(lambda future: self._written(
            ls, before, future.exception() if not future.cancelled() and future.exception() else
            None if future.cancelled() else future.result()))

    def _arm_checks(self, ls) -> None:
        if self._check_timer is not None:
            self._check_timer.cancel()
            self._check_timer = None
        following = self.tracker.due(time.monotonic(), _text_of(ls))
        if following is not None:
            delay = max(0.0, following - time.monotonic())
            self._check_timer = ls.session.loop.call_later(delay, self._checks_due, ls)

    def _checks_due(self, ls) -> None:
        self._check_timer = None
        self.changed(ls)

    def close(self, ls) -> None:
        """The session ends: timers stop, what is new is written."""
        for timer in (self._write_timer, self._check_timer):
            if timer is not None:
                timer.cancel()
        self._write_timer = self._check_timer = None
        if enabled(ls):
            self.write(ls)

    def payload(self, ls) -> dict[str, Any]:
        if not enabled(ls):
            return {"enabled": False}
        self.tracker.due(time.monotonic(), _text_of(ls))
        counts = self.tracker.counts
        total = self.stored(ls).merged(counts.minus(self._saved))
        return {"enabled": True, "session": counts.payload(), "total": total.payload(),
                "pending": self.tracker.pending(), "store": str(self.store.path), "problem": self.store.problem}


def enabled(ls) -> bool:
    return bool(ls.session.settings.stats.enabled)


def _text_of(ls):
    documents = ls.session.documents

    def text_of(uri: str, start: int, end: int) -> str | None:
        doc = documents.find(uri)
        if doc is None:
            return None
        length = doc.length
        return doc.slice(min(start, length), min(max(start, end), length))

    return text_of


def key_of(language: str | None, model: str | None) -> tuple[str, str]:
    return (str(language or "?")[:MAX_NAME], str(model or "?")[:MAX_NAME])


# -- what the server does -----------------------------------------------------------------


def served(ls, uri: str, key: tuple[str, str], anchor: int, items: list[tuple[str, str, int, int]]) -> None:
    """An inline answer for ``uri`` (``Tracker.served``); an empty one ends what the document showed."""
    if enabled(ls):
        ls.session.acceptance.tracker.served(uri, key, anchor, items)
        ls.session.acceptance.changed(ls)


def edited(ls, uri: str, edits: list[tuple[int, int, str]]) -> None:
    if enabled(ls):
        ls.session.acceptance.tracker.edited(uri, edits)
        ls.session.acceptance.changed(ls)


def closed(ls, uri: str) -> None:
    """Before the document leaves the store: its items end, its accepted ranges are counted now."""
    if enabled(ls):
        ls.session.acceptance.tracker.closed(uri, _text_of(ls))
        ls.session.acceptance.changed(ls)


# -- what the editor says -------------------------------------------------------------------


def _argument(item: Any) -> tuple[str | None, int | None]:
    """(id, offset) from an item's command (as served), or from a command's own argument."""
    holder = param(item, "command")
    arguments = param(holder, "arguments") if holder is not None else None
    first = arguments[0] if isinstance(arguments, (list, tuple)) and arguments else item
    item_id, offset = param(first, "id"), param(first, "offset")
    if not isinstance(item_id, str) or len(item_id) > 64:
        return None, None
    valid = isinstance(offset, int) and not isinstance(offset, bool) and 0 <= offset < 2**31
    return item_id, offset if valid else None


def register(server) -> None:
    server.session.acceptance = Acceptance()

    @server.feature(DID_SHOW)
    @handles(DID_SHOW)
    def did_show(ls, params: Any) -> None:
        item_id, _ = _argument(param(params, "item"))
        if item_id is not None and enabled(ls) and ls.session.acceptance.tracker.shown(item_id):
            ls.session.acceptance.changed(ls)

    @server.feature(DID_PARTIALLY_ACCEPT)
    @handles(DID_PARTIALLY_ACCEPT)
    def did_partially_accept(ls, params: Any) -> None:
        item = param(params, "item")
        item_id, offset = _argument(item)
        length = param(params, "acceptedLength")
        text = param(item, "insertText")
        if isinstance(text, dict):  # a StringValue (snippet) item: its value
            text = text.get("value")
        if item_id is None or not isinstance(length, int) or isinstance(length, bool) or not enabled(ls):
            return
        if ls.session.acceptance.tracker.partially_accepted(item_id, text, length, offset, time.monotonic()):
            ls.session.acceptance.changed(ls)

    @server.command(COMMAND)
    def did_accept(ls, *arguments: Any) -> None:
        try:
            item_id, offset = _argument(arguments[0]) if arguments else (None, None)
            if item_id is not None and enabled(ls) and \
                    ls.session.acceptance.tracker.accepted(item_id, offset, time.monotonic()):
                ls.session.acceptance.changed(ls)
        except Exception:  # counting must never fail the editor's accept
            log.exception("%s failed", COMMAND)
