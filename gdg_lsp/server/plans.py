"""Each document's plan: stage one of an inline request, made on the document's analysis lane.

A plan (``service.local.Plan``) is what a decode needs before its first token and what needs no
model: the language's hole and Γ at the position with their digest, the prompt, and the first
statement's grammar compiled. It is made on the document's analysis lane (``server/scheduler.py``,
kind ``inline plan``: interactive, one at a time per document, the newest winning), so that the
model slot is leased only for the prefill and the decode (``CompletionService.decode``), and a
first SQL request whose database takes 5 s to introspect holds no slot while it does.

Work ahead and the request share one plan: the document's latest plan is kept with its key
(the snapshot's version, or its text for a speculative plan, the position and
``settings.suggestion_key``), and a request that finds the plan for its key, made or being made,
waits for it instead of making its own. ``ready`` resolves once the prompt is made (the decode
can start and prefill while the grammar compiles: its π waits for that compile,
``GrammarEngine.get``), ``done`` once the grammar is compiled.

Cancellation: one token per job (``worker.Job.cancel``) runs through both stages. A plan waited
for by several jobs (a work ahead and the request that found it) stops, between its parts, only
once every one of them is cancelled (``Interest``).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.documents import Snapshot
from gdg_lsp.server.scheduler import SUPERSEDED
from gdg_lsp.service.plan import Analysis, Plan, analyse, partial_plan
from gdg_lsp.settings import Settings, suggestion_key

log = logging.getLogger(__name__)

KIND = "inline plan"
"""The scheduler kind of a request's plan (``scheduler.INTERACTIVE``: taken before diagnostics)."""
AHEAD_KIND = "plan ahead"
"""The kind of a work ahead's plan (background: a request's own plan goes first). Kinds apart, a
work ahead for the next version never supersedes a request's plan on the lane, nor one the other."""


class Interest:
    """The cancel flag of work that several jobs wait for: set once every one of them is cancelled
    (``is_set`` is all the decoder, the prefill and the plan ask of a cancel flag)."""

    def __init__(self) -> None:
        self._tokens: list[Any] = []

    def add(self, token: Any) -> None:
        self._tokens.append(token)

    def is_set(self) -> bool:
        tokens = list(self._tokens)
        return bool(tokens) and all(token.is_set() for token in tokens)

    def __len__(self) -> int:
        return len(self._tokens)


@dataclass(eq=False)
class PlanEntry:
    """One plan being made or made, and who waits for it."""

    uri: str
    version: int | None
    """The snapshot's version; None for a speculative plan (matched by ``text``)."""
    text: str | None
    offset: int
    settings_key: tuple
    interest: Interest = field(default_factory=Interest)
    ready: Future = field(default_factory=Future)
    """The plan once its prompt is made (or it ended without one: no hole there, cancelled; None:
    every job that wanted it was cancelled before it began)."""
    done: Future | None = None
    """The lane's future: the plan with its grammar compiled, or ``SUPERSEDED``."""
    started: bool = False
    """Its job has begun on the lane (a plan still waiting there behind background work is not
    waited for by a request: the request's own, interactive, goes first)."""
    began: float = field(default_factory=time.perf_counter)

    def matches(self, snapshot: Snapshot, offset: int, key: tuple) -> bool:
        if self.offset != offset or self.settings_key != key:
            return False
        if self.version is not None:
            return self.version == snapshot.version
        return self.text is not None and snapshot.length == len(self.text) and snapshot.text == self.text

    @property
    def usable(self) -> bool:
        """Not given up: not cancelled, not failed, not superseded on the lane."""
        if self.done is not None and self.done.done() and not self.ready.done():
            return False
        if not self.ready.done():
            return True
        if self.ready.cancelled() or self.ready.exception() is not None:
            return False
        plan = self.ready.result()
        return plan is not None and plan.reason != "cancelled"


