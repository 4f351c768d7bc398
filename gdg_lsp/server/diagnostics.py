"""Diagnostics: references to names that do not exist, published a moment after typing stops."""

from __future__ import annotations

import logging

from lsprotocol import types

from gdg_lsp.languages.base import Finding
from gdg_lsp.server import problems

log = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.35
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}

def schedule(ls, uri: str) -> None:
    session = ls.session
    if not session.settings.diagnostics or session.loop is None:
        return
    timers = session.diagnostic_timers
    if (handle := timers.pop(uri, None)) is not None:
        handle.cancel()
    timers[uri] = session.loop.call_later(DEBOUNCE_SECONDS, publish, ls, uri)


def clear(ls, uri: str) -> None:
    if (handle := ls.session.diagnostic_timers.pop(uri, None)) is not None:
        handle.cancel()
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def to_lsp(doc, finding: Finding, encoding) -> types.Diagnostic:
    start = doc.position_at(finding.start, encoding)
    end = doc.position_at(finding.end, encoding)
    return types.Diagnostic(
        range=types.Range(types.Position(*start), types.Position(*end)),
        message=finding.message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        source="gdg-lsp",
        data=dict(finding.data) if finding.data else None,
    )


def publish(ls, uri: str) -> None:
    session = ls.session
    session.diagnostic_timers.pop(uri, None)
    doc = session.documents.find(uri)
    if doc is None:
        return
    analyzer = session.analyzer_for(doc.language_id, doc.text)
    if analyzer is None:
        return
    snapshot = doc.snapshot()
    try:
        findings = analyzer.diagnostics(snapshot, session.workspace)
    except Exception:
        log.exception("diagnostics failed for %s", uri)
        return
    finally:
        problems.report(ls, doc.language_id)
    if doc.version != snapshot.version:
        return  # the text moved on; the next schedule publishes fresh results
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=snapshot.version,
        diagnostics=[to_lsp(doc, f, session.encoding) for f in findings]))
