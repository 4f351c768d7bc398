"""textDocument/hover on a name: its sort, attrs and where it was declared."""

from __future__ import annotations

import logging

from lsprotocol import types

log = logging.getLogger(__name__)


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: types.HoverParams) -> types.Hover | None:
        session = ls.session
        doc = session.documents.find(params.text_document.uri)
        if doc is None:
            return None
        analyzer = session.analyzer_for(doc.language_id, doc.text)
        if analyzer is None:
            return None
        offset = doc.offset_at(params.position.line, params.position.character, session.encoding)
        try:
            found = analyzer.binding_at(doc.snapshot(), offset, session.workspace)
        except Exception:
            log.exception("hover failed at %s:%s", doc.uri, offset)
            return None
        if found is None:
            return None
        binding, start, end = found
        lines = [f"**{binding.name}** — {binding.sort}"]
        for key, value in binding.attrs.items():
            if value not in (None, "", False):
                lines.append(f"- {key}: `{value}`")
        if binding.origin is not None:
            where = "this file" if binding.origin.uri == doc.uri else binding.origin.uri
            lines.append(f"\ndeclared in {where}, line {binding.origin.line + 1}")
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(lines)),
            range=types.Range(types.Position(*doc.position_at(start, session.encoding)),
                              types.Position(*doc.position_at(end, session.encoding))),
        )
