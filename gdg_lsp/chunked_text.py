"""A document's text as bounded chunks: an edit costs a chunk, not the document.

The text is a sequence of leaves (strings of at most ``LEAF_CHARS`` characters,
never empty) grouped in blocks of at most ``BLOCK_LEAVES`` leaves. Each leaf
carries its counts (characters, UTF-16 units, UTF-8 bytes, LSP line breaks and
``\\n``s), each block the running sums of its leaves' counts, and the text the
running sums of its blocks'. Every question a document is asked (where line L
starts, which line offset p is on, how many code units of an encoding lie before
p, the UTF-8 byte and tree-sitter point of p) is two bisections and one scan of
a leaf.

An edit rebuilds the one or two leaves it touches (and a neighbour, see
``splice``), the block holding them and the blocks' running sums: a copy of a few
thousand characters and of a few hundred counts, where a ``str`` had to copy the
whole document and a line-start list had to shift every line after the edit (0.3
to 1.2 s per keystroke at 48 M characters, on the event loop).

A ``ChunkedText`` is a value: ``splice`` returns a new one that shares every
untouched leaf and block with the old, so a snapshot of a document is a
reference to its text, and a reader on another thread sees one version
whatever the loop does meanwhile. ``text`` joins the leaves into one ``str``
on first use, once per version (readers that need the whole text are analysis
threads; the loop asks for slices).

Invariant: ``\\r\\n`` is never split between two leaves, so a leaf's line
breaks are the document's line breaks inside it (a line break is ``\\n``,
``\\r\\n`` or a lone ``\\r``, as LSP says; U+2028 and friends are not).
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

LINE_BREAK = re.compile(r"\r\n|\r|\n")
ASTRAL = re.compile("[\U00010000-\U0010ffff]")
CONTINUATION_BYTES = bytes(range(0x80, 0xC0))

LEAF_CHARS = 2048
"""Characters of a leaf at most (a ``\\r\\n`` cut would make one a character longer)."""
BLOCK_LEAVES = 128
"""Leaves of a block at most: at 48 M characters the text is a few hundred blocks."""

CHARS, UTF16, UTF8, BREAKS, NEWLINES = range(5)
"""The counts a leaf carries, by index; ``CHARS`` are also UTF-32 units."""

Counts = tuple[int, int, int, int, int]


def measure(leaf: str) -> Counts:
    if leaf.isascii():  # O(1) in CPython
        return (len(leaf), len(leaf), len(leaf), breaks_in(leaf), leaf.count("\n"))
    return (len(leaf), len(leaf.encode("utf-16-le", "surrogatepass")) // 2,
            len(leaf.encode("utf-8", "surrogatepass")), breaks_in(leaf), leaf.count("\n"))


def units(text: str, metric: int) -> int:
    """Code units of ``text`` in ``CHARS``, ``UTF16`` or ``UTF8``."""
    if metric == CHARS or text.isascii():
        return len(text)
    if metric == UTF16:
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    return len(text.encode("utf-8", "surrogatepass"))


def breaks_in(text: str) -> int:
    """LSP line breaks in ``text`` (a ``\\r\\n`` pair is one)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _index_of_units(leaf: str, count: int, metric: int) -> int:
    """The largest index i with ``units(leaf[:i]) <= count``: a count that ends inside a
    character (half a surrogate pair, inside a UTF-8 sequence) means that character's start."""
    if metric == UTF16:
        astral = 0  # two units each: up to the one the count ends before (or inside), i = count - astral
        for found in ASTRAL.finditer(leaf):
            if count <= found.start() + astral:
                break
            astral += 1
        return min(len(leaf), count - astral)
    encoded = leaf.encode("utf-8", "surrogatepass")
    cut = min(count, len(encoded))
    while cut < len(encoded) and 0x80 <= encoded[cut] < 0xC0:
        cut -= 1
    return len(encoded[:cut].translate(None, CONTINUATION_BYTES))


