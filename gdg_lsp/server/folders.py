"""Workspace folders: which folder holds a document, the settings each folder resolved to, and the
context a document's requests are analysed in.

The rule: a document inside a workspace folder is analysed with that folder alone as its
workspace. Its files are the ones read (SQL schemas and databases, Python modules behind
imports, P4 includes, ``.git``, Makefiles and scripts, JSON inputs) and its settings are the
folder's. A document in folder A reads nothing of folder B unless a user setting names B's
path (``gdg.sql.sources``, ``gdg.p4.includePaths``, ``gdg.fragments.paths``). Two folders of
one workspace are two projects, as VS Code's folder settings, Pyright's execution roots and
rust-analyzer's workspaces have them: the union of every folder's schemas gave a query another
project's tables, and a folder added later would widen what every other folder's documents
read. The folder holding a document is the innermost one (folders may nest). A document outside
every folder keeps the workspace-level context: every folder, and the global settings (VS Code
gives such a file the workspace's settings, not a folder's).

A folder's settings are the client's answer to ``workspace/configuration`` for the ``gdg``
section with the folder's ``scopeUri`` (server/configuration.py asks), read over the global
settings. Two kinds are never a folder's to choose and are taken from the global settings
whatever its answer says:

- the user-only settings (``settings.USER_ONLY``: a program to run, a model or folder to load,
  where code goes, the bounds on what workspace data may cost). VS Code scopes them ``machine``,
  so a folder's answer carries the user's own; any other value is ignored and said once;
- the settings that decide the model and its slots (``SERVER_WIDE``): one model serves every
  folder.

A client that does not answer ``workspace/configuration`` gives every folder the global settings.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import attrs

from gdg_lsp.boundary import real
from gdg_lsp.documents import uri_to_path
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.settings import LOADS, Settings, from_json, keep_user_only, marked_paths

SERVER_WIDE = tuple(dict.fromkeys(path[0] for loads in ("model", "slots") for path in marked_paths(LOADS, loads)))
"""Settings (and sections) one server has for every folder: what loads and runs the model and what
sizes its batching slots (marked ``settings.LOADS``: ``model_key``, ``slots_key``)."""


def _absolute(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def _innermost(target: Path, folders: Iterable[tuple[Path, Path]]) -> Path | None:
    """The root whose (compared) path holds ``target`` most closely, among ``(root, compared)``."""
    best: tuple[int, Path] | None = None
    for root, compared in folders:
        if (target == compared or compared in target.parents) and (best is None or len(compared.parts) > best[0]):
            best = (len(compared.parts), root)
    return best[1] if best is not None else None


def folder_settings(data: Any, workspace: Settings) -> tuple[Settings, list[str], list[str]]:
    """A folder's settings from its ``workspace/configuration`` answer, read over ``workspace``
    (the global settings): (the settings, the problems of its values, the user-only settings it
    set otherwise and that were ignored, as ``gdg.python.interpreter``)."""
    settings, problems = from_json(data, base=workspace)
    settings, ignored = pinned(settings, workspace)
    return settings, problems, ignored


def pinned(settings: Settings, workspace: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with the user-only and the server-wide settings taken from ``workspace``; the
    user-only ones it had otherwise."""
    settings, ignored = keep_user_only(settings, workspace)
    return attrs.evolve(settings, **{name: getattr(workspace, name) for name in SERVER_WIDE}), ignored


@dataclass(eq=False)
class FolderWorkspace(WorkspaceContext):
    """A session's workspace: every folder (``roots``), the global ``settings``, and for each
    folder a context of its own (``for_document``). Changed on the event loop only, read from
    any thread: what changes is replaced whole, never mutated in place."""

    folder_settings: Mapping[Path, Settings] = field(default_factory=dict)
    """Each folder's settings (its answer to ``workspace/configuration``); a folder without one
    has the global ``settings``."""
    _contexts: dict[Path, WorkspaceContext] = field(default_factory=dict, repr=False)

    def changed(self) -> None:
        """The folders or the settings changed: the folders' contexts are made again when asked."""
        self._contexts = {}

    def folder_of(self, path: str | os.PathLike[str] | None) -> Path | None:
        """The innermost workspace folder holding ``path`` (as the paths are spelled, else as
        their links resolve), or None when it lies in none."""
        if path is None:
            return None
        roots = list(self.roots)
        found = _innermost(_absolute(path), ((root, _absolute(root)) for root in roots))
        return found if found is not None else _innermost(real(path), ((root, real(root)) for root in roots))

    def for_document(self, uri: str) -> WorkspaceContext:
        folder = self.folder_of(uri_to_path(uri))
        if folder is None:
            return self
        contexts = self._contexts
        context = contexts.get(folder)
        if context is None:
            context = contexts[folder] = WorkspaceContext(
                [folder], self.folder_settings.get(folder, self.settings), self.recent)
        return context
