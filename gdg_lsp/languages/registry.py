"""The languages gdg-lsp knows: the one place the rest of the code learns what exists.

Each language is a package ``gdg_lsp.languages.<name>`` (its analyzer, the
workspace sources it reads, its diagnostics, its bench cases) plus a folder of
fragments in ``grammars/<name>/``; a ``LanguageSpec`` line below ties them to
LSP language ids and file suffixes. Modules are named as strings and imported
on first use, so a server that never opens a P4 file never loads Lark.

Languages taught by fragment files (languages/generic/) enter at run time
through ``register`` and leave through ``unregister``: their spec names the
generic analyzer and carries the definition it is built from. They can never
take a built-in language's name, LSP id or file suffix.
"""

from __future__ import annotations

import importlib
import threading
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
    claims: tuple[str, str | Callable[[str], bool]] | None = None
    """``(language, "module:function")``: documents of that language whose text the function
    accepts are this language instead (TileLang claims Python files that import tilelang);
    a registered language gives the function itself."""
    bench: str | None = None
    """Module with ``cut_holes``/``check`` for ``gdg-lsp bench quality`` (see languages/cases.py)."""
    settings: str | None = None
    """The section of ``gdg.*`` settings it reads (``gdg.sql``, ...), if any."""
    definition: Any = None
    """A registered language's definition: its analyzer is built as ``Analyzer(definition)``."""


LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", "gdg_lsp.languages.python.analyzer:PythonAnalyzer", (".py", ".pyi"),
                 bench="gdg_lsp.languages.python.bench", settings="python"),
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

_BUILTIN_IDS = {spec.name: spec for spec in LANGUAGES} | {i: spec for spec in LANGUAGES for i in spec.lsp_ids}
_BUILTIN_SUFFIXES = {suffix: spec for spec in LANGUAGES for suffix in spec.extensions}
_BY_ID = dict(_BUILTIN_IDS)
_BY_SUFFIX = dict(_BUILTIN_SUFFIXES)
_REGISTERED: dict[str, LanguageSpec] = {}
_LOCK = threading.Lock()


def builtin_names() -> frozenset[str]:
    """Names and LSP ids a registered language may not take."""
    return frozenset(_BUILTIN_IDS)


def builtin_extensions() -> frozenset[str]:
    return frozenset(_BUILTIN_SUFFIXES)


def register(new: LanguageSpec) -> None:
    """Add (or replace) a language taught at run time. Raises ``ValueError`` when it would
    shadow a built-in language, or take a suffix or id another registered language has."""
    with _LOCK:
        ids = {new.name, *new.lsp_ids}
        if taken := ids & set(_BUILTIN_IDS):
            raise ValueError(f"{', '.join(sorted(taken))}: a built-in language has that name")
        if taken := set(new.extensions) & set(_BUILTIN_SUFFIXES):
            raise ValueError(f"{', '.join(sorted(taken))}: a built-in language's file suffix")
        others = [s for name, s in _REGISTERED.items() if name != new.name]
        if taken := ids & {i for s in others for i in (s.name, *s.lsp_ids)}:
            raise ValueError(f"{', '.join(sorted(taken))}: another registered language has that name")
        if taken := set(new.extensions) & {e for s in others for e in s.extensions}:
            raise ValueError(f"{', '.join(sorted(taken))}: another registered language's file suffix")
        _REGISTERED[new.name] = new
        _rebuild()


def unregister(name: str) -> bool:
    with _LOCK:
        if _REGISTERED.pop(name, None) is None:
            return False
        _rebuild()
        return True


def registered() -> list[LanguageSpec]:
    return [_REGISTERED[name] for name in sorted(_REGISTERED)]


def _rebuild() -> None:
    """New lookup tables, swapped in whole (readers on other threads never see half a change)."""
    global _BY_ID, _BY_SUFFIX
    specs = list(_REGISTERED.values())
    _BY_ID = {**_BUILTIN_IDS, **{s.name: s for s in specs}, **{i: s for s in specs for i in s.lsp_ids}}
    _BY_SUFFIX = {**_BUILTIN_SUFFIXES, **{e: s for s in specs for e in s.extensions}}


def all_specs() -> list[LanguageSpec]:
    return [*LANGUAGES, *registered()]


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
    return sorted(spec.name for spec in all_specs())


def for_path(path: str | Path) -> LanguageSpec:
    suffix = Path(path).suffix.lower()
    if suffix not in _BY_SUFFIX:
        raise UnknownLanguageError(suffix or str(path))
    return _BY_SUFFIX[suffix]


def resolve(language_id: str, text: str | None = None) -> LanguageSpec:
    """The language of a document: its id, unless another language claims its text."""
    base = spec(language_id)
    if text is not None:
        for candidate in all_specs():
            if candidate.claims is not None and candidate.claims[0] == base.name and _claimer(candidate)(text):
                return candidate
    return base


_CLAIMERS: dict[str, Callable[[str], bool]] = {}


def _claimer(candidate: LanguageSpec) -> Callable[[str], bool]:
    if callable(candidate.claims[1]):  # type: ignore[index]
        return candidate.claims[1]  # type: ignore[index,return-value]
    if candidate.name not in _CLAIMERS:
        _CLAIMERS[candidate.name] = load(candidate.claims[1])  # type: ignore[index]
    return _CLAIMERS[candidate.name]
