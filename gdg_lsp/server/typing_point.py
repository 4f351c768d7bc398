"""The word being typed: no diagnostic for it while it is being written.

Typing ``return``, the diagnostics run of a pause between two keys (0.35 s after the
last) found ``re``, a name nothing defines, and VS Code underlined it under the ghost
that was about to finish it. A finding whose text ends where the document's last edit
ended (the cursor, as far as the server can know it) and is the start of a longer name
of Γ there, or of one of the language's keywords, is held back:

- the first diagnostics run after an edit elsewhere publishes it (the typing point
  moved on, and the word stayed as it was), and
- so does a run ``HOLD_SECONDS`` after the last edit, scheduled when it is held: the
  server hears no cursor moves (LSP sends none), so a pause is the only sign that the
  user left the word without another edit. Keystrokes inside a word come a few tenths of
  a second apart; a word left alone for two seconds is what the user wrote.

A prefix of nothing (``undefined_thi`` where no name begins so) is published at once:
it cannot become a name by typing on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gdg_lsp.languages.base import Analyzer, Finding, WorkspaceContext

HOLD_SECONDS = 2.0
"""How long after the last edit a finding for the word it ended in is held back."""


@dataclass(frozen=True)
class TypingPoint:
    """Where the document's last edit ended, in the text of ``version``, and when."""

    version: int
    offset: int
    at: float


@dataclass(frozen=True)
class Held:
    """Findings to publish, and when to look again at the ones held back (None: none were)."""

    shown: list[Finding]
    recheck_at: float | None = None


def edited(points: dict[str, TypingPoint], uri: str, version: int, offset: int) -> None:
    """The document ``uri`` reached ``version`` with its last change ending at ``offset`` (code points)."""
    points[uri] = TypingPoint(version, offset, time.monotonic())


def hold_back(points: dict[str, TypingPoint], snapshot, analyzer: Analyzer, workspace: WorkspaceContext,
              findings: list[Finding]) -> Held:
    """``findings`` less the one for the word being typed, if any (on an analysis thread: Γ is read)."""
    point = points.get(snapshot.uri)
    if point is None or point.version != snapshot.version:
        return Held(findings)
    left = point.at + HOLD_SECONDS - time.monotonic()
    if left <= 0:
        return Held(findings)
    typed = [f for f in findings if f.end == point.offset and f.end > f.start]
    if not typed:
        return Held(findings)
    text = snapshot.text
    held = [f for f in typed if _starts_a_name(text, f, analyzer, snapshot, workspace)]
    if not held:
        return Held(findings)
    return Held([f for f in findings if f not in held], point.at + HOLD_SECONDS)


def _starts_a_name(text: str, finding: Finding, analyzer: Analyzer, snapshot, workspace: WorkspaceContext) -> bool:
    word = text[finding.start:finding.end]
    if not word or any(c.isspace() for c in word):
        return False
    if any(k.startswith(word) and len(k) > len(word) for k in analyzer.keywords):
        return True
    qualified = _dotted_run(text, finding.start) + word  # self.pel: the members of self
    try:
        gamma = analyzer.gamma_at(snapshot, finding.end, workspace)
    except Exception:  # Γ cannot be read here: nothing vouches for holding it back
        return False
    for binding in gamma.visible().values():
        label = str(binding.attrs.get("word", binding.name))
        candidates = (binding.name,) if qualified != word else (label, binding.name)
        if any(n.startswith(qualified) and len(n) > len(qualified) for n in candidates):
            return True
    return False


def _dotted_run(text: str, start: int) -> str:
    """The ``receiver.`` written right before ``start`` (``self.`` of ``self.pel``), or ""."""
    if start == 0 or text[start - 1] != ".":
        return ""
    begin = start - 1
    while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] in "_."):
        begin -= 1
    return text[begin:start]
