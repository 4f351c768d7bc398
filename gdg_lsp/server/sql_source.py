"""A SQL file's data source, shown and switched: ``gdg/sqlSource`` and "Choose the SQL data source".

``gdg/sqlSource`` (params ``{textDocument: {uri}}``) answers which database a
SQL file's names come from (``languages/sql/sources.py``), for the editors'
status items. The code actions of kind ``source.gdg.sqlDataSource`` offer
every source the file could use (named ``gdg.sql.sources`` entries, the
databases of ``gdg.sql.connections``, the folders that hold schema files);
choosing one writes or replaces the ``-- gdg: source=NAME`` / ``-- gdg:
schema=PATH`` line at the top of the file (a text edit the user sees and can
undo). They are listed when a request asks for that kind (or ``source``);
when the file has a data source diagnostic ("no data source found", a rule
that failed), the same choices are offered as quick fixes for it.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from gdg_lsp.documents import uri_to_path
from gdg_lsp.server.handlers import document_uri, handles

KIND = "source.gdg.sqlDataSource"
TITLE = "Choose the SQL data source for this file"
MAX_ACTIONS = 40


def _is_sql(ls, doc) -> bool:
    analyzer = ls.session.analyzer_of(doc)
    return analyzer is not None and analyzer.name == "sql"


def describe(ls, snapshot) -> dict[str, Any] | None:
    """The payload of ``gdg/sqlSource`` for a document's snapshot (None: not SQL)."""
    if not _is_sql(ls, snapshot):
        return None
    analyzer = ls.session.analyzer_of(snapshot)
    resolution = analyzer.resolution(snapshot, ls.session.workspace_for(snapshot.uri))
    return {"label": resolution.source.label, "rule": resolution.source.rule, "dialect": resolution.dialect.name,
            "description": resolution.describe(), "tables": len(resolution.tables),
            "problems": [note.message for note in resolution.notes if note.severity != "information"]}


def _directive_edit(doc, directive: str, encoding) -> types.TextEdit:
    """Replace the file's ``-- gdg: source=/schema=`` line, or insert one at the top."""
    from gdg_lsp.languages.sql.sources import header_directives

    for line, pairs in header_directives(doc.text):
        if "source" in pairs or "schema" in pairs:
            kept = " ".join(f"{k}={v}" for k, v in pairs.items() if k not in ("source", "schema"))
            # the line's end from the text itself: code actions run on a snapshot
            start = doc.offset_at(line, 0, encoding)
            newline = doc.text.find("\n", start)
            end = len(doc.text) if newline < 0 else newline
            start_pos = types.Position(line, 0)
            end_pos = types.Position(*doc.position_at(end, encoding))
            return types.TextEdit(types.Range(start_pos, end_pos), f"-- gdg: {directive}" + (f" {kept}" if kept else ""))
    return types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)), f"-- gdg: {directive}\n")


def actions(ls, doc, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The "choose a data source" actions a code action request may get."""
    only = params.context.only
    # asked for by kind only (a request without `only` would list every folder in every menu);
    # the quick fixes come with the "no data source found" diagnostic
    source_wanted = bool(only) and any(k and (KIND == k or KIND.startswith(f"{k}.")) for k in only)
    quickfix = types.CodeActionKind.QuickFix.value
    fix_wanted = not only or any(not k or quickfix == k or quickfix.startswith(f"{k}.") for k in only)
    about = [d for d in params.context.diagnostics if d.source == "gdg-lsp" and d.code == "sql.data-source"]
    if not (source_wanted or (fix_wanted and about)) or not _is_sql(ls, doc):
        return []
    from gdg_lsp.languages.sql.catalog import catalog_for
    from gdg_lsp.languages.sql.sources import choices

    session = ls.session
    workspace = session.workspace_for(doc.uri)
    catalog = catalog_for(workspace.roots, workspace.settings)
    found = []
    for title, directive in choices(catalog, workspace.settings, uri_to_path(doc.uri))[:MAX_ACTIONS]:
        edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            edits=[_directive_edit(doc, directive, session.encoding)])])
        if source_wanted:
            found.append(types.CodeAction(title=f"{TITLE}: {title}", kind=KIND, edit=edit))
        if fix_wanted and about:
            found.append(types.CodeAction(title=f"Use the SQL data source {title}", kind=types.CodeActionKind.QuickFix,
                                          diagnostics=about, edit=edit))
    return found


def register(server) -> None:
    @server.feature("gdg/sqlSource")
    @handles("sqlSource", background=True, uri_of=document_uri)
    def sql_source(ls, params: Any, snapshot) -> dict[str, Any] | None:
        # on an analysis thread: resolving a source may read schema files or a database
        return describe(ls, snapshot)
