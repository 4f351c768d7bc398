"""Held-out-style holes (the bench plug-ins' own) completed through any service, judged
by the plug-ins' independent oracles (pyflakes for Python, SQLite for SQL) and by
the statement grammars the executor recorded.

Shared by the fake-engine tests and the real-engine tier (test_real_engine.py).
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gdg_lsp import languages
from gdg_lsp.documents import Document
from gdg_lsp.explain import byte_grammars
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase, OracleResult
from gdg_lsp.settings import Settings

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not CORPUS.is_dir():
    import os

    CORPUS = Path(os.environ.get("GDG_CORPUS", "/work/shared/corpus"))

_BYTES = None


@dataclass
class Filled:
    case: HoleCase
    suggestion: Any
    verdict: OracleResult
    seconds: float
    outside_grammar: list[str]
    """Statements whose text the grammar they were decoded under does not accept."""


PYTHON_SUBSET_BYTES = 12_000
"""Python holes come from the corpus files under this size: the plug-in reads every
file it is given with ast (quadratic in a file's size; the whole Lib took a minute
on the shared 2-core machine)."""


@functools.lru_cache(maxsize=None)
def cut(language: str, n: int, seed: int) -> list[HoleCase]:
    plugin = languages.bench_plugin(language)
    if language != "python":
        return plugin.cut_holes(CORPUS, n, seed)
    lib = CORPUS / "python" / "Lib"
    subset = Path(tempfile.mkdtemp(prefix="gdg-remote-holes-"))
    for path in sorted(lib.glob("*.py")):
        if path.stat().st_size < PYTHON_SUBSET_BYTES:
            (subset / path.name).symlink_to(path)
    try:
        return plugin.cut_holes(subset, n, seed)  # the cases point at the real files
    finally:
        shutil.rmtree(subset, ignore_errors=True)


def workspace_for(case: HoleCase, settings: Settings) -> WorkspaceContext:
    roots = case.meta.get("workspace_roots") or [str(CORPUS / case.language)]
    return WorkspaceContext([Path(r) for r in roots], settings)


def outside_grammar(suggestion: Any) -> list[str]:
    """Statement texts not accepted by the grammar recorded for them (a ghost by construction)."""
    global _BYTES
    if _BYTES is None:
        _BYTES = byte_grammars()
    bad = []
    execution = getattr(suggestion, "execution", None)
    typed = getattr(getattr(suggestion, "hole", None), "typed", "")
    for trace in getattr(execution, "statements", None) or []:
        if trace.source is not None and trace.text.strip() and not trace.dropped:
            region = typed + trace.text if trace.index == 0 else trace.text.lstrip(" \t")
            if not accepts(_BYTES.get(trace.source), region):
                bad.append(trace.text)
    return bad


def fill(service: Any, cases: list[HoleCase], settings: Settings) -> list[Filled]:
    out = []
    for case in cases:
        plugin = languages.bench_plugin(case.language)
        service.workspace = workspace_for(case, settings)
        doc = Document(case.uri, case.language, 1, case.text, languages.analyzer(case.language, case.text).parser())
        began = time.perf_counter()
        suggestion = service.complete(doc.snapshot(), case.cursor, settings)
        seconds = time.perf_counter() - began
        out.append(Filled(case, suggestion, plugin.check(case, suggestion.text), seconds, outside_grammar(suggestion)))
    return out
