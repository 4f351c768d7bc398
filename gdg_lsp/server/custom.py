"""gdg/explain and gdg/status: the debug data behind a suggestion, for editors' commands."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from gdg_lsp import heap
from gdg_lsp.caches import all_stats
from gdg_lsp.server.handlers import handles, param, timings_payload
from gdg_lsp.server.scheduler import SUPERSEDED
from gdg_lsp.server.session import status_payload
from gdg_lsp.server.worker import ModelNotReady

log = logging.getLogger(__name__)


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def register(server) -> None:
    @server.feature("gdg/status")
    @handles("gdg/status", empty=dict)
    def status(ls, params: Any = None) -> dict:
        payload = status_payload(ls.session.worker.state)
        payload["lastSuggestion"] = ls.session.last_suggestion
        payload["worker"] = ls.session.worker.stats_payload()
        payload["reuse"] = ls.session.reuse.stats.payload()
        payload["caches"] = [stats.payload() for stats in all_stats()]
        payload["handlersMs"] = timings_payload()
        payload["analysis"] = ls.session.scheduler.stats.payload()
        payload["heap"] = heap.payload()
        payload["acceptance"] = ls.session.acceptance.payload(ls)
        return payload

    @server.feature("gdg/explain")
    @handles("gdg/explain", empty=lambda: {"error": "explain failed: the log has the details"})
    async def explain(ls, params: Any) -> dict:
        """params: {textDocument: {uri}, position: {line, character}, decode?: bool}"""
        session = ls.session
        document = param(params, "textDocument") or param(params, "text_document")
        position = param(params, "position")
        uri = param(document, "uri")
        line, character = param(position, "line"), param(position, "character", 0)
        if not isinstance(uri, str) or not _is_index(line) or not _is_index(character):
            raise JsonRpcInvalidParams("gdg/explain needs textDocument.uri (a string) and "
                                       "position.line and position.character (integers from 0)")
        doc = session.documents.find(uri)
        if doc is None:
            return {"error": f"{uri} is not open"}
        offset = doc.offset_at(line, character, session.encoding)
        snapshot = doc.snapshot()
        settings, workspace = session.settings_for(uri), session.workspace_for(uri)
        if not param(params, "decode", True) or session.worker.state.state != "ready":
            job = session.scheduler.submit(uri, "gdg/explain", lambda: _explain_hole(snapshot, offset, settings, workspace))
            report = await asyncio.wrap_future(job)
            if report is SUPERSEDED:
                return {"error": "superseded by a newer explain request for this document"}
            if session.worker.state.state != "ready":
                report["text"] += f"\n(model {session.worker.state.state}: {session.worker.state.message})"
            return report
        job = session.worker.submit("explain:" + uri, lambda service, cancel: service.complete(snapshot, offset, settings, cancel, measure_free_bits=True))
        try:
            suggestion = await asyncio.wrap_future(job.future)
        except asyncio.CancelledError:
            job.cancel.set()
            raise
        except ModelNotReady as err:
            return {"error": str(err)}
        if suggestion is None:
            return {"error": "superseded by a newer explain request for this document"}
        from gdg_lsp.explain import explain_suggestion  # loaded by the decode already

        return explain_suggestion(suggestion, settings)


def _explain_hole(snapshot, offset: int, settings, workspace) -> dict:
    """On an analysis thread: the analysis, and the first import of ``gdg_lsp.explain``
    (it loads XGrammar and torch, seconds the event loop must not wait for)."""
    from gdg_lsp.explain import explain_hole

    return explain_hole(snapshot, offset, settings, workspace)
