"""Snippets of recently edited open documents, for the prompt (a ring, as llama.vscode keeps).

What the user just edited in another file is often what the cursor's code uses next (a
helper written a minute ago, the caller being changed). The server notes each edit
(``note``: the lines around the edit, one chunk per document, most recent last, at most
``RING_SIZE`` documents); a prompt in one document shows the chunks of the *other*
documents of the same language, most recent first, whole chunks while they fit in their
share of ``gdg.contextTokens``, before the document's own text.

The chunks come from edits of other documents only, so they do not change while the user
types in this one: the prompt's start stays the same and the model's KV cache is reused.
A chunk is cut when the edit is noted (a slice of the lines around it: a keystroke costs
no more) and kept per document version. Under ``gdg.definitions`` (context from elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gdg_lsp.caches import BoundedCache

RING_SIZE = 8
"""Documents whose latest edit is kept."""

CHUNK_LINES = 16
"""Lines of a chunk: half before the edited line, half after it."""

SHARE = 0.125
"""Share of ``gdg.contextTokens`` (about 3 characters a token) the chunks may take."""


@dataclass(frozen=True)
class Chunk:
    uri: str
    language: str
    version: int
    text: str


class RecentEdits:
    def __init__(self, size: int = RING_SIZE) -> None:
        self._chunks: BoundedCache[str, Chunk] = BoundedCache("recent edits", size)

    def note(self, document: Any, line: int) -> None:
        """``document`` (a ``documents.Document``) was edited at 0-based ``line``: keep the lines
        around it as its chunk (replacing its earlier one, now the most recent)."""
        count = document.line_count
        line = max(0, min(line, count - 1))
        first = max(0, min(line - CHUNK_LINES // 2, count - CHUNK_LINES))  # a whole chunk at the file's end too
        last = min(count, first + CHUNK_LINES)
        start = document.line_start(first)
        end = document.line_start(last) if last < count else document.length
        text = document.slice(start, end).strip("\n")
        if text.strip():
            self._chunks.put(document.uri, Chunk(document.uri, document.language_id, document.version, text))

    def forget(self, uri: str) -> None:
        self._chunks.pop(uri)

    def chunks(self, uri: str, language: str, max_chars: int) -> list[Chunk]:
        """The chunks of the other documents of ``language``, most recent first, whole chunks
        while they fit in ``max_chars`` (each counted with two characters of separation)."""
        out: list[Chunk] = []
        size = 0
        for chunk in reversed(list(self._chunks.values())):
            if chunk.uri == uri or chunk.language != language:
                continue
            if size + len(chunk.text) + 2 > max_chars:
                break
            out.append(chunk)
            size += len(chunk.text) + 2
        return out

    def context(self, uri: str, language: str, max_chars: int) -> str:
        """``chunks`` as one text: blank-line separated, ending with a line break (a prompt
        whose model has no repository tokens to lay them out as files)."""
        out = [chunk.text for chunk in self.chunks(uri, language, max_chars)]
        return "\n\n".join(out) + "\n\n" if out else ""
