"""Open documents: text, version, incremental edits, position encodings, parse trees.

The store is the project's own (pygls' splits lines with ``str.splitlines``,
which also breaks on U+2028 and friends; LSP line breaks are only ``\\n``,
``\\r\\n`` and ``\\r``). Positions arrive in the negotiated encoding (VS Code:
UTF-16, Neovim: UTF-8) and are turned into code-point offsets into ``text``.

The text is kept in bounded chunks (``chunked_text.py``): a keystroke costs a
chunk of the text and its counts, whatever the document's size, and a snapshot
is a reference to one version of it. The (incremental) re-parse happens later,
in the thread of the first request that needs the tree (``Snapshot.tree``),
never on the event loop.
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

if os.name == "nt":
    from nturl2path import url2pathname
else:  # what urllib.request's is on POSIX; importing it brought http.client and email (0.1 s of the start)
    url2pathname = unquote

from gdg_lsp.chunked_text import CHARS, UTF8, UTF16, ChunkedText, units
from gdg_lsp.errors import DocumentNotOpenError, GdgError

MAX_OPEN_DOCUMENTS = 2_000
"""Documents one server follows at most; a didOpen beyond it is refused (``StoreFull``)."""
MAX_STORED_CHARS = 256_000_000
"""Characters of all open documents together at most, checked when one opens (edits are
bounded by the transport's message size)."""
MAX_ANALYSED_CHARS = 2_000_000
"""Documents longer than this are kept in step (every edit applied) but neither parsed nor
analysed: a tree-sitter re-parse of 10 MB took 2.5 s per keystroke here, on the event loop.
The default of ``gdg.limits.analysedChars`` (``DocumentStore.max_analysed_chars``)."""


def uri_to_path(uri: str | None) -> Path | None:
    """The local path of a ``file:`` URI (percent-decoded; ``file:///C:/x`` is
    ``C:\\x`` on Windows), or None for any other scheme (``untitled:``, ...)."""
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = url2pathname(parsed.path) if parsed.netloc in ("", "localhost") else f"//{parsed.netloc}{unquote(parsed.path)}"
    return Path(path)


class PositionEncoding(str, enum.Enum):
    UTF8 = "utf-8"
    UTF16 = "utf-16"
    UTF32 = "utf-32"

    @classmethod
    def parse(cls, value: Any) -> PositionEncoding:
        try:
            return cls(str(getattr(value, "value", value)))
        except ValueError:
            return cls.UTF16


_METRIC = {PositionEncoding.UTF8: UTF8, PositionEncoding.UTF16: UTF16, PositionEncoding.UTF32: CHARS}


@dataclass(frozen=True, slots=True)
class TextEdit:
    """One applied edit, in code-point offsets of the text before (start, old_end) and after (new_end)."""

    start: int
    old_end: int
    new_end: int


def _offset_at(text: ChunkedText, line: int, character: int, encoding: PositionEncoding) -> int:
    """Code-point offset of an LSP position. A column past the end of the line means the end
    of the line (as LSP specifies); a column inside a multi-unit character (a UTF-16
    surrogate pair, a UTF-8 sequence) falls back to that character's start."""
    if line < 0:
        return 0
    if line >= text.line_count:
        return len(text)
    start = text.line_start(line)
    if character <= 0:
        return start
    metric = _METRIC[encoding]
    return min(text.line_end(line), text.offset_of_units(text.units_before(start, metric) + character, metric))


def _position_at(text: ChunkedText, offset: int, encoding: PositionEncoding) -> tuple[int, int]:
    offset = max(0, min(offset, len(text)))
    line = text.line_of(offset)
    start = text.line_start(line)
    if text.slice(offset - 1, offset + 1) == "\r\n":  # inside a line break: the end of its line
        offset -= 1
    metric = _METRIC[encoding]
    return line, text.units_before(offset, metric) - text.units_before(start, metric)


class Snapshot:
    """A read-only view of a document at one version, safe to hand to another thread.

    ``text`` is the whole text (joined from the document's chunks on first use, in the
    thread that asks, once per version); ``length`` is its length without joining it.
    ``tree`` is the parse of ``text``. A snapshot of a document edited since its last
    parse makes it on first use, in the thread that asks (an analysis thread, never the
    event loop), incrementally from a copy of the document's last tree, and hands it
    back to the document for the next keystroke to start from. Positions convert with
    the document's line index as it was (``offset_at``, ``position_at``)."""

    __slots__ = ("uri", "language_id", "version", "_text", "_chunks", "_tree", "_pending", "_lock",
                 "max_analysed_chars")

    def __init__(self, uri: str, language_id: str, version: int, text: str | ChunkedText, tree: Any = None, *,
                 parse: tuple[Callable[[bytes, Any], Any], Any, Callable[[Any], None]] | None = None,
                 max_analysed_chars: int = MAX_ANALYSED_CHARS) -> None:
        self.uri = uri
        self.max_analysed_chars = max_analysed_chars
        self.language_id = language_id
        self.version = version
        self._text = text if isinstance(text, str) else None
        self._chunks = text if isinstance(text, ChunkedText) else None
        self._tree = tree
        self._pending = parse
        self._lock = threading.Lock()

    @property
    def text(self) -> str:
        return self._text if self._text is not None else self.chunks.text

    @property
    def length(self) -> int:
        return len(self._text) if self._text is not None else len(self.chunks)

    @property
    def chunks(self) -> ChunkedText:
        """The text as the document keeps it (made from ``text`` for a snapshot built from a string)."""
        if self._chunks is None:
            self._chunks = ChunkedText.of(self._text or "")
        return self._chunks

    @property
    def tree(self) -> Any:
        if self._pending is not None:
            with self._lock:
                if self._pending is not None:
                    parser, old_tree, adopt = self._pending
                    self._tree = parser(self.text.encode("utf-8", "surrogatepass"), old_tree)
                    self._pending = None
                    adopt(self._tree)
        return self._tree

    @property
    def too_large(self) -> bool:
        return self.length > self.max_analysed_chars

    def offset_at(self, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> int:
        return _offset_at(self.chunks, line, character, encoding)

    def position_at(self, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> tuple[int, int]:
        return _position_at(self.chunks, offset, encoding)

    def __repr__(self) -> str:
        return f"Snapshot({self.uri!r}, {self.language_id!r}, version {self.version}, {self.length} characters)"


class Document:
    """One open document. ``tree`` is whatever the language's parser returns.

    Edits are applied on the event loop and cost a chunk of the text, not the text
    (``chunked_text.py``), and no parse: a tree-sitter tree is edited in place
    (``tree.edit``, cheap) and the parse itself waits for the first snapshot that needs
    it (see ``Snapshot.tree``). The lock guards the text, the tree and its freshness,
    never a parse or a join of the text."""

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        text: str,
        parser: Callable[[bytes, Any], Any] | None = None,
        max_analysed_chars: int = MAX_ANALYSED_CHARS,
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.max_analysed_chars = max_analysed_chars
        """Longer, the document is kept in step but neither parsed nor analysed (``gdg.limits.analysedChars``)."""
        self._chunks = ChunkedText.of(text)
        self._parser = parser
        self._tree: Any = None
        """The last parse, with every edit since applied to it (tree-sitter), or None."""
        self._edits = 0
        """Edits applied so far (a version number may repeat; this does not)."""
        self._parsed_at: int | None = None
        """``_edits`` when ``_tree`` was parsed; ``None``: it is stale."""
        self._lock = threading.Lock()

    @property
    def text(self) -> str:
        """The whole text (joined on first use after an edit: on the event loop, prefer
        ``slice`` and ``length``, which cost what they return)."""
        return self._chunks.text

    @property
    def length(self) -> int:
        return len(self._chunks)

    def slice(self, start: int, end: int) -> str:
        """``text[start:end]`` without joining the text."""
        return self._chunks.slice(start, end)

    @property
    def tree(self) -> Any:
        """The parse of the current text (made now, in this thread, if the text moved)."""
        return self.snapshot().tree

    # -- positions ---------------------------------------------------------

    @property
    def line_count(self) -> int:
        return self._chunks.line_count

    def line_start(self, line: int) -> int:
        return self._chunks.line_start(line)

    def line_text(self, line: int) -> str:
        """Line ``line`` without its line break."""
        return self._chunks.slice(self._chunks.line_start(line), self._chunks.line_end(line))

    def offset_at(self, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> int:
        """Code-point offset for an LSP position; clamps past-the-end positions to the end."""
        return _offset_at(self._chunks, line, character, encoding)

    def position_at(self, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> tuple[int, int]:
        return _position_at(self._chunks, offset, encoding)

    # -- edits -------------------------------------------------------------

    def apply_changes(
        self,
        changes: Iterable[tuple[tuple[int, int, int, int] | None, str]],
        version: int,
        encoding: PositionEncoding = PositionEncoding.UTF16,
    ) -> list[TextEdit]:
        """Apply LSP content changes in order (the parse waits for the next snapshot).

        Each change is ``(range, text)`` with range ``(start_line, start_char,
        end_line, end_char)`` in ``encoding``, or ``None`` for a full replacement.
        """
        edits: list[TextEdit] = []
        with self._lock:
            tree = self._tree
            for rng, new_text in changes:
                if rng is None:
                    self._chunks = ChunkedText.of(new_text)
                    tree = None
                    edits.append(TextEdit(0, 0, len(new_text)))
                    continue
                start = self.offset_at(rng[0], rng[1], encoding)
                end = self.offset_at(rng[2], rng[3], encoding)
                if end < start:
                    start, end = end, start
                edits.append(self._splice(start, end, new_text, tree))
            self.version = version
            # only tree-sitter trees follow edits; any other tree is re-parsed from scratch
            self._tree = tree if hasattr(tree, "edit") else None
            self._edits += 1
            self._parsed_at = None
        return edits

    def _splice(self, start: int, end: int, new_text: str, tree: Any) -> TextEdit:
        old = self._chunks
        # only tree-sitter trees are edited in place; other parsers' trees (P4's
        # Lark program) are simply re-parsed (calling .edit on them lost the edit)
        if tree is not None and hasattr(tree, "edit"):
            start_byte = old.units_before(start, UTF8)
            old_end_byte = old.units_before(end, UTF8)
            new_end_byte = start_byte + units(new_text, UTF8)
            start_point, old_end_point = old.point(start), old.point(end)
            breaks = new_text.count("\n")
            if breaks:
                tail = new_text[new_text.rfind("\n") + 1 :]
                new_end_point = (start_point[0] + breaks, units(tail, UTF8))
            else:
                new_end_point = (start_point[0], start_point[1] + new_end_byte - start_byte)
            tree.edit(
                start_byte=start_byte,
                old_end_byte=old_end_byte,
                new_end_byte=new_end_byte,
                start_point=start_point,
                old_end_point=old_end_point,
                new_end_point=new_end_point,
            )
        self._chunks = old.splice(start, end, new_text)
        return TextEdit(start, end, start + len(new_text))

    @property
    def too_large(self) -> bool:
        return len(self._chunks) > self.max_analysed_chars

    def snapshot(self) -> Snapshot:
        """The document as it is now: a reference to its text's version, no copy."""
        limit = self.max_analysed_chars
        with self._lock:
            chunks = self._chunks
            if self._parser is None or self.too_large:
                return Snapshot(self.uri, self.language_id, self.version, chunks, None, max_analysed_chars=limit)
            old = self._tree.copy() if hasattr(self._tree, "copy") else self._tree
            if self._parsed_at == self._edits:
                return Snapshot(self.uri, self.language_id, self.version, chunks, old, max_analysed_chars=limit)
            edits = self._edits
            return Snapshot(self.uri, self.language_id, self.version, chunks,
                            parse=(self._parser, old, lambda tree: self._adopt(edits, tree)), max_analysed_chars=limit)

    def as_if(self, text: str) -> Snapshot:
        """A snapshot of this document, at its version, as if its text were ``text``: a text the
        user may make next (``work_ahead.continuation``), parsed by the same parser, never kept."""
        if self._parser is None or len(text) > self.max_analysed_chars:
            return Snapshot(self.uri, self.language_id, self.version, text, None,
                            max_analysed_chars=self.max_analysed_chars)
        return Snapshot(self.uri, self.language_id, self.version, text, parse=(self._parser, None, lambda tree: None),
                        max_analysed_chars=self.max_analysed_chars)

    def _adopt(self, edits: int, tree: Any) -> None:
        """A snapshot parsed the text of ``edits``: keep (a copy of) it if the text is still that."""
        with self._lock:
            if self._edits == edits and self._parsed_at != edits:
                self._tree = tree.copy() if hasattr(tree, "copy") else tree
                self._parsed_at = edits


class StoreFull(GdgError):
    """A document that would take the store past ``MAX_OPEN_DOCUMENTS`` or ``MAX_STORED_CHARS``."""


class DocumentStore:
    """The open documents of one server (or one headless run), bounded by count and size."""

    def __init__(self, parser_for: Callable[[str, str], Callable[[bytes, Any], Any] | None] | None = None,
                 max_documents: int = MAX_OPEN_DOCUMENTS, max_chars: int = MAX_STORED_CHARS) -> None:
        self._docs: dict[str, Document] = {}
        self._parser_for = parser_for or (lambda language_id, uri: None)
        self._max_documents = max_documents
        self._max_chars = max_chars
        self._max_analysed_chars = MAX_ANALYSED_CHARS

    @property
    def max_analysed_chars(self) -> int:
        """Documents longer than this are kept in step, not analysed (``gdg.limits.analysedChars``)."""
        return self._max_analysed_chars

    @max_analysed_chars.setter
    def max_analysed_chars(self, limit: int) -> None:
        self._max_analysed_chars = limit
        for doc in self._docs.values():
            doc.max_analysed_chars = limit

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        """Follow a document (replacing one open under the same URI); ``StoreFull`` past the bounds."""
        others = [doc for key, doc in self._docs.items() if key != uri]
        if len(others) >= self._max_documents:
            raise StoreFull(f"{len(others):,} documents are open, the most one server follows; "
                            f"{uri} is not followed (close some documents)")
        stored = sum(doc.length for doc in others)
        if stored + len(text) > self._max_chars:
            raise StoreFull(f"{uri} ({len(text):,} characters) would take the open documents past "
                            f"{self._max_chars:,} characters; it is not followed (close some documents)")
        doc = Document(uri, language_id, version, text, self._parser_for(language_id, uri), self._max_analysed_chars)
        self._docs[uri] = doc
        return doc

    def get(self, uri: str) -> Document:
        try:
            return self._docs[uri]
        except KeyError:
            raise DocumentNotOpenError(uri) from None

    def find(self, uri: str) -> Document | None:
        return self._docs.get(uri)

    def close(self, uri: str) -> None:
        self._docs.pop(uri, None)

    def __contains__(self, uri: object) -> bool:
        return uri in self._docs

    def __iter__(self):
        return iter(list(self._docs.values()))

    def __len__(self) -> int:
        return len(self._docs)
