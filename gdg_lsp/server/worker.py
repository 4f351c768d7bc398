"""The decode worker: the threads that own the model.

Model loading and every decode run here, never on pygls' thread pool (which
also reads stdin) and never on the event loop (which must keep answering
hover, completion and edits). Per document, the newest request wins: a new
request sets the cancel event of the one before it, which then stops before
its next token (or never starts); it starts once that one has ended.

A job has two stages. It begins (``begin``) when the request arrives: the older ones it
supersedes are cancelled then, and its cancel event is made, which its plan (stage one, on
the document's analysis lane: ``server/plans.py``) and its decode (stage two, here: ``run``)
both check. Only stage two takes a decode thread and a model slot; a job whose plan found
nothing to decode ends without it (``drop``).

Requests of different documents decode one at a time, or up to ``gdg.batchSize``
at once when the service batches them (a pool of sequence slots over one model): then their
model steps are shared. A model load runs alone.

At most ``MAX_WAITING`` decodes wait to start (each document has at most one
that is not superseded; a client sending requests for thousands of documents
faster than they decode fills it): beyond it the oldest waiting one is answered
as superseded (an empty suggestion) without running.

The thread is a daemon: ``exit`` does not wait for a model that is still
loading. ``stats`` counts decodes, supersessions and how far a cancelled
decode ran past its cancellation (``gdg/status`` shows them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gdg_lsp import heap
from gdg_lsp.errors import GdgError, ModelUnavailableError
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.latency import summary_ms
from gdg_lsp.service import ModelResolver, Service, Status, build, local_model, rebatch
from gdg_lsp.settings import Settings, model_key

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_WAITING = 64
"""Decodes waiting to start, at most (model loads are never dropped)."""



@dataclass(frozen=True)
class WorkerState:
    state: str  # idle | loading | ready | failed
    message: str = ""
    model: str | None = None
    device: str | None = None
    load_seconds: float | None = None
    notice: str | None = None
    """A message for the user (window/showMessage) when the situation changed, e.g. the
    remote engine went away and the fallback took over."""
    notice_level: str = "warning"  # or "info"


class CancelEvent(threading.Event):
    """A cancel flag that remembers when it was first set and how many model steps had run by then."""

    def __init__(self, steps: Callable[[], int] = lambda: 0) -> None:
        super().__init__()
        self._steps = steps
        self.set_at: float | None = None
        self.steps_at: int | None = None

    def set(self) -> None:
        if self.set_at is None:
            self.steps_at = self._steps()
            self.set_at = time.perf_counter()
        super().set()


@dataclass(eq=False)  # each job is itself (kept in sets)
class Job:
    key: str
    cancel: CancelEvent = field(default_factory=CancelEvent)
    future: Future | None = None
    """Its decode stage's (``run``); None until then."""
    done: threading.Event = field(default_factory=threading.Event)
    """Set when the job has ended (run, skipped, cancelled in the queue, or dropped after its plan)."""
    started: threading.Event = field(default_factory=threading.Event)
    """Set when the job has the model (it is past the wait for a load and for its turn)."""
    planning: threading.Event = field(default_factory=threading.Event)
    """Set when its plan has begun on the analysis lane (a work ahead running from then on)."""
    ahead: bool = False
    """Work ahead of a request (``server/work_ahead.py``): any request cancels it."""
    previous: Job | None = field(default=None, repr=False)
    """The document's job before it: its decode stage waits for that one to end (and, when that one
    was dropped after its plan, for the one before it: ``_after``)."""
    dropped: bool = False
    """It ended after its plan, without a decode stage (it waited for nobody before it)."""


@dataclass
class WorkerStats:
    decodes: int = 0
    """Jobs that ran (completed, cancelled while running, or failed)."""
    skipped: int = 0
    """Jobs superseded before they started (they never touched the model)."""
    cancelled_running: int = 0
    """Jobs cancelled while running."""
    max_tokens_after_cancel: int = 0
    """The most model steps any cancelled job ran after its cancellation (the decoder checks before each)."""
    cancel_latency: deque = field(default_factory=lambda: deque(maxlen=2000))
    """Seconds from cancellation to the job's end, for jobs cancelled while running."""
    ahead_runs: int = 0
    """Work-ahead jobs that ran (not counted in ``decodes``: they decode nothing)."""
    ahead_skipped: int = 0
    """Work-ahead jobs cancelled (by an edit or a request) before they started."""
    ahead_cancelled: int = 0
    """Work-ahead jobs cancelled while running (they stop at the next prefill chunk)."""
    planned_only: int = 0
    """Jobs that ended after their plan, without the model (no hole there, nothing to prefill)."""

    def payload(self, running: int, max_running: int) -> dict[str, Any]:
        latency = summary_ms(self.cancel_latency)
        return {"running": running, "maxRunning": max_running, "decodes": self.decodes, "skipped": self.skipped,
                "cancelledRunning": self.cancelled_running, "maxTokensAfterCancel": self.max_tokens_after_cancel,
                "cancelLatencyMs": {"p50": latency["p50"], "p95": latency["p95"], "max": latency["max"]},
                "plannedOnly": self.planned_only,
                "workAhead": {"runs": self.ahead_runs, "skipped": self.ahead_skipped,
                              "cancelled": self.ahead_cancelled}}


