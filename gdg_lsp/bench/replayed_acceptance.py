"""What a user who types the original code would have done with a suggestion (issue 30 item 3).

The quality bench knows what the hole held, so it can replay the editor's choice for each
shown suggestion: a ghost the original continues with whole is accepted (Tab); one whose
first words the original continues with is accepted word by word (the editors' accept-word
key takes the same pieces, ``editors/neovim/lua/gdg_lsp/remainder.lua``) and the rest typed
over; one whose first word is already wrong is dismissed. The counts are the ones
``gdg/status`` keeps from a real session (shown, accepted, partly, dismissed, characters
accepted), so a show threshold or a model can be tuned on them offline. What a replay
cannot know is whether accepted text is kept: it is the original's, so it always is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_LEAD = re.compile(r"\n?[ \t]*")
_WORD = re.compile(r"(?:[A-Za-z0-9_]|[^\x00-\x7f])+")
_PUNCT = re.compile(r"[^A-Za-z0-9_\s\x80-\U0010ffff]+")


def next_word(rest: str) -> str:
    """The piece an accept-word takes from ``rest``: its leading blanks (and one line break),
    then a run of word characters or of punctuation (``x = foo(bar)``: ``x``, `` =``, `` foo``,
    ``(``, ``bar``, ``)``); another blank alone."""
    lead = _LEAD.match(rest).group(0)
    body = rest[len(lead):]
    run = _WORD.match(body) or _PUNCT.match(body)
    piece = lead + (run.group(0) if run else "")
    return piece or rest[:1]


@dataclass(frozen=True)
class Replay:
    outcome: str
    """``accepted`` (whole), ``partly`` (some words), ``dismissed``, or ``not shown`` (empty)."""
    characters: int
    """Characters of the suggestion the replayed user kept."""


def replay(suggestion: str, original: str) -> Replay:
    """The replayed user's choice for ``suggestion`` at a hole that held ``original`` (both
    from the cursor; blanks before the first word and at the end do not count)."""
    shown, truth = suggestion.lstrip(" \t").rstrip(), original.lstrip(" \t").rstrip()
    if not shown:
        return Replay("not shown", 0)
    taken = 0
    while taken < len(shown):
        piece = next_word(shown[taken:])
        if not truth.startswith(shown[: taken + len(piece)]):
            break
        taken += len(piece)
    if taken == len(shown):
        return Replay("accepted", taken)
    kept = len(shown[:taken].rstrip())
    return Replay("partly", kept) if kept else Replay("dismissed", 0)


def summary(replays: Iterable[Replay], original_characters: int) -> dict[str, float]:
    """The counts ``gdg/status`` keeps, for a run of replays: shown, accepted, partly,
    dismissed, characters accepted, and their share of the characters the holes held."""
    done = list(replays)
    shown = [r for r in done if r.outcome != "not shown"]
    characters = sum(r.characters for r in shown)
    return {
        "shown": len(shown),
        "accepted": sum(r.outcome == "accepted" for r in shown),
        "partly": sum(r.outcome == "partly" for r in shown),
        "dismissed": sum(r.outcome == "dismissed" for r in shown),
        "characters": characters,
        "characters_share": characters / original_characters if original_characters else 0.0,
    }
