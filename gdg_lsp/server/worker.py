"""The decode worker: one thread that owns the model.

Model loading and every decode run here, never on pygls' thread pool (which
also reads stdin) and never on the event loop (which must keep answering
hover, completion and edits). Per document, the newest request wins: a new
request sets the cancel event of the one before it, which then stops before
its next token (or never starts).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gdg_lsp.errors import GdgError, ModelUnavailableError
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class WorkerState:
    state: str  # idle | loading | ready | failed
    message: str = ""
    model: str | None = None
    device: str | None = None
    load_seconds: float | None = None


@dataclass
class Job:
    key: str
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future | None = None


class ModelNotReady(GdgError):
    pass


class DecodeWorker:
    def __init__(self, on_state: Callable[[WorkerState], None], on_progress: Callable[[str, int | None], None]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gdg-decode")
        self._on_state = on_state
        self._on_progress = on_progress
        self._latest: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._loaded_for: tuple[str, str, int] | None = None
        self.service: Any = None
        self.state = WorkerState("idle")
        self.running = 0  # decodes in progress (at most one: the pool has one thread)
        self.max_running = 0

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
        from gdg_lsp.service import CompletionService

        key = (settings.model, settings.device, settings.threads)
        if self._loaded_for == key and self.service is not None:
            self.service.workspace = workspace
            return
        began = time.perf_counter()
        try:
            device, warning = models.resolve_device(settings.device)
            if warning:
                self._on_progress(warning, None)
                log.warning(warning)
            spec = models.resolve(settings.model)
            self._set_state(WorkerState("loading", f"loading {spec.name}", spec.name, device))
            backend = models.load(spec, device, self._on_progress, settings.threads)
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
        self.service = CompletionService(backend, workspace)
        self._loaded_for = key
        self._set_state(WorkerState("ready", f"{spec.name} ready on {device}", spec.name, device,
                                    time.perf_counter() - began))

    # -- requests ------------------------------------------------------------------

    def submit(self, key: str, fn: Callable[[Any, threading.Event], T]) -> Job:
        """Run ``fn(service, cancel)`` for ``key`` (a document), superseding the previous one."""
        job = Job(key)
        with self._lock:
            previous = self._latest.get(key)
            if previous is not None:
                previous.cancel.set()
            self._latest[key] = job

        def run() -> T | None:
            if job.cancel.is_set():
                return None  # superseded before it started
            if self.service is None:
                raise ModelNotReady(self.state.message or "the model is not loaded")
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            try:
                return fn(self.service, job.cancel)
            finally:
                self.running -= 1
                with self._lock:
                    if self._latest.get(key) is job:
                        del self._latest[key]

        job.future = self._pool.submit(run)
        return job

    def cancel_all(self) -> None:
        with self._lock:
            for job in self._latest.values():
                job.cancel.set()

    def shutdown(self) -> None:
        self.cancel_all()
        self._pool.shutdown(wait=False, cancel_futures=True)
