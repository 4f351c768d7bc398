"""textDocument/codeAction: quick fixes for names that do not exist.

A diagnostic of ours whose ``data`` carries a ``replacement`` (the closest name
that does exist where the reference is, see ``languages/suggest.py``) becomes a
preferred quick fix. Diagnostics come back from the client as it last saw them:
a fix is only offered while the text under the range is still the name the
diagnostic was about, so a stale diagnostic can never rewrite other text.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from gdg_lsp.server import open_fixes, sql_source
from gdg_lsp.server.handlers import handles

log = logging.getLogger(__name__)


def _replacement(diagnostic: types.Diagnostic) -> tuple[str, str] | None:
    data: Any = diagnostic.data
    if diagnostic.source != "gdg-lsp" or not isinstance(data, dict):
        return None
    name, replacement = data.get("name"), data.get("replacement")
    if not isinstance(name, str) or not isinstance(replacement, str) or not replacement or replacement == name:
        return None
    return name, replacement


def quick_fixes(doc, diagnostics: list[types.Diagnostic], encoding) -> list[types.CodeAction]:
    actions = []
    for diagnostic in diagnostics:
        found = _replacement(diagnostic)
        if found is None:
            continue
        name, replacement = found
        rng = diagnostic.range
        start = doc.offset_at(rng.start.line, rng.start.character, encoding)
        end = doc.offset_at(rng.end.line, rng.end.character, encoding)
        if doc.text[start:end] != name:
            continue  # the text moved on since the diagnostic was published
        edit = types.TextEdit(range=rng, new_text=replacement)
        actions.append(types.CodeAction(
            title=f"Change '{name}' to '{replacement}'",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=True,
            edit=types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
                edits=[edit])]),
        ))
    return actions


def register(server) -> None:
    open_fixes.register(server)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, sql_source.KIND,
                                                   open_fixes.JQ_INPUT_KIND]),
    )
    @handles("code action", background=True)
    def code_action(ls, params: types.CodeActionParams, doc) -> list[types.CodeAction] | None:
        found: list[types.CodeAction] = []
        try:  # the SQL data source choices (server/sql_source.py) filter by `only` themselves
            found += sql_source.actions(ls, doc, params)
        except Exception:  # the quick fixes below still answer
            log.exception("SQL data source actions failed for %s", doc.uri)
        try:  # where Γ is open: name a jq input, add a program to gdg.shell.tools (they filter by `only`)
            found += open_fixes.actions(ls, doc, params)
        except Exception:
            log.exception("open-position actions failed for %s", doc.uri)
        quickfix = types.CodeActionKind.QuickFix.value
        only = params.context.only  # a filter: 'quickfix' or a parent kind of it
        if only and not any(not k or quickfix == k or quickfix.startswith(f"{k}.") for k in only):
            return found or None
        return quick_fixes(doc, list(params.context.diagnostics), ls.session.encoding) + found
