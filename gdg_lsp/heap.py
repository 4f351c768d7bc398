"""The server process's heap: settled after a model load, and its collector's pauses counted.

A loaded model brings torch, transformers and the grammar engines: some 330,000 objects that
live as long as the process. CPython runs a full collection whenever enough new objects have
outlived two younger collections, on whichever thread is allocating, and a full collection
walks every tracked object: about 125 ms over that heap on a 2-core machine, a pause that
lands in a typed-through answer or a hover. ``settle`` collects once and freezes what is
alive (``gc.freeze``): frozen objects are skipped by later collections and still freed by
reference counting; only reference cycles among them would stay.

Only a process that is a server of its own settles its heap (``gdg-lsp --stdio`` / ``--tcp``
call ``settle_after_loads``): in a process that runs other work too (tests, benchmarks that
create servers in process), whatever was alive at a load would be frozen with it.

``payload`` is what ``gdg/status`` reports: the frozen objects, and per generation the
collections and the longest pause since the last model load.
"""

from __future__ import annotations

import gc
import threading
import time

_settle_after_loads = False
_lock = threading.Lock()
_began: float | None = None
_longest_ms = [0.0, 0.0, 0.0]
_collections_at_load = [0, 0, 0]
_watching = False


def settle_after_loads() -> None:
    """This process is a server of its own: ``after_load`` settles the heap from now on."""
    global _settle_after_loads
    _settle_after_loads = True


def after_load() -> None:
    """A model was loaded: settle the heap if this process is a server of its own, and count
    the collector's work from here (the load's own collections say nothing about serving)."""
    if _settle_after_loads:
        settle()
    with _lock:
        _longest_ms[:] = [0.0, 0.0, 0.0]
        _collections_at_load[:] = [generation["collections"] for generation in gc.get_stats()]


def settle() -> None:
    """Collect once, then freeze every object alive now out of the collector's reach."""
    gc.collect()
    gc.freeze()


def watch() -> None:
    """Count the collector's pauses from now on (once per process)."""
    global _watching
    with _lock:
        if not _watching:
            gc.callbacks.append(_on_collection)
            _watching = True


def _on_collection(phase: str, info: dict) -> None:
    global _began
    if phase == "start":
        _began = time.perf_counter()
    elif _began is not None:
        paused = (time.perf_counter() - _began) * 1000
        generation = info.get("generation", 2)
        if paused > _longest_ms[generation]:
            _longest_ms[generation] = paused
        _began = None


def payload() -> dict:
    """The heap as ``gdg/status`` reports it: the collections per generation and the longest
    pause of each since the last model load (since the process began before any load)."""
    with _lock:
        return {"frozenObjects": gc.get_freeze_count(),
                "collections": [generation["collections"] - at_load
                                for generation, at_load in zip(gc.get_stats(), _collections_at_load)],
                "longestPauseMs": [round(ms, 2) for ms in _longest_ms] if _watching else None}
