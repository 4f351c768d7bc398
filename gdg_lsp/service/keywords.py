"""The language's keywords its grammar allows at a position, for completion items.

An editor's suggest list that lacks a keyword the user is typing hides the ghost that starts
with it (VS Code: ``ret`` listed ``RuntimeError``, not ``return``, and Tab inserted that).
Which keywords may stand at the cursor is the fragment's grammar's to say, not a list's:
``return`` only inside a function, ``break`` only inside a loop. The hole's fragment is
instantiated at its ``base`` rung (keywords are not names, so Γ's rungs add nothing to where
they may stand) and compiled by the model-free byte engine (cached by content: the first
compile of Python's costs about 0.1 s, later ones about 1 ms); a keyword that starts with the
word typed is offered when the text before that word, followed by the keyword and a blank,
a line end or a bracket, is a prefix the grammar accepts. Soft keywords (``match``, ``case``)
are names to the grammar, so it cannot vouch for them: they are left out.

Completion items must not wait for the grammar engines' imports (seconds: they bring torch;
tests/lsp/test_warm_start.py): until something else imported them (the model's load does,
right after ``initialized``), no keywords are offered.
"""

from __future__ import annotations

import sys

from gdg_lsp.documents import Snapshot
from gdg_lsp.errors import GrammarError
from gdg_lsp.languages.base import Analyzer, NoHole, WorkspaceContext

ENGINES = "gdg_lsp.grammar.engine"

FOLLOWERS = (" ", "\n", "(", ":", ")", ",", ";")
"""What may come right after a keyword (a keyword only ever followed by an identifier char is a name)."""


def allowed_keywords(analyzer: Analyzer, snapshot: Snapshot, offset: int, prefix: str,
                     workspace: WorkspaceContext) -> list[str]:
    """The keywords starting with ``prefix`` (the word before ``offset``) the hole's grammar accepts there."""
    wanted = sorted(k for k in analyzer.keywords - analyzer.names_too if k.startswith(prefix) and k.isidentifier())
    if not wanted or ENGINES not in sys.modules:
        return []
    from gdg_lsp import fragments
    from gdg_lsp.grammar.engine import accepts, byte_engine

    hole = analyzer.hole_at(snapshot, offset, workspace)
    if isinstance(hole, NoHole) or not hole.typed.endswith(prefix):
        return []
    before = hole.typed[: len(hole.typed) - len(prefix)]
    try:
        fragment = fragments.fragment(hole.language, hole.fragment)
    except GrammarError:  # a fragment file went meanwhile: nothing to vouch with
        return []
    choice = fragments.choose(fragment, hole.gamma, hole.context, before, "syntax", byte_engine().get, accepts)
    if choice.compiled is None:
        return []
    return [k for k in wanted if any(accepts(choice.compiled, before + k + f) for f in FOLLOWERS)]
