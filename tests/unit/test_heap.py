"""The server's heap (gdg_lsp/heap.py): settled only in a process that is a server of its own,
and the collector's pauses counted. Run in a fresh interpreter: freezing the test process's
heap would keep whatever is alive now out of the collector's reach for the rest of the run."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import gc, json
from gdg_lsp import heap

heap.watch()
kept = [[i] for i in range(50_000)]  # alive at the load, like a model's objects
heap.after_load()  # a process that is no server of its own: nothing is frozen
unsettled = heap.payload()
heap.settle_after_loads()
heap.after_load()
settled = heap.payload()
kept_tracked = any(o is kept for o in gc.get_objects())
grown = [[i] for i in range(50_000)]  # what serving allocates
gc.collect()  # a full collection while serving walks that, not the frozen heap
print(json.dumps({"unsettled": unsettled, "settled": settled, "later": heap.payload(),
                  "kept_tracked": kept_tracked}))
"""


def test_a_server_process_settles_its_heap_after_a_load_and_reports_pauses():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["unsettled"]["frozenObjects"] == 0
    assert found["settled"]["frozenObjects"] >= 50_000
    assert not found["kept_tracked"]  # frozen: later collections do not walk it
    # counted from the load on: the full collection before the freeze belongs to the load
    assert found["unsettled"]["longestPauseMs"] == [0.0, 0.0, 0.0] == found["settled"]["longestPauseMs"]
    assert found["settled"]["collections"] == [0, 0, 0]
    assert found["later"]["collections"][2] == 1 and found["later"]["longestPauseMs"][2] > 0
