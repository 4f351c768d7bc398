"""The shape of a filter's input: which fields exist at which path, read from JSON samples.

Inputs are sampled with a bound: the first ``MAX_BYTES`` of a file, at most
``MAX_RECORDS`` values (a stream of JSON texts, JSON lines, or the elements of
a top-level array whose end lies past the bound). The sample is described in
``Sample.note`` for ``explain``. Each file is read through the boundary
(``Boundary.head``): judged by its real path when it is read, so a link out of
the workspace is not followed and a FIFO is refused, never waited on, even
when either took the file's place after the input was chosen; a refused file
is noted once (``boundary.note_unread``).

A ``Node`` is one path of the input with the types seen there, the keys of
its objects (each a Node) and the elements of its arrays (one Node for all):
``.items[]`` is the node of every element of ``items``.

The input's keys are written by whoever wrote the file (a cloned repository's
fixtures), and each one becomes a path Γ offers, so a key is a name only when
``words.control_free`` allows it: one holding a line break or another control
character is left out of the shape (with everything below it) and noted in
``words.REJECTIONS``. Every other key can be written in jq: a plain one as
``.name``, any other as a jq string (``."a b"``, ``."say \\"hi\\""``) whose ``'``
is written ``\\u0027``, so that a path stays inside the single quotes of a shell
script's ``jq '...'``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp import words
from gdg_lsp.boundary import Boundary, Refused, note_unread

MAX_BYTES = 1024 * 1024
MAX_RECORDS = 1000
MAX_NODES = 400
MAX_KEYS = 200
MAX_DEPTH = 12
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass
class Node:
    path: str
    """jq spelling of the path from the input: ``.``, ``.items[]``, ``.items[].name``."""
    key: str | None = None
    """The key this node is the value of (None: the root, or the elements of an array)."""
    types: set[str] = field(default_factory=set)
    keys: dict[str, Node] = field(default_factory=dict)
    elements: Node | None = None

    @property
    def is_object(self) -> bool:
        return "object" in self.types

    def child(self, key: str) -> Node | None:
        return self.keys.get(key)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.keys.values():
            yield from child.walk()
        if self.elements is not None:
            yield from self.elements.walk()

    def type_text(self) -> str:
        return "|".join(sorted(self.types)) or "unknown"


def is_ident(key: str) -> bool:
    """A key jq reads bare: ``.name`` and the ``{name}`` shorthand (ASCII only: ``.é`` is
    a syntax error in jq)."""
    return bool(_IDENT.match(key))


def step(key: str) -> str:
    """The jq spelling of one field step: ``.name`` or ``."odd key"`` (a JSON string, which
    jq reads the same way, with ``'`` escaped so the step never ends a shell quote)."""
    return f".{key}" if is_ident(key) else "." + json.dumps(key, ensure_ascii=False).replace("'", "\\u0027")


def join(path: str, suffix: str) -> str:
    return suffix if path == "." else path + suffix


@dataclass
class Sample:
    root: Node
    files: list[str]
    note: str
    """What was read: ``orders.json (first 1.0 MB of 52.3 MB, 1000 records)``."""
    boundary: Boundary
    """What the files were read through (and are read again through, by ``line_of``)."""

    def line_of(self, key: str) -> int:
        """The line of the first file where ``key`` is first written as a JSON string (0 when it
        is not in the file's first ``MAX_BYTES``, or the file cannot be read now)."""
        try:
            head = self.boundary.head(self.files[0], MAX_BYTES)[0].decode("utf-8", "replace")
        except Refused:
            return 0
        at = head.find(json.dumps(key, ensure_ascii=False))
        return head.count("\n", 0, at) if at >= 0 else 0


def _type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Builder:
    def __init__(self, source: str = "JSON input") -> None:
        self.root = Node(".")
        self.nodes = 1
        self.source = source
        """Where the values being added come from (named by a rejection)."""
        self.rejected: dict[tuple[str, str], words.Rejected] = {}

    def add(self, value: object, node: Node | None = None, depth: int = 0) -> None:
        node = node or self.root
        node.types.add(_type(value))
        if depth >= MAX_DEPTH:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                key = str(key)
                child = node.keys.get(key)
                if child is None:
                    if (why := words.control_free(key)) is not None:
                        self.rejected.setdefault((self.source, key), words.Rejected(self.source, key, why))
                        continue
                    if len(node.keys) >= MAX_KEYS or self.nodes >= MAX_NODES:
                        continue
                    child = node.keys[key] = Node(join(node.path, step(key)), key)
                    self.nodes += 1
                self.add(item, child, depth + 1)
        elif isinstance(value, list):
            if node.elements is None:
                if self.nodes >= MAX_NODES:
                    return
                node.elements = Node(join(node.path, "[]") if node.path != "." else ".[]")
                self.nodes += 1
            for item in value[:MAX_RECORDS]:
                self.add(item, node.elements, depth + 1)


def _values(text: str, truncated: bool) -> tuple[list[object], bool]:
    """JSON texts in ``text`` (a stream), or the leading elements of a cut top-level array.
    Returns the values and whether the top level was an array read element by element."""
    decoder = json.JSONDecoder()
    values: list[object] = []
    i = 0
    n = len(text)
    while i < n and len(values) < MAX_RECORDS:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        try:
            value, i = decoder.raw_decode(text, i)
        except RecursionError:
            break  # nested deeper than Python's parser goes: what was read so far is the sample
        except ValueError:
            if text[i] == "[" and (truncated or not values):
                return _array_prefix(text, i, decoder), True
            break
        values.append(value)
    return values, False


def _array_prefix(text: str, i: int, decoder: json.JSONDecoder) -> list[object]:
    items: list[object] = []
    i += 1
    while len(items) < MAX_RECORDS:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        try:
            item, i = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            break
        items.append(item)
    return [items]


def read_samples(paths: list[Path], boundary: Boundary | None = None) -> Sample | None:
    """The shape of the JSON in ``paths`` (each read up to the bound through ``boundary``;
    without one, the boundary of the files' own folders), or None if none parses."""
    boundary = boundary or Boundary.of(path.parent for path in paths)
    builder = _Builder()
    notes, files = [], []
    for path in paths:
        try:
            raw, size = boundary.head(path, MAX_BYTES)
        except Refused as err:
            note_unread(path, err)
            continue
        truncated = size > MAX_BYTES
        values, cut_array = _values(raw.decode("utf-8", "replace"), truncated)
        if not values:
            notes.append(f"{path.name}: no JSON read")
            continue
        builder.source = str(path)
        for value in values:
            builder.add(value)
        files.append(str(path))
        records = len(values[0]) if cut_array and isinstance(values[0], list) else len(values)
        if truncated or records >= MAX_RECORDS:
            notes.append(f"{path.name}: sampled, the first {len(raw) / 2**20:.1f} MB of {size / 2**20:.1f} MB, "
                         f"{records} records")
        else:
            notes.append(f"{path.name}: whole file, {records} value{'s' if records != 1 else ''}")
    words.REJECTIONS.note_all(builder.rejected.values())
    if not files:
        return None
    return Sample(builder.root, files, "; ".join(notes), boundary)
