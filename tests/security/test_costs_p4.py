"""Attacks on what a P4 request costs: a document of 0.3 M characters whose one control
holds ~1,400 actions, and an included file swapped after its analysis.

Completion in such a document cost 6-28 s per keystroke (up to 67 s, ``gdg-lsp bench
costs --only p4-completion``): the control was parsed whole on every edit, and each
reference looked through every declaration of its scope. The file an include names
is read through the boundary when it is analysed, but the lines of its declarations
(for the origins of Γ's bindings) were read again later, whole and without any
check: a FIFO put there hung the analysis thread for good, a file grown to hundreds
of MB was read whole. Each attack goes through a live server in process. (The include is
checked against the disk at every request: after the swap it is refused, not read.)
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from gdg_lsp.bench.costs_workspace import PeakResident, p4_keystrokes
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.latency import percentile
from gdg_lsp.languages.p4.workspace import MAX_INCLUDE_BYTES

OPTIONS = {"model": "/nonexistent/gdg-test-model.gguf", "diagnostics": True}
INCLUDED = "header h_t { bit<8> f; }\nconst bit<8> SWAPPED_CONSTANT = 1;\n"
PROGRAM = '#include "defs.p4"\ncontrol C() {\n    apply {\n        bit<8> x = SWAPPED_CONSTANT;\n    }\n}\n'
HOVER = {"line": 3, "character": 22}  # on SWAPPED_CONSTANT


async def test_completion_in_a_large_p4_document_costs_a_bounded_time_per_key(tmp_path):
    enters, keys, size = await p4_keystrokes(tmp_path, 300_000, 6)
    assert size >= 300_000
    # generous (a shared machine, other tests' objects for the collector to walk): before,
    # the median key took 7-9 s and an Enter up to 13 s, each waiting for a whole parse
    assert percentile(keys, 0.5) < 500 and max(enters + keys) < 10_000, (enters, keys)


async def _hover_after_the_swap(root: Path, swap) -> tuple[dict | None, float]:
    """Open the program, let its diagnostics analyse the include, ``swap`` the included
    file, then hover on a name it declared: the answer (None when there is none within
    20 s) and the resident growth in MB meanwhile."""
    (root / "defs.p4").write_text(INCLUDED)
    uri = (root / "main.p4").as_uri()
    async with InProcessServer(initialization_options=OPTIONS, root_uri=root.as_uri()) as server:
        server.open(uri, PROGRAM, "p4")
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri, 60)
        swap(root / "defs.p4")
        with PeakResident() as memory:
            try:
                answer = await server.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                                     "position": HOVER}, timeout=20)
            except asyncio.TimeoutError:
                answer = None
        return answer, (memory.peak - memory.base) / 2**20


def _release(fifo: Path) -> None:
    """Open the FIFO for writing and close it: a reader blocked on it sees its end."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


async def test_an_include_swapped_for_a_fifo_is_not_opened_for_its_lines(tmp_path):
    def to_fifo(path: Path) -> None:
        path.unlink()
        os.mkfifo(path)

    try:
        answer, _ = await _hover_after_the_swap(tmp_path, to_fifo)
    finally:
        _release(tmp_path / "defs.p4")
    assert answer is not None, "the hover hung on the FIFO"
    # the include is checked against the disk at the request: the FIFO is refused, never opened,
    # and what the file declared is no longer offered (it is not there to be read)
    assert "error" not in answer and "SWAPPED_CONSTANT" not in str(answer["result"])


async def test_an_include_grown_past_the_limit_is_not_read_for_its_lines(tmp_path):
    def grow(path: Path) -> None:
        os.truncate(path, 40 * MAX_INCLUDE_BYTES)  # 40 MiB (sparse: written in no time)

    answer, grown_mb = await _hover_after_the_swap(tmp_path, grow)
    # past the bound the grown file is refused at the request, never read: its names go with it
    assert answer is not None and "error" not in answer and "SWAPPED_CONSTANT" not in str(answer["result"])
    assert grown_mb < 20, grown_mb  # reading it whole held 40 MiB of bytes and 40 M characters
