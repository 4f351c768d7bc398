"""Snippets of recently edited open documents in the prompt (``service/recent.py``): the other
documents of the language only, most recent first, within their share, stable while typing
in the document asked about, noted by didChange and forgotten at didClose."""

from __future__ import annotations

import attrs

from gdg_lsp.documents import Document
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service import prompt as prompts
from gdg_lsp.service import recent
from gdg_lsp.settings import Settings

HELPER = "".join(f"# filler {i}\n" for i in range(30)) + "def area(width, height):\n    return width * height\n"
OTHER = "def perimeter(w, h):\n    return 2 * (w + h)\n"
MAIN = "def run(w, h):\n    "


def _doc(uri: str, text: str, language: str = "python") -> Document:
    return Document(uri, language, 1, text, parse if language == "python" else None)


def test_the_other_documents_latest_edits_most_recent_first():
    ring = recent.RecentEdits()
    helper, other, main = _doc("file:///helper.py", HELPER), _doc("file:///other.py", OTHER), _doc("file:///main.py", MAIN)
    query = _doc("file:///q.sql", "SELECT name FROM users;\n", "sql")
    ring.note(helper, 31)  # the edit was on `return width * height`
    ring.note(query, 0)
    ring.note(other, 1)
    ring.note(main, 1)
    text = ring.context(main.uri, "python", 10_000)
    chunks = text.rstrip("\n").split("\n\n")
    assert chunks[0] == OTHER.strip("\n")  # most recent first
    assert chunks[1].endswith("def area(width, height):\n    return width * height")
    # the lines around the edit (the file's last ones here, its final line break aside), not the file
    assert recent.CHUNK_LINES - 1 <= len(chunks[1].splitlines()) <= recent.CHUNK_LINES
    assert "# filler 0\n" not in chunks[1]
    assert "SELECT" not in text and "def run" not in text  # another language; the document itself
    # within the budget: whole chunks only
    assert ring.context(main.uri, "python", len(OTHER) + 2) == OTHER.strip("\n") + "\n\n"
    assert ring.context(main.uri, "python", 10) == ""
    ring.forget(other.uri)
    assert OTHER.strip("\n") not in ring.context(main.uri, "python", 10_000)


def test_the_prompt_starts_with_them_and_stays_the_same_while_typing(smol_vocab):
    ring = recent.RecentEdits()
    ring.note(_doc("file:///other.py", OTHER), 1)
    workspace = WorkspaceContext(settings=Settings(), recent=ring)
    analyzer = PythonAnalyzer()
    texts = []
    for typed in ("", "p", "p = perimeter("):
        text = MAIN + typed
        doc = _doc("file:///main.py", text)
        ring.note(doc, 1)  # typing here notes this document's edits: they are not in its own prompt
        hole = analyzer.hole_at(doc.snapshot(), len(text), workspace)
        prompt, _ = prompts.build(smol_vocab, None, doc.snapshot(), hole, analyzer, Settings(), workspace)
        texts.append(smol_vocab.decode(prompt.ids))
    assert all(t.startswith(OTHER.strip("\n") + "\n\ndef run(w, h):") for t in texts), texts[0]
    off = attrs.evolve(Settings(), definitions=False)
    doc = _doc("file:///main.py", MAIN)
    hole = analyzer.hole_at(doc.snapshot(), len(MAIN), workspace)
    prompt, _ = prompts.build(smol_vocab, None, doc.snapshot(), hole, analyzer, off, workspace)
    assert smol_vocab.decode(prompt.ids).startswith("def run")


async def test_did_change_notes_the_edit_and_did_close_forgets_it():
    from gdg_lsp.bench.inprocess import InProcessServer
    from gdg_lsp.server import create_server

    server_obj = create_server(dev=True)
    async with InProcessServer(server=server_obj, initialization_options={}) as server:
        uri = "file:///edited.py"
        server.open(uri, OTHER)
        server.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 1, "character": 4}, "end": {"line": 1, "character": 4}},
                                "text": "x = 1\n    "}]})
        await server.settle(0.2)
        ring = server_obj.session.workspace.recent
        assert "    x = 1\n    return 2 * (w + h)" in ring.context("file:///main.py", "python", 10_000)
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        await server.settle(0.2)
        assert ring.context("file:///main.py", "python", 10_000) == ""
