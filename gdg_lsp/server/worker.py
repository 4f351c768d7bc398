"""The decode worker: one thread that owns the model.

Model loading and every decode run here, never on pygls' thread pool (which
also reads stdin) and never on the event loop (which must keep answering
hover, completion and edits). Per document, the newest request wins: a new
request sets the cancel event of the one before it, which then stops before
its next token (or never starts).

The thread is a daemon: ``exit`` does not wait for a model that is still
loading. ``stats`` counts decodes, supersessions and how far a cancelled
decode ran past its cancellation (``gdg/status`` shows them).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gdg_lsp.errors import GdgError, ModelUnavailableError
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

ModelResolver = Callable[[Settings, Callable[[str, int | None], None]], tuple[str, Callable[[str], Any]]]
"""(settings, progress) -> (model name, load(device) -> backend); raises ModelUnavailableError."""


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


@dataclass
class Job:
    key: str
    cancel: CancelEvent = field(default_factory=CancelEvent)
    future: Future | None = None


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

    def payload(self, running: int, max_running: int) -> dict[str, Any]:
        latencies = sorted(self.cancel_latency)
        return {"running": running, "maxRunning": max_running, "decodes": self.decodes, "skipped": self.skipped,
                "cancelledRunning": self.cancelled_running, "maxTokensAfterCancel": self.max_tokens_after_cancel,
                "cancelLatencyMs": {"p50": _ms(latencies, 0.5), "p95": _ms(latencies, 0.95), "max": _ms(latencies, 1.0)}}


def _ms(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1)


class ModelNotReady(GdgError):
    pass


class _DaemonExecutor:
    """One daemon thread running submitted callables in order (ThreadPoolExecutor's threads are
    joined at exit, which would hold ``exit`` until a model finished loading)."""

    def __init__(self, name: str) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future:
        future: Future = Future()
        if self._closed:
            future.cancel()
        else:
            self._queue.put((future, fn, args))
        return future

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as err:  # handed to whoever waits on the future
                future.set_exception(err)

    def shutdown(self) -> None:
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        self._queue.put(None)


def default_model_resolver(settings: Settings, progress: Callable[[str, int | None], None]) -> tuple[str, Callable[[str], Any]]:
    from gdg_lsp.decoding import models

    spec = models.resolve(settings.model)
    return spec.name, lambda device: models.load(spec, device, progress, settings.threads, settings.engine)


class DecodeWorker:
    def __init__(self, on_state: Callable[[WorkerState], None], on_progress: Callable[[str, int | None], None],
                 on_warning: Callable[[str], None] | None = None) -> None:
        self._pool = _DaemonExecutor("gdg-decode")
        self._on_state = on_state
        self._on_progress = on_progress
        self._on_warning = on_warning or (lambda message: log.warning("%s", message))
        self._latest: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._loaded_for: tuple[str, str, int, str] | None = None
        self.resolve_model: ModelResolver = default_model_resolver
        self.service: Any = None
        self.state = WorkerState("idle")
        self.running = 0  # decodes in progress (at most one: the worker has one thread)
        self.max_running = 0
        self.stats = WorkerStats()

    def _set_state(self, state: WorkerState) -> None:
        self.state = state
        try:
            self._on_state(state)
        except Exception:  # reporting must never break the worker
            log.exception("state callback failed")

    # -- the model -----------------------------------------------------------------

    def load(self, settings: Settings, workspace: WorkspaceContext) -> Future:
        """Load (or reload) the model named by the settings, in the worker thread."""
        return self._pool.submit(self._load, settings, workspace)

    def _load(self, settings: Settings, workspace: WorkspaceContext) -> None:
        from gdg_lsp.decoding import models

        key = (settings.model, settings.device, settings.threads, settings.engine, settings.backend, settings.remote)
        if self._loaded_for == key and self.service is not None:
            self.service.workspace = workspace
            return
        began = time.perf_counter()
        if settings.backend == "remote":
            self._load_remote(settings, workspace, key, began)
            return
        try:
            # the model first: a missing one is reported without loading torch
            name, load = self.resolve_model(settings, self._on_progress)
            device, warning = models.resolve_device(settings.device)
            if warning:  # e.g. CUDA asked for and absent: the CPU is used, and the user told so
                self._on_warning(warning)
            self._set_state(WorkerState("loading", f"loading {name}", name, device))
            backend = load(device)
        except ModelUnavailableError as err:
            self.service = None
            self._loaded_for = None
            self._set_state(WorkerState("failed", str(err)))
            return
        except Exception as err:  # a broken model file must not take the server down
            log.exception("model load failed")
            self.service = None
            self._loaded_for = None
            self._set_state(WorkerState("failed", f"could not load the model: {err}"))
            return
        from gdg_lsp.service import CompletionService  # here: it imports torch, which a missing model never needs

        self.service = CompletionService(backend, workspace)
        self._loaded_for = key
        self._set_state(WorkerState("ready", f"{name} ready on {device}", name, device,
                                    time.perf_counter() - began))

    def _load_remote(self, settings: Settings, workspace: WorkspaceContext, key: tuple, began: float) -> None:
        from gdg_lsp.remote_service import RemoteCompletionService, Status

        def on_status(status: Status) -> None:
            seconds = time.perf_counter() - began if status.state == "ready" else None
            self._set_state(WorkerState(status.state, status.message, status.model, status.device, seconds,
                                        status.notice, status.notice_level))

        self._set_state(WorkerState("loading", f"connecting to {settings.remote.url or 'the remote engine'}"))
        service = RemoteCompletionService(settings, workspace, on_status, self._on_progress)
        service.start()
        self.service = service
        self._loaded_for = key

    # -- requests ------------------------------------------------------------------

    def _model_steps(self) -> int:
        stats = getattr(getattr(self.service, "backend", None), "stats", None)
        return getattr(stats, "steps", 0)

    def submit(self, key: str, fn: Callable[[Any, threading.Event], T]) -> Job:
        """Run ``fn(service, cancel)`` for ``key`` (a document), superseding the previous one."""
        job = Job(key, CancelEvent(self._model_steps))
        with self._lock:
            previous = self._latest.get(key)
            if previous is not None:
                previous.cancel.set()
            self._latest[key] = job

        def run() -> T | None:
            if job.cancel.is_set():
                self.stats.skipped += 1
                return None  # superseded before it started
            if self.service is None:
                raise ModelNotReady(self.state.message or "the model is not loaded")
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.stats.decodes += 1
            try:
                return fn(self.service, job.cancel)
            finally:
                self.running -= 1
                self._account_cancel(job)
                with self._lock:
                    if self._latest.get(key) is job:
                        del self._latest[key]

        job.future = self._pool.submit(run)
        return job

    def _account_cancel(self, job: Job) -> None:
        cancel = job.cancel
        if cancel.set_at is None:
            return
        self.stats.cancelled_running += 1
        self.stats.cancel_latency.append(time.perf_counter() - cancel.set_at)
        after = self._model_steps() - (cancel.steps_at or 0)
        self.stats.max_tokens_after_cancel = max(self.stats.max_tokens_after_cancel, after)

    def stats_payload(self) -> dict[str, Any]:
        return self.stats.payload(self.running, self.max_running)

    def cancel_all(self) -> None:
        with self._lock:
            for job in self._latest.values():
                job.cancel.set()

    def shutdown(self) -> None:
        self.cancel_all()
        self._pool.shutdown()
