"""Work ahead of the inline request: after an edit, make ready what the next request needs.

Editors ask for ghost text after their own debounce, at the position the user just
edited. Once a document has been quiet for ``gdg.workAheadDebounceMs`` after
``didOpen``/``didChange``, the request's plan is made there (``server/plans.py``, on the
document's analysis lane: the hole, Γ and their digest, the prompt, the first statement's
grammar compiled), and its prompt is run through the model into the KV cache the request
will use (the document's slot: ``CompletionService.prefill``, on the decode worker). The
request that follows at that version and place takes the same plan, prefills one token,
compiles nothing, and only decodes. Nothing is decoded ahead, so what is suggested is what
it would have been without (greedy).

- The next edit of the document cancels its timer and the work not yet started
  (it was for a text that is gone). Work in flight (its plan begun) goes on, through
  its prefill, when the edit is on or after the line it works for: typing there leaves
  the prompt's prefix it is priming unchanged, and restarting would redo the analysis
  at every key (keys 60–100 ms apart would never let a plan and a prefill finish); an
  edit above that line cancels it.
- Every request cancels every work ahead's prefill (``DecodeWorker.begin``): it waits at
  most for the prefill chunk or grammar compile one is in, and a prefill stopped
  between chunks keeps the chunks that ran, which the request then reuses. A plan the
  request shares goes on for it (``plans.Interest``).
- ``didOpen`` says nothing about the cursor: every document is planned at its end when
  it is opened, which makes the whole file's analysis (scopes, imports, member surfaces,
  a schema: the part of a fresh file's first ask that does not depend on the position)
  before anyone asks. Its prompt goes through the model only when the whole document fits
  in the prompt (``OPEN_CHARS_PER_TOKEN``): that prompt is the longest prefix, and a
  request anywhere shares it up to its cursor. In a longer file the window at the end
  shares nothing with a request further up, and priming it would only push out a prefix
  a slot held.
- A document opened while the model loads gets its analysis then; once the model is
  ready (``model_ready``), the documents worked on most recently (as many as the model has
  slots) are planned again at their last place, with their prompts in the cache, unless a
  request that waited for the load is there for the document already.
- Nothing is done where the request will be answered from the suggestion shown (the
  user types it through, ``service/suggestion_reuse.py``): that answer needs no model, and
  an analysis beside it would only compete for the CPU.
- After a suggestion is shown (one line, at a line's end, one candidate), the suggestion
  that would follow it is decoded (``continuation``) once the document has been quiet for
  ``gdg.workAheadDebounceMs`` (a key sooner cancels it: typing fast, the next request comes
  first): on the text the user makes by accepting it and pressing Enter (the next line
  indented as the editor does: as the line, one level more after a Python ``:``), planned on
  the lane and decoded as a work ahead. Begun, keys on its line (typing it through) leave it
  running; an edit above the line and any request cancel it. Decoded in time, it waits in the reuse
  cache for the ask on that text, which is answered from it as a repeated ask once Γ there is
  confirmed (llama.vim's speculative FIM). A text that comes out otherwise asks as before.
- Nothing is done when ``gdg.inline`` or ``gdg.workAhead`` is off.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from dataclasses import dataclass

from gdg_lsp.server import acceptance
from gdg_lsp.server.plans import AHEAD_KIND
from gdg_lsp.server.worker import Job

log = logging.getLogger(__name__)


OPEN_CHARS_PER_TOKEN = 2
"""A document opened gets its prompt prefilled when its characters are at most this many times
``gdg.contextTokens`` (code runs 3–4 characters a token; the prompt keeps room for the text
after the cursor and the language's context); any document gets its plan."""


@dataclass(frozen=True)
class _Place:
    """Where a document was last worked ahead for (``model_ready`` starts again from there)."""

    offset: int
    prefill: bool
    at: float


def register(server) -> None:
    server.session.work_ahead_places = {}  # uri -> _Place
    server.session.work_ahead_lines = {}  # uri -> {job: the start of the line it works for}, unfinished ones


def opened(ls, uri: str, text: str) -> None:
    """The document was opened (no cursor known): its plan at its end, its prompt prefilled when it
    fits the prompt."""
    fits = len(text) <= ls.session.settings_for(uri).context_tokens * OPEN_CHARS_PER_TOKEN
    schedule(ls, uri, len(text), prefill=fits)


def schedule(ls, uri: str, offset: int, edit_start: int | None = None, prefill: bool = True) -> None:
    """The document ``uri`` was edited from ``edit_start`` to ``offset`` (code points, in its new
    text; None: anywhere): forget the work ahead for its old text and start the debounce for
    the new one."""
    session = ls.session
    if (handle := session.work_ahead_timers.pop(uri, None)) is not None:
        handle.cancel()
    lines = session.work_ahead_lines.get(uri)
    working_at = min(lines.values()) if lines else None
    if edit_start is None or working_at is None or edit_start < working_at:
        session.worker.cancel_ahead(uri)  # the prefix it primes changed
    session.work_ahead_places[uri] = _Place(offset, prefill, time.monotonic())
    settings = session.settings_for(uri)
    if not settings.work_ahead or not settings.inline or session.loop is None:
        return
    session.work_ahead_timers[uri] = session.loop.call_later(
        settings.work_ahead_debounce_ms / 1000, start, ls, uri, offset, prefill)


def model_ready(ls) -> None:
    """The model was loaded: work ahead again for the documents worked on most recently, at their
    last place (before, they got their analysis only)."""
    session = ls.session
    service = session.worker.service
    if service is None:
        return
    places = session.work_ahead_places
    recent = sorted((uri for uri in places if session.documents.find(uri) is not None),
                    key=lambda uri: places[uri].at, reverse=True)[: max(1, service.concurrency)]
    for uri in reversed(recent):  # the most recent last: its prefill is queued last, its slot kept
        settings = session.settings_for(uri)
        if session.worker.requested(uri):
            continue  # a request waited for the load: it does this document's work itself
        if settings.work_ahead and settings.inline and uri not in session.work_ahead_timers:
            start(ls, uri, places[uri].offset, places[uri].prefill)


def forget(ls, uri: str) -> None:
    """The document was closed."""
    if (handle := ls.session.work_ahead_timers.pop(uri, None)) is not None:
        handle.cancel()
    ls.session.work_ahead_lines.pop(uri, None)
    ls.session.work_ahead_places.pop(uri, None)
    ls.session.worker.cancel_ahead(uri)
    ls.session.plans.forget(uri)


def start(ls, uri: str, offset: int, prefill: bool = True) -> Job | None:
    """The plan at ``offset`` of the document's current text on its analysis lane, then (``prefill``,
    the model loaded) its prompt through the model on the decode worker."""
    session = ls.session
    session.work_ahead_timers.pop(uri, None)
    doc = session.documents.find(uri)
    if doc is None or doc.too_large:
        return None  # (a document too large to analyse has no hole to prepare)
    snapshot = doc.snapshot()
    settings = session.settings_for(uri)
    offset = min(offset, snapshot.length)
    if session.reuse.candidate(snapshot, offset, settings) is not None:
        return None  # the user is typing the suggestion shown: the request is answered from it
    worker = session.worker
    job = worker.begin(uri, ahead=True)
    entry = session.plans.plan(snapshot, offset, settings, job.cancel, kind=AHEAD_KIND, on_start=job.planning.set)
    line_start = snapshot.text.rfind("\n", 0, offset) + 1
    session.work_ahead_lines.setdefault(uri, {})[job] = line_start

    def prime(service, cancel):
        # edited meanwhile: keys on the line (or below) leave the prefix it primes as it is, an
        # edit above cancels it (``schedule``); a closed document's is gone
        if session.documents.find(uri) is not doc:
            return None
        return service.prefill(plan, cancel)

    def planned(ready: Future) -> None:  # on the lane's thread (or here, when the plan was made already)
        nonlocal plan
        plan = None if ready.cancelled() or ready.exception() is not None else ready.result()
        if not prefill or plan is None or not plan.ready or job.cancel.is_set() or worker.service is None:
            worker.drop(job)  # the analysis (and the grammar) are what it could make ready
            session.call_soon(_ended, session, uri, job, ready)
            return
        worker.run(job, prime).add_done_callback(lambda done: session.call_soon(_ended, session, uri, job, done))

    plan = None
    entry.ready.add_done_callback(planned)
    return job


INDENTS_AFTER_COLON = ("python", "tilelang")
"""Languages whose editors indent the line after one ending with ``:`` one level more."""


def after_accept_and_enter(text: str, start: int, end: int, inserted: str, language: str) -> tuple[str, int] | None:
    """(the document's text once ``inserted`` replaced ``[start, end)`` of ``text`` and Enter was
    pressed after it, the cursor there) or None when the suggestion is not a whole line's end."""
    if not inserted.strip() or "\n" in inserted or (end < len(text) and text[end] not in "\r\n"):
        return None
    accepted = text[:start] + inserted + text[end:]
    cursor = start + len(inserted)
    line = accepted[accepted.rfind("\n", 0, cursor) + 1 : cursor]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if language in INDENTS_AFTER_COLON and inserted.rstrip().endswith(":"):
        indent += "\t" if indent.startswith("\t") else "    "
    return accepted[:cursor] + "\n" + indent + accepted[cursor:], cursor + 1 + len(indent)


def continuation(ls, uri: str, snapshot, start: int, end: int, inserted: str) -> None:
    """The suggestion shown, ``inserted`` over ``[start, end)`` of ``snapshot``: once the document has
    been quiet for ``gdg.workAheadDebounceMs`` (the user reads it; a key sooner cancels the timer,
    ``schedule``: typing fast, the next request comes first), ``continue_after`` it."""
    session = ls.session
    settings = session.settings_for(uri)
    if not settings.work_ahead or not settings.inline or session.loop is None:
        return
    if (handle := session.work_ahead_timers.pop(uri, None)) is not None:
        handle.cancel()
    session.work_ahead_timers[uri] = session.loop.call_later(
        settings.work_ahead_debounce_ms / 1000, _continue_after, ls, uri, snapshot, start, end, inserted)


def _continue_after(ls, uri: str, snapshot, start: int, end: int, inserted: str) -> Job | None:
    """The suggestion shown accepted and a line begun after it: decode the next suggestion there
    ahead, kept for the ask that comes at it."""
    session = ls.session
    session.work_ahead_timers.pop(uri, None)
    settings = session.settings_for(uri)
    doc = session.documents.find(uri)
    if (not settings.work_ahead or not settings.inline or settings.candidates != 1 or doc is None
            or doc.version != snapshot.version or session.worker.service is None):
        return None
    upcoming = after_accept_and_enter(snapshot.text, start, end, inserted, snapshot.language_id)
    if upcoming is None:
        return None
    text, offset = upcoming
    ahead = doc.as_if(text)
    worker = session.worker
    job = worker.begin(uri, ahead=True)
    entry = session.plans.plan(ahead, offset, settings, job.cancel, speculative=True, kind=AHEAD_KIND,
                               on_start=job.planning.set)
    # keys typed on the suggestion's line leave the text it is for reachable (typing it through,
    # then taking the rest): only an edit above the line cancels it (``schedule``), and any request
    line_start = snapshot.text.rfind("\n", 0, start) + 1
    session.work_ahead_lines.setdefault(uri, {})[job] = line_start

    def decode(service, cancel):
        if session.documents.find(uri) is not doc:
            return None  # closed meanwhile
        return service.decode(plan, settings, cancel)

    def decoded(done: Future) -> None:  # on the event loop
        _ended(session, uri, job, done)
        suggestion = None if done.cancelled() or done.exception() is not None else done.result()
        if suggestion is None or job.cancel.is_set() or not suggestion.text or suggestion.hole is None:
            return
        info = {"uri": uri, "version": snapshot.version, **suggestion.summary(), "ahead": "continuation"}
        digest = suggestion.hole_digest if suggestion.hole_digest is not None else suggestion.hole
        session.reuse.remember_ahead(ahead, suggestion.start, suggestion.end, suggestion.text, settings, digest,
                                     info, item_id=acceptance.new_id())

    def planned(ready: Future) -> None:  # on the lane's thread (or here, when the plan was made already)
        nonlocal plan
        plan = None if ready.cancelled() or ready.exception() is not None else ready.result()
        if plan is None or not plan.ready or job.cancel.is_set() or worker.service is None:
            worker.drop(job)
            session.call_soon(_ended, session, uri, job, ready)
            return
        worker.run(job, decode).add_done_callback(lambda done: session.call_soon(decoded, done))

    plan = None
    entry.ready.add_done_callback(planned)
    return job


def _ended(session, uri: str, job: Job, future: Future) -> None:
    lines = session.work_ahead_lines.get(uri)
    if lines is not None:  # (a superseded job's end leaves the running one's line in place)
        lines.pop(job, None)
        if not lines:
            del session.work_ahead_lines[uri]
    if not future.cancelled() and (err := future.exception()) is not None:
        log.warning("working ahead failed: %s", err)  # the request does the work itself
