import threading

import pytest

from gdg_lsp.caches import BoundedCache, all_stats
from gdg_lsp.latency import percentile, summary_ms


def test_least_recently_used_entry_goes_first_and_is_counted():
    cache: BoundedCache[str, int] = BoundedCache("test.lru", 2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the oldest
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.get("b") is None
    assert (cache.stats.hits, cache.stats.misses, cache.stats.evictions, cache.stats.entries) == (3, 1, 1, 2)
    assert cache.limit == 2


def test_weight_bound_keeps_the_newest_entry_however_heavy():
    cache: BoundedCache[str, bytes] = BoundedCache("test.weight", 100, max_weight=10, weigh=len)
    cache.put("a", b"12345")
    cache.put("b", b"12345")
    assert cache.stats.weight == 10 and len(cache) == 2
    cache.put("c", b"1")
    assert "a" not in cache and cache.stats.weight == 6
    cache.put("huge", b"x" * 50)
    assert list(cache.values()) == [b"x" * 50] and cache.stats.weight == 50
    cache.put("huge", b"y")  # replacing an entry replaces its weight
    assert cache.stats.weight == 1
    assert cache.pop("huge") == b"y" and cache.stats.weight == 0 and len(cache) == 0


def test_get_or_make_makes_once_per_miss_and_limits_must_be_sane():
    cache: BoundedCache[int, list] = BoundedCache("test.make", 4)
    made = []
    first = cache.get_or_make(1, lambda: made.append(1) or ["v"])
    assert cache.get_or_make(1, lambda: made.append(2) or ["w"]) is first and made == [1]
    with pytest.raises(ValueError):
        BoundedCache("test.bad", 0)
    with pytest.raises(ValueError):
        BoundedCache("test.bad", 1, max_weight=3)


def test_concurrent_use_keeps_the_bound():
    cache: BoundedCache[int, int] = BoundedCache("test.threads", 8)

    def work(base: int) -> None:
        for i in range(2000):
            cache.put(base + i % 50, i)
            cache.get(base + (i * 7) % 50)

    threads = [threading.Thread(target=work, args=(n * 1000,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 8 and cache.stats.entries == 8
    assert cache.stats.hits + cache.stats.misses == 8000


def test_every_cache_is_listed_by_name():
    cache = BoundedCache("test.listed", 1)
    assert any(s is cache.stats for s in all_stats())
    assert cache.stats.payload()["name"] == "test.listed"


def test_latency_summary_in_milliseconds():
    assert summary_ms([]) == {"n": 0, "p50": None, "p95": None, "max": None}
    assert summary_ms([0.001, 0.002, 0.010]) == {"n": 3, "p50": 2.0, "p95": 10.0, "max": 10.0}
    assert percentile([], 0.5, empty=float("inf")) == float("inf")
