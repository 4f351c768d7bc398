"""Fragment files in the editor: loaded at ``initialized`` with the user's consent, reloaded one by one.

The library (service/fragment_library.py) reads ``gdg.fragments.paths`` (the user's
own) and the ``.gdg/fragments/`` of each workspace folder the user consented to
(server/fragment_consent.py: ``gdg.fragments.trustedFolders``, or an answer
remembered for the folder); this module runs it off the event loop and turns each
file's state into diagnostics on that file: a file that does not parse, a language
it cannot define, a fragment that failed its gate. A file that loads gets its
diagnostics cleared. A saved or watched change to one file reloads that file alone;
a change of the ``gdg.fragments`` settings reads them all again.

A workspace folder whose fragment files have no consent yet is asked about once a
session (``window/showMessageRequest``: Load / Not now / Never for this folder);
until then, and after "Not now" or "Never", its files are listed, never read, and
each gets one information diagnostic saying how to allow them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from lsprotocol import types

from gdg_lsp import boundary
from gdg_lsp.server import diagnostics
from gdg_lsp.private_folder import NotPrivate
from gdg_lsp.server.fragment_consent import LOAD, NEVER, key
from gdg_lsp.service.fragment_library import FOLDER, FileState, Problem, workspace_files

log = logging.getLogger(__name__)

WATCHED_GLOB = "**/.gdg/fragments/**/*.toml"
ANSWER_LOAD = "Load"
ANSWER_NOT_NOW = "Not now"
ANSWER_NEVER = "Never for this folder"
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "information": types.DiagnosticSeverity.Information}


def to_diagnostics(state: FileState) -> list[types.Diagnostic]:
    """One diagnostic per problem, on its line (the first line for a problem of the whole file)."""
    out = []
    for problem in state.problems:
        line = max(problem.line - 1, 0)
        out.append(types.Diagnostic(
            range=types.Range(types.Position(line, max(problem.column - 1, 0)), types.Position(line + 1, 0)),
            message=problem.message, severity=_SEVERITY.get(problem.severity, types.DiagnosticSeverity.Error),
            source="gdg-lsp fragments"))
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
    """Read the fragment files of the settings and of the consented workspace folders (off the
    event loop); tell about the others and ask about those not asked yet."""
    session = ls.session
    settings = session.settings.fragments
    consent = session.fragment_consent
    roots = list(session.workspace.roots)
    try:
        answers = await asyncio.to_thread(lambda: [consent.answer(r, settings.trusted_folders) for r in roots])
        trusted = [root for root, answer in zip(roots, answers) if answer == LOAD]
        states = await asyncio.to_thread(session.fragments.sync, trusted, list(settings.paths), list(settings.claims))
        waiting = await asyncio.to_thread(
            lambda: [(root, answer, workspace_files(root)) for root, answer in zip(roots, answers) if answer != LOAD])
    except Exception:
        log.exception("loading fragment files failed (built-in fragments are unaffected)")
        return
    for problem in consent.news():  # a planted or broken memory: it grants nothing, and the user hears why
        session.show(f"gdg-lsp: {problem}", types.MessageType.Warning)
    publish(ls, states)
    for root, answer, files in waiting:
        if files:
            publish(ls, [_waiting(path, root, answer) for path in files])
            if answer is None and key(root) not in consent.asked:
                consent.asked.add(key(root))
                session.loop.create_task(_ask(ls, root, len(files)))
    _reschedule(ls)


def _waiting(path: Path, root: Path, answer: str | None) -> FileState:
    """A file of a folder without consent: not read, one information diagnostic on it."""
    how = (f"to use them, add {root} to gdg.fragments.trustedFolders in your user settings"
           + (" (you chose never to load this folder's)" if answer == NEVER else ", or answer Load when gdg-lsp asks"))
    return FileState(path, "workspace", "waiting", [Problem(
        f"not loaded: a workspace's fragment files change what gdg-lsp suggests, so they are read only "
        f"with your consent; {how}", severity="information")])


async def _ask(ls, root: Path, count: int) -> None:
    """The question, once a session per folder; "Load" and "Never" are remembered for the folder."""
    consent = ls.session.fragment_consent
    message = (f"The workspace folder {root} has {count} gdg-lsp fragment file{'s' if count != 1 else ''} "
               f"({FOLDER}/). They change what gdg-lsp suggests in this workspace's documents, and they come "
               f"with the folder, not from you. Load them? (Your answer is remembered for this folder; "
               f"gdg.fragments.trustedFolders in your user settings allows folders without asking.)")
    try:
        answer = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
            type=types.MessageType.Warning, message=message,
            actions=[types.MessageActionItem(title) for title in (ANSWER_LOAD, ANSWER_NOT_NOW, ANSWER_NEVER)]))
    except Exception as err:  # the client cannot ask, or went away: nothing is loaded
        log.info("the fragment files of %s stay unloaded: the question was not answered (%s)", root, err)
        return
    title = getattr(answer, "title", None)
    if title not in (ANSWER_LOAD, ANSWER_NEVER):
        return  # "Not now", or dismissed: asked again next session
    remembered = LOAD if title == ANSWER_LOAD else NEVER
    try:
        await asyncio.to_thread(consent.memory.remember, root, remembered)
    except (NotPrivate, OSError) as err:
        ls.session.show(f"gdg-lsp: your answer for {root} cannot be remembered ({err}); it holds for this session",
                        types.MessageType.Warning)
    if remembered == LOAD:
        consent.allowed.add(key(root))
    await load(ls)


async def forget_folders(ls, roots: Sequence[Path]) -> None:
    """Folders removed from the workspace: their fragment files' diagnostics are cleared (the
    loaded ones go at the next ``load``, which no longer reads them; these were only listed)."""
    try:
        files = await asyncio.to_thread(lambda: [path for root in roots for path in workspace_files(root)])
    except Exception:
        log.exception("listing the fragment files of the removed folders failed")
        return
    publish(ls, [FileState(path, "workspace", "gone") for path in files])


async def refresh(ls, paths: Iterable[Path]) -> None:
    """Reload the fragment files among ``paths`` (other paths are not the library's); a fragment
    file appearing in a folder without consent is told about (and asked about) like at the start."""
    session = ls.session
    changed: list[FileState] = []
    unconsented = False
    for path in paths:
        if path.suffix != ".toml":
            continue
        if session.fragments.scope_of(path) is None:
            unconsented = unconsented or any(
                boundary.real(path).is_relative_to(boundary.real(root / FOLDER)) for root in session.workspace.roots)
            continue
        try:
            changed += await asyncio.to_thread(session.fragments.reload, path)
        except Exception:
            log.exception("reloading %s failed (the fragments loaded before stay in use)", path)
    if changed:
        publish(ls, changed)
        _reschedule(ls)
    if unconsented:
        await load(ls)
