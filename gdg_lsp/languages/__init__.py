"""Language analyzers, one module each; this registry maps documents to them.

Adding a language: a module here with an ``Analyzer`` subclass, a folder in
``grammars/``, an entry in ``_FACTORIES`` (and in ``_EXTENSIONS`` for files
opened headlessly), and tests.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gdg_lsp.errors import UnknownLanguageError
from gdg_lsp.languages.base import Analyzer


def _python() -> Analyzer:
    from gdg_lsp.languages.python import PythonAnalyzer

    return PythonAnalyzer()


def _sql() -> Analyzer:
    from gdg_lsp.languages.sql import SqlAnalyzer

    return SqlAnalyzer()


def _tilelang() -> Analyzer:
    from gdg_lsp.languages.tilelang import TileLangAnalyzer

    return TileLangAnalyzer()


def _p4() -> Analyzer:
    from gdg_lsp.languages.p4 import P4Analyzer

    return P4Analyzer()


_FACTORIES: dict[str, Callable[[], Analyzer]] = {
    "python": _python,
    "sql": _sql,
    "tilelang": _tilelang,
    "p4": _p4,
}
_EXTENSIONS = {".py": "python", ".pyi": "python", ".sql": "sql", ".p4": "p4"}
_INSTANCES: dict[str, Analyzer] = {}


def supported() -> list[str]:
    return sorted(_FACTORIES)


def language_for_path(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in _EXTENSIONS:
        raise UnknownLanguageError(suffix or str(path))
    return _EXTENSIONS[suffix]


def analyzer(language_id: str, text: str | None = None) -> Analyzer:
    """The analyzer for an LSP languageId (``text`` lets a language claim a file by content)."""
    key = resolve_language(language_id, text)
    if key not in _INSTANCES:
        _INSTANCES[key] = _FACTORIES[key]()
    return _INSTANCES[key]


def forget(uri: str) -> None:
    """A document closed: every analyzer made so far drops what it kept for it."""
    for instance in list(_INSTANCES.values()):
        instance.forget(uri)


def resolve_language(language_id: str, text: str | None = None) -> str:
    key = (language_id or "").lower()
    if key not in _FACTORIES:
        raise UnknownLanguageError(language_id)
    if key == "python" and text is not None:
        # a Python file that imports tilelang is completed as TileLang (a cheap regex, no parse)
        from gdg_lsp.languages.tilelang import imports_tilelang

        if imports_tilelang(text):
            return "tilelang"
    return key
