"""Fragment files in the editor: loaded at ``initialized``, reloaded one by one, problems shown on them.

The library (service/fragment_library.py) reads the workspace's ``.gdg/fragments/``
and ``gdg.fragments.paths``; this module runs it off the event loop and turns
each file's state into diagnostics on that file: a file that does not parse, a
language it cannot define, a fragment that failed its gate. A file that loads
gets its diagnostics cleared. A saved or watched change to one file reloads that
file alone; a change of ``gdg.fragments.paths`` reads them all again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from lsprotocol import types

from gdg_lsp.server import diagnostics
from gdg_lsp.service.fragment_library import FileState

log = logging.getLogger(__name__)

WATCHED_GLOB = "**/.gdg/fragments/**/*.toml"


def to_diagnostics(state: FileState) -> list[types.Diagnostic]:
    """One diagnostic per problem, on its line (the first line for a problem of the whole file)."""
    out = []
    for problem in state.problems:
        line = max(problem.line - 1, 0)
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, max(problem.column - 1, 0)), types.Position(line + 1, 0)),
            message=problem.message, severity=types.DiagnosticSeverity.Error, source="gdg-lsp fragments"))
    return out


def publish(ls, states: Sequence[FileState]) -> None:
    for state in states:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=state.path.resolve().as_uri() if state.path.exists() else state.path.absolute().as_uri(),
            diagnostics=to_diagnostics(state)))
    active = sum(s.state == "active" for s in states)
    failed = [s.path.name for s in states if s.state == "failed"]
    if states:
        log.info("fragment files: %d loaded, %d refused%s", active, len(failed),
                 f" ({', '.join(failed[:5])})" if failed else "")


def _reschedule(ls) -> None:
    """Open documents may now have holes (or lose them): their diagnostics are computed again."""
    for doc in list(ls.session.documents):
        diagnostics.schedule(ls, doc.uri)


async def load(ls) -> None:
    """Read every fragment file of the workspace and the settings (off the event loop)."""
    session = ls.session
    try:
        states = await asyncio.to_thread(session.fragments.sync, list(session.workspace.roots),
                                         list(session.settings.fragments.paths))
    except Exception:
        log.exception("loading fragment files failed (built-in fragments are unaffected)")
        return
    publish(ls, states)
    _reschedule(ls)


async def refresh(ls, paths: Iterable[Path]) -> None:
    """Reload the fragment files among ``paths`` (other paths are not the library's)."""
    session = ls.session
    changed: list[FileState] = []
    for path in paths:
        if path.suffix != ".toml":
            continue
        try:
            changed += await asyncio.to_thread(session.fragments.reload, path)
        except Exception:
            log.exception("reloading %s failed (the fragments loaded before stay in use)", path)
    if changed:
        publish(ls, changed)
        _reschedule(ls)
