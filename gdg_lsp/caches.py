"""One bounded cache type for everything the server keeps between requests.

Analyses, parse results, compiled grammars: each is kept in a ``BoundedCache``
with a name, an entry limit and optionally a weight limit (bytes), least
recently used first out. Every cache counts hits, misses and evictions, and
registers itself so that ``gdg-lsp bench perf`` and ``gdg/status`` can show
them all (``all_stats``). Thread-safe: the event loop and the decode worker
share them.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class CacheStats:
    name: str
    max_entries: int
    max_weight: int | None = None
    entries: int = 0
    weight: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0

    def payload(self) -> dict[str, int | str | None]:
        return {"name": self.name, "entries": self.entries, "maxEntries": self.max_entries, "weight": self.weight,
                "maxWeight": self.max_weight, "hits": self.hits, "misses": self.misses, "evictions": self.evictions}


_REGISTRY: weakref.WeakSet[BoundedCache] = weakref.WeakSet()


class BoundedCache(Generic[K, V]):
    """A least-recently-used map holding at most ``max_entries`` entries and, when
    ``weigh`` is given, at most ``max_weight`` of their total weight (the newest
    entry always stays, however heavy)."""

    def __init__(self, name: str, max_entries: int, *, max_weight: int | None = None,
                 weigh: Callable[[V], int] | None = None) -> None:
        if max_entries < 1:
            raise ValueError("a cache holds at least one entry")
        if (max_weight is None) != (weigh is None):
            raise ValueError("max_weight and weigh go together")
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self._weigh = weigh
        self._lock = threading.Lock()
        self.stats = CacheStats(name, max_entries, max_weight)
        _REGISTRY.add(self)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                self.stats.misses += 1
                return None
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return value

    def put(self, key: K, value: V) -> V:
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            if key in self._entries:
                self.stats.weight -= self._weights.pop(key, 0)
            self._entries[key] = value
            self._entries.move_to_end(key)
            if weight:
                self._weights[key] = weight
                self.stats.weight += weight
            self._evict()
            self.stats.entries = len(self._entries)
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value, or ``make()``'s, kept. ``make`` runs outside the lock: two
        threads missing at once may both make it (the last one is kept)."""
        hit = self.get(key)
        return hit if hit is not None else self.put(key, make())

    def pop(self, key: K) -> V | None:
        with self._lock:
            value = self._entries.pop(key, None)
            self.stats.weight -= self._weights.pop(key, 0)
            self.stats.entries = len(self._entries)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weights.clear()
            self.stats.entries = self.stats.weight = 0

    def _evict(self) -> None:
        limit = self.stats.max_weight
        while len(self._entries) > self.stats.max_entries or (
                limit is not None and self.stats.weight > limit and len(self._entries) > 1):
            old, _ = self._entries.popitem(last=False)
            self.stats.weight -= self._weights.pop(old, 0)
            self.stats.evictions += 1

    @property
    def limit(self) -> int:
        return self.stats.max_entries

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def values(self) -> Iterator[V]:
        with self._lock:
            return iter(list(self._entries.values()))


def all_stats() -> list[CacheStats]:
    """Every live cache's counters, by name (several instances of one name are listed apart)."""
    return sorted((cache.stats for cache in list(_REGISTRY)), key=lambda s: s.name)
