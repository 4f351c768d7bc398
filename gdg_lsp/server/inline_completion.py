"""textDocument/inlineCompletion: the ghost text.

A request whose answer is already known (the user is typing the suggestion on
screen, or asks again where nothing changed: ``service/suggestion_reuse.py``)
is answered after an analysis confirms Γ there is unchanged, without the model.
Otherwise it goes in two stages against a snapshot of the document, within
``gdg.timeoutMs`` counted from its arrival: its plan (the hole, Γ and their digest,
the prompt, the first grammar: ``server/plans.py``) on the document's analysis lane,
shared with the work ahead that made it already for the same version and place, then
its decode on the decode worker, which leases a model slot for the prefill and the
decode only (a request that comes while the model loads waits for it, within that
budget). A newer request for the same document supersedes it (it then answers empty,
never stale text), and ``$/cancelRequest`` stops it in either stage: one cancel event
runs through both. The event loop only takes the snapshot, compares texts, and answers.

With ``gdg.candidates`` above 1 the first candidate is answered at once, and the others
are decoded after it on the decode worker, in a time slice of their own
(``CompletionService.more_candidates``); they join the suggestion shown in the reuse
cache, so the editor's next ask at that place (VS Code's "show next", Neovim's cycle
key) gets them all. Such an ask waits for them, within its own budget; typing through
does not (the alternatives are filtered by what was typed when they arrive).

Every item carries the accept command and a unique id (``server/acceptance.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import attrs
from lsprotocol import types

from gdg_lsp.server import acceptance, problems, work_ahead
from gdg_lsp.server.handlers import handles
from gdg_lsp.server.plans import Plans
from gdg_lsp.server.scheduler import SUPERSEDED
from gdg_lsp.server.worker import Job, ModelNotReady
from gdg_lsp.service.plan import analyse
from gdg_lsp.service.suggestion_reuse import Item, Shown

log = logging.getLogger(__name__)

MIN_DECODE_MS = 50
"""Below this much of its budget left after waiting, a request is answered empty without decoding."""


@dataclass
class _Pending:
    """Alternatives being decoded for the suggestion shown with id ``first_id``."""

    first_id: str
    job: Job
    info: dict[str, Any]
    """The ``gdg/suggestion`` data of the suggestion shown."""
    applied: bool = False


def register(server) -> None:
    session = server.session
    session.pending_alternatives = {}  # uri -> _Pending
    session.plans = Plans(session)  # each document's plan, shared by work ahead and the request
    work_ahead.register(server)
    session.worker.on_loaded.append(lambda: session.call_soon(work_ahead.model_ready, server))

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @handles("inline completion", empty=lambda: types.InlineCompletionList(items=[]))
    async def inline_completion(ls, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        arrived = time.monotonic()
        session = ls.session
        empty = types.InlineCompletionList(items=[])
        position = params.position
        located = session.locate(params.text_document.uri, position.line, position.character)
        if located is None or not session.settings_for(params.text_document.uri).inline:
            return empty
        doc, _, offset = located
        snapshot = doc.snapshot()
        settings = session.settings_for(doc.uri)  # the folder's (server/folders.py)
        invoked = params.context is not None and params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
        reused, analysis = await _reuse(ls, snapshot, offset, settings, arrived, invoked)
        if reused is SUPERSEDED:
            return empty  # a newer request for this document came meanwhile
        if reused is not None:
            return _serve_reused(ls, doc, snapshot, reused, position)
        if (stale := session.pending_alternatives.pop(doc.uri, None)) is not None:
            stale.job.cancel.set()  # for a suggestion the document no longer shows: this request goes first
        job = session.worker.begin(doc.uri)
        try:
            decoded = await _plan_and_decode(ls, job, snapshot, offset, settings, arrived, analysis)
        except asyncio.CancelledError:
            job.cancel.set()  # $/cancelRequest: the plan stops between its parts, the decode before its next token
            raise
        finally:
            problems.report(ls, doc.language_id, doc.uri)
        if decoded is None or job.cancel.is_set():
            return empty  # superseded by a newer request for this document: its text would be stale
        suggestion, planned = decoded
        problems.report_compile_errors(ls, suggestion)
        return _serve_decoded(ls, doc, snapshot, suggestion, settings, position, arrived, planned)


async def _plan_and_decode(ls, job: Job, snapshot, offset: int, settings, arrived: float, analysis):
    """The request's two stages: its plan on the document's analysis lane (the one work ahead made
    for the same key, if any), then its decode on a model slot. (the suggestion, ``_Planned``) or
    None when there is nothing to answer. Every path ends ``job``."""
    session = ls.session
    budget = settings.timeout_ms / 1000
    entry = session.plans.plan(snapshot, offset, settings, job.cancel, analysis)
    shared = len(entry.interest) > 1  # a work ahead (or an earlier ask) made it, or is making it
    try:
        plan = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(entry.ready)),
                                      max(0.0, budget - (time.monotonic() - arrived)))
    except (TimeoutError, asyncio.TimeoutError):
        job.cancel.set()  # the plan stops at its next part, unless a work ahead still wants it
        session.worker.drop(job)
        log.info("no inline suggestion: its %d ms went by in the analysis", settings.timeout_ms)
        return None
    except asyncio.CancelledError:
        if not entry.ready.cancelled():
            session.worker.drop(job)
            raise  # $/cancelRequest
        session.worker.drop(job)  # superseded on the lane by a newer plan of the document
        return None
    except BaseException:
        session.worker.drop(job)
        raise
    planned = _Planned(shared, time.monotonic() - arrived)
    if plan is None or plan.reason == "cancelled" or job.cancel.is_set():
        session.worker.drop(job)
        return None
    if plan.reason is not None:  # no hole there: said without the model
        from gdg_lsp.service.local import no_suggestion  # (made with the service: torch is loaded by now)

        session.worker.drop(job)
        return no_suggestion(plan), planned

    def decode(service, cancel):
        # the budget counts from the request's arrival: time spent in the plan, waiting for the model
        # to load (or for other documents' decodes) is part of it, so the editor hears back in time
        left_ms = settings.timeout_ms - (time.monotonic() - arrived) * 1000
        if left_ms < MIN_DECODE_MS:
            log.info("no inline suggestion: its %d ms went by waiting for the model", settings.timeout_ms)
            return None
        return service.decode(plan, attrs.evolve(settings, timeout_ms=int(left_ms)), cancel,
                              first_only=settings.candidates > 1)

    answer = asyncio.wrap_future(session.worker.run(job, decode))
    try:
        try:
            suggestion = await asyncio.wait_for(asyncio.shield(answer),
                                                max(0.0, budget - (time.monotonic() - arrived)))
        except (TimeoutError, asyncio.TimeoutError):
            if not job.started.is_set():  # still waiting for the model (or another decode): budget spent
                job.cancel.set()
                log.info("no inline suggestion: the model was not ready within %d ms", settings.timeout_ms)
                return None
            suggestion = await answer  # decoding: its own deadline ends it
    except ModelNotReady as err:
        log.info("no inline suggestion: %s", err)
        return None
    return (suggestion, planned) if suggestion is not None else None


@dataclass(frozen=True)
class _Planned:
    """How a decoded request's plan came: made ahead (or by an earlier ask) and shared, and how long
    from the request's arrival until it was there (seconds)."""

    shared: bool
    waited: float