class _Block:
    """Consecutive leaves, their counts and the counts' running sums (per metric)."""

    __slots__ = ("leaves", "counts", "sums", "totals")

    def __init__(self, leaves: tuple[str, ...], counts: tuple[Counts, ...]) -> None:
        self.leaves = leaves
        self.counts = counts
        self.sums = tuple(list(itertools.accumulate(column)) for column in zip(*counts))
        self.totals = tuple(column[-1] for column in self.sums)


def _leaves(piece: str, most: int) -> list[str]:
    """``piece`` cut into leaves of at most ``most`` characters, evenly, never inside ``\\r\\n``."""
    if len(piece) <= most:
        return [piece] if piece else []
    count = -(-len(piece) // most)
    size = -(-len(piece) // count)
    out, at = [], 0
    while at < len(piece):
        cut = min(at + size, len(piece))
        if cut < len(piece) and piece[cut - 1] == "\r" and piece[cut] == "\n":
            cut += 1
        out.append(piece[at:cut])
        at = cut
    return out


class ChunkedText:
    """An immutable text in bounded chunks (see the module's docstring)."""

    __slots__ = ("_blocks", "_totals", "_sums", "_leaf_chars", "_block_leaves", "_joined")

    def __init__(self, blocks: tuple[_Block, ...], leaf_chars: int, block_leaves: int,
                 totals: tuple[list[int], ...] | None = None) -> None:
        self._blocks = blocks
        if totals is None:
            totals = tuple(map(list, zip(*(block.totals for block in blocks)))) if blocks else tuple([] for _ in range(5))
        self._totals = totals
        """Per metric, each block's total (kept so that an edit splices them, not rebuilds them)."""
        self._sums = tuple(list(itertools.accumulate(column)) for column in self._totals)
        self._leaf_chars = leaf_chars
        self._block_leaves = block_leaves
        self._joined: str | None = None

    @classmethod
    def of(cls, text: str, leaf_chars: int | None = None, block_leaves: int | None = None) -> ChunkedText:
        """``text`` in chunks of ``LEAF_CHARS`` and ``BLOCK_LEAVES`` (read now: tests make them tiny)."""
        leaf_chars, block_leaves = leaf_chars or LEAF_CHARS, block_leaves or BLOCK_LEAVES
        leaves = [(leaf, measure(leaf)) for leaf in _leaves(text, leaf_chars)]
        made = cls(tuple(_blocks(leaves, block_leaves)), leaf_chars, block_leaves)
        made._joined = text
        return made

    # -- the text ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._sums[CHARS][-1] if self._blocks else 0

    @property
    def line_count(self) -> int:
        return (self._sums[BREAKS][-1] if self._blocks else 0) + 1

    @property
    def text(self) -> str:
        """The whole text as one ``str`` (joined on first use, then kept with this version)."""
        joined = self._joined
        if joined is None:
            joined = self._joined = "".join(itertools.chain.from_iterable(b.leaves for b in self._blocks))
        return joined

    def leaves(self) -> Iterator[str]:
        for block in self._blocks:
            yield from block.leaves

    def slice(self, start: int, end: int) -> str:
        """``text[start:end]`` (offsets clamped to the text), from the leaves it spans."""
        start, end = max(0, start), min(end, len(self))
        if start >= end:
            return ""
        if self._joined is not None:
            return self._joined[start:end]
        b, i, local = self._at(start)
        parts, wanted = [], end - start
        while wanted > 0:
            leaf = self._blocks[b].leaves[i]
            part = leaf[local : local + wanted]
            parts.append(part)
            wanted -= len(part)
            local = 0
            i += 1
            if i == len(self._blocks[b].leaves):
                b, i = b + 1, 0
        return "".join(parts)

    # -- finding leaves ----------------------------------------------------------------

    def _before(self, b: int, i: int, metric: int) -> int:
        """``metric`` counted over every leaf before leaf ``i`` of block ``b``."""
        return (self._sums[metric][b - 1] if b else 0) + (self._blocks[b].sums[metric][i - 1] if i else 0)

    def _at(self, offset: int) -> tuple[int, int, int]:
        """(block, leaf, offset in the leaf) of a character offset in [0, len]: the leaf it
        falls in, or the last leaf for the end of the text. The text must not be empty."""
        b = min(bisect_right(self._sums[CHARS], offset), len(self._blocks) - 1)
        block = self._blocks[b]
        inner = offset - (self._sums[CHARS][b - 1] if b else 0)
        i = min(bisect_right(block.sums[CHARS], inner), len(block.leaves) - 1)
        return b, i, inner - (block.sums[CHARS][i - 1] if i else 0)

    def _reaching(self, metric: int, count: int) -> tuple[int, int, int]:
        """(block, leaf, ``metric`` before the leaf) of the first leaf at which ``metric``'s
        running sum reaches ``count`` (1 <= count <= the text's total)."""
        b = bisect_left(self._sums[metric], count)
        block = self._blocks[b]
        i = bisect_left(block.sums[metric], count - (self._sums[metric][b - 1] if b else 0))
        return b, i, self._before(b, i, metric)

    # -- lines and code units ----------------------------------------------------------

    def line_start(self, line: int) -> int:
        """Offset where line ``line`` starts (0 <= line < line_count): the end of its break."""
        if line <= 0:
            return 0
        b, i, before = self._reaching(BREAKS, line)
        leaf = self._blocks[b].leaves[i]
        found = next(itertools.islice(LINE_BREAK.finditer(leaf), line - before - 1, None))
        return self._before(b, i, CHARS) + found.end()

    def line_end(self, line: int) -> int:
        """Offset where line ``line``'s text ends, before its line break."""
        if line + 1 >= self.line_count:
            return len(self)
        start = self.line_start(line + 1)
        return start - (2 if self.slice(start - 2, start) == "\r\n" else 1)

    def line_of(self, offset: int) -> int:
        """The line ``offset`` is on (line breaks ending at or before it)."""
        if not self._blocks:
            return 0
        b, i, local = self._at(offset)
        leaf = self._blocks[b].leaves[i]
        head = leaf[:local]
        inside = breaks_in(head) - (head.endswith("\r") and leaf[local : local + 1] == "\n")
        return self._before(b, i, BREAKS) + inside

    def units_before(self, offset: int, metric: int) -> int:
        """Code units of ``metric`` in ``text[:offset]`` (0 <= offset <= len)."""
        if metric == CHARS or not self._blocks:
            return offset
        b, i, local = self._at(offset)
        counts = self._blocks[b].counts[i]
        inside = local if counts[metric] == counts[CHARS] else units(self._blocks[b].leaves[i][:local], metric)
        return self._before(b, i, metric) + inside

    def offset_of_units(self, count: int, metric: int) -> int:
        """The largest offset with at most ``count`` units of ``metric`` before it."""
        if count >= (self._sums[metric][-1] if self._blocks else 0):
            return len(self)
        if count <= 0:
            return 0
        if metric == CHARS:
            return count
        b, i, before = self._reaching(metric, count + 1)
        counts = self._blocks[b].counts[i]
        inside = count - before
        if counts[metric] != counts[CHARS]:
            inside = _index_of_units(self._blocks[b].leaves[i], inside, metric)
        return self._before(b, i, CHARS) + inside

    def point(self, offset: int) -> tuple[int, int]:
        """tree-sitter's point of ``offset``: (``\\n``s before it, UTF-8 bytes since the last)."""
        if not self._blocks:
            return 0, 0
        b, i, local = self._at(offset)
        leaf = self._blocks[b].leaves[i]
        row = self._before(b, i, NEWLINES) + leaf.count("\n", 0, local)
        last = leaf.rfind("\n", 0, local)
        if last >= 0:
            return row, units(leaf[last + 1 : local], UTF8)
        if row == 0:
            return row, self.units_before(offset, UTF8)
        b, i, _ = self._reaching(NEWLINES, row)
        line_start = self._before(b, i, CHARS) + self._blocks[b].leaves[i].rfind("\n") + 1
        return row, self.units_before(offset, UTF8) - self.units_before(line_start, UTF8)

    # -- edits -------------------------------------------------------------------------

    def splice(self, start: int, end: int, new: str) -> ChunkedText:
        """The text with ``text[start:end]`` replaced by ``new`` (0 <= start <= end <= len).

        The leaves from the one holding ``start`` to the one holding ``end`` are rebuilt,
        with the leaf before when the piece would leave ``\\r`` and ``\\n`` of one line break
        in two leaves, and with a neighbour leaf when it is shorter than a quarter leaf (so
        that deletions leave no crumbs); their blocks are rebuilt, with a neighbour block
        when they come to under half a block."""
        if not self._blocks:
            return ChunkedText.of(new, self._leaf_chars, self._block_leaves)
        blocks = self._blocks
        lo, i, _ = self._at(start)
        hi, last, _ = self._at(end)
        flat = [pair for block in blocks[lo : hi + 1] for pair in zip(block.leaves, block.counts)]
        j = sum(len(block.leaves) for block in blocks[lo:hi]) + last
        piece = flat[i][0][: start - self._before(lo, i, CHARS)] + new + flat[j][0][end - self._before(hi, last, CHARS) :]

        def take_left() -> bool:  # make flat[i - 1] exist (a block further left, if need be)
            nonlocal lo, i, j, flat
            if i == 0:
                if lo == 0:
                    return False
                lo -= 1
                block = blocks[lo]
                flat = list(zip(block.leaves, block.counts)) + flat
                i, j = i + len(block.leaves), j + len(block.leaves)
            return True

        def take_right() -> bool:  # make flat[j + 1] exist
            nonlocal hi, flat
            if j + 1 == len(flat):
                if hi + 1 == len(blocks):
                    return False
                hi += 1
                flat = flat + list(zip(blocks[hi].leaves, blocks[hi].counts))
            return True

        # The piece ends where leaf j ends (or the text does), a cut the text already had; it
        # starts where leaf i starts, or with what was typed or kept at that cut: a \n there
        # after a leaf ending in \r would cut a \r\n in two, so that leaf joins the piece.
        merged = False
        while True:
            if piece.startswith("\n") and take_left() and flat[i - 1][0].endswith("\r"):
                i -= 1
                piece = flat[i][0] + piece
            elif len(piece) < self._leaf_chars // 4 and not merged and (take_right() or take_left()):
                merged = True
                if j + 1 < len(flat):
                    j += 1
                    piece += flat[j][0]
                else:
                    i -= 1
                    piece = flat[i][0] + piece
            else:
                break
        rebuilt = flat[:i] + [(leaf, measure(leaf)) for leaf in _leaves(piece, self._leaf_chars)] + flat[j + 1 :]
        if len(rebuilt) < self._block_leaves // 2:  # no block of crumbs: take in a neighbour
            if hi + 1 < len(blocks):
                hi += 1
                rebuilt += zip(blocks[hi].leaves, blocks[hi].counts)
            elif lo > 0:
                lo -= 1
                rebuilt[:0] = zip(blocks[lo].leaves, blocks[lo].counts)
        middle = tuple(_blocks(rebuilt, self._block_leaves))
        totals = tuple(column[:lo] + [block.totals[metric] for block in middle] + column[hi + 1 :]
                       for metric, column in enumerate(self._totals))
        return ChunkedText(blocks[:lo] + middle + blocks[hi + 1 :], self._leaf_chars, self._block_leaves, totals)


def _blocks(leaves: list[tuple[str, Counts]], most: int) -> Iterator[_Block]:
    """``leaves`` grouped in blocks of at most ``most`` leaves, evenly."""
    if not leaves:
        return
    count = -(-len(leaves) // most)
    size = -(-len(leaves) // count)
    for at in range(0, len(leaves), size):
        group = leaves[at : at + size]
        yield _Block(tuple(leaf for leaf, _ in group), tuple(counts for _, counts in group))
