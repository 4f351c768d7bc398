"""Open documents: text, version, incremental edits, position encodings, parse trees.

The store is the project's own (pygls' splits lines with ``str.splitlines``,
which also breaks on U+2028 and friends; LSP line breaks are only ``\\n``,
``\\r\\n`` and ``\\r``). Positions arrive in the negotiated encoding (VS Code:
UTF-16, Neovim: UTF-8) and are turned into code-point offsets into ``text``.

A keystroke costs one edit of the text and an incremental update of the line
index; the (incremental) re-parse happens later, in the thread of the first
request that needs the tree (``Snapshot.tree``), never on the event loop.
"""

from __future__ import annotations

import bisect
import enum
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from gdg_lsp.errors import DocumentNotOpenError, GdgError

LINE_BREAK = re.compile(r"\r\n|\r|\n")
MAX_OPEN_DOCUMENTS = 2_000
"""Documents one server follows at most; a didOpen beyond it is refused (``StoreFull``)."""
MAX_STORED_CHARS = 256_000_000
"""Characters of all open documents together at most, checked when one opens (edits are
bounded by the transport's message size)."""
MAX_ANALYSED_CHARS = 2_000_000
"""Documents longer than this are kept in step (every edit applied) but neither parsed nor
analysed: a tree-sitter re-parse of 10 MB took 2.5 s per keystroke here, on the event loop."""


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


def _units(text: str, encoding: PositionEncoding) -> int:
    """Length of ``text`` in code units of ``encoding``."""
    if encoding is PositionEncoding.UTF32 or text.isascii():
        return len(text)
    if encoding is PositionEncoding.UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _column_to_index(line: str, column: int, encoding: PositionEncoding) -> int:
    """Code-point index in ``line`` for a column in code units.

    A column past the end of the line means the end of the line (as LSP
    specifies); a column inside a multi-unit character (a UTF-16 surrogate
    pair, a UTF-8 sequence) falls back to that character's start.
    """
    if column <= 0:
        return 0
    if encoding is PositionEncoding.UTF32 or line.isascii():
        return min(column, len(line))
    units = 0
    for index, ch in enumerate(line):
        if encoding is PositionEncoding.UTF8:
            width = len(ch.encode("utf-8", "surrogatepass"))
        else:
            width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > column:
            return index
        units += width
    return len(line)


def _line_starts(text: str, base: int = 0, start: int = 0, end: int | None = None) -> list[int]:
    return [base + m.end() for m in LINE_BREAK.finditer(text, start, len(text) if end is None else end)]


@dataclass(frozen=True, slots=True)
class TextEdit:
    """One applied edit, in code-point offsets of the text before (start, old_end) and after (new_end)."""

    start: int
    old_end: int
    new_end: int


def _line_text(text: str, starts: list[int], line: int) -> str:
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    segment = text[start:end]
    return segment.rstrip("\r\n") if line + 1 < len(starts) else segment


def _offset_at(text: str, starts: list[int], line: int, character: int, encoding: PositionEncoding) -> int:
    if line < 0:
        return 0
    if line >= len(starts):
        return len(text)
    return starts[line] + _column_to_index(_line_text(text, starts, line), character, encoding)


def _position_at(text: str, starts: list[int], offset: int, encoding: PositionEncoding) -> tuple[int, int]:
    offset = max(0, min(offset, len(text)))
    line = bisect.bisect_right(starts, offset) - 1
    return line, _units(_line_text(text, starts, line)[: offset - starts[line]], encoding)