def _serve_decoded(ls, doc, snapshot, suggestion, settings, position, arrived: float | None = None,
                   planned: _Planned | None = None) -> types.InlineCompletionList:
    session = ls.session
    # every candidate, best first (gdg.candidates): the editor cycles through them
    shown = suggestion.candidates or ([] if not suggestion.text else [suggestion])
    items = [Item(candidate.text, candidate.end, acceptance.new_id()) for candidate in shown]
    info = {"uri": doc.uri, "version": snapshot.version, **suggestion.summary(), "id": items[0].id if items else None}
    if arrived is not None and planned is not None:
        info.update(_request_timings(info["timingsMs"], arrived, planned))
    info["candidates"] = _labelled(info["candidates"], items)
    session.last_suggestion = info
    ls.protocol.notify("gdg/suggestion", info)
    key = acceptance.key_of(suggestion.language, session.worker.state.model)
    acceptance.served(ls, doc.uri, key, suggestion.start,
                      [(item.id, item.text, 0, item.end - suggestion.start) for item in items])
    if not items:
        return types.InlineCompletionList(items=[])
    if suggestion.hole is not None:  # shown, so typed through (a budget-cut one too: it is what is on screen)
        # the digest the plan made (a hole without one is digested there: a suggestion from elsewhere)
        digest = suggestion.hole_digest if suggestion.hole_digest is not None else suggestion.hole
        session.reuse.remember(snapshot, suggestion.start, items[0].end, items[0].text, settings, digest,
                               info, item_id=items[0].id, others=tuple(items[1:]))
        if suggestion.more is not None:
            _decode_more(ls, doc, snapshot, suggestion, settings, items[0].id, info)
        elif not suggestion.hole.suffix and len(items) == 1:
            work_ahead.continuation(ls, doc.uri, snapshot, suggestion.start, items[0].end, items[0].text)
    return _answer(session, doc, snapshot, suggestion.start, items, position)


