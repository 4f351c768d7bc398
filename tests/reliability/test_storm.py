"""Cancellation storm: 500 inline requests at 60/s while the document is typed into (with a
pause every 20 keys until a decode runs).

The model spends 15 ms per forward pass outside the interpreter and returns
random logits (``SlowRandomBackend``), so decodes overlap the requests on any
machine, and the whole run takes about half a minute on two busy cores.

The storm runs in a process of its own (``gdg-lsp bench stress --only storm``), as a server
does: in the test process its server shared the session's heap (3.6 GB by the time the
reliability tests ran in CI, every earlier test's models and fixtures) and its threads, and on
CI's machine no decode started within a pause (0 and 8 decodes in two runs) while the same
storm alone ran 138; what it measures is the server, not what the test session holds.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gdg_lsp.bench.stress import STORM_MAX_TOKENS, StormFigures


STEP_MS = 15.0


def run_storm() -> StormFigures:
    done = subprocess.run([sys.executable, "-m", "gdg_lsp", "bench", "stress", "--only", "storm", "--json",
                           "--requests", "500", "--rate", "60", "--step-ms", str(STEP_MS)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return StormFigures(**json.loads(done.stdout)["storm"])


@pytest.mark.stress
def test_cancellation_storm():
    figures = run_storm()
    assert figures.rate_per_second >= 50, figures
    assert figures.inline_answered == figures.inline_requests == 500, figures
    # the storm really superseded running decodes, and each stopped at its next check (the user
    # pauses every PAUSE_EVERY keys until a decode runs: without, on a CPU where a plan takes
    # longer than a key's 17 ms, as few as 3 decodes started in a storm)
    assert figures.cancelled_while_running >= 20, figures
    assert figures.max_concurrent_decodes == 1, figures
    assert figures.max_tokens_after_cancel <= 1, figures
    assert figures.hovers >= 150 and figures.completions >= 150, figures
    # hover and completion never wait behind a decode (24 tokens at 15 ms: 360 ms): their p95 stays
    # far below one. A wall-clock bound of 50 ms was the machine's, not the property's: on an
    # AVX2-only 2-core machine the p95 is 30-58 ms at its p50 of 6 ms
    decode_ms = STORM_MAX_TOKENS * STEP_MS
    assert figures.hover_p95_ms < decode_ms / 4, figures
    assert figures.completion_p95_ms < decode_ms / 4, figures
    assert figures.rss_after_mb - figures.rss_before_mb < 64, figures  # flat: no per-request growth
