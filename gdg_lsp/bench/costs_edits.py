"""Cost cases of document edits: a huge document typed into, a neighbour's hover meanwhile.

A workspace (or a client) picks how large a document is. The server keeps every
edit of it in step on the event loop, so one edit must not cost the size of the
document there (docs/RELIABILITY.md, "Bounded costs"): the case ``edits`` opens a
48 M-character document, types into it at sixteen places as fast as the server
takes edits, and times each edit on the loop and hovers in another document
meanwhile; the server's text must then equal what the client typed (sha256). The
case ``include`` times the same hover while another document's 1 MiB P4 include
is analysed (``stress.neighbour``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp.bench.costs import Figure, case
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import NEIGHBOUR_HOVER, NEIGHBOUR_PY, NO_MODEL, _timed, neighbour
from gdg_lsp.latency import percentile

HOVER_TARGET_MS = 100.0
EDIT_TARGET_MS = 5.0
"""An edit's CPU time on the event loop, p95: well inside one frame of typing."""

LINE = "value_{n} = compute(value_{m}, 'text with é and 😀')\n"
"""The huge document's lines (é and 😀 make UTF-16 columns differ from code points, and
make the text four bytes a character in memory)."""

TYPED = ["x", " ", "=", " ", "é", "😀", "(", "1", ")", "\b", "\n", "y", "\r\n", "\b", "z"]
"""What each cursor types, in turn: ``\\b`` deletes the character typed last."""


@dataclass
class Cursor:
    """A place typed into: the start of one line of the document as opened."""

    line: int
    offset: int
    typed: list[str] = field(default_factory=list)

    def position(self, lines_above: int, typed: list[str]) -> dict[str, int]:
        """Where the cursor is after ``typed`` (UTF-16 units), with ``lines_above`` lines added
        above it by the cursors before it."""
        text = "".join(typed)
        tail = text[max(text.rfind("\n"), text.rfind("\r")) + 1 :]
        breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
        return {"line": self.line + lines_above + breaks,
                "character": len(tail.encode("utf-16-le")) // 2}


def huge_document(chars: int) -> tuple[str, list[int]]:
    """About ``chars`` characters of ``LINE``, and the offset of each line's start."""
    parts, starts, size, n = [], [], 0, 0
    while size < chars:
        piece = LINE.format(n=n, m=max(0, n - 1))
        parts.append(piece)
        starts.append(size)
        size += len(piece)
        n += 1
    return "".join(parts), starts


def edit_flood(cursors: list[Cursor], count: int):
    """``count`` didChange content changes typing into ``cursors`` in turn (a generator: each
    is made when the flood sends it, from the cursors' state)."""
    for n in range(count):
        index = n % len(cursors)
        cursor = cursors[index]
        key = TYPED[(n // len(cursors)) % len(TYPED)]
        above = sum(sum(k.count("\n") + k.count("\r") - k.count("\r\n") for k in c.typed) for c in cursors[:index])
        at = cursor.position(above, cursor.typed)
        if key == "\b" and cursor.typed:
            cursor.typed.pop()
            yield {"range": {"start": cursor.position(above, cursor.typed), "end": at}, "text": ""}
        else:
            key = "q" if key == "\b" else key
            cursor.typed.append(key)
            yield {"range": {"start": at, "end": at}, "text": key}


def typed_text(original: str, cursors: list[Cursor]) -> str:
    """The client's text: ``original`` with what each cursor typed at its line's start."""
    pieces, last = [], 0
    for cursor in cursors:
        pieces += [original[last : cursor.offset], "".join(cursor.typed)]
        last = cursor.offset
    return "".join(pieces) + original[last:]


@dataclass
class FloodFigures:
    chars: int = 0
    edits: int = 0
    seconds: float = 0.0
    edit_ms: list[float] = field(default_factory=list)
    """Each edit's time on the event loop, as the clock on the wall runs."""
    edit_cpu_ms: list[float] = field(default_factory=list)
    """Each edit's CPU time on the loop's thread: what the edit costs, without the time the
    loop waited for a core (a shared machine) or for the interpreter (an analysis thread)."""
    hover_ms: list[float] = field(default_factory=list)
    text_matches: bool = False


async def flood_while_hovering(chars: int, max_edits: int, seconds: float, places: int = 16) -> FloodFigures:
    """Open a document of ``chars`` characters beside a small Python one, send it up to
    ``max_edits`` edits (for at most ``seconds``) while the Python one is hovered, and check
    the server's text of it against the client's."""
    text, starts = huge_document(chars)
    figures = FloodFigures(chars=len(text))
    step = len(starts) // (places + 1)
    cursors = [Cursor(line * step, starts[line * step]) for line in range(1, places + 1)]
    uri_a, uri_b = "file:///costs/a.py", "file:///costs/huge.py"
    async with InProcessServer(initialization_options={**NO_MODEL, "diagnostics": False}) as server:
        server.open(uri_a, NEIGHBOUR_PY)
        server.open(uri_b, text)
        hover = {"textDocument": {"uri": uri_a}, "position": NEIGHBOUR_HOVER}
        await _timed(server, "textDocument/hover", hover)  # a.py analysed once before the clock runs
        await server.quiet()  # and the plan made at its open (its Γ cold): the flood's cost is the figure
        flooding = True

        async def hovers() -> None:
            while flooding:
                figures.hover_ms.append(await _timed(server, "textDocument/hover", hover))
                await asyncio.sleep(0.02)

        hovering = asyncio.create_task(hovers())
        began = time.perf_counter()
        for version, change in enumerate(edit_flood(cursors, max_edits), 2):
            sent, cpu = time.perf_counter(), time.thread_time()
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri_b, "version": version},
                                                     "contentChanges": [change]})
            figures.edit_cpu_ms.append((time.thread_time() - cpu) * 1000)
            figures.edit_ms.append((time.perf_counter() - sent) * 1000)
            figures.edits += 1
            await asyncio.sleep(0)  # the next message, as the transport would read it
            if sent - began > seconds:
                break
        figures.seconds = time.perf_counter() - began
        flooding = False
        await hovering
        held = server.text(uri_b)
        expected = typed_text(text, cursors)
        figures.text_matches = hashlib.sha256(held.encode("utf-8")).digest() == \
            hashlib.sha256(expected.encode("utf-8")).digest()
    return figures