def _request_timings(timings: dict[str, float], arrived: float, planned: _Planned) -> dict[str, Any]:
    """``gdg/suggestion``'s account of a decoded request as the server saw it: ``total`` from its
    arrival, ``plan`` until its plan was there; a plan made ahead (shared) has its parts under
    ``planAheadMs``, not spent in this request."""
    own = dict(timings)
    ahead = {part: own.pop(part) for part in PLAN_PARTS if part in own} if planned.shared else {}
    own.update({"plan": round(planned.waited * 1000, 2), "service": timings.get("total"),
                "total": round((time.monotonic() - arrived) * 1000, 2)})
    return {"timingsMs": own, "plan": "shared" if planned.shared else "own", "planAheadMs": ahead}


PLAN_PARTS = ("analysis", "prompt", "grammar")
"""The parts of a plan in a suggestion's timings."""


def _serve_reused(ls, doc, snapshot, shown: Shown, position) -> types.InlineCompletionList:
    key = acceptance.key_of((shown.info or {}).get("language"), ls.session.worker.state.model)
    text = snapshot.text
    acceptance.served(ls, doc.uri, key, shown.start,
                      [(item.id, text[shown.start - item.offset : shown.start] + item.text, item.offset,
                        item.end - shown.start) for item in shown.items])
    return _answer(ls.session, doc, snapshot, shown.start, list(shown.items), position)


def _labelled(summaries: list[dict[str, Any]], items: list[Item]) -> list[dict[str, Any]]:
    """Each candidate's ``gdg/suggestion`` entry with the id it is served by (both in the order served)."""
    return [{**summary, "id": item.id} for summary, item in zip(summaries, items)]


async def _reuse(ls, snapshot, offset: int, settings, arrived: float, invoked: bool):
    """(the suggestion shown earlier that still answers this request (``Shown``), None, or
    SUPERSEDED when a newer request for the document came while Γ was being checked; the
    analysis made for the check, which the request's plan then starts from, or None)."""
    session = ls.session
    candidate = session.reuse.candidate(snapshot, offset, settings)
    if candidate is None:
        return None, None
    pending = session.pending_alternatives.get(snapshot.uri)
    if pending is not None and pending.first_id in {item.id for item in candidate.shown.items}:
        # its alternatives are being decoded: an ask at the same place (cycling, "ask now") waits
        # for them within its budget; typing through does not, and neither cancels them
        if (candidate.kind == "repeated" or invoked) and not pending.job.done.is_set():
            left = settings.timeout_ms / 1000 - (time.monotonic() - arrived)
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(pending.job.future)), max(0.0, left))
            except (TimeoutError, asyncio.TimeoutError):
                pass
            except Exception:  # their failure is logged where they are applied
                pass
            _apply_alternatives(ls, snapshot.uri, pending)
            candidate = session.reuse.candidate(snapshot, offset, settings) or candidate
    else:
        session.worker.supersede(snapshot.uri)  # an older decode for this document is stale now
    workspace = session.workspace
    # the hole and its digest on the document's lane: at 2,000 bindings the digest alone is milliseconds
    analysis = await asyncio.wrap_future(session.scheduler.submit(
        snapshot.uri, "inline reuse", lambda: analyse(snapshot, offset, workspace)))
    if analysis is SUPERSEDED:
        return SUPERSEDED, None
    shown = session.reuse.confirm(candidate, analysis.digest)
    if shown is not None:
        info = {**(shown.info or {}), "uri": snapshot.uri, "version": snapshot.version, "text": shown.suggestion,
                "id": shown.items[0].id, "reused": candidate.kind,
                "timingsMs": {"total": round((time.monotonic() - arrived) * 1000, 2)}}
        session.last_suggestion = info
        session.server.protocol.notify("gdg/suggestion", info)
    return shown, analysis


