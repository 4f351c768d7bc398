"""The prompt for one request: which text around the cursor the model sees, in which layout.

The prefix is a window of the document before the cursor (whole lines, its start
quantised so that successive requests share their first tokens and the KV
cache), after the language's context (SQL DDL, P4 includes, Python definitions...) and,
under ``gdg.definitions``, snippets of other documents edited recently (``recent.py``).
Everything is healed at its end (``decoding/healing.py``).

A model with fill-in-the-middle tokens (``prompt_shapes``) sees the text after the cursor
too, within its share of ``gdg.contextTokens``, in the family's layout with the cursor's
line after the middle marker: the lines above, the suffix and the marker are the same at
every keystroke on a line, so only the line runs through the model again (the text after
the cursor does not change while the user types before it, and the suffix's extent is
counted from the end of the line, not from the cursor). Families with repository tokens
get the recently edited snippets as the repository's other files (``<|file_sep|>`` path,
text) before the current file; the others read them as text at the prefix's start.
Everything else sees the prefix alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdg_lsp import prompt_shapes
from gdg_lsp.decoding import healing
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.executor import Prompt
from gdg_lsp.languages.base import Analyzer, Hole, WorkspaceContext
from gdg_lsp.prompt_shapes import Template
from gdg_lsp.service import recent
from gdg_lsp.settings import Settings
from gdg_lsp.vocab import Encoding, Vocabulary

WINDOW_QUANTUM = 16
"""The prompt window starts on a multiple of this many lines, so that successive
requests in one region share their prompt prefix (and the model's KV cache)."""

SUFFIX_SHARE = 0.25
"""Share of ``gdg.contextTokens`` the text after the cursor may take (the prefix says more
about what comes next; the suffix mostly says where it must stop)."""

CHARS_PER_TOKEN = 3
"""A generous estimate, corrected by encoding: the window is cut in characters first."""

LINE_IN_MIDDLE = True
KEEP_INDENT = True
LINE_QUANTUM = 64
"""The cursor's line (after the middle marker) is given room in steps of this many tokens:
the prefix's window stays where it is while the line grows within one step."""
"""FIM layouts put the cursor's line after the middle marker (see the module's text); False
puts it at the prefix's end, before the suffix (the layout the families document; kept to
measure one against the other)."""


@dataclass(frozen=True)
class PromptShape:
    """What the prompt was made of (``explain`` and the summary show it)."""

    template: str
    """The FIM family whose layout was used, or ``prompt_shapes.PREFIX_ONLY``."""
    prefix_tokens: int
    suffix_tokens: int = 0
    files: int = 0
    """Other files laid out as the repository's (families with repository tokens)."""


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
    when that line alone is over the budget), then whole lines while they fit. Which lines
    is counted from the line's end, so typing on the line keeps the same suffix."""
    line_end = text.find("\n", cursor)
    line_end = len(text) if line_end < 0 else line_end + 1
    end = min(len(text), line_end + max_tokens * CHARS_PER_TOKEN)
    if end < len(text):
        end = max(line_end, text.rfind("\n", line_end, end) + 1)
    ids = vocab.encode(text[cursor:end]).ids
    while len(ids) > max_tokens and end > line_end:  # the estimate was generous: drop lines from the end
        end = max(line_end, text.rfind("\n", line_end, end - 1) + 1)
        ids = vocab.encode(text[cursor:end]).ids
    return ids[:max_tokens]


def _fit_window(vocab: Vocabulary, text: str, end: int, floor: int, context: str,
                budget: int) -> tuple[int, str, Encoding]:
    """The window of ``text`` that ends at ``end``, after ``context``, in ``budget`` tokens:
    (its start, context + window, their encoding). It never starts after ``floor``; whole
    quanta of lines are dropped from its start while it is over the budget."""
    start = window_start(text, end, floor, max(budget * CHARS_PER_TOKEN - len(context), 256))
    body = text[start:end]
    encoding = vocab.encode(context + body)
    while len(encoding.ids) > budget and start < floor:
        cut = body.find("\n", 0)
        for _ in range(WINDOW_QUANTUM - 1):
            nxt = body.find("\n", cut + 1)
            if nxt < 0 or start + nxt + 1 > floor:
                break
            cut = nxt
        if cut < 0:
            break
        start += cut + 1
        body = text[start:end]
        encoding = vocab.encode(context + body)
    return start, context + body, encoding


def _replay(analyzer: Analyzer, text: str, region_start: int, heal_start: int) -> tuple[str, int]:
    """(the region's typed text the grammar replays, how many healed characters lie before the
    region): positions in the document."""
    if heal_start >= region_start:
        return analyzer.replay_text(text[region_start:heal_start]), 0
    return "", region_start - heal_start


def _display_path(uri: str, roots: list) -> str:
    path = uri_to_path(uri)
    if path is None:
        return uri.rsplit("/", 1)[-1] or uri
    for root in roots:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            continue
    return path.name


