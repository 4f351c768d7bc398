"""textDocument/hover on a name: its sort, attrs and where it was declared (on an analysis thread)."""

from __future__ import annotations

from lsprotocol import types

from gdg_lsp.server.handlers import handles


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @handles("hover", background=True)
    def hover(ls, params: types.HoverParams, doc) -> types.Hover | None:
        session = ls.session
        located = session.locate_in(doc, params.position.line, params.position.character)
        if located is None:
            return None
        analyzer, offset = located
        found = analyzer.binding_at(doc, offset, session.workspace_for(doc.uri))
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
