"""Cancellation storm: 500 inline requests at 60/s while the document is typed into.

The model spends 15 ms per forward pass outside the interpreter and returns
random logits (``SlowRandomBackend``), so decodes overlap the requests on any
machine, and the whole run takes about ten seconds on two busy cores.
"""

from __future__ import annotations

import asyncio

import pytest

from gdg_lsp.bench.stress import storm
from tests.reliability.conftest import quiet_logs


@pytest.mark.stress
def test_cancellation_storm():
    with quiet_logs():
        figures = asyncio.run(storm(requests=500, rate=60.0, step_ms=15.0))
    assert figures.rate_per_second >= 50
    assert figures.inline_answered == figures.inline_requests == 500
    # the storm really superseded running decodes, and each stopped at its next check
    assert figures.cancelled_while_running >= 20
    assert figures.max_concurrent_decodes == 1
    assert figures.max_tokens_after_cancel <= 1
    assert figures.hovers >= 150 and figures.completions >= 150
    assert figures.hover_p95_ms < 50, figures
    assert figures.completion_p95_ms < 50, figures
    assert figures.rss_after_mb - figures.rss_before_mb < 64, figures  # flat: no per-request growth
