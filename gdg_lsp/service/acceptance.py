"""What happened to the suggestions shown: counted here, for the user only (docs/ACCEPT_PROTOCOL.md).

Every item the server serves has an id (its rest, served again while the user types it
through, keeps it). The editor says when it drew one (``shown``), when the user took a part
of it (``partially_accepted``: accept-word, accept-line) and when the user took the rest
(``accepted``: the item's command). The tracker infers the rest from the document:

- an edit that types the item on (its next characters at its insertion point, the range it
  replaces overwritten at most) moves it along; any other edit, an answer for the document
  that does not serve it again, or the document's close ends it: ``dismissed``, or
  ``typedThrough`` when the user typed all of it, unless a part was accepted;
- an accepted range is followed through later edits (an edit before it moves it, one inside
  or across it widens it), and ``RETENTION_CHECKS`` seconds after the accept the characters
  of it still there are counted (the matching characters of what was accepted and what stands
  in its range now).

Each item ends in at most one of ``accepted``, ``partiallyAccepted``, ``dismissed``,
``typedThrough``; ``shown`` counts every item drawn once (pending ones are in none of the
four yet). Counts are kept per language and model (``Table``). What is remembered is
bounded: ``MAX_ITEMS`` items (the oldest are ended first), ``MAX_CHECKS`` accepted ranges.
Nothing here reads a file or a clock of its own: the server passes the time and the text.
"""

from __future__ import annotations

import difflib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("shown", "accepted", "partiallyAccepted", "dismissed", "typedThrough", "charsAccepted",
          "charsChecked30s", "charsRetained30s", "charsChecked2m", "charsRetained2m")
"""The counters of one (language, model) row."""
OUTCOMES = ("accepted", "partiallyAccepted", "dismissed", "typedThrough")
RETENTION_CHECKS = ((30.0, "30s"), (120.0, "2m"))
"""Seconds after an accept at which its characters are counted again, and the counters' suffix."""
MAX_ITEMS = 512
"""Served items remembered (each document's current ones, and ended ones a late message may name)."""
MAX_CHECKS = 256
"""Accepted ranges followed until their last retention check (the oldest go first, unmeasured)."""
MAX_COMPARED = 4096
"""Characters of an accepted range compared at a check, at most (a range widened by a paste)."""

Key = tuple[str, str]
"""(language, model)."""


class Table:
    """Counters per (language, model)."""

    def __init__(self, rows: Mapping[Key, Mapping[str, int]] | None = None) -> None:
        self.rows: dict[Key, dict[str, int]] = {}
        for key, counts in (rows or {}).items():
            self.add(key, counts)

    def add(self, key: Key, counts: Mapping[str, int]) -> None:
        row = self.rows.setdefault(key, dict.fromkeys(FIELDS, 0))
        for name, value in counts.items():
            row[name] = row.get(name, 0) + value

    def bump(self, key: Key, name: str, by: int = 1) -> None:
        self.add(key, {name: by})

    def merged(self, other: Table) -> Table:
        table = Table(self.rows)
        for key, counts in other.rows.items():
            table.add(key, counts)
        return table

    def minus(self, other: Table) -> Table:
        """What this table counted beyond ``other`` (a snapshot of it taken earlier)."""
        table = Table()
        for key, counts in self.rows.items():
            before = other.rows.get(key, {})
            delta = {name: value - before.get(name, 0) for name, value in counts.items()}
            if any(delta.values()):
                table.add(key, delta)
        return table

    def copy(self) -> Table:
        return Table(self.rows)

    def total(self) -> dict[str, int]:
        out = dict.fromkeys(FIELDS, 0)
        for counts in self.rows.values():
            for name in FIELDS:
                out[name] += counts.get(name, 0)
        return out

    def payload(self) -> dict[str, Any]:
        """``{"all": counters, "rows": [{"language", "model", counters...}]}``, rows sorted."""
        return {"all": self.total(),
                "rows": [{"language": language, "model": model, **{name: counts.get(name, 0) for name in FIELDS}}
                         for (language, model), counts in sorted(self.rows.items())]}


@dataclass
class _Item:
    id: str
    uri: str
    key: Key
    text: str
    """The suggestion as first served."""
    anchor: int
    """Where ``text[0]`` is (or would be) in the document now."""
    replaces: int
    """Characters after the insertion point the item's range still replaces (closers the editor
    had auto-inserted): an accept may overwrite that many."""
    progress: int = 0
    """Characters of ``text`` in the document (typed through or accepted)."""
    accepted_upto: int = 0
    """Characters of ``text`` taken by an accept, from its start."""
    shown: bool = False
    outcome: str | None = None


