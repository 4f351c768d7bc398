"""Fragments from users' files, by the file they came from.

The service (service/fragment_library.py) reads, checks and gates each file;
what passed is kept here, keyed by its path, so that a change to one file
replaces exactly that file's fragment. Lookups copy nothing: the mapping is
replaced as a whole on each change (readers on other threads see the old one
or the new one, never half of a change).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType

from gdg_lsp.fragments.model import Fragment


class UserFragments:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, Fragment] = {}
        self._by_language: Mapping[str, Mapping[str, Fragment]] = MappingProxyType({})
        self.generation = 0
        """Bumped on every change (callers that derive data from the fragments re-derive it)."""

    def put(self, path: str, fragment: Fragment) -> None:
        with self._lock:
            self._by_path[path] = fragment
            self._rebuild()

    def drop(self, path: str) -> bool:
        with self._lock:
            if self._by_path.pop(path, None) is None:
                return False
            self._rebuild()
            return True

    def clear(self) -> None:
        with self._lock:
            self._by_path.clear()
            self._rebuild()

    def owner(self, language: str, name: str) -> str | None:
        """The path of the file that holds ``language``/``name``, if any."""
        for path, fragment in self._by_path.items():
            if fragment.language == language and fragment.name == name:
                return path
        return None

    def fragments(self, language: str) -> Mapping[str, Fragment]:
        return self._by_language.get(language, MappingProxyType({}))

    def languages(self) -> list[str]:
        return sorted(self._by_language)

    def paths(self) -> list[str]:
        return sorted(self._by_path)

    def _rebuild(self) -> None:
        grouped: dict[str, dict[str, Fragment]] = {}
        for fragment in self._by_path.values():
            grouped.setdefault(fragment.language, {})[fragment.name] = fragment
        self._by_language = MappingProxyType({k: MappingProxyType(v) for k, v in grouped.items()})
        self.generation += 1


USER = UserFragments()
"""The process's user fragments (one editor session at a time holds them)."""
