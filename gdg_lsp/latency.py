"""Percentiles of observed latencies, one definition for the benchmarks and ``gdg/status``."""

from __future__ import annotations

from collections.abc import Iterable


def percentile(values: Iterable[float], q: float, empty: float = 0.0) -> float:
    """The observed value at quantile ``q`` (nearest rank; never an interpolation
    between two observations), or ``empty`` when there are none. ``q`` is a fraction: a
    percent (``50``) would silently answer the maximum, so it is refused."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"percentile: q is a fraction between 0 and 1, got {q!r}")
    ordered = sorted(values)
    if not ordered:
        return empty
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary_ms(seconds: Iterable[float], digits: int = 1) -> dict[str, float | int | None]:
    """``{"n", "p50", "p95", "max"}`` of durations given in seconds, in milliseconds."""
    values = list(seconds)
    if not values:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {"n": len(values), "p50": round(percentile(values, 0.5) * 1000, digits),
            "p95": round(percentile(values, 0.95) * 1000, digits), "max": round(max(values) * 1000, digits)}
