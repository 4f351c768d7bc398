"""Work ahead of the inline request: after an edit, make ready what the next request needs.

Editors ask for ghost text after their own debounce, at the position the user just
edited. Once a document has been quiet for ``gdg.workAheadDebounceMs`` after
``didOpen``/``didChange``, the decode worker computes the hole, Γ and the prompt
there, runs the prompt through the model into the KV cache the request will use
(the document's slot) and compiles the first statement's grammar
(``CompletionService.prepare``). The request that follows finds them ready: it
prefills one token, compiles nothing, and only decodes. Nothing is decoded ahead,
so what is suggested is what it would have been without (greedy).

- The next edit of the document cancels its timer and the work not yet started
  (it was for a text that is gone; work that starts for a version the document has
  left does nothing: the snapshot's version is checked on the worker). Work in
  flight goes on when the edit is on or after the line it works for: typing there
  leaves the prompt's prefix it is priming unchanged, and restarting would redo the
  analysis at every key; an edit above that line cancels it.
- Every request cancels every work ahead (``DecodeWorker.submit``): it waits at
  most for the prefill chunk or grammar compile one is in, and a prefill stopped
  between chunks keeps the chunks that ran, which the request then reuses.
- ``didOpen`` says nothing about the cursor: the work is done at the document's
  end when the whole document fits in the prompt (``OPEN_CHARS_PER_TOKEN``): that
  prompt is the longest prefix, and a request anywhere shares it up to its cursor.
  In a longer file the window at the end shares nothing with a request further up,
  and priming it would only push out a prefix the document's KV cache held.
- Nothing is done where the request will be answered from the suggestion shown (the
  user types it through, ``service/suggestion_reuse.py``): that answer needs no model, and
  an analysis beside it would only compete for the CPU.
- Nothing is done while the model loads (the request waits for the load within
  its budget) or when ``gdg.inline`` or ``gdg.workAhead`` is off.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future

log = logging.getLogger(__name__)


OPEN_CHARS_PER_TOKEN = 2
"""A document opened is worked ahead on when its characters are at most this many times
``gdg.contextTokens`` (code runs 3–4 characters a token; the prompt keeps room for the text
after the cursor and the language's context)."""


def opened(ls, uri: str, text: str) -> None:
    """The document was opened (no cursor known): work ahead at its end if it fits the prompt."""
    if len(text) <= ls.session.settings_for(uri).context_tokens * OPEN_CHARS_PER_TOKEN:
        schedule(ls, uri, len(text))


def schedule(ls, uri: str, offset: int, edit_start: int | None = None) -> None:
    """The document ``uri`` was edited from ``edit_start`` to ``offset`` (code points, in its new
    text; None: anywhere): forget the work ahead for its old text and start the debounce for
    the new one."""
    session = ls.session
    if (handle := session.work_ahead_timers.pop(uri, None)) is not None:
        handle.cancel()
    working_at = session.work_ahead_line_starts.get(uri)
    if edit_start is None or working_at is None or edit_start < working_at:
        session.worker.cancel_ahead(uri)  # the prefix it primes changed
    settings = session.settings_for(uri)
    if not settings.work_ahead or not settings.inline or session.loop is None:
        return
    session.work_ahead_timers[uri] = session.loop.call_later(
        settings.work_ahead_debounce_ms / 1000, start, ls, uri, offset)


def forget(ls, uri: str) -> None:
    """The document was closed."""
    if (handle := ls.session.work_ahead_timers.pop(uri, None)) is not None:
        handle.cancel()
    ls.session.work_ahead_line_starts.pop(uri, None)
    ls.session.worker.cancel_ahead(uri)


def start(ls, uri: str, offset: int) -> Future | None:
    """Hand the work ahead at ``offset`` of the document's current text to the decode worker."""
    session = ls.session
    session.work_ahead_timers.pop(uri, None)
    doc = session.documents.find(uri)
    if doc is None or session.worker.service is None or doc.too_large:
        return None  # (a document too large to analyse has no hole to prepare)
    snapshot = doc.snapshot()
    settings = session.settings_for(uri)
    offset = min(offset, snapshot.length)
    if session.reuse.candidate(snapshot, offset, settings) is not None:
        return None  # the user is typing the suggestion shown: the request is answered from it

    def prepare(service, cancel):
        if session.documents.find(uri) is not doc or doc.version != snapshot.version:
            return None  # edited meanwhile: this text is gone
        return service.prepare(snapshot, offset, settings, cancel)

    job = session.worker.submit(uri, prepare, ahead=True)
    line_start = snapshot.text.rfind("\n", 0, offset) + 1
    session.work_ahead_line_starts[uri] = line_start
    job.future.add_done_callback(lambda done: session.call_soon(_ended, session, uri, line_start, done))
    return job.future


def _ended(session, uri: str, line_start: int, future: Future) -> None:
    if session.work_ahead_line_starts.get(uri) == line_start:
        del session.work_ahead_line_starts[uri]
    if not future.cancelled() and (err := future.exception()) is not None:
        log.warning("working ahead failed: %s", err)  # the request does the work itself
