"""Per-server state: documents, settings, workspace, the decode worker, and messages to the client.

Handlers (one module per LSP method) reach it as ``server.session``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from gdg_lsp import languages
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import (
    Document,
    DocumentStore,
    PositionEncoding,
    Snapshot,
    uri_to_path,
)
from gdg_lsp.errors import UnknownLanguageError
from gdg_lsp.languages.base import Analyzer, WorkspaceContext
from gdg_lsp.server.folders import FolderWorkspace, folder_settings, pinned
from gdg_lsp.server.fragment_consent import FolderConsent
from gdg_lsp.server.scheduler import Scheduler
from gdg_lsp.server.typing_point import TypingPoint
from gdg_lsp.server.worker import DecodeWorker, WorkerState
from gdg_lsp.service.fragment_library import FragmentLibrary
from gdg_lsp.service.recent import RecentEdits
from gdg_lsp.service.suggestion_reuse import SuggestionReuse
from gdg_lsp.settings import Settings, from_json, keep_user_only, model_key, slots_key

if TYPE_CHECKING:
    from gdg_lsp.server import GdgLanguageServer

log = logging.getLogger(__name__)


def _parser_for(language_id: str, uri: str):
    try:
        return languages.analyzer(language_id).parser()
    except UnknownLanguageError:
        return None


class Session:
    def __init__(self, server: GdgLanguageServer) -> None:
        self.server = server
        self.documents = DocumentStore(_parser_for)
        self.settings = Settings()
        self.workspace = FolderWorkspace(settings=self.settings, recent=RecentEdits())
        """Every workspace folder, the global settings, and each folder's context (``workspace_for``)."""
        self.encoding = PositionEncoding.UTF16
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.scheduler = Scheduler()
        self.worker = DecodeWorker(self._worker_state, self._worker_progress,
                                   lambda message: self.call_soon(self.show, f"gdg-lsp: {message}", types.MessageType.Warning))
        self._progress_token: str | None = None
        self._progress_begun = False
        self._progress_ended = ""
        self._warned_languages: set[str] = set()
        self._refused: BoundedCache[str, str] = BoundedCache("session.refused-documents", 256)
        """Documents the store refused (it is full): their edits are ignored without a warning each."""
        self.last_suggestion: dict[str, Any] | None = None
        self.reuse = SuggestionReuse()
        """Suggestions shown, for the keys that type them through and for repeated asks."""
        self.diagnostic_timers: dict[str, asyncio.TimerHandle] = {}
        self.published_diagnostics: BoundedCache[str, tuple] = BoundedCache("session.published-diagnostics", 4096)
        self.typing_points: dict[str, TypingPoint] = {}  # uri -> where its last edit ended (open documents only)
        """Per document, the diagnostics last published (server/diagnostics.py publishes only a change)."""
        self.work_ahead_timers: dict[str, asyncio.TimerHandle] = {}
        """Debounced work ahead of the next inline request, per document (server/work_ahead.py)."""
        self.work_ahead_line_starts: dict[str, int] = {}
        """The offset where the line starts that each document's latest work ahead is for (an
        edit before it cancels it)."""
        self.fragments = FragmentLibrary()
        """Users' fragment files (server/fragment_files.py)."""
        self.fragment_consent = FolderConsent()
        """Which workspace folders' fragment files the user allowed (server/fragment_consent.py)."""
        self.own_settings: Settings | None = None
        """Set by the TCP server: the settings of the server's own command line. The client's
        settings apply over them, except the user-only ones (a program, a model or folder to
        load, where code goes: ``settings.keep_user_only``), which the client cannot change."""
        self._ignored_settings: set[str] = set()
        self._settings_problems: set[str] = set()
        """What the global settings' values were told to be wrong (a folder's answer repeating one is not told again)."""
        self._folder_notices: set[tuple[str, str]] = set()
        """(folder, notice) told about a folder's settings, each once."""

    # -- settings & workspace ----------------------------------------------------------

    def apply_settings(self, data: Any, *, initial: bool = False) -> None:
        previous = self.settings
        settings, problems = from_json(data, base=(self.own_settings or Settings()) if initial else self.settings)
        if self.own_settings is not None:
            settings, ignored = keep_user_only(settings, self.own_settings)
            if unsaid := [name for name in ignored if name not in self._ignored_settings]:
                self._ignored_settings.update(unsaid)
                problems.append(f"{', '.join(unsaid)} ignored: over TCP the settings that choose a program, a model "
                                f"or a folder to load, or where code goes are taken only from the server's own "
                                f"--tcp-settings file")
        self.settings = settings
        self.workspace.settings = settings
        # until the folders answer again, theirs keep what they chose, over the new user-only ones
        self.workspace.folder_settings = {folder: pinned(chosen, settings)[0]
                                          for folder, chosen in self.workspace.folder_settings.items()}
        self.workspace.changed()
        self.documents.max_analysed_chars = settings.limits.analysed_chars
        self._settings_problems = set(problems)
        for problem in problems:
            self.show(problem, types.MessageType.Warning)
        if not initial and model_key(previous) != model_key(settings):
            self.start_model()
        elif not initial and slots_key(previous) != slots_key(settings):
            self.worker.rebatch(settings)  # the same model, batched differently: no reload

    def refuse_document(self, uri: str, why: str) -> None:
        """A didOpen the store refused (``StoreFull``): said once per document; its requests answer empty."""
        if self._refused.get(uri) is None:
            self.show(f"gdg-lsp: {why}", types.MessageType.Warning)
        self._refused.put(uri, why)

    def refused_document(self, uri: str) -> bool:
        return self._refused.get(uri) is not None

    def set_roots(self, params: types.InitializeParams) -> None:
        roots: list[Path] = []
        for folder in params.workspace_folders or []:
            if (path := uri_to_path(folder.uri)) is not None:
                roots.append(path)
        if not roots and params.root_uri and (path := uri_to_path(params.root_uri)) is not None:
            roots.append(path)
        if not roots and params.root_path:
            roots.append(Path(params.root_path))
        self.workspace.roots = list(dict.fromkeys(roots))
        self.workspace.changed()

    def change_folders(self, added: Sequence[types.WorkspaceFolder],
                       removed: Sequence[types.WorkspaceFolder]) -> tuple[list[Path], list[Path]]:
        """``workspace/didChangeWorkspaceFolders``: the folders added (their files are the workspace's
        from now on) and removed (their settings forgotten); (added, removed) as they changed."""
        gone = [path for folder in removed if (path := uri_to_path(folder.uri)) is not None]
        kept = [root for root in self.workspace.roots if root not in gone]
        new = [path for folder in added if (path := uri_to_path(folder.uri)) is not None and path not in kept]
        new = list(dict.fromkeys(new))
        left = [root for root in self.workspace.roots if root in gone]
        self.workspace.roots = [*kept, *new]
        self.workspace.folder_settings = {f: s for f, s in self.workspace.folder_settings.items() if f not in gone}
        self._folder_notices = {notice for notice in self._folder_notices if Path(notice[0]) not in gone}
        self.workspace.changed()
        return new, left

    def apply_folder_settings(self, answers: Mapping[Path, Any]) -> None:
        """Each folder's answer to ``workspace/configuration`` (``folders.folder_settings``); a
        problem of its values, or a user-only setting it tried to set, is told once per folder."""
        resolved = dict(self.workspace.folder_settings)
        for folder, data in answers.items():
            if folder not in self.workspace.roots:
                continue  # removed while the client answered
            settings, problems, ignored = folder_settings(data, self.settings)
            resolved[folder] = settings
            notices = [problem for problem in problems if problem not in self._settings_problems]
            if ignored:
                notices.append(f"{', '.join(ignored)} ignored: a folder's settings cannot choose a program, a model "
                               f"or a folder to load, where code goes, or a bound on what workspace data may cost "
                               f"(set it in your user settings)")
            for notice in notices:
                if (str(folder), notice) not in self._folder_notices:
                    self._folder_notices.add((str(folder), notice))
                    self.show(f"gdg-lsp: folder {folder.name}: {notice}", types.MessageType.Warning)
        self.workspace.folder_settings = resolved
        self.workspace.changed()

    def workspace_for(self, uri: str) -> WorkspaceContext:
        """The context a request about ``uri`` is analysed in: its folder's (``server/folders.py``)."""
        return self.workspace.for_document(uri)

    def settings_for(self, uri: str) -> Settings:
        """The settings of the folder holding ``uri`` (the global ones outside every folder)."""
        return self.workspace_for(uri).settings

    def analyzer_of(self, doc: Document | Snapshot) -> Analyzer | None:
        """The analyzer of a document or snapshot; its size is checked first, so that a document
        too large to analyse never has its text joined for it (``Document.text``)."""
        if doc.too_large:
            self._refuse_too_large(doc.length)
            return None
        return self.analyzer_for(doc.language_id, doc.text)

    def analyzer_for(self, language_id: str, text: str | None = None) -> Analyzer | None:
        if text is not None and len(text) > self.documents.max_analysed_chars:  # kept in step, not analysed
            self._refuse_too_large(len(text))
            return None
        try:
            return languages.analyzer(language_id, text)
        except UnknownLanguageError as err:
            if language_id not in self._warned_languages and len(self._warned_languages) < 256:
                self._warned_languages.add(language_id)  # (bounded: ids come from the client)
                log.info("%s", err)
            return None

    def _refuse_too_large(self, length: int) -> None:
        if "too-large" not in self._warned_languages:
            self._warned_languages.add("too-large")
            self.show(f"gdg-lsp: a document of {length:,} characters is not analysed (the limit is "
                      f"{self.documents.max_analysed_chars:,}, gdg.limits.analysedChars); its edits are still "
                      f"followed", types.MessageType.Warning)

    def locate_in(self, snapshot: Snapshot, line: int, character: int) -> tuple[Analyzer, int] | None:
        """(analyzer, offset) for a position in a snapshot (on an analysis thread); None when
        its language has no analyzer or it is too large to analyse."""
        analyzer = self.analyzer_of(snapshot)
        if analyzer is None:
            return None
        return analyzer, snapshot.offset_at(line, character, self.encoding)

    def locate(self, uri: str, line: int, character: int) -> tuple[Any, Analyzer, int] | None:
        """(document, analyzer, offset) for a request's position; None when the document
        is not open or its language has no analyzer (the request then gets an empty answer)."""
        doc = self.documents.find(uri)
        if doc is None:
            return None
        analyzer = self.analyzer_of(doc)
        if analyzer is None:
            return None
        return doc, analyzer, doc.offset_at(line, character, self.encoding)

    # -- the model -------------------------------------------------------------------

    def start_model(self) -> None:
        self.worker.load(self.settings, self.workspace)

    def _worker_state(self, state: WorkerState) -> None:
        self.call_soon(self._announce_state, state)

    def _announce_state(self, state: WorkerState) -> None:
        self.server.protocol.notify("gdg/status", status_payload(state))
        if state.notice and state.state != "failed":  # a failure is shown below
            self.show(state.notice, types.MessageType.Info if state.notice_level == "info" else types.MessageType.Warning)
        if state.state == "loading":
            self._begin_progress(state.message)
        elif state.state in ("ready", "failed"):
            self._end_progress(state.message)
            if state.state == "failed":
                self.show(f"gdg-lsp: {state.message}. Names from Γ are still offered as completion items.",
                          types.MessageType.Error)
            else:
                log.info("%s (%.1f s)", state.message, state.load_seconds or 0.0)

    def _worker_progress(self, message: str, percent: int | None) -> None:
        self.call_soon(self._report_progress, message, percent)

    def _supports_progress(self) -> bool:
        caps = self.server.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    def _begin_progress(self, title: str) -> None:
        if not self._supports_progress() or self._progress_token is not None or self.loop is None:
            return
        token = self._progress_token = f"gdg-model-{uuid.uuid4().hex[:8]}"
        self._progress_begun = False

        async def begin() -> None:
            try:
                await self.server.work_done_progress.create_async(token)
            except Exception as err:  # the client refused or went away: no progress bar then
                log.debug("work done progress refused: %s", err)
                return
            self.server.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="gdg-lsp", message=title, percentage=0))
            if self._progress_token == token:
                self._progress_begun = True
            else:  # the load ended before the client acknowledged the token: a created token always ends
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=self._progress_ended))

        self.loop.create_task(begin())

    def _report_progress(self, message: str, percent: int | None) -> None:
        log.info("%s%s", message, f" ({percent}%)" if percent is not None else "")
        state = self.worker.state
        if state.state == "loading":  # the editors' status items show how far the load is
            self.server.protocol.notify("gdg/status", {**status_payload(state), "message": message,
                                                       "percentage": percent})
        if self._progress_token is None or not self._progress_begun:
            return
        try:
            self.server.work_done_progress.report(
                self._progress_token, types.WorkDoneProgressReport(message=message, percentage=percent))
        except Exception:  # the client may not have acknowledged the token yet
            log.debug("progress report dropped", exc_info=True)

    def _end_progress(self, message: str) -> None:
        token, self._progress_token = self._progress_token, None
        self._progress_ended = message
        if token is None or not self._progress_begun:
            return
        try:
            self.server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        except Exception:
            log.debug("progress end dropped", exc_info=True)

    # -- talking to the client -------------------------------------------------------

    def call_soon(self, fn, *args: Any) -> None:
        """Run ``fn`` on the event loop (safe from any thread)."""
        if self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(fn, *args)
        else:
            fn(*args)

    def on_loop(self) -> bool:
        return self.loop_thread is None or threading.get_ident() == self.loop_thread

    def show(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        """Tell the user (and the log); safe from any thread (analysis threads report problems)."""
        if not self.on_loop() and self.loop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self.show, message, kind)
            return
        (log.warning if kind in (types.MessageType.Error, types.MessageType.Warning) else log.info)("%s", message)
        try:
            self.server.window_show_message(types.ShowMessageParams(type=kind, message=message))
        except Exception:
            log.debug("could not show a message", exc_info=True)


def status_payload(state: WorkerState) -> dict[str, Any]:
    return {"state": state.state, "message": state.message, "model": state.model, "device": state.device,
            "loadMs": round(state.load_seconds * 1000) if state.load_seconds is not None else None}
