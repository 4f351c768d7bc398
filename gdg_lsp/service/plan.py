"""Stage one of a request: what a decode needs before its first token, made without the model.

``analyse`` asks the language for the hole and Γ at a position and digests them
(``suggestion_reuse.hole_key``): all that answering from a suggestion shown needs. A ``Plan``
adds the prompt and the first statement's grammar compiled (``CompletionService.plan``). This
module imports no model and no grammar engine: the server makes plans on its analysis lanes,
and holds a model slot only for stage two (``CompletionService.decode`` / ``prefill``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gdg_lsp import languages
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import Analyzer, Hole, NoHole, WorkspaceContext
from gdg_lsp.service.suggestion_reuse import hole_key
from gdg_lsp.settings import Settings

if TYPE_CHECKING:
    from gdg_lsp.executor import Prompt


@dataclass(frozen=True)
class Analysis:
    """What the language says at one position of one snapshot: the hole and Γ there, and their
    digest (``suggestion_reuse.hole_key``). No model: the first part of a plan, and all that the
    answer from a suggestion shown needs (its Γ compared by the digest)."""

    snapshot: Snapshot
    offset: int
    analyzer: Analyzer
    workspace: WorkspaceContext
    """The context of the folder holding the document (``WorkspaceContext.for_document``)."""
    hole: Hole | NoHole
    digest: str | None
    """``hole_key(hole)``; None where there is no hole."""
    seconds: float
    began: float = 0.0
    """``time.perf_counter()`` when it began: a suggestion's ``total`` counts from there."""


def analyse(snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Analysis:
    """The hole, Γ and their digest at ``offset`` (any thread but the event loop: the analysis reads
    the workspace's files and a database, and the digest of 2,000 bindings takes milliseconds)."""
    began = time.perf_counter()
    analyzer = languages.analyzer(snapshot.language_id, snapshot.text)
    context = workspace.for_document(snapshot.uri)  # the folder holding it (server/folders.py)
    hole = analyzer.hole_at(snapshot, offset, context)
    digest = hole_key(hole) if isinstance(hole, Hole) else None
    return Analysis(snapshot, offset, analyzer, context, hole, digest, time.perf_counter() - began, began)


@dataclass
class Plan:
    """Stage one of a request (``CompletionService.plan``): what its decode needs before the first
    token, made without the model. The language's hole and Γ with their digest, the prompt, and
    the first statement's grammar compiled (π's rung). Work ahead and the request at the same
    snapshot, position and settings share one (``server/plans.py``); stage two
    (``CompletionService.decode`` or ``prefill``) leases a model slot for the prefill and the
    decode only."""

    analysis: Analysis
    settings: Settings
    prompt: Prompt | None = None
    """None when there is nothing to decode (``reason``), or the plan was made before the model
    was loaded (the prompt needs its tokenizer: the decode makes it from ``analysis``)."""
    shape: Any = None
    """``prompt.PromptShape``: the layout the prompt used."""
    rung: str | None = None
    """The first statement's rung, once its grammar is compiled (None: not yet, none, no rung)."""
    reason: str | None = None
    """Why there is nothing to decode here (no hole, cancelled)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds of its parts: ``analysis``, ``prompt``, ``grammar`` (the first statement's compile)."""
    made_by: Any = field(default=None, repr=False)
    """The service whose tokenizer and grammar engine made the prompt and the grammar (a plan made
    by another one is made again from its analysis)."""
    ended: float = 0.0
    """``time.perf_counter()`` when the plan's last part ended."""

    @property
    def snapshot(self) -> Snapshot:
        return self.analysis.snapshot

    @property
    def hole(self) -> Hole | NoHole:
        return self.analysis.hole

    @property
    def ready(self) -> bool:
        """Whether a decode can start from it (a hole, a prompt)."""
        return self.prompt is not None and self.reason is None


def partial_plan(analysis: Analysis, settings: Settings) -> Plan:
    """A plan as far as it goes without a model (none loaded yet): the analysis; the decode makes
    the prompt and the grammar from it."""
    hole = analysis.hole
    return Plan(analysis, settings, reason=hole.reason if isinstance(hole, NoHole) else None,
                timings={"analysis": analysis.seconds}, ended=time.perf_counter())
