"""textDocument/inlineCompletion: the ghost text.

The request is analysed and decoded on the decode worker against a snapshot
of the document; a newer request for the same document supersedes it, and
``$/cancelRequest`` stops it before its next token.
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from gdg_lsp.server import problems
from gdg_lsp.server.handlers import handles
from gdg_lsp.server.worker import ModelNotReady

log = logging.getLogger(__name__)


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @handles("inline completion", empty=lambda: types.InlineCompletionList(items=[]))
    async def inline_completion(ls, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        session = ls.session
        empty = types.InlineCompletionList(items=[])
        position = params.position
        located = session.locate(params.text_document.uri, position.line, position.character)
        if located is None or not session.settings.inline:
            return empty
        doc, _, offset = located
        snapshot = doc.snapshot()
        settings = session.settings
        job = session.worker.submit(doc.uri, lambda service, cancel: service.complete(snapshot, offset, settings, cancel))
        try:
            suggestion = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.cancel.set()  # $/cancelRequest: the decode stops before its next token
            raise
        except ModelNotReady as err:
            log.info("no inline suggestion: %s", err)
            return empty
        finally:
            problems.report(ls, doc.language_id)
        if suggestion is None:
            return empty  # superseded by a newer request for this document
        problems.report_compile_errors(ls, suggestion)
        info = {"uri": doc.uri, "version": snapshot.version, **suggestion.summary()}
        session.last_suggestion = info
        ls.protocol.notify("gdg/suggestion", info)
        if not suggestion.text:
            return empty
        current = doc.version == snapshot.version
        start = doc.position_at(suggestion.start, session.encoding) if current else (position.line, position.character)
        items = []
        # every candidate, best first (gdg.candidates): the editor cycles through them
        for candidate in suggestion.candidates or [suggestion]:
            end = doc.position_at(candidate.end, session.encoding) if current else start
            items.append(types.InlineCompletionItem(
                insert_text=candidate.text, range=types.Range(types.Position(*start), types.Position(*end))))
        return types.InlineCompletionList(items=items)