class ModelNotReady(GdgError):
    pass


def _after(job: Job | None) -> None:
    """Wait until ``job`` has ended and, where it was dropped after its plan without waiting for its
    own previous job, until that one has too: a dropped request never lets the next one start a
    decode beside a document's decode still running."""
    while job is not None:
        job.done.wait()
        job = job.previous if job.dropped else None


class _DaemonExecutor:
    """Daemon threads running submitted callables in order (ThreadPoolExecutor's threads are
    joined at exit, which would hold ``exit`` until a model finished loading).

    ``limit`` callables run at once (1 unless the model decodes several requests
    at once: a batching SlotPool). An ``exclusive`` one (a model load) waits for the
    running ones to end and runs alone; later ones wait for it, in order."""

    def __init__(self, name: str, max_waiting: int = MAX_WAITING) -> None:
        self._name = name
        self._max_waiting = max_waiting
        self.dropped = 0
        self._queue: deque = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._running = 0
        self._exclusive = False
        self._threads = 0
        self.limit = 1
        self._spawn()

    def _spawn(self) -> None:
        self._threads += 1
        threading.Thread(target=self._run, name=f"{self._name}-{self._threads}", daemon=True).start()

    def set_limit(self, limit: int) -> None:
        with self._cond:
            self.limit = max(1, limit)
            while self._threads < self.limit:
                self._spawn()
            self._cond.notify_all()

    def submit(self, fn: Callable[..., T], *args: Any, exclusive: bool = False) -> Future:
        future: Future = Future()
        with self._cond:
            if self._closed:
                future.cancel()
            else:
                if len(self._queue) >= self._max_waiting:
                    self._drop_oldest()
                self._queue.append((future, fn, args, exclusive))
                self._cond.notify_all()
        return future

    def _drop_oldest(self) -> None:
        """Answer the oldest waiting call (not a model load) with None, as if superseded."""
        for item in self._queue:
            if not item[3]:
                self._queue.remove(item)
                self.dropped += 1
                if item[0].set_running_or_notify_cancel():
                    item[0].set_result(None)
                return

    def _may_start(self) -> bool:
        if not self._queue or self._exclusive or self._running >= self.limit:
            return False
        return not self._queue[0][3] or self._running == 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._may_start():
                    self._cond.wait()
                if self._closed:
                    return
                future, fn, args, exclusive = self._queue.popleft()
                self._running += 1
                self._exclusive = exclusive
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args))
                    except BaseException as err:  # handed to whoever waits on the future
                        future.set_exception(err)
            finally:
                with self._cond:
                    self._running -= 1
                    if exclusive:
                        self._exclusive = False
                    self._cond.notify_all()

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            for item in self._queue:
                item[0].cancel()
            self._queue.clear()
            self._cond.notify_all()


