"""The batched step's CUDA graphs are kept in a bounded cache.

One graph is captured per set of slots that step together, and each holds buffers of
its own on the GPU: with 16 slots there are 65,519 such sets, and the graphs were
kept in a plain dict for as long as the pool lived. The cache's logic runs here
without a GPU: the capture is replaced by one that records what it was asked for,
and the models are stand-ins that say they use graphs (the capture itself is
tested on a GPU in tests/perf, marker ``gpu``).
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import torch

from gdg_lsp.backends.lean import cuda_graphs
from gdg_lsp.backends.lean.cuda_graphs import MAX_BATCHED_GRAPHS, BatchedGraphs


class _Graph:
    def __init__(self) -> None:
        self.replays = 0

    def replay(self) -> None:
        self.replays += 1


def _slot(capacity: int = 64) -> SimpleNamespace:
    return SimpleNamespace(use_graph=True, w=SimpleNamespace(device="cpu"), cache=SimpleNamespace(capacity=capacity))


def test_graphs_for_many_sets_of_slots_stay_within_the_cap(monkeypatch):
    captured: list[tuple[int, ...]] = []

    def capture(self, models, capacities, token_ids, at):
        captured.append(tuple(id(m) for m in models))
        return capacities, token_ids.clone(), at.clone(), _Graph(), torch.zeros(len(models), 4)

    monkeypatch.setattr(BatchedGraphs, "_capture", capture)
    graphs = BatchedGraphs()
    slots = [_slot() for _ in range(16)]
    sets = [combo for size in (2, 3) for combo in itertools.combinations(slots, size)]
    assert len(sets) > 4 * MAX_BATCHED_GRAPHS
    for models in sets:
        rows = graphs.step(models, [1] * len(models), [0] * len(models))
        assert len(rows) == len(models)
    assert len(graphs._graphs) == MAX_BATCHED_GRAPHS and len(captured) == len(sets)
    # the sets used last are kept and replayed, not captured again
    for models in sets[-MAX_BATCHED_GRAPHS:]:
        graphs.step(models, [2] * len(models), [1] * len(models))
    assert len(captured) == len(sets)
    # one used long ago was let go: it is captured again when it comes back
    graphs.step(sets[0], [3, 3], [2, 2])
    assert len(captured) == len(sets) + 1 and len(graphs._graphs) == MAX_BATCHED_GRAPHS
    assert graphs._graphs.stats.name == "lean.batched-graphs" and graphs._graphs.stats.evictions > 0


def test_a_grown_cache_is_captured_again_in_place(monkeypatch):
    captured = []
    monkeypatch.setattr(BatchedGraphs, "_capture", lambda self, models, capacities, token_ids, at: captured.append(
        capacities) or (capacities, token_ids.clone(), at.clone(), _Graph(), torch.zeros(len(models), 4)))
    graphs = BatchedGraphs()
    a, b = _slot(), _slot()
    graphs.step([a, b], [1, 1], [0, 0])
    b.cache.capacity = 128  # the cache grew (reallocated): the old graph holds stale addresses
    graphs.step([a, b], [1, 1], [1, 1])
    assert captured == [(64, 64), (64, 128)] and len(graphs._graphs) == 1
    assert cuda_graphs.MAX_BATCHED_GRAPHS >= 11  # the default 4 slots' sets all fit
