"""Analysis off the event loop: worker threads, one lane per document, the newest request wins.

Hover, completion, code actions, diagnostics and explain analyse a document
(parse it, resolve its includes, read schemas, introspect a database); the
event loop must stay free to read the next message, apply edits and answer
other documents. A handler that runs ``background`` (``server/handlers.py``)
takes a snapshot on the loop and hands the analysis to ``Scheduler.submit``:

- **per document, one at a time**: a document's jobs run in order on one
  thread at a time, so an analyzer's per-document state is never shared
  between threads; different documents run at once, on up to ``MAX_THREADS``
  threads (started on demand, idle ones kept);
- **the newest request wins**: a job for the same document and kind (a new
  hover after a hover) supersedes the older one, which is answered at once
  with ``SUPERSEDED`` (the handler answers empty) and never starts, or, when it
  is already running, finishes with nobody waiting for it;
- **interactive first**: hover, completion, code actions and explain are taken
  before diagnostics, and one thread is kept for them (diagnostics use at most
  ``MAX_THREADS - 1``), so a hover never queues behind other documents' analyses;
- **bounded**: at most one waiting job per document and kind, so the queue
  holds at most (open documents) x (kinds) jobs; the document store is bounded
  (``documents.MAX_OPEN_DOCUMENTS``).

A running analysis cannot be interrupted (it is Python code); superseding it
only stops anyone from waiting on it, and its document's next job starts when
it ends. The thread running it still shares the interpreter lock, so a long
analysis slows other threads down by about half, never blocks them.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

MAX_THREADS = 8
"""Analysis threads at most (one is kept for interactive requests)."""
INTERACTIVE = frozenset({"hover", "completion", "code action", "gdg/explain", "inline reuse", "inline plan"})
"""Kinds a user waits for; anything else (diagnostics) is background work."""


class _Superseded:
    def __repr__(self) -> str:
        return "SUPERSEDED"


SUPERSEDED = _Superseded()
"""The result of a job that a newer one of the same document and kind replaced."""


@dataclass
class _Job:
    kind: str
    fn: Callable[[], Any]
    future: Future = field(default_factory=Future)


@dataclass
class _Lane:
    """One document's jobs: at most one waiting per kind, and whether one is running."""

    waiting: dict[str, _Job] = field(default_factory=dict)
    running: _Job | None = None

    def next_job(self) -> _Job:
        kind = next((k for k in self.waiting if k in INTERACTIVE), next(iter(self.waiting)))
        return self.waiting.pop(kind)

    @property
    def interactive(self) -> bool:
        return any(kind in INTERACTIVE for kind in self.waiting)


@dataclass
class SchedulerStats:
    run: int = 0
    superseded: int = 0
    threads: int = 0
    max_busy: int = 0

    def payload(self) -> dict[str, int]:
        return {"run": self.run, "superseded": self.superseded, "threads": self.threads, "maxBusy": self.max_busy}


def _resolve(future: Future, value: Any = None, error: BaseException | None = None) -> bool:
    """Complete ``future`` unless it is done already (superseded, or cancelled by the loop
    at any moment: ``$/cancelRequest``); True when this call completed it."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
    except InvalidStateError:
        return False
    return True


class Scheduler:
    def __init__(self, max_threads: int = MAX_THREADS, name: str = "gdg-analysis") -> None:
        self._max_threads = max(2, max_threads)
        self._name = name
        self._cond = threading.Condition()
        self._lanes: dict[str, _Lane] = {}
        self._ready: deque[str] = deque()  # documents with waiting jobs and none running
        self._busy = 0
        self._busy_background = 0
        self._idle = 0
        self._closed = False
        self.stats = SchedulerStats()

    def submit(self, document: str, kind: str, fn: Callable[[], Any]) -> Future:
        """Run ``fn()`` on an analysis thread after the document's running job; its future
        resolves to the result, to ``SUPERSEDED``, or to the exception ``fn`` raised."""
        job = _Job(kind, fn)
        with self._cond:
            if self._closed:
                job.future.set_result(SUPERSEDED)
                return job.future
            lane = self._lanes.setdefault(document, _Lane())
            older = lane.waiting.pop(kind, None)
            if older is not None:
                self._supersede(older)
            if lane.running is not None and lane.running.kind == kind:
                self._supersede(lane.running)
            lane.waiting[kind] = job
            if lane.running is None and document not in self._ready:
                self._ready.append(document)
            self._wake()
        return job.future

    def _supersede(self, job: _Job) -> None:
        if _resolve(job.future, SUPERSEDED):
            self.stats.superseded += 1

    def _wake(self) -> None:
        """Start a thread when more documents wait than threads are idle (a thread just
        started counts as idle) and one more is allowed; wake the idle ones."""
        if len(self._ready) > self._idle and self._busy + self._idle < self._max_threads:
            self.stats.threads += 1
            threading.Thread(target=self._work, name=f"{self._name}-{self.stats.threads}", daemon=True).start()
            self._idle += 1  # counted as idle until it takes a job
        self._cond.notify_all()

    def _take(self) -> tuple[str, _Job] | None:
        """The next job that may start now: an interactive one first; background work
        only while a thread stays free for interactive requests."""
        may_run_background = self._busy_background < self._max_threads - 1
        chosen = None
        for document in self._ready:
            lane = self._lanes[document]
            if lane.interactive:
                chosen = document
                break
            if chosen is None and may_run_background:
                chosen = document
        if chosen is None:
            return None
        self._ready.remove(chosen)  # back in the queue when this job ends, if more wait
        lane = self._lanes[chosen]
        lane.running = lane.next_job()
        return chosen, lane.running

    def _work(self) -> None:
        while True:
            with self._cond:
                taken = None
                while not self._closed and (taken := self._take()) is None:
                    self._cond.wait()
                if self._closed:
                    self._idle -= 1
                    return
                document, job = taken
                self._idle -= 1
                self._busy += 1
                background = job.kind not in INTERACTIVE
                self._busy_background += background
                self.stats.max_busy = max(self.stats.max_busy, self._busy)
            try:
                if not job.future.done():  # superseded or cancelled while it waited: never started
                    self.stats.run += 1
                    _resolve(job.future, job.fn())
            except BaseException as err:  # handed to whoever waits (the handler reports it)
                _resolve(job.future, error=err)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._busy_background -= background
                    self._idle += 1
                    lane = self._lanes.get(document)
                    if lane is not None:
                        lane.running = None
                        if lane.waiting:
                            self._ready.append(document)
                        else:
                            del self._lanes[document]
                    self._cond.notify_all()

    def forget(self, document: str) -> None:
        """The document closed: its waiting jobs are superseded."""
        with self._cond:
            lane = self._lanes.get(document)
            if lane is None:
                return
            for job in lane.waiting.values():
                self._supersede(job)
            lane.waiting.clear()
            if document in self._ready:
                self._ready.remove(document)
            if lane.running is None:
                del self._lanes[document]

    def waiting(self) -> int:
        with self._cond:
            return sum(len(lane.waiting) for lane in self._lanes.values())

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            for lane in self._lanes.values():
                for job in lane.waiting.values():
                    self._supersede(job)
                lane.waiting.clear()
            self._ready.clear()
            self._cond.notify_all()
