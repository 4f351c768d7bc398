"""textDocument/hover on a name: its sort, attrs and where it was declared."""

from __future__ import annotations

import logging

from lsprotocol import types

log = logging.getLogger(__name__)


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls, params: types.HoverParams) -> types.Hover | None:
        session = ls.session
        located = session.locate(params.text_document.uri, params.position.line, params.position.character)
        if located is None:
            return None
        doc, analyzer, offset = located
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
        origin = binding.origin
        if origin is not None and origin.uri is None and origin.detail:
            lines.append(f"\nfrom {origin.detail}")  # a tool's own description (`git help -a`), no file
        elif origin is not None:
            where = "this file" if origin.uri == doc.uri else origin.uri
            lines.append(f"\ndeclared in {where}, line {origin.line + 1}"
                         + (f" ({origin.detail})" if origin.detail and origin.uri != doc.uri else ""))
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(lines)),
            range=types.Range(types.Position(*doc.position_at(start, session.encoding)),
                              types.Position(*doc.position_at(end, session.encoding))),
        )
