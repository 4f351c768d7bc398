"""The document store: positions in every encoding, edits, the line index, re-parsing."""

from __future__ import annotations

import bisect
import contextlib
import random
import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gdg_lsp import chunked_text
from gdg_lsp.bench.text_model import TextModel
from gdg_lsp.chunked_text import CHARS, UTF8, UTF16, ChunkedText
from gdg_lsp.documents import Document, DocumentStore, PositionEncoding
from gdg_lsp.errors import DocumentNotOpenError
from gdg_lsp.languages.python.analyzer import parse

U8, U16, U32 = PositionEncoding.UTF8, PositionEncoding.UTF16, PositionEncoding.UTF32


def _line_starts(text: str) -> list[int]:
    """Where each line starts, by LSP's line breaks alone (not U+2028)."""
    return [0, *(m.end() for m in re.finditer("\r\n|\r|\n", text))]


def test_line_breaks_are_only_lsp_ones():
    doc = Document("u", "python", 1, "a\u2028b\r\nc\rd\ne")
    assert doc.line_count == 4
    assert doc.line_text(0) == "a\u2028b"
    assert [doc.line_text(i) for i in range(1, 4)] == ["c", "d", "e"]


@pytest.mark.parametrize(
    "encoding, column, expected",
    [(U32, 2, 2), (U16, 3, 2), (U8, 5, 2), (U16, 2, 1), (U8, 3, 1), (U8, 2, 1), (U16, 99, 5)],
)
def test_columns_in_each_encoding(encoding, column, expected):
    # "a😀bcd": the emoji is 1 code point, 2 UTF-16 units, 4 UTF-8 bytes
    doc = Document("u", "python", 1, "a😀bcd\nx")
    assert doc.offset_at(0, column, encoding) == expected


def test_position_inside_a_surrogate_pair_falls_back_to_the_character_start():
    doc = Document("u", "python", 1, "😀x")
    assert doc.offset_at(0, 1, U16) == 0
    assert doc.position_at(1, U16) == (0, 2)
    assert doc.position_at(1, U8) == (0, 4)


def test_positions_past_the_end_are_clamped():
    doc = Document("u", "python", 1, "ab\ncd")
    assert doc.offset_at(0, 50) == 2
    assert doc.offset_at(9, 0) == len(doc.text)
    assert doc.offset_at(-3, 0) == 0


def test_incremental_edit_and_reparse():
    doc = Document("u", "python", 1, "x = 1\ny = 2\n", parse)
    doc.apply_changes([((1, 4, 1, 5), "x + 1")], 2, U16)
    assert doc.text == "x = 1\ny = x + 1\n"
    assert doc.version == 2
    assert doc.tree.root_node.text.decode() == doc.text
    assert not doc.tree.root_node.has_error


def test_full_replacement_change():
    doc = Document("u", "python", 1, "a\n", parse)
    doc.apply_changes([(None, "b = 2\n")], 5)
    assert doc.text == "b = 2\n" and doc.line_count == 2


def test_store_reports_unopened_documents():
    store = DocumentStore()
    with pytest.raises(DocumentNotOpenError):
        store.get("file:///nope.py")
    assert store.find("file:///nope.py") is None


ALPHABET = st.sampled_from(["a", "b", " ", "\n", "\r\n", "\r", "é", "😀", "\u2028", "\t"])


def _utf16_position(text: str, offset: int) -> tuple[int, int]:
    """An independent model of LSP positions: split on LSP line breaks by hand."""
    line, col = 0, 0
    i = 0
    while i < offset:
        ch = text[i]
        if ch == "\r" and i + 1 < len(text) and text[i + 1] == "\n":
            if i + 1 < offset:
                line, col = line + 1, 0
                i += 2
                continue
            col += 1
        elif ch in "\r\n":
            line, col = line + 1, 0
        else:
            col += 2 if ord(ch) > 0xFFFF else 1
        i += 1
    return line, col


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join), st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.lists(ALPHABET, max_size=6).map("".join)), max_size=6))
def test_edits_match_an_independent_model(text, edits):
    doc = Document("u", "python", 0, text, parse)
    model = text
    for version, (a, b, new) in enumerate(edits, 1):
        start, end = sorted((min(a, len(model)), min(b, len(model))))
        # avoid positions inside a \r\n pair or a surrogate pair: LSP clients never send them
        if start and model[start - 1 : start + 1] == "\r\n" or end and model[end - 1 : end + 1] == "\r\n":
            continue
        (l1, c1), (l2, c2) = _utf16_position(model, start), _utf16_position(model, end)
        doc.apply_changes([((l1, c1, l2, c2), new)], version, U16)
        model = model[:start] + new + model[end:]
        assert doc.text == model
        assert [doc.line_start(line) for line in range(doc.line_count)] == _line_starts(model)
        assert doc.tree.root_node.end_byte == len(model.encode("utf-8"))
    for offset in range(len(model) + 1):
        if offset and model[offset - 1 : offset + 1] == "\r\n":
            continue
        assert doc.position_at(offset, U16) == _utf16_position(model, offset)


def test_many_random_edits_keep_the_tree_in_step():
    rng = random.Random(7)
    text = "def f(a):\n    return a\n" * 20
    doc = Document("u", "python", 0, text, parse)
    for version in range(1, 200):
        start = rng.randrange(len(doc.text) + 1)
        end = min(len(doc.text), start + rng.randrange(5))
        new = rng.choice(["", "x", "\n", "(", "    ", "é"])
        line, col = doc.position_at(start, U32)
        line2, col2 = doc.position_at(end, U32)
        doc.apply_changes([((line, col, line2, col2), new)], version, U32)
    fresh = parse(doc.text.encode())
    assert str(fresh.root_node) == str(doc.tree.root_node)