class Plans:
    """The latest plan of each document (changed on the event loop; the lanes resolve the futures)."""

    def __init__(self, session) -> None:
        self._session = session
        self._latest: dict[str, PlanEntry] = {}
        self.made = 0
        """Plans made (started on a lane)."""
        self.shared = 0
        """Plans a job found made, or being made, for its key instead of making its own."""

    def plan(self, snapshot: Snapshot, offset: int, settings: Settings, cancel: Any,
             analysis: Analysis | None = None, speculative: bool = False, kind: str = KIND,
             on_start: Callable[[], None] | None = None) -> PlanEntry:
        """The document's plan at ``offset`` of ``snapshot`` under ``settings``: the one made or being
        made for that key, or a new one on the document's analysis lane (from ``analysis`` when
        the position was analysed already). ``cancel``: the asking job's token; ``on_start``: called
        when the plan begins on the lane (at once when it had)."""
        key = suggestion_key(settings)
        entry = self._latest.get(snapshot.uri)
        if entry is not None and entry.matches(snapshot, offset, key) and entry.usable and (
                entry.started or entry.ready.done()):
            made = entry.ready.result() if entry.ready.done() else None
            partial = made is not None and made.prompt is None and made.reason is None
            if not partial or self._session.worker.service is None:
                entry.interest.add(cancel)
                self.shared += 1
                if on_start is not None:
                    on_start()
                return entry
            analysis = analysis or made.analysis  # made while the model loaded: its prompt and grammar now
        entry = PlanEntry(snapshot.uri, None if speculative else snapshot.version, snapshot.text if speculative else None,
                          offset, key)
        entry.interest.add(cancel)
        self._latest[snapshot.uri] = entry
        self.made += 1
        entry.done = self._session.scheduler.submit(snapshot.uri, kind, lambda: self._make(entry, snapshot, settings,
                                                                                             analysis, on_start))
        entry.done.add_done_callback(lambda done: _settle(entry, done))
        return entry

    def _make(self, entry: PlanEntry, snapshot: Snapshot, settings: Settings, analysis: Analysis | None,
              on_start: Callable[[], None] | None) -> Plan | None:
        entry.started = True
        if on_start is not None:
            on_start()
        if entry.interest.is_set():  # every job that wanted it was cancelled while it waited
            _resolve(entry.ready, None)
            return None
        service = self._session.worker.service
        if service is None:  # the model is loading: the analysis now, the rest once it is there
            plan = partial_plan(analysis or analyse(snapshot, entry.offset, self._session.workspace), settings)
            _resolve(entry.ready, plan)
            return plan
        plan = service.plan(snapshot, entry.offset, settings, entry.interest, analysis,
                            on_prompt=lambda made: _resolve(entry.ready, made))
        _resolve(entry.ready, plan)  # (no prompt: no hole there, cancelled)
        return plan

    def forget(self, uri: str) -> None:
        """The document closed (the jobs waiting for its plan are cancelled: ``work_ahead.forget``)."""
        self._latest.pop(uri, None)

    def latest(self, uri: str) -> PlanEntry | None:
        return self._latest.get(uri)

    def payload(self) -> dict[str, int]:
        return {"made": self.made, "shared": self.shared}


def _resolve(future: Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _settle(entry: PlanEntry, done: Future) -> None:
    """The lane's job ended: whoever waits for ``ready`` hears of it even if it never got that far.
    A plan superseded on the lane by a newer one of its kind while it runs goes on (its jobs
    may still want it: a work ahead whose plan has begun is running) and says itself when its
    prompt is there; one superseded before it began never runs."""
    if entry.ready.done():
        return
    if done.cancelled():
        entry.ready.cancel()
        return
    err = done.exception()
    if err is not None:
        log.warning("planning the inline request failed: %s", err)
        entry.ready.set_exception(err)
    elif done.result() is SUPERSEDED and not entry.started:
        entry.ready.cancel()
