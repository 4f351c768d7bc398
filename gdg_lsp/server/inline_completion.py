"""textDocument/inlineCompletion: the ghost text.

A request whose answer is already known (the user is typing the suggestion on
screen, or asks again where nothing changed: ``service/suggestion_reuse.py``)
is answered after an analysis confirms Γ there is unchanged, without the model.
Otherwise it is analysed and decoded on the decode worker against a snapshot
of the document, within ``gdg.timeoutMs`` counted from its arrival (a request
that comes while the model loads waits for it, within that budget); a newer request for the same document supersedes it (it then
answers empty, never stale text), and ``$/cancelRequest`` stops it before its
next token.
"""

from __future__ import annotations

import asyncio
import logging
import time

import attrs
from lsprotocol import types

from gdg_lsp.server import problems
from gdg_lsp.server.handlers import handles
from gdg_lsp.server.scheduler import SUPERSEDED
from gdg_lsp.server.worker import ModelNotReady

log = logging.getLogger(__name__)

MIN_DECODE_MS = 50
"""Below this much of its budget left after waiting, a request is answered empty without decoding."""


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @handles("inline completion", empty=lambda: types.InlineCompletionList(items=[]))
    async def inline_completion(ls, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        arrived = time.monotonic()
        session = ls.session
        empty = types.InlineCompletionList(items=[])
        position = params.position
        located = session.locate(params.text_document.uri, position.line, position.character)
        if located is None or not session.settings.inline:
            return empty
        doc, _, offset = located
        snapshot = doc.snapshot()
        settings = session.settings
        reused = await _reuse(session, snapshot, offset, settings, arrived)
        if reused is SUPERSEDED:
            return empty  # a newer request for this document came meanwhile
        if reused is not None:
            return _answer(session, doc, snapshot, reused.start, [(reused.end, reused.suggestion)], position)

        def decode(service, cancel):
            # the budget counts from the request's arrival: time spent waiting for the model to
            # load (or for other documents' decodes) is part of it, so the editor hears back in time
            left_ms = settings.timeout_ms - (time.monotonic() - arrived) * 1000
            if left_ms < MIN_DECODE_MS:
                log.info("no inline suggestion: its %d ms went by waiting for the model", settings.timeout_ms)
                return None
            return service.complete(snapshot, offset, attrs.evolve(settings, timeout_ms=int(left_ms)), cancel)

        job = session.worker.submit(doc.uri, decode)
        answer = asyncio.wrap_future(job.future)
        try:
            try:
                suggestion = await asyncio.wait_for(asyncio.shield(answer), settings.timeout_ms / 1000)
            except TimeoutError:
                if not job.started.is_set():  # still waiting for the model (or another decode): budget spent
                    job.cancel.set()
                    log.info("no inline suggestion: the model was not ready within %d ms", settings.timeout_ms)
                    return empty
                suggestion = await answer  # decoding: its own deadline ends it
        except asyncio.CancelledError:
            job.cancel.set()  # $/cancelRequest: the decode stops before its next token
            raise
        except ModelNotReady as err:
            log.info("no inline suggestion: %s", err)
            return empty
        finally:
            problems.report(ls, doc.language_id)
        if suggestion is None or job.cancel.is_set():
            return empty  # superseded by a newer request for this document: its text would be stale
        problems.report_compile_errors(ls, suggestion)
        info = {"uri": doc.uri, "version": snapshot.version, **suggestion.summary()}
        session.last_suggestion = info
        ls.protocol.notify("gdg/suggestion", info)
        if not suggestion.text:
            return empty
        if suggestion.hole is not None:  # shown, so typed through (a budget-cut one too: it is what is on screen)
            session.reuse.remember(snapshot, suggestion.start, suggestion.end, suggestion.text, settings,
                                   suggestion.hole, info)
        # every candidate, best first (gdg.candidates): the editor cycles through them
        pieces = [(candidate.end, candidate.text) for candidate in suggestion.candidates or [suggestion]]
        return _answer(session, doc, snapshot, suggestion.start, pieces, position)


async def _reuse(session, snapshot, offset: int, settings, arrived: float):
    """The suggestion shown earlier that still answers this request (``Shown``), None, or
    SUPERSEDED when a newer request for the document came while Γ was being checked."""
    candidate = session.reuse.candidate(snapshot, offset, settings)
    if candidate is None:
        return None
    session.worker.supersede(snapshot.uri)  # an older decode for this document is stale now
    analyzer = session.analyzer_for(snapshot.language_id, snapshot.text)
    if analyzer is None:
        return None
    workspace = session.workspace
    hole = await asyncio.wrap_future(session.scheduler.submit(
        snapshot.uri, "inline reuse", lambda: analyzer.hole_at(snapshot, offset, workspace)))
    if hole is SUPERSEDED:
        return SUPERSEDED
    shown = session.reuse.confirm(candidate, hole)
    if shown is not None:
        info = {**(shown.info or {}), "uri": snapshot.uri, "version": snapshot.version, "text": shown.suggestion,
                "reused": candidate.kind, "timingsMs": {"total": round((time.monotonic() - arrived) * 1000, 2)}}
        session.last_suggestion = info
        session.server.protocol.notify("gdg/suggestion", info)
    return shown


def _answer(session, doc, snapshot, start: int, pieces: list[tuple[int, str]], position) -> types.InlineCompletionList:
    """Items inserting each ``(end, text)`` of ``pieces`` over ``[start, end)`` of the snapshot."""
    current = doc.version == snapshot.version
    first = doc.position_at(start, session.encoding) if current else (position.line, position.character)
    items = []
    for end, text in pieces:
        last = doc.position_at(end, session.encoding) if current else first
        items.append(types.InlineCompletionItem(
            insert_text=text, range=types.Range(types.Position(*first), types.Position(*last))))
    return types.InlineCompletionList(items=items)