def _repository_ids(vocab: Vocabulary, template: Template, snapshot: Snapshot, chunks: list,
                    workspace: WorkspaceContext) -> list[int]:
    """The other files as the repository's (``prompt_shapes``), ending with the current file's
    separator and path: the FIM block follows."""
    roots = list(workspace.roots)
    here = uri_to_path(snapshot.uri)
    root = next((r for r in roots if here is not None and here.is_relative_to(r)), roots[0] if roots else None)
    ids = [template.repo_name_id, *vocab.encode(f"{root.name if root is not None else 'workspace'}\n").ids]
    for chunk in reversed(chunks):  # most recent last: nearest the code being written
        ids += [template.file_sep_id, *vocab.encode(f"{_display_path(chunk.uri, roots)}\n{chunk.text}\n").ids]
    return [*ids, template.file_sep_id, *vocab.encode(f"{_display_path(snapshot.uri, roots)}\n").ids]


def build(vocab: Vocabulary, template: Template | None, snapshot: Snapshot, hole: Hole, analyzer: Analyzer,
          settings: Settings, workspace: WorkspaceContext) -> tuple[Prompt, PromptShape]:
    """The prompt at ``hole``; a FIM layout when ``template`` is given and ``gdg.suffix`` is on."""
    fim = template if settings.suffix and template is not None and template.applies(snapshot.text, hole.cursor) \
        else None
    context = analyzer.prompt_context(snapshot, hole, workspace)
    chunks = []
    if settings.definitions and workspace.recent is not None:  # other documents just edited
        chunks = workspace.recent.chunks(snapshot.uri, snapshot.language_id,
                                         int(settings.context_tokens * CHARS_PER_TOKEN * recent.SHARE))
    if fim is None:
        return _prefix_only(vocab, snapshot, hole, analyzer, settings, "".join(_as_text(chunks)) + context)
    return _fill_in_the_middle(vocab, fim, snapshot, hole, analyzer, settings, workspace, context, chunks)


def _as_text(chunks: list) -> list[str]:
    return [chunk.text + "\n\n" for chunk in chunks]


def _prefix_only(vocab: Vocabulary, snapshot: Snapshot, hole: Hole, analyzer: Analyzer, settings: Settings,
                 context: str) -> tuple[Prompt, PromptShape]:
    text = snapshot.text
    line_start = text.rfind("\n", 0, hole.cursor) + 1
    region_line = text.rfind("\n", 0, hole.region_start) + 1
    start, prompt_text, encoding = _fit_window(vocab, text, hole.cursor, region_line, context, settings.context_tokens)
    offset = start - len(context)  # prompt position + offset = document position
    floor = line_start - offset if hole.region_start < line_start else 0
    split = healing.split(prompt_text, encoding, vocab, floor=floor)
    replay, outside = _replay(analyzer, text, hole.region_start, split.heal_start + offset)
    return (Prompt(split.ids, split.heal_text, outside, replay),
            PromptShape(prompt_shapes.PREFIX_ONLY, len(split.ids)))


def _fill_in_the_middle(vocab: Vocabulary, fim: Template, snapshot: Snapshot, hole: Hole, analyzer: Analyzer,
                        settings: Settings, workspace: WorkspaceContext, context: str,
                        chunks: list) -> tuple[Prompt, PromptShape]:
    text = snapshot.text
    suffix_ids = suffix_window(vocab, text, hole.cursor, int(settings.context_tokens * SUFFIX_SHARE))
    head = _repository_ids(vocab, fim, snapshot, chunks, workspace) if fim.repository and chunks else []
    if not head:
        context = "".join(_as_text(chunks)) + context
    line_start = text.rfind("\n", 0, hole.cursor) + 1
    region_line = text.rfind("\n", 0, hole.region_start) + 1
    split_at = line_start if LINE_IN_MIDDLE else hole.cursor
    line = text[split_at : hole.cursor]
    line_encoding = vocab.encode(line)
    # the line's share is counted in whole quanta, so that typing on it does not move the window's start
    line_share = -(-max(len(line_encoding.ids), 1) // LINE_QUANTUM) * LINE_QUANTUM
    budget = settings.context_tokens - len(suffix_ids) - len(head) - line_share - 3
    start, prefix_text, encoding = _fit_window(vocab, text, split_at, region_line, context, max(budget, 1))
    if LINE_IN_MIDDLE:  # the line is healed where it is, after the middle marker (never before its start)
        split = healing.split(line, line_encoding, vocab, min_keep=0)
        indent = len(line) - len(line.lstrip(" \t"))
        if KEEP_INDENT and 0 < indent - 1 and split.heal_start < indent - 1:
            # the middle starts with the line's indentation but one blank (the model reads how
            # deep the line is, and writes the blank before the word as one token, as it would)
            kept = indent - 1
            split = healing.HealSplit(vocab.encode(line[:kept]).ids, kept, line[kept:])
        heal_at = line_start + split.heal_start
        prefix_ids, line_ids = encoding.ids, split.ids
    else:
        offset = start - len(context)
        floor = line_start - offset if hole.region_start < line_start else 0
        split = healing.split(prefix_text, encoding, vocab, floor=floor)
        heal_at = offset + split.heal_start
        prefix_ids, line_ids = split.ids, []
    replay, outside = _replay(analyzer, text, hole.region_start, heal_at)
    ids = fim.layout(prefix_ids, suffix_ids, line_ids, head)
    shape = PromptShape(fim.family, len(prefix_ids) + len(line_ids), len(suffix_ids), len(chunks) if head else 0)
    return Prompt(ids, split.heal_text, outside, replay), shape
