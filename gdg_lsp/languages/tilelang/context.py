"""Buffer declarations for the prompt: what the buffers used near the cursor are.

A kernel's buffers are declared at its top (parameters annotated ``T.Tensor((M, K),
dtype)``, ``T.alloc_shared(...)``/``T.alloc_fragment(...)`` lines) and used many lines
below, where the prompt window may no longer reach their declarations. For each buffer
of Γ named on the lines around the hole whose declaration lies more than ``NEAR_LINES``
lines above the hole, the declaration's own line is shown (as a comment block put before
the document's prefix), so the model sees shapes, dtypes and memory spaces.

The lines counted as "around the hole" leave out the hole's own lines, so the block
does not change while the user types in the hole (the prompt's start stays the same and
the model's KV cache is reused across keystrokes). Blocks are cached per document
version and hole start.
"""

from __future__ import annotations

from gdg_lsp.caches import BoundedCache
from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.python.definitions import names_near
from gdg_lsp.words import comment_text

NEAR_LINES = 30
"""A declaration within this many lines above the hole is in the prompt anyway (the names
"used near it" are read as for Python's definitions: ``python/definitions.names_near``)."""

HEADER = "# buffers declared above:\n"

_BLOCKS: BoundedCache[tuple[str, int, int, int], str] = BoundedCache("tilelang buffer context", 256)


def buffer_declarations(text: str, uri: str, version: int, gamma: Gamma, region_start: int, cursor: int,
                        max_chars: int) -> str:
    """The declaration lines of the buffers of ``gamma`` used around the hole and declared in
    this document more than ``NEAR_LINES`` lines above it, in declaration order, within
    ``max_chars`` (whole lines); ``""`` when there are none."""
    key = (uri, version, region_start, max_chars)
    cached = _BLOCKS.get(key)
    if cached is not None:
        return cached
    hole_line = text.count("\n", 0, region_start)
    used = names_near(text, region_start, cursor)
    lines = text.split("\n")
    chosen: dict[int, str] = {}
    for binding in gamma.bindings("Buffer"):
        origin = binding.origin
        if binding.name not in used or origin is None or origin.uri not in (None, uri):
            continue
        if not 0 <= origin.line < hole_line - NEAR_LINES:
            continue
        chosen[origin.line] = lines[origin.line].strip()
    block, size = [], len(HEADER)
    for line_no in sorted(chosen):
        entry = "# " + comment_text(chosen[line_no]) + "\n"  # one line, whatever separators the line holds
        if size + len(entry) > max_chars:
            break
        block.append(entry)
        size += len(entry)
    result = HEADER + "".join(block) if block else ""
    _BLOCKS.put(key, result)
    return result
