"""What a model backend is: the one interface the decoder drives.

A backend produces next-token logits for a prompt and for each token after
it, keeping the sequence's KV cache between calls (a request whose prompt
shares a prefix with the previous one runs only the tokens after it). It is
used by one thread at a time. Implementations: the lean decoder
(``backends/lean``: ``FastLlamaBackend``, and ``SlotBackend``, one sequence slot
of a batching ``SlotPool``), transformers (``transformers_backend.TorchBackend``);
a remote engine decodes whole regions instead (``backends/remote`` with
``decoding/remote``).

``ModelBackend`` is what every backend must have. ``DraftingBackend`` adds an
optional capability the decoder uses: checking a draft of several tokens in
one forward (``extend``) and dropping the refused part (``truncate``);
``CancellablePrefill`` another: a prefill that stops between chunks when its
request is cancelled (``prefill``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch

from gdg_lsp.vocab import Vocabulary


@dataclass
class BackendStats:
    prefill_tokens: int = 0
    reused_tokens: int = 0
    steps: int = 0
    model_seconds: float = 0.0


@runtime_checkable
class ModelBackend(Protocol):
    name: str
    vocab: Vocabulary

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        """Logits (1-D, float32, on CPU) for the token after ``ids`` (reusing the common prefix)."""

    def step(self, token_id: int) -> torch.Tensor:
        """Append one token; logits for the next."""


@runtime_checkable
class DraftingBackend(ModelBackend, Protocol):
    extends_exactly: bool
    """True when ``extend``'s rows equal what single steps give (to float rounding)."""

    def extend(self, ids: Sequence[int]) -> torch.Tensor:
        """Append ``ids`` in one forward; row i holds the logits after ``ids[: i + 1]``."""

    def truncate(self, length: int) -> None:
        """Forget every token after the first ``length``."""


class PrefillCancelled(Exception):
    """A prefill stopped between two chunks because its request was cancelled. The cache keeps
    the chunks that ran (a newer request for the same document reuses them)."""


@runtime_checkable
class CancellablePrefill(ModelBackend, Protocol):
    """A backend whose long prefill can stop between chunks (the lean engines)."""

    def prefill_until(self, ids: Sequence[int], cancel) -> torch.Tensor:
        """``prefill``, checking ``cancel`` (a threading.Event) between chunks; raises
        ``PrefillCancelled`` when it was set."""


def prefill(backend: ModelBackend, ids: Sequence[int], cancel=None) -> torch.Tensor:
    """``backend.prefill(ids)``, stopped between chunks when ``cancel`` is set and the backend can."""
    if cancel is not None and isinstance(backend, CancellablePrefill):
        return backend.prefill_until(ids, cancel)
    return backend.prefill(ids)


def stats_of(backend: object) -> BackendStats:
    """The backend's counters; a backend without any (a test double) counts nothing."""
    stats = getattr(backend, "stats", None)
    return stats if isinstance(stats, BackendStats) else BackendStats()


def drafts_exactly(backend: object) -> bool:
    """True when the decoder may check drafts through ``extend`` (same tokens as stepping)."""
    return isinstance(backend, DraftingBackend) and bool(backend.extends_exactly)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
