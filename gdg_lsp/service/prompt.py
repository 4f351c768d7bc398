"""The prompt for one request: which text around the cursor the model sees, in which layout.

The prefix is a window of the document before the cursor (whole lines, its start
quantised so that successive requests share their first tokens and the KV
cache), after the language's context (SQL DDL, P4 includes...) and, under
``gdg.definitions``, snippets of other documents edited recently (``recent.py``). For a model
with fill-in-the-middle tokens (``prompt_shapes``) the text after the cursor
is sent too, within its share of ``gdg.contextTokens``; everything else sees
the prefix alone. The prefix's last tokens are healed either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdg_lsp import prompt_shapes
from gdg_lsp.decoding import healing
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Prompt
from gdg_lsp.languages.base import Analyzer, Hole, WorkspaceContext
from gdg_lsp.prompt_shapes import Template
from gdg_lsp.service import recent
from gdg_lsp.settings import Settings
from gdg_lsp.vocab import Vocabulary

WINDOW_QUANTUM = 16
"""The prompt window starts on a multiple of this many lines, so that successive
requests in one region share their prompt prefix (and the model's KV cache)."""

SUFFIX_SHARE = 0.25
"""Share of ``gdg.contextTokens`` the text after the cursor may take (the prefix says more
about what comes next; the suffix mostly says where it must stop)."""

CHARS_PER_TOKEN = 3
"""A generous estimate, corrected by encoding: the window is cut in characters first."""


@dataclass(frozen=True)
class PromptShape:
    """What the prompt was made of (``explain`` and the summary show it)."""

    template: str
    """The FIM family whose layout was used, or ``prompt_shapes.PREFIX_ONLY``."""
    prefix_tokens: int
    suffix_tokens: int = 0


def window_start(text: str, cursor: int, floor: int, max_chars: int) -> int:
    """Start of the prompt window: a line start at most ``max_chars`` before the
    cursor, rounded forward to a multiple of WINDOW_QUANTUM lines, never after
    ``floor`` (the start of the hole's first line)."""
    lo = max(0, cursor - max_chars)
    start = 0 if lo == 0 else text.find("\n", lo - 1, cursor) + 1
    if lo and start == 0:  # no line break in reach: the window is the line itself
        start = text.rfind("\n", 0, cursor) + 1
    line_no = text.count("\n", 0, start)
    for _ in range(-(-line_no // WINDOW_QUANTUM) * WINDOW_QUANTUM - line_no):
        nxt = text.find("\n", start, cursor)
        if nxt < 0:
            break
        start = nxt + 1
    return min(start, floor)


def suffix_window(vocab: Vocabulary, text: str, cursor: int, max_tokens: int) -> list[int]:
    """The ids of the text after the cursor: the rest of the cursor's line always (cut only
    when that line alone is over the budget), then whole lines while they fit."""
    line_end = text.find("\n", cursor)
    line_end = len(text) if line_end < 0 else line_end + 1
    end = max(line_end, min(len(text), cursor + max_tokens * CHARS_PER_TOKEN))
    if end > line_end and end < len(text):
        end = max(line_end, text.rfind("\n", line_end, end) + 1)
    ids = vocab.encode(text[cursor:end]).ids
    while len(ids) > max_tokens and end > line_end:  # the estimate was generous: drop lines from the end
        end = max(line_end, text.rfind("\n", line_end, end - 1) + 1)
        ids = vocab.encode(text[cursor:end]).ids
    return ids[:max_tokens]


def build(vocab: Vocabulary, template: Template | None, snapshot: Snapshot, hole: Hole, analyzer: Analyzer,
          settings: Settings, workspace: WorkspaceContext) -> tuple[Prompt, PromptShape]:
    """The prompt at ``hole``; a FIM layout when ``template`` is given and ``gdg.suffix`` is on."""
    text = snapshot.text
    fim = template if settings.suffix else None
    suffix_ids = suffix_window(vocab, text, hole.cursor, int(settings.context_tokens * SUFFIX_SHARE)) if fim else []
    budget = settings.context_tokens - len(suffix_ids) - (3 if fim else 0)
    context = analyzer.prompt_context(snapshot, hole, workspace)
    if settings.definitions and workspace.recent is not None:  # other documents just edited, first
        context = workspace.recent.context(snapshot.uri, snapshot.language_id,
                                           int(settings.context_tokens * CHARS_PER_TOKEN * recent.SHARE)) + context
    line_start = text.rfind("\n", 0, hole.cursor) + 1
    region_line = text.rfind("\n", 0, hole.region_start) + 1
    start = window_start(text, hole.cursor, region_line, max(budget * CHARS_PER_TOKEN - len(context), 256))
    body = text[start : hole.cursor]
    prompt_text = context + body
    encoding = vocab.encode(prompt_text)
    while len(encoding.ids) > budget and start < region_line:
        # the character estimate was generous: drop whole quanta of lines
        cut = body.find("\n", 0)
        for _ in range(WINDOW_QUANTUM - 1):
            nxt = body.find("\n", cut + 1)
            if nxt < 0 or start + nxt + 1 > region_line:
                break
            cut = nxt
        if cut < 0:
            break
        start += cut + 1
        body = text[start : hole.cursor]
        prompt_text = context + body
        encoding = vocab.encode(prompt_text)
    region_p = len(context) + hole.region_start - start
    floor = len(context) + line_start - start if hole.region_start < line_start else 0
    split = healing.split(prompt_text, encoding, vocab, floor=floor)
    if split.heal_start >= region_p:
        replay = analyzer.replay_text(prompt_text[region_p : split.heal_start])
        outside = 0
    else:
        replay, outside = "", region_p - split.heal_start
    ids = fim.layout(split.ids, suffix_ids) if fim else split.ids
    shape = PromptShape(fim.family if fim else prompt_shapes.PREFIX_ONLY, len(split.ids), len(suffix_ids))
    return Prompt(ids, split.heal_text, outside, replay), shape