@case("edits")
def edits(scratch: Path, quick: bool) -> list[Figure]:
    chars = 4_000_000 if quick else 48_000_000
    found = asyncio.run(flood_while_hovering(chars, 400 if quick else 5000, 5.0 if quick else 30.0))
    size = f"{found.chars / 1e6:.0f} M-char document"
    return [
        Figure("edits", f"edits applied to a {size} (in {found.seconds:.1f} s)", found.edits, ""),
        Figure("edits", f"event-loop time per edit of a {size}, p50", percentile(found.edit_ms, 0.5), "ms"),
        Figure("edits", f"event-loop time per edit of a {size}, p95", percentile(found.edit_ms, 0.95), "ms"),
        Figure("edits", "  the same, CPU time of the loop's thread, p95", percentile(found.edit_cpu_ms, 0.95), "ms",
               EDIT_TARGET_MS),
        Figure("edits", f"hover p95 in a.py during the flood ({len(found.hover_ms)} hovers)",
               percentile(found.hover_ms, 0.95), "ms", HOVER_TARGET_MS),
        Figure("edits", "server's text differs from the client's after it (sha256)", 0 if found.text_matches else 1,
               "", 0),
        Figure("edits", "load average of the machine (1 min), for reading the times", os.getloadavg()[0], ""),
    ]


@case("include")
def include(scratch: Path, quick: bool) -> list[Figure]:
    # the include limit is 1 MiB; the declarations written run a line past what is asked
    near = asyncio.run(neighbour(include_kib=128 if quick else 1023))
    return [
        Figure("include", f"analysis of b.p4 with its {near.include_kib} KiB include", near.analysis_seconds, "s"),
        Figure("include", f"hover p95 in a.py meanwhile ({near.hovers_during} hovers)", near.hover_during_p95_ms,
               "ms", HOVER_TARGET_MS),
        Figure("include", "hover p95 in a.py, idle", near.hover_idle_p95_ms, "ms"),
    ]
