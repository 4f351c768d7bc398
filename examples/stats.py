"""A small module to try gdg-lsp on: `gdg-lsp complete examples/stats.py --line 22`."""

import math
from collections import Counter


def mean(values):
    return sum(values) / len(values)


def variance(values):
    centre = mean(values)
    return sum((v - centre) ** 2 for v in values) / len(values)


def summary(samples, digits=2):
    """Mean, standard deviation and the most common value of ``samples``."""
    if not samples:
        raise ValueError("summary() needs at least one sample")
    average = mean(samples)
    spread = math.sqrt(variance(samples))
    
    return {"mean": round(average, digits), "stdev": round(spread, digits), "mode": common}
