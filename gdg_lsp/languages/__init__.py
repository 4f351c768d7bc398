"""Language analysis: one package per language, found through ``registry``.

What the rest of the code asks of languages goes through the functions here:
which language a document is, its (shared, stateful) analyzer, and dropping
what analyzers keep for a closed document. The list itself is
``registry.LANGUAGES``; adding a language is a package, a line there and a
folder in ``grammars/`` (docs/ARCHITECTURE.md, "Adding a language").
"""

from __future__ import annotations

import importlib
from pathlib import Path

from gdg_lsp.languages import registry
from gdg_lsp.languages.base import Analyzer

_INSTANCES: dict[str, Analyzer] = {}
_SPECS: dict[str, registry.LanguageSpec] = {}
"""The spec each instance was built from: a language registered again (its fragment file
changed) gets a new analyzer."""


def supported() -> list[str]:
    return registry.names()


def language_for_path(path: str | Path) -> str:
    return registry.for_path(path).name


def resolve_language(language_id: str, text: str | None = None) -> str:
    return registry.resolve(language_id, text).name


def analyzer(language_id: str, text: str | None = None) -> Analyzer:
    """The analyzer for an LSP languageId (``text`` lets a language claim a file by content)."""
    spec = registry.resolve(language_id, text)
    if spec.name not in _INSTANCES or _SPECS.get(spec.name) is not spec:
        make = registry.load(spec.analyzer)
        _INSTANCES[spec.name] = make(spec.definition) if spec.definition is not None else make()
        _SPECS[spec.name] = spec
    return _INSTANCES[spec.name]


def forget(uri: str) -> None:
    """A document closed: every analyzer made so far drops what it kept for it."""
    for instance in list(_INSTANCES.values()):
        instance.forget(uri)


def benchmarked() -> list[str]:
    """The languages with bench cases for ``gdg-lsp bench quality``."""
    return [spec.name for spec in registry.all_specs() if spec.bench is not None]


def bench_plugin(language: str):
    """The language's bench module (``cut_holes``, ``check`` and hooks: languages/cases.py)."""
    spec = registry.spec(language)
    if spec.bench is None:
        raise registry.UnknownLanguageError(f"{language} (no bench cases)")
    module = importlib.import_module(spec.bench)
    # a language taught by fragment files: its plug-in is made for its definition (languages/generic/bench.py)
    return module.plugin_for(spec.definition) if spec.definition is not None else module
