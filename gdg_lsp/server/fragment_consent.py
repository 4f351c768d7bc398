"""Whose consent a workspace folder's fragment files have: the user's setting, or an answer remembered.

A workspace's ``.gdg/fragments/`` files decide what gdg-lsp suggests in that workspace's
documents, and they come with the folder (a cloned repository), not from the user. They are
loaded only when the user allowed it, in one of two ways, neither of which a workspace can
write:

- ``gdg.fragments.trustedFolders``, a user-only setting (VS Code: ``machine`` scope, so a
  folder's ``.vscode/settings.json`` cannot set it; Neovim: ``setup{}``), naming folders and
  what lies inside them;
- the answer to the server's question (server/fragment_files.py), remembered per folder
  (by real path) in ``fragment-folders.json`` in the user's state folder
  (``private_folder.state_folder``: ``$GDG_LSP_STATE_DIR``, else the platform's), a folder only
  this user can write. The file is believed only when it is a regular file
  of this user's that nobody else can write, at most ``MAX_BYTES``, and of the expected shape;
  otherwise it is ignored (and the reason said once): a planted file never grants anything.

The answers are ``load`` and ``never``; "not now" is kept for the session only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from gdg_lsp import boundary
from gdg_lsp.private_folder import StateFile

LOAD = "load"
NEVER = "never"
FILE_NAME = "fragment-folders.json"
MAX_BYTES = 256 * 1024
MAX_FOLDERS = 2000
"""Answers kept (the oldest are forgotten first)."""


def key(folder: str | os.PathLike[str]) -> str:
    return os.fspath(boundary.real(folder))


def trusted_by_setting(folder: str | os.PathLike[str], trusted: Sequence[str]) -> bool:
    """True when ``folder`` is one of ``trusted`` (absolute paths, ``~`` expanded) or lies inside one."""
    target = boundary.real(folder)
    for entry in trusted:
        if entry and os.path.isabs(os.path.expanduser(entry)):
            named = boundary.real(entry)
            if target == named or target.is_relative_to(named):
                return True
    return False


class ConsentMemory(StateFile):
    """The answers remembered in the user's state folder."""

    NAME = FILE_NAME
    MAX_BYTES = MAX_BYTES

    def ignored_because(self, why: str) -> str:
        return f"the remembered fragment-file answers are ignored: {why}"

    def answers(self) -> dict[str, str]:
        """Real folder path -> ``load`` | ``never``; empty when nothing trustworthy is remembered."""
        body = self.read_body()
        if body is None:
            return {}
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            self.problem = self.ignored_because(str(err))
            return {}
        folders = data.get("folders") if isinstance(data, dict) and data.get("format") == 1 else None
        if not isinstance(folders, dict):
            self.problem = self.ignored_because(f"{self.path} is not of the expected shape")
            return {}
        return {k: v for k, v in folders.items() if isinstance(k, str) and v in (LOAD, NEVER)}

    def answer(self, folder: str | os.PathLike[str]) -> str | None:
        return self.answers().get(key(folder))

    def remember(self, folder: str | os.PathLike[str], answer: str) -> None:
        """Keep ``answer`` for ``folder``; ``NotPrivate`` or ``OSError`` when it cannot be kept."""
        if answer not in (LOAD, NEVER):
            raise ValueError(f"an answer is {LOAD!r} or {NEVER!r}, not {answer!r}")
        answers = self.answers()
        answers.pop(key(folder), None)
        answers[key(folder)] = answer  # last: the newest answer is forgotten last
        kept = dict(list(answers.items())[-MAX_FOLDERS:])
        self.write_body(json.dumps({"format": 1, "folders": kept}, indent=1).encode("utf-8"))


class FolderConsent:
    """One session's view of the user's consent: the memory, and what was asked or allowed meanwhile."""

    def __init__(self, memory: ConsentMemory | None = None) -> None:
        self.memory = memory or ConsentMemory()
        self.asked: set[str] = set()
        """Folders asked about this session (asked once, whatever the answer)."""
        self.allowed: set[str] = set()
        """Folders the user answered Load for this session (also remembered, where the memory can be written)."""
        self._told: set[str] = set()
        self._untold: list[str] = []

    def answer(self, root: Path, trusted: Sequence[str]) -> str | None:
        if trusted_by_setting(root, trusted) or key(root) in self.allowed:
            return LOAD
        answer = self.memory.answer(root)
        if self.memory.problem and self.memory.problem not in self._told:
            self._told.add(self.memory.problem)
            self._untold.append(self.memory.problem)
        return answer

    def news(self) -> list[str]:
        """Problems with the memory not said yet (each said once a session)."""
        said, self._untold = self._untold, []
        return said