@dataclass
class _Check:
    key: Key
    uri: str
    expected: str
    start: int
    end: int
    due: list[tuple[float, str]] = field(default_factory=list)
    """(when, counter suffix) still to come, soonest first."""


def code_points(text: str, utf16_units: int) -> int:
    """How many characters of ``text`` make up its first ``utf16_units`` UTF-16 code units (a
    count inside a surrogate pair stops before that character)."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > utf16_units:
            return index
    return len(text)


def retained(expected: str, now: str) -> int:
    """Characters of ``expected`` still standing, in order, in ``now``."""
    if not expected or not now:
        return 0
    matcher = difflib.SequenceMatcher(None, expected, now[:MAX_COMPARED], autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks())


class Tracker:
    def __init__(self) -> None:
        self.counts = Table()
        self._items: OrderedDict[str, _Item] = OrderedDict()
        self._current: dict[str, list[str]] = {}
        """Per document, the ids of the items it shows now (served last and not ended)."""
        self._checks: list[_Check] = []
        self.unmeasured = 0
        """Accepted ranges whose checks were given up (the range limit, or a document gone)."""

    # -- what the server serves ---------------------------------------------------------

    def served(self, uri: str, key: Key, anchor: int, items: Iterable[tuple[str, str, int, int]]) -> None:
        """The document ``uri`` was answered with ``items``: (id, the suggestion's text as first
        served, characters of it before what this answer inserts, characters after the cursor its
        range replaces), all inserted at ``anchor`` + that offset. An id served before is the same
        suggestion again (its rest); the document's other current items end."""
        ids = []
        for item_id, text, offset, replaces in items:
            item = self._items.get(item_id)
            if item is None:
                item = self._remember(_Item(item_id, uri, key, text, anchor - offset, replaces))
            elif item.outcome in ("dismissed", "typedThrough"):
                self._set_outcome(item, None)  # shown again: it was not over after all
            ids.append(item_id)
        for item_id in self._current.get(uri, []):
            if item_id not in ids and (item := self._items.get(item_id)) is not None:
                self._end(item)
        if ids:
            self._current[uri] = ids
        else:
            self._current.pop(uri, None)

    def _remember(self, item: _Item) -> _Item:
        self._items[item.id] = item
        while len(self._items) > MAX_ITEMS:
            _, oldest = self._items.popitem(last=False)
            self._end(oldest)
            self._forget_current(oldest)
        return item

    # -- what the editor says -------------------------------------------------------------

    def shown(self, item_id: str) -> bool:
        """The editor drew the item (counted once per item); False for an id never served."""
        item = self._items.get(item_id)
        if item is None:
            return False
        self._mark_shown(item)
        return True

    def _mark_shown(self, item: _Item) -> None:
        if not item.shown:
            item.shown = True
            self.counts.bump(item.key, "shown")
            if item.outcome is not None:  # an accept came before the showing was said
                self.counts.bump(item.key, item.outcome)

    def partially_accepted(self, item_id: str, item_text: str, accepted_units: int, offset: int | None,
                           now: float) -> bool:
        """The user took the first ``accepted_units`` UTF-16 units of ``item_text`` (the item as the
        editor has it: the suggestion from ``offset``, or its end part when ``offset`` is None)."""
        item = self._items.get(item_id)
        if item is None or not isinstance(item_text, str):
            return False
        start = offset if offset is not None else max(0, len(item.text) - len(item_text))
        end = min(len(item.text), start + code_points(item_text, max(0, accepted_units)))
        self._mark_shown(item)
        self._take(item, start, end, now)
        if item.outcome != "accepted":
            self._set_outcome(item, "partiallyAccepted")
        return True

    def accepted(self, item_id: str, offset: int | None, now: float) -> bool:
        """The user took the rest of the item (from ``offset``, or from where it stood)."""
        item = self._items.get(item_id)
        if item is None:
            return False
        self._mark_shown(item)
        self._take(item, offset if offset is not None else item.accepted_upto, len(item.text), now)
        self._set_outcome(item, "accepted")
        self._forget_current(item)
        return True

    def _take(self, item: _Item, start: int, end: int, now: float) -> None:
        """Characters ``[start, end)`` of the item were inserted by an accept (those taken before not again)."""
        start = max(start, item.accepted_upto)
        if end <= start:
            return
        item.accepted_upto = end
        item.progress = max(item.progress, end)
        self.counts.bump(item.key, "charsAccepted", end - start)
        due = [(now + seconds, suffix) for seconds, suffix in RETENTION_CHECKS]
        self._checks.append(_Check(item.key, item.uri, item.text[start:end], item.anchor + start,
                                   item.anchor + end, due))
        while len(self._checks) > MAX_CHECKS:
            self._checks.pop(0)
            self.unmeasured += 1

    # -- what the document does -----------------------------------------------------------

    def edited(self, uri: str, edits: Iterable[tuple[int, int, str]]) -> None:
        """Edits applied to ``uri`` in order: (start, end of the range replaced, the text put there),
        in code points of the text as it was just before each."""
        for start, old_end, text in edits:
            self._follow_items(uri, start, old_end, text)
            for check in self._checks:
                if check.uri == uri:
                    check.start, check.end = _follow(check.start, check.end, start, old_end, len(text))

    def _follow_items(self, uri: str, start: int, old_end: int, text: str) -> None:
        for item_id in list(self._current.get(uri, [])):
            item = self._items.get(item_id)
            if item is None:
                continue
            at = item.anchor + item.progress
            removed = old_end - start
            if start == at and removed <= item.replaces and text and item.text.startswith(text, item.progress):
                item.progress += len(text)  # typed on (or inserted by an accept whose message follows)
                item.replaces -= removed
            else:
                self._end(item)  # the user wrote something else, or elsewhere

    def closed(self, uri: str, text_of: Callable[[str, int, int], str | None]) -> None:
        """The document closed: its items end, its accepted ranges are counted as they stand."""
        for item_id in list(self._current.get(uri, [])):
            if (item := self._items.get(item_id)) is not None:
                self._end(item)
        for check in [c for c in self._checks if c.uri == uri]:
            self._measure(check, text_of, every=True)

    def due(self, now: float, text_of: Callable[[str, int, int], str | None]) -> float | None:
        """Count the retention checks due by ``now``; when the next one is due (None: none left)."""
        for check in list(self._checks):
            while check.due and check.due[0][0] <= now:
                self._measure(check, text_of)
        return min((c.due[0][0] for c in self._checks if c.due), default=None)

    def _measure(self, check: _Check, text_of: Callable[[str, int, int], str | None], every: bool = False) -> None:
        """The check's next count (``every``: all of those left, on the text as it stands)."""
        text = text_of(check.uri, check.start, min(check.end, check.start + MAX_COMPARED))
        while check.due:
            _, suffix = check.due.pop(0)
            if text is None:
                continue
            self.counts.bump(check.key, f"charsChecked{suffix}", len(check.expected))
            self.counts.bump(check.key, f"charsRetained{suffix}", retained(check.expected, text))
            if not every:
                break
        if text is None:
            self.unmeasured += 1
        if not check.due and check in self._checks:
            self._checks.remove(check)

    # -- outcomes ---------------------------------------------------------------------------

    def _end(self, item: _Item) -> None:
        """The item is no longer on screen: dismissed, unless it was typed or partly taken."""
        self._forget_current(item)
        if item.outcome is None and item.shown:
            self._set_outcome(item, "typedThrough" if item.progress >= len(item.text) else "dismissed")

    def _forget_current(self, item: _Item) -> None:
        ids = self._current.get(item.uri)
        if ids and item.id in ids:
            ids.remove(item.id)
            if not ids:
                del self._current[item.uri]

    def _set_outcome(self, item: _Item, outcome: str | None) -> None:
        if item.outcome == outcome:
            return
        if item.shown and item.outcome is not None:
            self.counts.bump(item.key, item.outcome, -1)
        item.outcome = outcome
        if item.shown and outcome is not None:
            self.counts.bump(item.key, outcome)

    def pending(self) -> dict[str, int]:
        """Items on screen now, and accepted ranges still to be checked."""
        return {"items": sum(len(ids) for ids in self._current.values()), "checks": len(self._checks),
                "unmeasured": self.unmeasured}


def _follow(lo: int, hi: int, start: int, old_end: int, inserted: int) -> tuple[int, int]:
    """The range ``[lo, hi)`` after ``[start, old_end)`` was replaced by ``inserted`` characters:
    moved by an edit before it, widened to cover one that overlaps it, unchanged by one after."""
    delta = inserted - (old_end - start)
    if old_end <= lo:
        return lo + delta, hi + delta
    if start >= hi:
        return lo, hi
    return min(lo, start), (hi + delta if old_end <= hi else start + inserted)
