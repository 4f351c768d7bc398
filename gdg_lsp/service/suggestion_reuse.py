"""Answering without decoding: the rest of a suggestion the user is typing through, and repeated asks.

Editors ask again after every key. When the keys typed since a suggestion was
shown are the start of that suggestion (typed one by one, or taken with the
editor's partial accept: next word, next line), the answer is the rest of it;
when the document and the position are the same as for an earlier answer, the
answer is that answer again. Neither needs the model.

A suggestion is shown with its alternatives (``gdg.candidates``), each an ``Item`` with the
id the editor reports it by (ACCEPT_PROTOCOL.md); the rest of an item keeps its id. Typing
through filters them: the items the typed text starts are kept, each shortened, the others go.
Alternatives decoded after the first was shown (their own time slice) join the document's
entry (``add_alternatives``), filtered by what was typed meanwhile.

Both are offered only under the conditions the suggestion was made under:

- the document is the one the suggestion was shown in with exactly the
  accepted characters inserted at its start (``typed_through``), or the very
  same text and position (``repeated``): any other edit falls back to decoding;
- every setting that changes a suggestion (``settings.SUGGESTION``: the model, the
  constraint, the budgets, the prompt's parts...) has the value it had;
- Γ at the position now is the Γ the suggestion was decoded under, the whole
  environment and the hole's shape compared by ``hole_key`` (``confirm``), so a
  name that has since left Γ (a workspace schema changed, a module went) is
  never served again; a changed Γ means a new decode. The digests are made where the
  hole is (an analysis thread, the plan of a decode), never on the event loop: at
  2,130 bindings one costs 3.7 ms warm and 21 ms cold.

What is kept is bounded (``BoundedCache``): the last suggestion shown per
document, and a few recent answers by (document, text, position), weighed by the
document text they hold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot
from gdg_lsp.gamma import Binding
from gdg_lsp.languages.base import PROMPT_ONLY, Hole
from gdg_lsp.settings import Settings, suggestion_key

MAX_DOCUMENTS = 256
"""Documents whose last shown suggestion is kept."""
MAX_RESULTS = 64
"""Recent answers kept for repeated asks."""
MAX_KEPT_CHARS = 32 * 1024 * 1024
"""Document text held by the kept answers, at most (each holds the text it was made for)."""


def settings_key(settings: Settings) -> tuple:
    """The settings a suggestion depends on: another value means another suggestion (``settings.SUGGESTION``)."""
    return suggestion_key(settings)


_BINDING_DIGESTS: BoundedCache[int, tuple[Binding, bytes]] = BoundedCache("reuse.binding-digests", 20_000)
"""id(binding) -> (the binding, its digest). Bindings are immutable and the analyzers hand out the
same objects from one request to the next (builtins, surfaces, unchanged scopes), so each is
digested once; the binding is kept in the entry so that its id is not reused while the entry lives."""


def _binding_digest(binding: Binding) -> bytes:
    kept = _BINDING_DIGESTS.get(id(binding))
    if kept is not None and kept[0] is binding:
        return kept[1]
    attrs = sorted((str(k), repr(v)) for k, v in binding.attrs.items()) if binding.attrs else ()
    value = hashlib.blake2b(repr((binding.name, binding.sort, attrs)).encode("utf-8", "surrogatepass"),
                            digest_size=16).digest()
    _BINDING_DIGESTS.put(id(binding), (binding, value))
    return value


def _grammar_context(value: Any) -> Any:
    """``value`` (a hole's context, or a value in it) without the keys only the prompt reads
    (``PROMPT_ONLY``), at any depth: SQL ranks its prompt's tables by what the statement names so
    far, so they move while a shown suggestion is typed, and its grammar does not read them."""
    if isinstance(value, Mapping):
        return sorted((str(k), _grammar_context(v)) for k, v in value.items() if not str(k).startswith(PROMPT_ONLY))
    if isinstance(value, (list, tuple)):
        return [_grammar_context(v) for v in value]
    return value


def hole_key(hole: Hole) -> str:
    """A digest of what a suggestion was decoded under: the hole's language, fragment, sort,
    region and layout, the text a mid-line middle must fit before, its context as the grammar
    reads it, and every binding of Γ frame by frame (name, sort, attributes). Equal keys mean the
    same grammar and the same Γ growth while decoding."""
    digest = hashlib.blake2b(digest_size=16)
    shape = (hole.language, hole.fragment, hole.sort, hole.region_path, hole.indent, hole.suffix,
             repr(_grammar_context(hole.context)))
    digest.update(repr(shape).encode("utf-8", "surrogatepass"))
    for frame in (hole.gamma.global_layer, *hole.gamma.frames):
        digest.update(b"\x00frame " + frame.kind.encode("utf-8", "surrogatepass") + b"\x00")
        digest.update(b"".join(_binding_digest(binding) for binding in frame))
    return digest.hexdigest()


def digest_of(hole: Any) -> str | None:
    """``hole_key`` of a hole, a digest made already (a string) as it is, None for anything else
    (no hole there)."""
    if isinstance(hole, str):
        return hole
    return hole_key(hole) if isinstance(hole, Hole) else None


@dataclass(frozen=True)
class Item:
    """One suggestion of those shown together (the first and its alternatives)."""

    text: str
    """What it inserts (the rest, once its start was typed through)."""
    end: int
    """The end of the range it replaces (text the editor auto-inserted after the cursor)."""
    id: str = ""
    """The id the editor reports it by; its rest keeps it."""
    offset: int = 0
    """Characters of the suggestion as first served that come before ``text`` (typed through
    or accepted since)."""

    def typed_through(self, typed: str) -> Item | None:
        """The rest after ``typed``, when ``typed`` is a start of it that leaves something."""
        if not typed or len(typed) >= len(self.text) or not self.text.startswith(typed):
            return None
        return Item(self.text[len(typed):], self.end + len(typed), self.id, self.offset + len(typed))


@dataclass(frozen=True)
class Shown:
    """Suggestions as the editor was given them."""

    uri: str
    text: str
    """The document's text they were made for."""
    start: int
    """Where they are inserted (code points)."""
    items: tuple[Item, ...]
    """The first one and its alternatives, in the order served."""
    settings: tuple
    hole: str
    """``hole_key`` of the hole they were decoded at."""
    info: Any = None
    """The debug data of the decode they came from (``Suggestion.summary()``)."""

    @property
    def suggestion(self) -> str:
        return self.items[0].text

    @property
    def end(self) -> int:
        return self.items[0].end


@dataclass(frozen=True)
class Reuse:
    """An answer found without decoding, valid once ``confirm`` has seen Γ unchanged."""

    kind: str  # "typed-through" | "repeated"
    shown: Shown
    """The new position's view of it: ``start`` is the cursor now, ``suggestion`` the rest."""
    hole: str


@dataclass
class ReuseStats:
    typed_through: int = 0
    repeated: int = 0
    gamma_changed: int = 0
    """Candidates refused because Γ (or the hole) at the position had changed."""
    ahead: int = 0
    """Suggestions decoded ahead for the text after an accept and Enter (``remember_ahead``)."""
    ahead_served: int = 0
    """Of those, asks answered from one (counted in ``repeated`` too)."""

    def payload(self) -> dict[str, int]:
        return {"typedThrough": self.typed_through, "repeated": self.repeated, "gammaChanged": self.gamma_changed,
                "ahead": self.ahead, "aheadServed": self.ahead_served}


class SuggestionReuse:
    def __init__(self, max_documents: int = MAX_DOCUMENTS, max_results: int = MAX_RESULTS) -> None:
        self._shown: BoundedCache[str, Shown] = BoundedCache("reuse.shown-per-document", max_documents)
        self._results: BoundedCache[tuple, Shown] = BoundedCache(
            "reuse.recent-answers", max_results, max_weight=MAX_KEPT_CHARS, weigh=lambda s: len(s.text))
        self.stats = ReuseStats()

    def remember(self, snapshot: Snapshot, start: int, end: int, suggestion: str, settings: Settings,
                 hole: Hole | str, info: Any = None, item_id: str = "", others: tuple[Item, ...] = ()) -> None:
        """The editor was shown ``suggestion`` for ``[start, end)`` of ``snapshot`` (decoded at ``hole``,
        or at the hole whose ``hole_key`` that string is), by the id ``item_id``, and the alternatives
        ``others`` after it."""
        items = tuple(item for item in (Item(suggestion, end, item_id), *others) if item.text)
        digest = digest_of(hole)
        if items and digest is not None:
            self._keep(Shown(snapshot.uri, snapshot.text, start, items, settings_key(settings), digest, info))

    def remember_ahead(self, snapshot: Snapshot, start: int, end: int, suggestion: str, settings: Settings,
                       hole: Hole | str, info: Any = None, item_id: str = "") -> None:
        """A suggestion decoded ahead for a text the document does not have yet (``snapshot``: the
        one the user makes by accepting the suggestion shown and pressing Enter): kept for the ask
        at ``start`` of that text (answered as a repeated ask, once ``confirm`` has seen its Γ), the
        document's shown suggestion left as it is."""
        digest = digest_of(hole)
        if suggestion and digest is not None:
            shown = Shown(snapshot.uri, snapshot.text, start, (Item(suggestion, end, item_id),), settings_key(settings),
                          digest, info)
            self._results.put(_result_key(shown.uri, shown.text, shown.start, shown.settings), shown)
            self.stats.ahead += 1

    def add_alternatives(self, uri: str, first_id: str, items: list[Item], info: Any = None) -> Shown | None:
        """Alternatives decoded after the suggestion ``first_id`` was shown: ``items`` (that one
        among them, in the order to serve, as at the position it was shown at) replace the
        document's entry's, filtered by what was typed through since, with ``info`` as its debug
        data. None when the document shows something else by now (they are for a suggestion gone)."""
        shown = self._shown.get(uri)
        if shown is None or shown.items[0].id != first_id:
            return None
        typed = shown.text[shown.start - shown.items[0].offset : shown.start]
        kept = tuple(rest for item in items if (rest := item.typed_through(typed) if typed else item) is not None)
        if not kept:
            return None
        updated = replace(shown, items=kept, info=info if info is not None else shown.info)
        self._keep(updated)
        return updated

    def _keep(self, shown: Shown) -> None:
        if not shown.items:
            return
        self._shown.put(shown.uri, shown)
        self._results.put(_result_key(shown.uri, shown.text, shown.start, shown.settings), shown)

    def candidate(self, snapshot: Snapshot, offset: int, settings: Settings) -> Reuse | None:
        """An answer from what was shown, if the text and the settings allow one (Γ is checked by ``confirm``)."""
        key = settings_key(settings)
        shown = self._shown.get(snapshot.uri)
        if shown is not None and shown.settings == key:
            rest = _typed_through(shown, snapshot.text, offset)
            if rest is not None:
                return rest
        earlier = self._results.get(_result_key(snapshot.uri, snapshot.text, offset, key))
        if earlier is not None and earlier.text == snapshot.text and earlier.start == offset:
            return Reuse("repeated", earlier, earlier.hole)
        return None

    def confirm(self, reuse: Reuse, hole: Any) -> Shown | None:
        """The answer, if ``hole`` (the analysis at the position now, or its ``hole_key``) has the Γ
        the suggestion was decoded under; kept as the document's shown suggestion. None otherwise."""
        if digest_of(hole) != reuse.hole:
            self.stats.gamma_changed += 1
            return None
        if reuse.kind == "typed-through":
            self.stats.typed_through += 1
        else:
            self.stats.repeated += 1
            self.stats.ahead_served += bool((reuse.shown.info or {}).get("ahead"))
        self._keep(reuse.shown)
        return reuse.shown

    def forget(self, uri: str) -> None:
        self._shown.pop(uri)


def _result_key(uri: str, text: str, offset: int, settings: tuple) -> tuple:
    return uri, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), offset, settings


def _typed_through(shown: Shown, text: str, offset: int) -> Reuse | None:
    """The rest of ``shown`` when ``text`` is its document with a non-empty start of the
    suggestion inserted at its position and ``offset`` just after it (None otherwise)."""
    typed = offset - shown.start
    if typed <= 0 or len(text) != len(shown.text) + typed:
        return None
    inserted = text[shown.start:offset]
    if not text.startswith(shown.text[: shown.start]) or not text.endswith(shown.text[shown.start:]):
        return None
    items = tuple(rest for item in shown.items if (rest := item.typed_through(inserted)) is not None)
    if not items:
        return None
    return Reuse("typed-through", replace(shown, text=text, start=offset, items=items), shown.hole)
