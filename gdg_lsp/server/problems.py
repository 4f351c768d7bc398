"""Workspace problems the user must hear about: each once, as window/showMessage and in the log.

The analyzers keep serving when a source of names is broken (a schema file
that is not a database, a PostgreSQL server that is down or hangs, an include
folder that does not exist): they answer from what they could read. Nothing
told the user why names were missing; this module does, once per distinct
problem, after the analysis that found it. Each language that has such
sources has one function here (``SOURCES``); a problem that is gone and comes
back is shown again.

Names a source read but left out of Γ (``words.REJECTIONS``: a JSON key with a
line break, a table named ``x; DROP TABLE y``, a script name that is no shell
word) are said the same way, after any analysis: each once per process, one
message per file that held them, every name in the log.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from gdg_lsp import words

log = logging.getLogger(__name__)


def _sql(workspace) -> list[str]:
    from gdg_lsp.languages.sql.catalog import catalog_for

    return catalog_for(workspace.roots, workspace.settings).warnings()


def _p4(workspace) -> list[str]:
    missing = []
    for path in workspace.settings.p4.include_paths:
        if not Path(os.path.expanduser(path)).is_dir():
            missing.append(f"gdg.p4.includePaths: {path} is not a folder; its headers cannot be read "
                           f"(names they declare are not offered)")
    return missing


def _jq(workspace) -> list[str]:
    from gdg_lsp.languages.jq import inputs

    return inputs.problems(workspace.roots, workspace.settings)


SOURCES: dict[str, Callable[[Any], list[str]]] = {"sql": _sql, "p4": _p4, "jq": _jq}

_shown: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


SHOWN_NAMES = 5
"""Rejected names one message shows (the log has every one)."""


def report(ls, language_id: str, uri: str | None = None) -> None:
    """Show the problems of ``language_id``'s sources (in the workspace folder of ``uri``, or the
    whole workspace) that were not shown yet, and the names left out of Γ since the last report
    (whichever language's analysis read them)."""
    report_rejected_names(ls)
    source = SOURCES.get(language_id)
    if source is None:
        return
    session = ls.session
    workspace = session.workspace_for(uri) if uri is not None else session.workspace
    try:
        current = set(source(workspace))
    except Exception:  # a broken source must not break the request that looked at it
        log.exception("could not collect the workspace problems for %s", language_id)
        return
    seen = _shown.setdefault(session, {})
    key = (language_id, tuple(map(str, workspace.roots)))  # each folder's own: two folders never undo each other
    before = seen.get(key, set())
    for problem in sorted(current - before):
        session.show(f"gdg-lsp: {problem}", types.MessageType.Warning)
    seen[key] = current


def report_rejected_names(ls) -> None:
    """The names ``words.REJECTIONS`` noted since it was last asked: each logged, and one
    warning per file (or other source) that held them. Each name is returned by
    ``take_new`` once, so a request that reads the same file again says nothing."""
    new = words.REJECTIONS.take_new()
    by_source: dict[str, list[words.Rejected]] = {}
    for rejected in new:
        log.warning("%s", rejected.message())
        by_source.setdefault(rejected.source, []).append(rejected)
    for source, names in by_source.items():
        listed = "; ".join(f"'{words.shown(r.name)}' ({r.why})" for r in names[:SHOWN_NAMES])
        more = f"; and {len(names) - SHOWN_NAMES} more (the log lists them)" if len(names) > SHOWN_NAMES else ""
        count = f"{len(names)} names" if len(names) > 1 else "a name"
        ls.session.show(f"gdg-lsp: {words.shown(source, 200)}: {count} left out of the suggestions, "
                        f"not usable as written: {listed}{more}", types.MessageType.Warning)


def report_limit(ls, what: str, err: BaseException) -> None:
    """A position past one of the server's limits (33 nested scopes), or code nested deeper than
    the analysis can follow (Python's recursion limit): refused in one line, said once, no traceback."""
    if isinstance(err, RecursionError):
        why = "the code here nests deeper than the analysis follows (the interpreter's recursion limit)"
    else:
        why = str(err)
    log.warning("%s refused: %s", what, why)
    seen = _shown.setdefault(ls.session, {}).setdefault("limits", set())
    if type(err).__name__ in seen:
        return
    seen.add(type(err).__name__)
    ls.session.show(f"gdg-lsp: no completion here: {why}. Positions within the limit are served as usual.",
                    types.MessageType.Warning)


def report_failure(ls, what: str, err: BaseException) -> None:
    """A request that failed inside the pipeline: logged with its traceback, shown once per kind."""
    log.error("%s failed: %s", what, err, exc_info=err)
    session = ls.session
    seen = _shown.setdefault(session, {}).setdefault("failures", set())
    key = (what, type(err).__name__)
    if key in seen:
        return
    seen.add(key)
    session.show(f"gdg-lsp: {what} failed: {type(err).__name__}: {str(err)[:300]}. "
                 f"Names from Γ are still offered as completion items; the log has the details.",
                 types.MessageType.Error)


def report_compile_errors(ls, suggestion) -> None:
    """π records a grammar that does not compile as an attempt and moves on to the next rung
    (the request survives); the user hears of it once per fragment and rung."""
    traces = getattr(getattr(suggestion, "execution", None), "statements", None) or ()
    seen = _shown.setdefault(ls.session, {}).setdefault("compile", set())
    for trace in traces:
        for attempt in getattr(trace, "attempts", ()) or ():
            if attempt.outcome != "compile-error":
                continue
            key = (suggestion.language, getattr(trace, "fragment", None), attempt.rung)
            if key in seen:
                continue
            seen.add(key)
            log.error("grammar of %s fragment %s, rung %s, does not compile: %s", *key, attempt.detail)
            ls.session.show(f"gdg-lsp: the {key[0]} grammar {key[1]!r} (rung {key[2]}) does not compile: "
                            f"{attempt.detail}. Other rungs are tried; Γ completion items still work.",
                            types.MessageType.Error)