class Snapshot:
    """A read-only view of a document at one version, safe to hand to another thread.

    ``tree`` is the parse of ``text``. A snapshot of a document edited since its last
    parse makes it on first use, in the thread that asks (an analysis thread, never the
    event loop), incrementally from a copy of the document's last tree, and hands it
    back to the document for the next keystroke to start from. Positions convert with
    the document's line index as it was (``offset_at``, ``position_at``)."""

    __slots__ = ("uri", "language_id", "version", "text", "_tree", "_pending", "_starts", "_lock")

    def __init__(self, uri: str, language_id: str, version: int, text: str, tree: Any = None, *,
                 parse: tuple[Callable[[bytes, Any], Any], Any, Callable[[Any], None]] | None = None,
                 starts: list[int] | None = None) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.text = text
        self._tree = tree
        self._pending = parse
        self._starts = starts
        self._lock = threading.Lock()

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
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0, *_line_starts(self.text)]
        return self._starts

    def offset_at(self, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> int:
        return _offset_at(self.text, self.starts, line, character, encoding)

    def position_at(self, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> tuple[int, int]:
        return _position_at(self.text, self.starts, offset, encoding)

    def __repr__(self) -> str:
        return f"Snapshot({self.uri!r}, {self.language_id!r}, version {self.version}, {len(self.text)} characters)"


class Document:
    """One open document. ``tree`` is whatever the language's parser returns.

    Edits are applied on the event loop and cost no parse: a tree-sitter tree is
    edited in place (``tree.edit``, cheap) and the parse itself waits for the first
    snapshot that needs it (see ``Snapshot.tree``). The lock guards the tree and its
    freshness, never a parse."""

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        text: str,
        parser: Callable[[bytes, Any], Any] | None = None,
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.text = text
        self._starts = [0, *_line_starts(text)]
        self._parser = parser
        self._tree: Any = None
        """The last parse, with every edit since applied to it (tree-sitter), or None."""
        self._edits = 0
        """Edits applied so far (a version number may repeat; this does not)."""
        self._parsed_at: int | None = None
        """``_edits`` when ``_tree`` was parsed; ``None``: it is stale."""
        self._lock = threading.Lock()

    @property
    def tree(self) -> Any:
        """The parse of the current text (made now, in this thread, if the text moved)."""
        return self.snapshot().tree

    # -- positions ---------------------------------------------------------

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, line: int) -> int:
        return self._starts[line]

    def line_text(self, line: int) -> str:
        """Line ``line`` without its line break."""
        return _line_text(self.text, self._starts, line)

    def offset_at(self, line: int, character: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> int:
        """Code-point offset for an LSP position; clamps past-the-end positions to the end."""
        return _offset_at(self.text, self._starts, line, character, encoding)

    def position_at(self, offset: int, encoding: PositionEncoding = PositionEncoding.UTF16) -> tuple[int, int]:
        return _position_at(self.text, self._starts, offset, encoding)

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
                    self.text = new_text
                    self._starts = [0, *_line_starts(new_text)]
                    tree = None
                    edits.append(TextEdit(0, 0, len(new_text)))
                    continue
                start = self.offset_at(rng[0], rng[1], encoding)
                end = self.offset_at(rng[2], rng[3], encoding)
                if end < start:
                    start, end = end, start
                edit = self._splice(start, end, new_text, tree)
                edits.append(edit)
            self.version = version
            # only tree-sitter trees follow edits; any other tree is re-parsed from scratch
            self._tree = tree if hasattr(tree, "edit") else None
            self._edits += 1
            self._parsed_at = None
        return edits

    def _splice(self, start: int, end: int, new_text: str, tree: Any) -> TextEdit:
        old = self.text
        # only tree-sitter trees are edited in place; other parsers' trees (P4's
        # Lark program) are simply re-parsed (calling .edit on them lost the edit)
        if tree is not None and hasattr(tree, "edit"):
            start_byte = _utf8_len(old, 0, start)
            old_end_byte = start_byte + _utf8_len(old, start, end)
            new_end_byte = start_byte + _utf8_len(new_text, 0, len(new_text))
            start_point, old_end_point = self._point(start), self._point(end)
            breaks = new_text.count("\n")
            if breaks:
                tail = new_text[new_text.rfind("\n") + 1 :]
                new_end_point = (start_point[0] + breaks, _utf8_len(tail, 0, len(tail)))
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
        self.text = old[:start] + new_text + old[end:]
        self._update_line_starts(start, end, len(new_text))
        return TextEdit(start, end, start + len(new_text))

    def _point(self, offset: int) -> tuple[int, int]:
        """tree-sitter point of ``offset`` in the current text. Its rows count ``\\n`` only;
        without any ``\\r`` they are the line index's lines (a bisection, not a count
        over the whole prefix at every keystroke)."""
        text = self.text
        if "\r" in text:
            return _point(text, offset)
        row = bisect.bisect_right(self._starts, offset) - 1
        return row, _utf8_len(text, self._starts[row], offset)

    def _update_line_starts(self, start: int, old_end: int, new_len: int) -> None:
        """Keep the line index in step with one splice without rescanning the document.

        A line starts at q > 0 iff ``text[q-1]`` is ``\\n``, or is ``\\r`` not
        followed by ``\\n``: a property of two adjacent characters. So starts
        before the edit stand, starts at least two characters past the old edit
        end only shift, and only the window [start, start+new_len+1] (which
        covers a ``\\r``/``\\n`` pair the edit joins or splits) is rescanned.
        """
        text = self.text
        starts = self._starts
        delta = new_len - (old_end - start)
        hi = min(len(text), start + new_len + 1)
        head = starts[: bisect.bisect_left(starts, start)] or [0]
        rescanned = [
            m.end()
            for m in LINE_BREAK.finditer(text, max(0, start - 1), min(len(text), hi + 1))
            if start <= m.end() <= hi and m.end() > 0
        ]
        tail_from = bisect.bisect_left(starts, old_end + 2)
        tail = [s + delta for s in starts[tail_from:]] if delta else starts[tail_from:]
        self._starts = head + rescanned + tail

    @property
    def too_large(self) -> bool:
        return len(self.text) > MAX_ANALYSED_CHARS

    def snapshot(self) -> Snapshot:
        with self._lock:
            if self._parser is None or self.too_large:
                return Snapshot(self.uri, self.language_id, self.version, self.text, None, starts=self._starts)
            old = self._tree.copy() if hasattr(self._tree, "copy") else self._tree
            if self._parsed_at == self._edits:
                return Snapshot(self.uri, self.language_id, self.version, self.text, old, starts=self._starts)
            edits = self._edits
            return Snapshot(self.uri, self.language_id, self.version, self.text, starts=self._starts,
                            parse=(self._parser, old, lambda tree: self._adopt(edits, tree)))

    def _adopt(self, edits: int, tree: Any) -> None:
        """A snapshot parsed the text of ``edits``: keep (a copy of) it if the text is still that."""
        with self._lock:
            if self._edits == edits and self._parsed_at != edits:
                self._tree = tree.copy() if hasattr(tree, "copy") else tree
                self._parsed_at = edits


def _utf8_len(text: str, start: int, end: int) -> int:
    """Bytes of ``text[start:end]`` in UTF-8 (``str.isascii`` is O(1) in CPython)."""
    if text.isascii():
        return end - start
    return len(text[start:end].encode("utf-8", "surrogatepass"))


def _point(text: str, offset: int) -> tuple[int, int]:
    """tree-sitter point (row, byte column): rows count ``\\n`` only, as tree-sitter does."""
    row = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return row, len(text[line_start:offset].encode("utf-8", "surrogatepass"))


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

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        """Follow a document (replacing one open under the same URI); ``StoreFull`` past the bounds."""
        others = [doc for key, doc in self._docs.items() if key != uri]
        if len(others) >= self._max_documents:
            raise StoreFull(f"{len(others):,} documents are open, the most one server follows; "
                            f"{uri} is not followed (close some documents)")
        stored = sum(len(doc.text) for doc in others)
        if stored + len(text) > self._max_chars:
            raise StoreFull(f"{uri} ({len(text):,} characters) would take the open documents past "
                            f"{self._max_chars:,} characters; it is not followed (close some documents)")
        doc = Document(uri, language_id, version, text, self._parser_for(language_id, uri))
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
