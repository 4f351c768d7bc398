"""Alternatives (``gdg.candidates``): more than one suggestion under the same mask, ranked.

The first candidate is the greedy decode (what one candidate gives); the others
are sampled from the model under the same grammar and Γ, so each is ghost-free
by the same construction. Distinct texts only. They are ranked by cheap checks
first (the edited line still parses for the language's own parser: tree-sitter
finds no error or missing node on it; then the language's own check of the
statement, ``Analyzer.statement_check``: for SQL, the statement prepares on the
file's SQLite source) and then by the model's mean log-probability per token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gdg_lsp.executor import Execution

SAMPLING_TEMPERATURE = 0.7
"""Alternatives are sampled this warm: different, still what the model finds likely."""

ATTEMPTS_PER_CANDIDATE = 2
"""Samples drawn per candidate wanted (duplicates and empty ones are dropped)."""


@dataclass
class Candidate:
    text: str
    end: int
    """End of the range the candidate replaces (it starts at the cursor)."""
    execution: Execution
    parses: bool | None = None
    """The line parses with the candidate in place (None: the language has no tree-sitter parser)."""
    checked: bool | None = None
    """The language's check of the statement with the candidate in place (SQL: it prepares on
    the SQLite source); None where the language has none or it could not judge."""

    @property
    def mean_logprob(self) -> float | None:
        return self.execution.mean_logprob

    def summary(self) -> dict[str, Any]:
        lp = self.mean_logprob
        return {"text": self.text, "meanLogprob": None if lp is None else round(lp, 3), "parses": self.parses,
                "checked": self.checked}


def line_parses(parser: Callable[[bytes, Any], Any] | None, document: str, start: int, end: int,
                inserted: str) -> bool | None:
    """Whether ``document`` with ``[start, end)`` replaced by ``inserted`` has no syntax error
    on the lines the edit touches (errors elsewhere in the file are not the candidate's)."""
    if parser is None:
        return None
    edited = document[:start] + inserted + document[end:]
    try:
        tree = parser(edited.encode("utf-8"), None)
    except Exception:  # a parser that cannot read this text says nothing about the candidate
        return None
    root = getattr(tree, "root_node", None)
    if root is None or not hasattr(root, "has_error"):
        return None
    if not root.has_error:
        return True
    line_start = edited.rfind("\n", 0, start) + 1
    line_end = edited.find("\n", start + len(inserted))
    lo = len(edited[:line_start].encode("utf-8"))
    hi = len(edited[: len(edited) if line_end < 0 else line_end].encode("utf-8"))
    return not _error_within(root, lo, hi)


def _error_within(node: Any, lo: int, hi: int) -> bool:
    """An error or missing node that overlaps the bytes ``[lo, hi)``, smaller than the whole
    file (an error node around everything says nothing about one line)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.end_byte < lo or current.start_byte > hi:
            continue
        if current.is_missing or (current.is_error and current is not node):
            return True
        if current.has_error:
            stack.extend(current.children)
    return False


def rank(candidates: list[Candidate]) -> list[Candidate]:
    """Parsing first, then the language's check (unknown in between, each), then the higher
    mean log-probability; stable."""
    order = {True: 0, None: 1, False: 2}

    def key(c: Candidate) -> tuple[int, int, float]:
        lp = c.mean_logprob
        return (order[c.parses], order[c.checked], -(lp if lp is not None else float("-inf")))

    return sorted(candidates, key=key)
