"""textDocument/didOpen, didChange, didClose: the document store and nothing else.

A keystroke costs one edit of a chunk of the document's text and its line
counts, whatever the document's size (``chunked_text.py``; the re-parse waits for
the first request that needs it, on an analysis thread); diagnostics are only
scheduled (debounced).
"""

from __future__ import annotations

import logging

from lsprotocol import types

from gdg_lsp import languages
from gdg_lsp.documents import StoreFull
from gdg_lsp.server import acceptance, diagnostics, inline_completion, typing_point, work_ahead
from gdg_lsp.server.handlers import handles

log = logging.getLogger(__name__)


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @handles("didOpen")
    def did_open(ls, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if ls.session.documents.find(item.uri) is not None:
            # opened again without a close (the text may differ at the same version): what was
            # planned, suggested or worked ahead for the old text is dropped, as at a close
            _forget(ls, item.uri)
        try:
            ls.session.documents.open(item.uri, item.language_id, item.version, item.text)
        except StoreFull as err:
            ls.session.refuse_document(item.uri, str(err))
            return
        diagnostics.schedule(ls, item.uri)
        work_ahead.opened(ls, item.uri, item.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @handles("didChange")
    def did_change(ls, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = ls.session.documents.find(uri)
        if doc is None:
            if not ls.session.refused_document(uri):
                log.warning("didChange for %s, which is not open: ignored (send didOpen first)", uri)
            return
        changes = []
        for change in params.content_changes:
            rng = getattr(change, "range", None)
            if rng is None:
                changes.append((None, change.text))
            else:
                changes.append(((rng.start.line, rng.start.character, rng.end.line, rng.end.character), change.text))
        length = doc.length
        edits = doc.apply_changes(changes, params.text_document.version, ls.session.encoding)
        followed = []  # (start, end replaced, text) in the text before each: the suggestions shown follow them
        for edit, (rng, text) in zip(edits, changes):
            replaced = length if rng is None else edit.old_end
            followed.append((edit.start, replaced, text))
            length += len(text) - (replaced - edit.start)
        acceptance.edited(ls, uri, followed)
        if edits:  # the word there is being typed: its diagnostic waits (server/typing_point.py)
            typing_point.edited(ls.session.typing_points, uri, doc.version, edits[-1].new_end)
        if ls.session.workspace.recent is not None:  # the lines around the last change, for other files' prompts
            ls.session.workspace.recent.note(doc, changes[-1][0][0] if changes and changes[-1][0] else 0)
        diagnostics.schedule(ls, uri)
        if edits:  # the cursor is where the last change ended
            work_ahead.schedule(ls, uri, edits[-1].new_end, min(edit.start for edit in edits))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @handles("didClose")
    def did_close(ls, params: types.DidCloseTextDocumentParams) -> None:
        _forget(ls, params.text_document.uri)
        diagnostics.clear(ls, params.text_document.uri)


def _forget(ls, uri: str) -> None:
    """Everything held for the open document ``uri`` is let go (a close, or an open over it)."""
    acceptance.closed(ls, uri)  # while its text is there: accepted ranges are counted as they stand
    ls.session.documents.close(uri)
    ls.session.scheduler.forget(uri)
    ls.session.reuse.forget(uri)
    inline_completion.forget(ls, uri)
    if ls.session.workspace.recent is not None:
        ls.session.workspace.recent.forget(uri)
    work_ahead.forget(ls, uri)
    languages.forget(uri)
    ls.session.typing_points.pop(uri, None)
