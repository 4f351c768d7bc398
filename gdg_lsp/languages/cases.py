"""What a benchmark hole is, and what an oracle says about a filled hole.

Each language contributes a module ``gdg_lsp.bench.<language>`` with

    def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]
    def check(case: HoleCase, suggestion: str) -> OracleResult

and optionally the runner's hooks

    def workspace_for(case: HoleCase, args) -> WorkspaceContext   # what the case's workspace is
    def settings_for(case: HoleCase, settings: Settings) -> Settings  # settings it needs

``cut_holes`` cuts holes from real code (deterministic for a seed);
``check`` judges the document with the suggestion inserted at the cursor,
with tools that do not share the server's Γ (pyflakes, SQLite, a declared-name
scan...), so a bug in Γ cannot hide a ghost.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class HoleCase:
    case_id: str
    language: str
    uri: str
    text: str
    """The document as the user has it when asking (the hole's original code removed)."""
    cursor: int
    """Code-point offset of the cursor in ``text``."""
    expected: str
    """What the original code had at the hole (for exact match), from the cursor on."""
    meta: dict[str, Any] = field(default_factory=dict)

    def document(self) -> Any:
        """The case's text as an open document (version 1), parsed as the server would."""
        from gdg_lsp import languages
        from gdg_lsp.documents import Document

        return Document(self.uri, self.language, 1, self.text, languages.analyzer(self.language, self.text).parser())


@dataclass
class OracleResult:
    parsed: bool
    """The filled document is well-formed for the language's own tools."""
    ghosts: list[str] = field(default_factory=list)
    """Names the suggestion references that do not exist (by the independent checker)."""
    passed: bool = False
    """The language's oracle accepts it (compiles / executes / matches)."""
    details: dict[str, Any] = field(default_factory=dict)


_SCRATCH: list[Path] = []


def scratch_folder(name: str) -> Path:
    """A new, empty folder ``name`` inside this process's own scratch folder, where a bench
    writes the files its holes live in (removed when the process exits).

    The scratch folder is made by ``mkdtemp`` (a fresh name, readable by this user only), never
    at a fixed name in the shared temporary folder: there, someone else could plant a folder
    first, with links that redirect what the bench writes, a repository whose hooks git would
    run, or workspace files (fragments, settings) the server would read as the case's own."""
    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="gdg-bench-")))
        atexit.register(shutil.rmtree, _SCRATCH[0], True)
    folder = _SCRATCH[0] / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder
