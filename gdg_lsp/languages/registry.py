"""The languages gdg-lsp knows: the one place the rest of the code learns what exists.

Each language is a package ``gdg_lsp.languages.<name>`` (its analyzer, the
workspace sources it reads, its diagnostics, its bench cases) plus a folder of
fragments in ``grammars/<name>/``; a ``LanguageSpec`` line below ties them to
LSP language ids and file suffixes. Modules are named as strings and imported
on first use, so a server that never opens a P4 file never loads Lark.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gdg_lsp.errors import UnknownLanguageError


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    """The language id gdg-lsp uses (and the folder of its fragments in ``grammars/``)."""
    analyzer: str
    """``module:Class`` of its ``Analyzer``."""
    extensions: tuple[str, ...] = ()
    """File suffixes that open as this language headlessly (``gdg-lsp complete``, the bench)."""
    lsp_ids: tuple[str, ...] = ()
    """Other LSP ``languageId`` values editors send for it (the name itself is always one)."""
    claims: tuple[str, str] | None = None
    """``(language, "module:function")``: documents of that language whose text the function
    accepts are this language instead (TileLang claims Python files that import tilelang)."""
    bench: str | None = None
    """Module with ``cut_holes``/``check`` for ``gdg-lsp bench quality`` (see languages/cases.py)."""
    settings: str | None = None
    """The section of ``gdg.*`` settings it reads (``gdg.sql``, ...), if any."""


LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", "gdg_lsp.languages.python.analyzer:PythonAnalyzer", (".py", ".pyi"),
                 bench="gdg_lsp.languages.python.bench"),
    LanguageSpec("tilelang", "gdg_lsp.languages.tilelang.analyzer:TileLangAnalyzer",
                 claims=("python", "gdg_lsp.languages.tilelang.detect:imports_tilelang"),
                 bench="gdg_lsp.languages.tilelang.bench", settings="tilelang"),
    LanguageSpec("sql", "gdg_lsp.languages.sql.analyzer:SqlAnalyzer", (".sql",),
                 bench="gdg_lsp.languages.sql.bench", settings="sql"),
    LanguageSpec("p4", "gdg_lsp.languages.p4.analyzer:P4Analyzer", (".p4",),
                 bench="gdg_lsp.languages.p4.bench", settings="p4"),
    LanguageSpec("shell", "gdg_lsp.languages.shell.analyzer:ShellAnalyzer", (".sh", ".bash"), ("shellscript", "bash", "sh"),
                 bench="gdg_lsp.languages.shell.bench", settings="shell"),
    LanguageSpec("jq", "gdg_lsp.languages.jq.analyzer:JqAnalyzer", (".jq",),
                 bench="gdg_lsp.languages.jq.bench", settings="jq"),
)

_BY_ID = {spec.name: spec for spec in LANGUAGES} | {i: spec for spec in LANGUAGES for i in spec.lsp_ids}
_BY_SUFFIX = {suffix: spec for spec in LANGUAGES for suffix in spec.extensions}


def load(reference: str) -> Any:
    """The object named by ``module:attribute``."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def spec(name: str) -> LanguageSpec:
    try:
        return _BY_ID[(name or "").lower()]
    except KeyError:
        raise UnknownLanguageError(name) from None


def names() -> list[str]:
    return sorted(spec.name for spec in LANGUAGES)


def for_path(path: str | Path) -> LanguageSpec:
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise UnknownLanguageError(suffix or str(path))
    return _BY_SUFFIX[suffix]


def resolve(language_id: str, text: str | None = None) -> LanguageSpec:
    """The language of a document: its id, unless another language claims its text."""
    base = spec(language_id)
    if text is not None:
        for candidate in LANGUAGES:
            if candidate.claims is not None and candidate.claims[0] == base.name and _claimer(candidate)(text):
                return candidate
    return base


_CLAIMERS: dict[str, Callable[[str], bool]] = {}


def _claimer(candidate: LanguageSpec) -> Callable[[str], bool]:
    if candidate.name not in _CLAIMERS:
        _CLAIMERS[candidate.name] = load(candidate.claims[1])  # type: ignore[index]
    return _CLAIMERS[candidate.name]
