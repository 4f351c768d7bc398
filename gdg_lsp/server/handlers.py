"""One wrapper for every LSP method handler: failures, limits, cancellation, timing.

``@handles("hover", empty=lambda: None)`` around a handler (sync or async) means:

- an exception inside it is logged with its traceback, told to the user once per
  kind (``problems.report_failure``), and the request is answered with ``empty()``:
  a bug in one analyzer never leaves a client waiting or takes the server down;
- a position past one of the server's limits (``NestingLimitError``), or code
  nested deeper than the analysis can follow (``RecursionError``: its traceback
  would be thousands of lines per request), is refused in one line
  (``problems.report_limit``);
- ``$/cancelRequest`` (the handler's task cancelled) and JSON-RPC errors meant for the
  client (``JsonRpcInvalidParams``...) propagate, as pygls expects;
- the time each call took is kept per method (bounded), and ``gdg/status``
  reports its p50/p95/max (``timings_payload``).

``@handles("hover", background=True)`` around ``fn(ls, params, snapshot)`` runs
the handler's work off the event loop: the wrapper finds the document named by
``params.text_document.uri`` and takes its snapshot on the loop, then ``fn``
runs on an analysis thread (``server/scheduler.py``: one document's jobs in
order, a newer request of the same kind for the same document supersedes the
older one, which is answered with ``empty()``). ``fn`` sees only the snapshot
(never the live document). A result computed for a version the document has
since left is dropped: the request is answered with ``moved()`` (``empty()``
unless given; completion answers "incomplete" so the client asks again).
``uri_of`` reads the document's URI from params of another shape (a ``gdg/…``
request's plain dict).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from pygls.exceptions import JsonRpcException

from gdg_lsp.errors import NestingLimitError
from gdg_lsp.latency import summary_ms
from gdg_lsp.server import problems
from gdg_lsp.server.scheduler import SUPERSEDED

TIMINGS_KEPT = 1000
"""Durations kept per method (the most recent ones)."""

_timings: defaultdict[str, deque[float]] = defaultdict(lambda: deque(maxlen=TIMINGS_KEPT))


def handles(what: str, empty: Callable[[], Any] = lambda: None, *, background: bool = False,
            moved: Callable[[], Any] | None = None,
            uri_of: Callable[[Any], Any] | None = None) -> Callable[[Callable], Callable]:
    def wrap(fn: Callable) -> Callable:
        if background:
            return _in_background(what, fn, empty, moved or empty, uri_of or _text_document_uri)
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(ls, params: Any) -> Any:
                with _Guard(ls, what, empty) as guard:
                    return await fn(ls, params)
                return guard.answer

            return run_async

        @functools.wraps(fn)
        def run(ls, params: Any) -> Any:
            with _Guard(ls, what, empty) as guard:
                return fn(ls, params)
            return guard.answer

        return run

    return wrap


class _Guard:
    """Times a handler's call and turns its failure into ``answer`` (``empty()``, the
    failure logged and said once). Cancellation and JSON-RPC errors meant for the client
    pass through. One guard serves the sync, async and background handlers alike."""

    def __init__(self, ls: Any, what: str, empty: Callable[[], Any]) -> None:
        self.ls, self.what, self.empty = ls, what, empty
        self.answer: Any = None

    def __enter__(self) -> "_Guard":
        self.began = time.perf_counter()
        return self

    def __exit__(self, kind: type | None, err: BaseException | None, _tb: Any) -> bool:
        _timings[self.what].append(time.perf_counter() - self.began)
        if err is None or isinstance(err, (asyncio.CancelledError, JsonRpcException)) or not isinstance(err, Exception):
            return False
        self.answer = _failed(self.ls, self.what, err, self.empty)
        return True


def _text_document_uri(params: Any) -> Any:
    return params.text_document.uri


def param(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` in a custom (``gdg/…``) request's params: pygls hands them over as a plain
    dict or as an attribute object, depending on how the client wrote them."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def document_uri(params: Any) -> Any:
    """``params.textDocument.uri`` of a custom request (None when it has none)."""
    return param(param(params, "textDocument"), "uri")


def _in_background(what: str, fn: Callable, empty: Callable[[], Any], moved: Callable[[], Any],
                   uri_of: Callable[[Any], Any]) -> Callable:
    @functools.wraps(fn)
    async def run_background(ls, params: Any) -> Any:
        with _Guard(ls, what, empty) as guard:
            uri = uri_of(params)
            session = ls.session
            doc = session.documents.find(uri) if isinstance(uri, str) else None
            if doc is None:
                return empty()
            snapshot = doc.snapshot()
            result = await asyncio.wrap_future(session.scheduler.submit(uri, what, lambda: fn(ls, params, snapshot)))
            if result is SUPERSEDED:
                return empty()
            if session.documents.find(uri) is not doc or doc.version != snapshot.version:
                return moved()  # computed for a text the client no longer has
            return result
        return guard.answer

    return run_background


def _failed(ls, what: str, err: Exception, empty: Callable[[], Any]) -> Any:
    if isinstance(err, (NestingLimitError, RecursionError)):
        problems.report_limit(ls, what, err)
    else:
        problems.report_failure(ls, what, err)
    return empty()


def timings_payload() -> dict[str, dict[str, Any]]:
    """``{method: {"n", "p50", "p95", "max"}}`` in milliseconds, for ``gdg/status``."""
    return {what: summary_ms(list(kept)) for what, kept in sorted(_timings.items())}
