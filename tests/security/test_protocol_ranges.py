"""Attack: a didChange batch holding one range no position can have.

pygls used to reject the whole notification (its params fail validation), so every
change in the batch was lost and the server's text differed from the editor's from
then on: every later answer was about a text nobody had. The server now clamps such
numbers (as editors do), applies the rest of the batch and logs a warning; the
independent text model (``bench/text_model.py``) says what the text must be.
"""

from __future__ import annotations

import logging

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.text_model import TextModel

OPTIONS = {"model": "/nonexistent/x.gguf", "diagnostics": False}
TEXT = "alpha = 1\nbeta = 2\ngamma = 3\n"


def _change(sl, sc, el, ec, text):
    return {"range": {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}, "text": text}


async def test_a_batch_with_invalid_ranges_is_clamped_and_applied_whole(caplog):
    uri = "file:///ranges/a.py"
    batch = [
        _change(0, 0, 0, 5, "first"),              # valid
        _change(-1, 0, 0, 0, "[negative line]"),   # clamped to 0
        _change(1, -7, 1, 4, "BETA"),              # negative character
        _change(2, 2**31 + 5, 2**40, 0, "<end>"),  # past uinteger: the end
        _change(1, 1.5, 1, 2.9, "~"),              # fractions are cut
        _change(1, 0, 1, 0, "kept "),              # valid, after all of them
    ]
    model = TextModel("utf-16")
    model.open(uri, 1, TEXT)
    model.change(uri, 2, [((c["range"]["start"]["line"], c["range"]["start"]["character"],
                            c["range"]["end"]["line"], c["range"]["end"]["character"]), c["text"]) for c in batch])
    caplog.set_level(logging.WARNING, logger="gdg_lsp")
    async with InProcessServer(initialization_options=OPTIONS) as server:
        server.open(uri, TEXT)
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": batch})
        assert server.text(uri) == model.text(uri)
        assert server.server.session.documents.find(uri).version == 2
        # later edits still land where the editor puts them
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                                 "contentChanges": [_change(0, 0, 0, 0, "# ")]})
        assert server.text(uri) == "# " + model.text(uri)
    clamped = [r.getMessage() for r in caplog.records if "clamped" in r.getMessage()]
    assert len(clamped) == 4, clamped


async def test_an_unreadable_change_is_skipped_and_the_others_applied(caplog):
    uri = "file:///ranges/b.py"
    batch = [_change(0, 0, 0, 0, "A"), {"range": {"start": {"line": "x", "character": 0}}, "text": "lost"},
             {"range": _change(0, 0, 0, 0, "")["range"]}, _change(0, 1, 0, 1, "B")]
    caplog.set_level(logging.WARNING, logger="gdg_lsp")
    async with InProcessServer(initialization_options=OPTIONS) as server:
        server.open(uri, TEXT)
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": batch})
        assert server.text(uri) == "AB" + TEXT
    assert sum("skipped" in r.getMessage() for r in caplog.records) == 2
