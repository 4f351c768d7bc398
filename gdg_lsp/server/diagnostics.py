"""Diagnostics: references to names that do not exist, published a moment after typing stops.

The analysis runs on an analysis thread (``server/scheduler.py``): a newer run for
the same document supersedes one still waiting, and findings for a version the
document has left are never published. Diagnostics equal to the ones last published for the
document (same ranges, messages, codes and data) are not published again: re-published after
every edit, identical ones made Neovim's sign column jump (it hides them while typing)."""

from __future__ import annotations

import logging
import time

from lsprotocol import types

from gdg_lsp.languages.base import Finding
from gdg_lsp.server import problems, typing_point

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
    if not session.settings_for(uri).diagnostics or session.loop is None:
        return
    timers = session.diagnostic_timers
    if (handle := timers.pop(uri, None)) is not None:
        handle.cancel()
    timers[uri] = session.loop.call_later(DEBOUNCE_SECONDS, publish, ls, uri)


def clear(ls, uri: str) -> None:
    if (handle := ls.session.diagnostic_timers.pop(uri, None)) is not None:
        handle.cancel()
    ls.session.published_diagnostics.pop(uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _shape(diagnostics: list[types.Diagnostic]) -> tuple:
    return tuple((d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message,
                  d.severity, d.code, repr(sorted(d.data.items())) if isinstance(d.data, dict) else repr(d.data))
                 for d in diagnostics)


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
    """Analyse the document on an analysis thread (``server/scheduler.py``); publish the
    findings on the loop, unless the text moved on meanwhile (the edit scheduled another run)."""
    session = ls.session
    session.diagnostic_timers.pop(uri, None)
    doc = session.documents.find(uri)
    if doc is None:
        return
    snapshot = doc.snapshot()
    job = session.scheduler.submit(uri, "diagnostics", lambda: _findings(ls, snapshot))
    job.add_done_callback(lambda done: session.call_soon(_deliver, ls, doc, snapshot, done))


def _findings(ls, snapshot) -> typing_point.Held | None:
    session = ls.session
    analyzer = session.analyzer_of(snapshot)
    if analyzer is None:
        return None
    try:
        workspace = session.workspace_for(snapshot.uri)
        findings = analyzer.diagnostics(snapshot, workspace)
        return typing_point.hold_back(session.typing_points, snapshot, analyzer, workspace, findings)
    except RecursionError as err:
        problems.report_limit(ls, "diagnostics", err)
        return None
    except Exception:
        log.exception("diagnostics failed for %s", snapshot.uri)
        return None
    finally:
        problems.report(ls, snapshot.language_id, snapshot.uri)


def _deliver(ls, doc, snapshot, done) -> None:
    held = done.result() if not done.cancelled() and done.exception() is None else None
    if not isinstance(held, typing_point.Held):
        return  # superseded, no analyzer, or failed (logged)
    session = ls.session
    if session.documents.find(snapshot.uri) is not doc or doc.version != snapshot.version:
        return  # the text moved on; the next schedule publishes fresh results
    if held.recheck_at is not None and snapshot.uri not in session.diagnostic_timers and session.loop is not None:
        # the word being typed, looked at again once the pause says the user left it
        delay = max(0.0, held.recheck_at - time.monotonic())
        session.diagnostic_timers[snapshot.uri] = session.loop.call_later(delay, publish, ls, snapshot.uri)
    diagnostics = [to_lsp(snapshot, f, session.encoding) for f in held.shown]
    published, shape = session.published_diagnostics, _shape(diagnostics)
    if published.get(snapshot.uri) == shape:
        return  # what the editor shows already
    published.put(snapshot.uri, shape)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=snapshot.uri, version=snapshot.version, diagnostics=diagnostics))