class DecodeWorker:
    def __init__(self, on_state: Callable[[WorkerState], None], on_progress: Callable[[str, int | None], None],
                 on_warning: Callable[[str], None] | None = None) -> None:
        self._pool = _DaemonExecutor("gdg-decode")
        self._on_state = on_state
        self._on_progress = on_progress
        self._on_warning = on_warning or (lambda message: log.warning("%s", message))
        self._latest: dict[str, Job] = {}
        self._ahead: dict[str, Job] = {}  # each document's latest work ahead not yet ended
        self._ahead_all: set[Job] = set()  # every work ahead not yet ended (a running one may have a successor)
        self._lock = threading.Lock()
        self._loaded_for: tuple | None = None
        self.resolve_model: ModelResolver = local_model
        self.service: Service | None = None
        self.state = WorkerState("idle")
        self.running = 0  # decodes in progress (at most the service's concurrency, one per document)
        self.max_running = 0
        self.stats = WorkerStats()
        self.on_loaded: list[Callable[[], None]] = []
        """Called on the worker's thread each time a model was loaded (work ahead for the open documents)."""

    def _set_state(self, state: WorkerState) -> None:
        self.state = state
        try:
            self._on_state(state)
        except Exception:  # reporting must never break the worker
            log.exception("state callback failed")

    # -- the model -----------------------------------------------------------------

    def load(self, settings: Settings, workspace: WorkspaceContext) -> Future:
        """Load (or reload) the model named by the settings, in the worker thread."""
        return self._pool.submit(self._load, settings, workspace, exclusive=True)

    def _load(self, settings: Settings, workspace: WorkspaceContext) -> None:
        key = model_key(settings)
        if self._loaded_for == key and self.service is not None:
            self.service.workspace = workspace
            return
        began = time.perf_counter()
        if settings.backend == "remote":
            self._set_state(WorkerState("loading", f"connecting to {settings.remote.url or 'the remote engine'}"))

        def on_status(status: Status) -> None:
            seconds = time.perf_counter() - began if status.state == "ready" else None
            self._set_state(WorkerState(status.state, status.message, status.model, status.device, seconds,
                                        status.notice, status.notice_level))

        self._close_service()  # a load runs alone: nothing decodes while the old model goes
        try:
            service = build(settings, workspace, progress=self._on_progress, on_status=on_status,
                            on_warning=self._on_warning, resolve_model=self.resolve_model)
        except ModelUnavailableError as err:
            self._set_state(WorkerState("failed", str(err)))
            return
        except Exception as err:  # a broken model file must not take the server down
            log.exception("model load failed")
            self._set_state(WorkerState("failed", f"could not load the model: {err}"))
            return
        self.service = service
        self._pool.set_limit(service.concurrency)
        self._loaded_for = key
        heap.after_load()
        if settings.backend != "remote":  # a remote service reports its own state (engine or fallback)
            self._set_state(WorkerState("ready", f"{service.model} ready on {service.device}", service.model,
                                        service.device, time.perf_counter() - began))
        for listener in list(self.on_loaded):
            try:
                listener()
            except Exception:  # a listener must never break the worker
                log.exception("model-loaded listener failed")

    def rebatch(self, settings: Settings) -> Future:
        """Apply ``gdg.batchSize`` to the loaded model (alone, like a load: no decode runs meanwhile)."""
        return self._pool.submit(self._rebatch, settings, exclusive=True)

    def _rebatch(self, settings: Settings) -> None:
        if self.service is None:
            return  # the next load builds it with the new size
        try:
            if rebatch(self.service, settings):
                self._pool.set_limit(self.service.concurrency)
        except Exception:  # keep serving with the batching it had
            log.exception("could not apply gdg.batchSize")

    def _close_service(self) -> None:
        if self.service is not None:
            self.service.close()
        self.service = None
        self._loaded_for = None
        self._pool.set_limit(1)

    # -- requests ------------------------------------------------------------------

    def _model_steps(self) -> int:
        # batched: model forwards (a cancelled request's own steps are fewer)
        return self.service.model_steps() if self.service is not None else 0

    def begin(self, key: str, ahead: bool = False) -> Job:
        """A job for ``key`` (a document), superseding the previous one: its cancel event, which both
        its stages check. Every job begun is ended by ``run`` or ``drop``.

        ``ahead``: work ahead of a request (``server/work_ahead.py``). It supersedes only the
        document's previous work ahead, and only if that one has not started its prefill (a
        running one, or a request running for the document, finishes first). Every request
        cancels every work ahead, of its own document and of the others: a request never waits
        for more than the prefill chunk or grammar compile one is in (a plan it shares with a
        work ahead goes on for it: ``plans.Interest``)."""
        job = Job(key, CancelEvent(self._model_steps), ahead=ahead)
        with self._lock:
            previous = self._latest.get(key)
            # a running work ahead (its plan begun) goes on: the next edit's text shares the prefix
            # it primes (``work_ahead.schedule`` cancels it when it does not); a waiting one is superseded
            running = previous is not None and (previous.started.is_set() or previous.planning.is_set())
            if previous is not None and (not ahead or (previous.ahead and not running)):
                previous.cancel.set()
            if not ahead:
                for other in self._ahead_all:
                    other.cancel.set()
            else:
                self._ahead[key] = job
                self._ahead_all.add(job)
            self._latest[key] = job
        job.previous = previous
        return job

    def run(self, job: Job, fn: Callable[[Any, threading.Event], T]) -> Future:
        """Stage two of ``job``: ``fn(service, cancel)`` on a decode thread, after the document's
        previous job has ended and once the model is loaded. Any thread may call it."""
        previous, ahead = job.previous, job.ahead

        def run() -> T | None:
            _after(previous)  # one decode per document at a time, in order
            service = self.service
            if job.cancel.is_set() or (ahead and service is None):
                with self._lock:
                    if ahead:  # cancelled, or nothing to get ready yet (the request waits for the load)
                        self.stats.ahead_skipped += 1
                        self._forget(job)
                    else:
                        self.stats.skipped += 1
                return None  # superseded before it started
            if service is None:
                raise ModelNotReady(self.state.message or "the model is not loaded")
            job.started.set()
            with self._lock:
                if ahead:
                    self.stats.ahead_runs += 1
                else:
                    self.running += 1
                    self.max_running = max(self.max_running, self.running)
                    self.stats.decodes += 1
            try:
                return fn(service, job.cancel)
            finally:
                with self._lock:
                    if ahead:
                        self.stats.ahead_cancelled += job.cancel.is_set()
                    else:
                        self.running -= 1
                        self._account_cancel(job)
                    self._forget(job)

        job.future = self._pool.submit(run)
        job.future.add_done_callback(lambda _: job.done.set())
        if ahead:  # also when it never ran (dropped from a full queue, the worker shut down)
            job.future.add_done_callback(lambda _: self._forget_locked(job))
        job.previous = None  # (a chain of jobs is not kept alive through it)
        return job.future

    def drop(self, job: Job) -> None:
        """``job`` ends after its plan, without the model (nothing to decode, superseded, failed)."""
        with self._lock:
            if job.ahead and job.cancel.is_set():
                self.stats.ahead_skipped += 1
            elif job.cancel.is_set() and not job.ahead:
                self.stats.skipped += 1
            else:
                self.stats.planned_only += 1
            self._forget(job)
        job.dropped = True  # (its ``previous`` is kept: the document's next job waits for that one too)
        job.done.set()

    def submit(self, key: str, fn: Callable[[Any, threading.Event], T], ahead: bool = False) -> Job:
        """``begin`` then ``run``: a job whose every stage runs on the decode thread (explain, the
        alternatives of a suggestion shown)."""
        job = self.begin(key, ahead)
        self.run(job, fn)
        return job

    def _forget_locked(self, job: Job) -> None:
        with self._lock:
            self._forget(job)

    def _forget(self, job: Job) -> None:
        """``job`` has ended: it is no longer its document's latest (under ``_lock``)."""
        self._ahead_all.discard(job)
        if self._ahead.get(job.key) is job:
            del self._ahead[job.key]
        if self._latest.get(job.key) is job:
            del self._latest[job.key]

    def requested(self, key: str) -> bool:
        """Whether a request (not a work ahead) for ``key`` has begun and not ended."""
        with self._lock:
            job = self._latest.get(key)
            return job is not None and not job.ahead and not job.done.is_set()

    def working_ahead(self) -> bool:
        """Whether any work ahead is waiting or running."""
        with self._lock:
            return bool(self._ahead_all)

    def cancel_ahead(self, key: str) -> None:
        """The document changed: its work ahead is for a text it no longer has."""
        with self._lock:
            for job in self._ahead_all:
                if job.key == key:
                    job.cancel.set()

    def supersede(self, key: str) -> None:
        """The request for ``key`` was answered without the model: its older decode is stale (a work
        ahead is not: edits cancel those, ``work_ahead.schedule``)."""
        with self._lock:
            previous = self._latest.get(key)
            if previous is not None and not previous.ahead:
                previous.cancel.set()

    def _account_cancel(self, job: Job) -> None:
        cancel = job.cancel
        if cancel.set_at is None:
            return
        self.stats.cancelled_running += 1
        self.stats.cancel_latency.append(time.perf_counter() - cancel.set_at)
        after = self._model_steps() - (cancel.steps_at or 0)
        self.stats.max_tokens_after_cancel = max(self.stats.max_tokens_after_cancel, after)

    def stats_payload(self) -> dict[str, Any]:
        return {**self.stats.payload(self.running, self.max_running), "droppedWaiting": self._pool.dropped}

    def cancel_all(self) -> None:
        with self._lock:
            for job in self._latest.values():
                job.cancel.set()

    def shutdown(self) -> None:
        self.cancel_all()
        self._pool.shutdown()
        if self.service is not None:  # wakes requests still waiting on the model (they end with an error)
            self.service.close()
