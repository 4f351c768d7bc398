"""Completion through a shared engine (``gdg.backend = "remote"``), with its fallback.

``RemoteCompletionService.complete`` is CompletionService's: the same hole,
Γ, π and executor, with the remote decoder (gdg_lsp.backends.remote). When the
engine is down, too slow, failing or refusing us, it says so once (a status
for the editor, with a notice to show) and serves the configured fallback:
``local`` loads the local model (on first need) and completes with it;
``none`` answers with no suggestion and the reason. The first connection to a
URL in a session is announced first (log and window/showMessage: what will be
sent where); settings the user did not consent to outside the workspace
(``gdg_lsp.consent``) are refused before anything is sent. While the engine is out,
requests go straight to the fallback; it is tried again after
RETRY_AFTER_SECONDS, and its return is announced too.

Runs on the decode worker's thread, like CompletionService.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from gdg_lsp.backends import remote
from gdg_lsp.decoding.remote import RemoteDecoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.errors import GdgError
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.service.local import CompletionService, Prepared, Suggestion
from gdg_lsp.service.plan import Analysis, Plan, analyse, partial_plan
from gdg_lsp.service.status import Status
from gdg_lsp.settings import Settings, limits_of

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 30.0


def _silent_status(status: Status) -> None:
    return None


def _silent_progress(message: str, percent: int | None) -> None:
    return None


class RemoteCompletionService:
    def __init__(
        self,
        settings: Settings,
        workspace: WorkspaceContext | None = None,
        on_status: Callable[[Status], None] = _silent_status,
        progress: Callable[[str, int | None], None] = _silent_progress,
        connector: Callable[[remote.Endpoint], remote.RemoteBackend] = remote.connect,
        local_loader: Callable[[Settings, WorkspaceContext], CompletionService] | None = None,
    ) -> None:
        self.settings = settings
        self._workspace = workspace or WorkspaceContext()
        self._on_status = on_status
        self._progress = progress
        self._connector = connector
        self._local_loader = local_loader or (lambda s, w: _local_service(s, w, progress))
        self._remote: CompletionService | None = None
        self._local: CompletionService | None = None
        self._local_error: str | None = None
        self._down: str | None = None  # why the engine is not in use (None: it is)
        self._retry_at = 0.0
        self._announced: set[str] = set()
        self._lock = threading.Lock()

    @property
    def workspace(self) -> WorkspaceContext:
        return self._workspace

    @workspace.setter
    def workspace(self, value: WorkspaceContext) -> None:
        self._workspace = value
        for service in (self._remote, self._local):
            if service is not None:
                service.workspace = value

    @property
    def using_remote(self) -> bool:
        return self._remote is not None

    concurrency = 1
    """Requests go to the engine (or the fallback) one at a time."""

    def model_steps(self) -> int:
        return self._local.model_steps() if self._local is not None else 0

    def close(self) -> None:
        if self._local is not None:
            self._local.close()

    # -- the engine -------------------------------------------------------------------------

    def start(self) -> bool:
        """Connect (health check and grammar probe); on failure announce the fallback."""
        with self._lock:
            return self._connect(initial=True)

    def _connect(self, initial: bool = False) -> bool:
        try:
            endpoint = remote.Endpoint.from_settings(self.settings.remote,
                                                     limits_of(self.settings).remote_response_bytes)
            self._announce_first_use(endpoint.url)
            backend = self._connector(endpoint)
        except remote.RemoteError as err:
            self._mark_down(str(err), initial)
            return False
        except Exception as err:  # noqa: BLE001 - an engine problem must not take the server down
            log.exception("connecting to the remote engine failed")
            self._mark_down(f"could not use the engine: {err}", initial)
            return False
        self._remote = CompletionService(backend, self._workspace, decoder=RemoteDecoder(backend))
        was_down = self._down is not None
        self._down = None
        message = f"{backend.model} on {endpoint.kind} at {endpoint.url}; {getattr(backend, 'fim_note', 'prefix-only')}"
        notice = f"gdg-lsp: the remote engine is back ({message})" if was_down and not initial else None
        self._announce(Status("ready", message, notice, backend.model, "remote", notice_level="info"))
        return True

    def _announce_first_use(self, url: str) -> None:
        """Before the first byte goes to ``url`` in this session: say what will leave the machine."""
        if url in self._announced:
            return
        self._announced.add(url)
        message = (f"code around the cursor and the names in scope will be sent to the remote engine at {url} "
                   f"(gdg.remote.url)")
        log.warning("%s", message)
        self._announce(Status("loading", f"connecting to {url}", "gdg-lsp: " + message, notice_level="info"))

    def _mark_down(self, why: str, initial: bool = False) -> None:
        first = self._down is None or initial
        self._down = why
        self._remote = None
        self._retry_at = time.monotonic() + RETRY_AFTER_SECONDS
        log.warning("remote engine unavailable: %s", why)
        if self.settings.remote.fallback == "local":
            self._ensure_local()
            if self._local is not None:
                message = f"remote engine unavailable ({why}); using the local model"
                self._announce(Status("ready", message, "gdg-lsp: " + message if first else None,
                                      self._local.backend.name, getattr(self._local.backend, "device", None)))
                return
            message = f"remote engine unavailable ({why}) and the local fallback failed: {self._local_error}"
        else:
            message = f"remote engine unavailable ({why}); no suggestions until it is back (gdg.remote.fallback is none)"
        self._announce(Status("failed", message, "gdg-lsp: " + message if first else None))

    def _ensure_local(self) -> None:
        if self._local is not None or self._local_error is not None:
            return
        self._announce(Status("loading", "loading the local model (fallback for the remote engine)"))
        try:
            self._local = self._local_loader(self.settings, self._workspace)
        except GdgError as err:
            self._local_error = str(err)
        except Exception as err:  # noqa: BLE001 - a broken model file must not take the server down
            log.exception("loading the local fallback model failed")
            self._local_error = f"could not load the model: {err}"

    def _announce(self, status: Status) -> None:
        try:
            self._on_status(status)
        except Exception:  # reporting must never break a request
            log.exception("status callback failed")

    # -- requests ---------------------------------------------------------------------------

    def _current(self) -> CompletionService | None:
        """The service that answers now: the engine's, else the local fallback's once loaded."""
        return self._remote if self._remote is not None else self._local

    def plan(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any = None,
             analysis: Analysis | None = None, on_prompt: Any = None) -> Plan:
        """The plan of whichever service answers now (the decode makes it again with another one's
        tokenizer if the engine went or came back meanwhile); the analysis alone before either is
        there. Never connects."""
        service = self._current()
        if service is None:
            return partial_plan(analysis or analyse(snapshot, offset, self._workspace), settings)
        return service.plan(snapshot, offset, settings, cancel, analysis, on_prompt)

    def decode(self, plan: Plan, settings: Settings | None = None, cancel: Any = None,
               measure_free_bits: bool = False, first_only: bool = False, deadline: float | None = None) -> Suggestion:
        settings = settings or plan.settings
        with self._lock:
            if self._remote is None and time.monotonic() >= self._retry_at:
                self._connect()
            if self._remote is not None:
                try:
                    return self._remote.decode(plan, settings, cancel, measure_free_bits, first_only, deadline)
                except remote.RemoteUnavailableError as err:
                    self._mark_down(str(err))
            return self._fallback(plan, settings, cancel, measure_free_bits, first_only, deadline)

    def complete(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: threading.Event | None = None,
                 measure_free_bits: bool = False, first_only: bool = False) -> Suggestion:
        deadline = time.monotonic() + settings.timeout_ms / 1000
        return self.decode(self.plan(snapshot, offset, settings, cancel), settings, cancel, measure_free_bits,
                           first_only, deadline)

    def more_candidates(self, suggestion: Suggestion, snapshot: Snapshot, settings: Settings,
                        cancel: threading.Event | None = None) -> Suggestion:
        service = self._current()
        return service.more_candidates(suggestion, snapshot, settings, cancel) if service is not None else suggestion

    def prefill(self, plan: Plan, cancel: Any = None) -> Prepared | None:
        """Work ahead with whichever service answers now (the engine's: nothing, its prompt runs
        there; the local fallback's: the KV cache). Never connects."""
        service = self._current()
        return service.prefill(plan, cancel) if service is not None else None

    def prepare(self, snapshot: Snapshot, offset: int, settings: Settings,
                cancel: threading.Event | None = None) -> Prepared | None:
        return self.prefill(self.plan(snapshot, offset, settings, cancel), cancel)

    def _fallback(self, plan: Plan, settings: Settings, cancel: Any, measure_free_bits: bool, first_only: bool,
                  deadline: float | None) -> Suggestion:
        if self.settings.remote.fallback == "local":
            self._ensure_local()
            if self._local is not None:
                return self._local.decode(plan, settings, cancel, measure_free_bits, first_only, deadline)
            reason = f"the remote engine is unavailable ({self._down}) and the local model failed: {self._local_error}"
        else:
            reason = f"the remote engine is unavailable ({self._down}); gdg.remote.fallback is none"
        offset = plan.analysis.offset
        return Suggestion("", offset, offset, plan.snapshot.language_id, settings.constraint, reason=reason,
                          stop_reason="remote-unavailable")


def _local_service(settings: Settings, workspace: WorkspaceContext, progress: Any) -> CompletionService:
    from gdg_lsp.service.build import (
        local_service,  # build() makes this service: imported on use
    )

    return local_service(settings, workspace, progress)  # type: ignore[return-value]
