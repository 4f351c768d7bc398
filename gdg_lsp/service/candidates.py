"""Alternatives (``gdg.candidates``): more than one suggestion under the same mask, ranked.

The first candidate is the greedy decode (what one candidate gives); the others
are sampled from the model under the same grammar and Γ, so each is ghost-free
by the same construction. Distinct texts only. They are ranked complete ones
first (a statement cut by the token or time budget never ranks above one the
model or the grammar ended), then by cheap checks (the edited line still parses
for the language's own parser: tree-sitter finds no error or missing node on it;
then the language's own check of the statement, ``Analyzer.statement_check``:
for SQL, the statement prepares on the file's SQLite source) and then by the
model's mean log-probability per token.

A candidate whose names Γ does not vouch for (π fell back to a rung with open
reference positions: ``base`` after a name Γ lacks was typed) is checked before it
is shown with the diagnostics the server publishes, on the document with the
candidate in place (``invented_names``); ``gdg.showUnguaranteed`` decides what
happens to it (``unshown_because``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Execution
from gdg_lsp.languages.base import Analyzer, Hole, WorkspaceContext
from gdg_lsp.service import confidence

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
    guaranteed: bool = False
    """Every reference position of it was a Γ-slot (or checked), as ``Suggestion.guaranteed``."""
    invented: list[str] = field(default_factory=list)
    """Names it writes that the diagnostics find nowhere (checked only when not guaranteed)."""

    @property
    def mean_logprob(self) -> float | None:
        return self.execution.mean_logprob

    @property
    def complete(self) -> bool:
        """Ended by the model or the grammar, not cut by the token or time budget."""
        return not self.execution.stop_reason.budget

    def summary(self) -> dict[str, Any]:
        lp = self.mean_logprob
        total = confidence.score(self.execution)
        return {"text": self.text, "meanLogprob": None if lp is None else round(lp, 3),
                "logprob": None if total is None else round(total, 3), "parses": self.parses,
                "checked": self.checked, "complete": self.complete, "guaranteed": self.guaranteed,
                "rung": self.execution.rung, "stopReason": str(self.execution.stop_reason)}


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
    """Complete ones first, then parsing, then the language's check (unknown in between,
    each), then the higher mean log-probability; stable."""
    order = {True: 0, None: 1, False: 2}

    def key(c: Candidate) -> tuple[bool, int, int, float]:
        lp = c.mean_logprob
        return (not c.complete, order[c.parses], order[c.checked], -(lp if lp is not None else float("-inf")))

    return sorted(candidates, key=key)


def invented_names(analyzer: Analyzer, snapshot: Snapshot, hole: Hole, end: int, inserted: str,
                   workspace: WorkspaceContext) -> list[str]:
    """Names ``inserted`` (put over ``[hole.cursor, end)``) writes that do not exist: the
    language's own diagnostics, the ones the server publishes, on the document with it in
    place, where a finding names something (its data has a ``name``: an undefined name, a
    member a module does not have, an unknown column...) and overlaps the inserted text.
    A name the user typed and the candidate only follows is not the candidate's; one it
    lengthens (``undefined_thing`` + ``_statistics``) is."""
    text = snapshot.text
    edited = text[: hole.cursor] + inserted + text[end:]
    parser = analyzer.parser()
    tree = parser(edited.encode("utf-8", "surrogatepass"), None) if parser is not None else None
    findings = analyzer.diagnostics(Snapshot(snapshot.uri, snapshot.language_id, snapshot.version, edited, tree),
                                    workspace)
    lo, hi = hole.cursor, hole.cursor + len(inserted)
    names = []
    for finding in findings:
        name = finding.data.get("name") if finding.data else None
        if name and finding.end > lo and finding.start < hi and str(name) not in names:
            names.append(str(name))
    return names


def unshown_because(candidate: Candidate, policy: str, threshold: float | None = None) -> str | None:
    """Why ``gdg.showUnguaranteed`` (``policy``) or ``gdg.showThreshold`` (``threshold``, the
    value for this hole) keeps ``candidate`` off the screen, or None."""
    if doubted := confidence.doubted_because(candidate.execution, threshold):
        return doubted
    if candidate.guaranteed or policy == "always":
        return None
    if policy == "never":
        return f"not guaranteed (rung {candidate.execution.rung}) and gdg.showUnguaranteed is never"
    if candidate.invented:
        return (f"it writes {', '.join(candidate.invented)}, which the diagnostics find nowhere "
                f"(rung {candidate.execution.rung}: names not drawn from Γ)")
    return None
