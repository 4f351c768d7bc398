"""Drafts looked up in the context: what came after the last few tokens the previous
time they occurred.

Code repeats itself (``self.assertEqual(`` after ``self.assert``, a parameter list
copied into a call, a name typed again), so the tokens that followed the most
recent earlier occurrence of the last n tokens are a good guess of what comes
next. The decoder runs the model once over such a guess and keeps the logits of
every position it then actually chooses (``engine.Decoder``): a guess never
decides a token, it only saves the steps it got right.
"""

from __future__ import annotations

from collections.abc import Sequence

NGRAMS = (3, 2)
"""Suffix lengths tried, longest first: one token alone matches too often to predict."""


def propose(context: Sequence[int], limit: int, ngrams: Sequence[int] = NGRAMS) -> list[int]:
    """Up to ``limit`` tokens that followed the latest earlier occurrence of the
    context's last n tokens (the longest n in ``ngrams`` that occurs), or []."""
    size = len(context)
    if limit <= 0:
        return []
    for n in ngrams:
        if size <= n:
            continue
        suffix = list(context[size - n :])
        first = suffix[0]
        # latest occurrence first: the nearest code is the most alike
        for start in range(size - n - 1, -1, -1):
            if context[start] == first and list(context[start : start + n]) == suffix:
                follow = list(context[start + n : start + n + limit])
                if follow:
                    return follow
    return []