def forget(ls, uri: str) -> None:
    """The document closed: alternatives still being decoded for it are given up."""
    if (pending := ls.session.pending_alternatives.pop(uri, None)) is not None:
        pending.job.cancel.set()


def _decode_more(ls, doc, snapshot, suggestion, settings, first_id: str, info: dict[str, Any]) -> None:
    """The rest of ``gdg.candidates`` for the suggestion just shown, on the decode worker, after it."""
    session = ls.session
    job = session.worker.submit(doc.uri, lambda service, cancel: service.more_candidates(
        suggestion, snapshot, settings, cancel))
    pending = session.pending_alternatives[doc.uri] = _Pending(first_id, job, info)
    job.future.add_done_callback(lambda _: session.call_soon(_apply_alternatives, ls, doc.uri, pending))


def _apply_alternatives(ls, uri: str, pending: _Pending) -> None:
    """Alternatives decoded: they join the suggestion shown (once), and ``gdg/suggestion`` says so."""
    session = ls.session
    future = pending.job.future
    if pending.applied or future is None or not future.done() or session.pending_alternatives.get(uri) is not pending:
        return  # applied already, not done, or given up for a newer suggestion
    pending.applied = True
    del session.pending_alternatives[uri]
    if future.cancelled() or future.exception() is not None:
        if not future.cancelled():
            log.warning("alternatives failed: %s", future.exception())
        return
    more = future.result()
    if more is None:
        return  # superseded before it ran
    info = pending.info
    first = next((c for c in more.candidates if c.text == info.get("text")), None)
    ordered = list(more.candidates)
    if first is not None and first.complete:  # the ghost on screen keeps its place unless the budget cut it
        ordered = [first, *(c for c in ordered if c is not first)]
    items = [Item(c.text, c.end, pending.first_id if c is first else acceptance.new_id()) for c in ordered]
    summary = more.summary()
    notice = {**info, "candidates": _labelled([more.candidate_summary(c) for c in ordered], items),
              "dropped": summary["dropped"],
              "alternatives": summary["alternatives"], "update": "alternatives",
              "timingsMs": {**info.get("timingsMs", {}), **summary["timingsMs"]}}
    if session.reuse.add_alternatives(uri, pending.first_id, items, notice) is None:
        notice["alternatives"] = {**notice["alternatives"], "stale": True}  # the document shows something else now
    session.last_suggestion = notice
    ls.protocol.notify("gdg/suggestion", notice)


def _answer(session, doc, snapshot, start: int, items: list[Item], position) -> types.InlineCompletionList:
    """Items inserting each of ``items`` over ``[start, item.end)`` of the snapshot, with their command."""
    current = doc.version == snapshot.version
    first = doc.position_at(start, session.encoding) if current else (position.line, position.character)
    served = []
    for item in items:
        last = doc.position_at(item.end, session.encoding) if current else first
        served.append(types.InlineCompletionItem(
            insert_text=item.text, range=types.Range(types.Position(*first), types.Position(*last)),
            command=acceptance.command(item.id, item.offset)))
    return types.InlineCompletionList(items=served)
