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
print(json.dumps({"unsettled": unsettled, "settled": settled,
                  "kept_tracked": any(o is kept for o in gc.get_objects())}))
"""


def test_a_server_process_settles_its_heap_after_a_load_and_reports_pauses():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["unsettled"]["frozenObjects"] == 0
    assert found["settled"]["frozenObjects"] >= 50_000
    assert not found["kept_tracked"]  # frozen: later collections do not walk it
    assert found["settled"]["collections"][2] >= 1  # the collection before the freeze
    assert found["settled"]["longestPauseMs"][2] > 0  # and its pause was seen