# -- the chunked store against a plain string ----------------------------------------

TEXT = st.lists(ALPHABET, max_size=40).map("".join)
METRICS = {CHARS: "utf-32-le", UTF16: "utf-16-le", UTF8: "utf-8"}


def _units(text: str, metric: int) -> int:
    return len(text.encode(METRICS[metric], "surrogatepass")) // (4 if metric == CHARS else 2 if metric == UTF16 else 1)


@contextlib.contextmanager
def tiny_chunks(leaf_chars: int = 3, block_leaves: int = 2):
    """Leaves of a few characters in blocks of a few leaves: every edit of a short text
    crosses leaves and blocks, splits and merges them."""
    with mock.patch.object(chunked_text, "LEAF_CHARS", leaf_chars), \
            mock.patch.object(chunked_text, "BLOCK_LEAVES", block_leaves):
        yield


@settings(max_examples=250, deadline=None)
@example("a\rb", 2, 2, [(2, 2, "\n")])  # a \n typed after a \r that ends a leaf
@example("ab\ncd", 2, 2, [(2, 2, "\r")])  # a \r typed before a \n that starts one
@example("a😀\r\né\u2028b" * 3, 2, 2, [(1, 9, ""), (0, 2, "\r")])
@given(TEXT, st.integers(2, 6), st.integers(2, 4),
       st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), TEXT.map(lambda t: t[:8])), max_size=8))
def test_chunked_text_answers_as_the_plain_string_does(text, leaf_chars, block_leaves, splices):
    chunks = ChunkedText.of(text, leaf_chars, block_leaves)
    plain = text
    for a, b, new in splices:
        start, end = sorted((min(a, len(plain)), min(b, len(plain))))
        chunks, plain = chunks.splice(start, end, new), plain[:start] + new + plain[end:]
        leaves = list(chunks.leaves())
        assert "".join(leaves) == plain and len(chunks) == len(plain)
        assert all(leaves) and not any(x.endswith("\r") and y.startswith("\n") for x, y in zip(leaves, leaves[1:]))
        starts = _line_starts(plain)
        assert [chunks.line_start(line) for line in range(chunks.line_count)] == starts
        for offset in range(len(plain) + 1):
            assert chunks.line_of(offset) == bisect.bisect_right(starts, offset) - 1
            for metric in METRICS:
                assert chunks.units_before(offset, metric) == _units(plain[:offset], metric)
            row_start = plain.rfind("\n", 0, offset) + 1
            assert chunks.point(offset) == (plain.count("\n", 0, offset), _units(plain[row_start:offset], UTF8))
        for metric in METRICS:
            for count in range(_units(plain, metric) + 2):  # a count inside a character: its start
                fits = max(i for i in range(len(plain) + 1) if _units(plain[:i], metric) <= count)
                assert chunks.offset_of_units(count, metric) == fits
        assert chunks.slice(start, start + len(new) + 2) == plain[start : start + len(new) + 2]
        assert chunks.text == plain


def test_a_snapshot_keeps_its_version_while_the_document_moves_on():
    with tiny_chunks():
        doc = Document("u", "python", 1, "a = 1\nb = 2\n" * 5)
        before = doc.snapshot()
        doc.apply_changes([((0, 0, 3, 0), "x")], 2)
        assert before.text == "a = 1\nb = 2\n" * 5 and before.version == 1
        assert before.position_at(6) == (1, 0) and before.offset_at(9, 0) == 54
        assert doc.text.startswith("xb = 2\na = 1") and doc.position_at(6) == (0, 6)


ENCODINGS = st.sampled_from([U8, U16, U32])
CODECS = {U8: "utf-8", U16: "utf-16", U32: "utf-32"}


@settings(max_examples=200, deadline=None)
@given(ENCODINGS, TEXT, st.data())
def test_edits_in_every_encoding_match_the_text_model(encoding, text, data):
    """Positions in each encoding's code units, anywhere on a line, past its end, inside a
    surrogate pair or a UTF-8 sequence, and reversed ranges: the server's text, its line
    index, its positions and its incrementally edited tree follow the independent model."""
    model = TextModel(CODECS[encoding])
    model.open("u", 0, text)
    with tiny_chunks():
        doc = Document("u", "python", 0, text, parse)
        for version in range(1, data.draw(st.integers(1, 8), label="edits") + 1):
            lines = model.line_units("u")
            points = []
            for _ in range(2):  # a line past the last one included
                line = data.draw(st.integers(0, len(lines)), label="line")
                points.append((line, data.draw(st.integers(0, (lines + [0])[line] + 2), label="character")))
            new = data.draw(TEXT.map(lambda t: t[:6]), label="new")
            change = ((*points[0], *points[1]), new)
            model.change("u", version, [change])
            doc.apply_changes([change], version, encoding)
            assert doc.text == model.text("u")
        plain = model.text("u")
        assert [doc.line_start(line) for line in range(doc.line_count)] == _line_starts(plain)
        for offset in range(len(plain) + 1):
            if not (offset and plain[offset - 1 : offset + 1] == "\r\n"):
                assert doc.offset_at(*doc.position_at(offset, encoding), encoding) == offset
        assert str(doc.tree.root_node) == str(parse(plain.encode("utf-8")).root_node)


def test_uri_to_path_decodes_file_uris_and_refuses_other_schemes(tmp_path):
    from gdg_lsp.documents import uri_to_path

    spaced = tmp_path / "a b" / "q.sql"
    assert uri_to_path(spaced.as_uri()) == spaced
    assert uri_to_path("file:///tmp/%C3%A9t%C3%A9.py") == Path("/tmp/été.py")
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("") is None and uri_to_path(None) is None
