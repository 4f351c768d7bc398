"""One bounded cache type for everything the server keeps between requests.

Analyses, parse results, compiled grammars: each is kept in a ``BoundedCache``
with a name, an entry limit and optionally a weight limit (bytes), least
recently used first out. Every cache counts hits, misses and evictions, and
registers itself so that ``gdg-lsp bench perf`` and ``gdg/status`` can show
them all (``all_stats``), and so that a workspace folder removed leaves nothing
read from it in any of them (``forget_paths``). Thread-safe: the event loop and the decode worker
share them.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from urllib.parse import unquote, urlsplit
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

    def drop_where(self, predicate: Callable[[K], bool]) -> int:
        """Drop the entries whose key ``predicate`` holds for; how many were dropped."""
        with self._lock:
            gone = [key for key in self._entries if predicate(key)]
            for key in gone:
                del self._entries[key]
                self.stats.weight -= self._weights.pop(key, 0)
            self.stats.entries = len(self._entries)
        return len(gone)

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


def forget_paths(folders: Iterable[str | os.PathLike[str]]) -> int:
    """Drop from every cache the entries whose key names a path (or a ``file:`` URI) inside one of
    ``folders``, as written or with its links resolved: a workspace folder removed leaves nothing
    read from it to be served again. A key that also names other folders goes too (a cache may
    always forget). How many entries were dropped."""
    spelled = {os.path.abspath(os.fspath(folder)) for folder in folders}
    inside = tuple(spelled | {os.path.realpath(folder) for folder in spelled})
    if not inside:
        return 0

    def names(value: object, depth: int = 0) -> bool:
        if isinstance(value, (str, os.PathLike)):
            text = os.fspath(value)
            if isinstance(text, str) and text.startswith("file://"):
                text = unquote(urlsplit(text).path)
            return isinstance(text, str) and any(text == f or text.startswith(f.rstrip(os.sep) + os.sep)
                                                 for f in inside)
        if isinstance(value, (tuple, list, frozenset, set)) and depth < 4:
            return any(names(item, depth + 1) for item in value)
        return False

    return sum(cache.drop_where(names) for cache in list(_REGISTRY))


def all_stats() -> list[CacheStats]:
    """Every live cache's counters, by name (several instances of one name are listed apart)."""
    return sorted((cache.stats for cache in list(_REGISTRY)), key=lambda s: s.name)
