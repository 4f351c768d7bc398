"""The document store: positions in every encoding, edits, the line index, re-parsing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp.documents import Document, DocumentStore, PositionEncoding, _line_starts
from gdg_lsp.errors import DocumentNotOpenError
from gdg_lsp.languages.python.analyzer import parse

U8, U16, U32 = PositionEncoding.UTF8, PositionEncoding.UTF16, PositionEncoding.UTF32


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
        assert doc._starts == [0, *_line_starts(model)]
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


def test_uri_to_path_decodes_file_uris_and_refuses_other_schemes(tmp_path):
    from gdg_lsp.documents import uri_to_path

    spaced = tmp_path / "a b" / "q.sql"
    assert uri_to_path(spaced.as_uri()) == spaced
    assert uri_to_path("file:///tmp/%C3%A9t%C3%A9.py") == Path("/tmp/été.py")
    assert uri_to_path("untitled:Untitled-1") is None
    assert uri_to_path("") is None and uri_to_path(None) is None
