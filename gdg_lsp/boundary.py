"""Which files the server may read: the workspace folders and the folders the user configured.

Everything that reads a file named by something else (a P4 ``#include``, a
schema file found by walking the workspace, a star-import source) asks
``Boundary.allows(path)`` first. A path is allowed when its real location
(symlinks followed to the end) lies under one of the allowed folders, so a
link inside the workspace pointing outside it is refused like ``../outside``.
The folders the user configured outside the workspace (``gdg.p4.includePaths``,
p4c's own include folder) are allowed as named; they come from user settings,
never from a file of the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


def real(path: str | os.PathLike[str]) -> Path:
    """The path with every symlink resolved (``strict=False``: a missing tail is kept)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


@dataclass(frozen=True)
class Boundary:
    folders: tuple[Path, ...]
    """Real paths of the folders whose files may be read."""

    @classmethod
    def of(cls, *groups: Iterable[str | os.PathLike[str]]) -> Boundary:
        return cls(tuple(dict.fromkeys(real(folder) for group in groups for folder in group)))

    def allows(self, path: str | os.PathLike[str]) -> bool:
        target = real(path)
        return any(target == folder or target.is_relative_to(folder) for folder in self.folders)

    def why_not(self, path: str | os.PathLike[str]) -> str:
        """The message for a refused path (a diagnostic or a log line)."""
        shown = os.fspath(path)
        target = real(path)
        if os.fspath(target) != os.path.abspath(shown):
            return f"{shown} leads to {target}, outside the workspace and the configured folders (not read)"
        return f"{shown} is outside the workspace and the configured folders (not read)"
