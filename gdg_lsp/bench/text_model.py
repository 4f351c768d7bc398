"""An independent model of LSP document edits, for checking the server's copy.

It follows the specification, not the server's code: positions are counted in
the code units of the negotiated encoding (UTF-16 units, UTF-8 bytes or code
points), on the encoded line itself; lines end at ``\\n``, ``\\r\\n`` or ``\\r``
only (not at U+2028, U+0085 or form feeds); a character past the end of a line
means the end of the line, a line past the end of the document means its end.
Three choices the specification leaves open, made as the server makes them:
a position inside a character (half a surrogate pair, inside a UTF-8 sequence)
means that character's start; a range whose end comes before its start is
read with its ends swapped; a number no position can hold (negative, a
fraction, past 2^31 - 1) means the nearest one it can (editors clamp).

Texts must not contain lone surrogates: the tests never send them to a
document they check (a client cannot produce them in a real editor).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_BREAKS = re.compile("\r\n|\r|\n")
_CODECS = {"utf-16": ("utf-16-le", 2), "utf-8": ("utf-8", 1), "utf-32": ("utf-32-le", 4)}


@dataclass
class ModelDocument:
    version: int
    text: str

    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


class TextModel:
    def __init__(self, encoding: str) -> None:
        self.codec, self.unit = _CODECS[encoding]
        self.docs: dict[str, ModelDocument] = {}

    def open(self, uri: str, version: int, text: str) -> None:
        self.docs[uri] = ModelDocument(version, text)

    def close(self, uri: str) -> None:
        self.docs.pop(uri, None)

    def change(self, uri: str, version: int, changes: list[tuple[tuple[int, int, int, int] | None, str]]) -> None:
        doc = self.docs.get(uri)
        if doc is None:
            return  # an edit to a document that is not open changes nothing
        text = doc.text
        for rng, new in changes:
            if rng is None:
                text = new
                continue
            start = self._offset(text, rng[0], rng[1])
            end = self._offset(text, rng[2], rng[3])
            start, end = min(start, end), max(start, end)
            text = text[:start] + new + text[end:]
        doc.text, doc.version = text, version

    def apply(self, edit) -> None:
        """Apply a generated edit notification (``bench.hostile.Edit``: didOpen, didChange or didClose)."""
        if edit.method == "textDocument/didOpen":
            self.open(edit.uri, edit.version, edit.text)
        elif edit.method == "textDocument/didClose":
            self.close(edit.uri)
        else:
            self.change(edit.uri, edit.version, list(edit.changes))

    def text(self, uri: str) -> str | None:
        """The model's text of ``uri``, or None when it is not open."""
        doc = self.docs.get(uri)
        return doc.text if doc is not None else None

    def line_units(self, uri: str) -> list[int]:
        """The length of each line in code units (for choosing positions)."""
        doc = self.docs.get(uri)
        if doc is None:
            return [0]
        return [len(line.encode(self.codec)) // self.unit for line in _BREAKS.split(doc.text)]

    def _offset(self, text: str, line: float, character: float) -> int:
        """Code-point offset of (line, character), measured on the encoded line."""
        line, character = _uinteger(line), _uinteger(character)
        starts = [0] + [m.end() for m in _BREAKS.finditer(text)]
        if line >= len(starts):
            return len(text)
        begin = starts[line]
        if line + 1 < len(starts):
            brk = _BREAKS.search(text, begin)
            line_text = text[begin : brk.start()]
        else:
            line_text = text[begin:]
        encoded = line_text.encode(self.codec)
        cut = encoded[: min(character * self.unit, len(encoded))]
        # a cut inside a character leaves an incomplete sequence, which "ignore" drops
        return begin + len(cut.decode(self.codec, "ignore"))


def _uinteger(value: float) -> int:
    return max(0, min(2**31 - 1, int(value)))
