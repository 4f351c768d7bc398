"""How a prompt is laid out for a model: the text before the cursor alone, or fill-in-the-middle.

A model trained for fill-in-the-middle (FIM) has special tokens that mark the
text before the cursor (prefix), the text after it (suffix) and where the
generated middle starts; each family spells and orders them its own way. The
family is read from the tokenizer (which special tokens it has), never from
the model's name. A model without such tokens gets the prefix alone.

The layouts (token ids, no BOS, as the prefix-only prompt); "prefix" is the text
before the cursor's line, "line" the cursor's line up to the cursor:

| family | layout |
|---|---|
| starcoder | ``<fim_prefix>`` prefix ``<fim_suffix>`` suffix ``<fim_middle>`` line |
| santacoder | ``<fim-prefix>`` prefix ``<fim-suffix>`` suffix ``<fim-middle>`` line |
| qwen2.5-coder | ``<|fim_prefix|>`` prefix ``<|fim_suffix|>`` suffix ``<|fim_middle|>`` line |
| codegemma | as qwen2.5-coder; told apart by its ``<|file_separator|>`` token |
| codellama | ``▁<PRE>`` prefix ``▁<SUF>`` suffix ``▁<MID>`` line |
| deepseek-coder | ``<｜fim▁begin｜>`` prefix ``<｜fim▁hole｜>`` suffix ``<｜fim▁end｜>`` line |
| codestral | ``[SUFFIX]`` suffix ``[PREFIX]`` prefix line (suffix first; the middle follows) |

The cursor's line goes after the middle marker, as the start of the middle (llama.vim's
layout): while the user types on a line, the text after the cursor and every line above
stay the same, so the whole prompt up to the middle marker is the model's KV cache of the
previous keystroke and only the line is run again. With the line before the suffix
(``<fim_prefix>`` prefix line ``<fim_suffix>``...) each keystroke changes the prefix's end
and the suffix after it has to run again too (``service/prompt.py`` measures both).

Families with repository tokens (Qwen2.5-Coder's ``<|repo_name|>`` and ``<|file_sep|>``,
StarCoder2's ``<repo_name>`` and ``<file_sep>``) get the context from other files as files:
``<|repo_name|>`` name, then ``<|file_sep|>`` path, a line break and its text per file, then
``<|file_sep|>`` the current file's path and its FIM block.

Token healing works unchanged: the line's last token(s) are backed off and the
middle must start with their text.

A remote engine's tokenizer is not in this process: ``backends/remote.py`` asks the engine
which markers its tokenizer has (each must be one token), and falls back on the served
model's name (``family_for_model_name``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # vocab.py asks this module which stop tokens a FIM tokenizer has
    from gdg_lsp.vocab import Vocabulary

PREFIX_ONLY = "prefix-only"
"""The name ``explain`` and the summary show for a prompt without a suffix."""


@dataclass(frozen=True)
class Family:
    """One FIM family: its marker tokens (each a tuple of the spellings tokenizers use)."""

    name: str
    prefix: tuple[str, ...]
    suffix: tuple[str, ...]
    middle: tuple[str, ...] = ()
    """Empty: the middle follows the last part directly (Codestral)."""
    suffix_first: bool = False
    marks: tuple[str, ...] = ()
    """Tokens that tell this family from a later one with the same markers (all must exist)."""
    repo_name: tuple[str, ...] = ()
    file_sep: tuple[str, ...] = ()
    """Repository-level context: the repository's name, then each file after a separator."""
    model_names: str = ""
    """A pattern of the served model names of this family (a remote engine whose tokenizer
    cannot be asked)."""


FAMILIES: tuple[Family, ...] = (
    Family("codegemma", ("<|fim_prefix|>",), ("<|fim_suffix|>",), ("<|fim_middle|>",), marks=("<|file_separator|>",),
           model_names=r"codegemma"),
    Family("qwen2.5-coder", ("<|fim_prefix|>",), ("<|fim_suffix|>",), ("<|fim_middle|>",),
           repo_name=("<|repo_name|>",), file_sep=("<|file_sep|>",), model_names=r"qwen2\.5[-_ ]?coder"),
    Family("starcoder", ("<fim_prefix>",), ("<fim_suffix>",), ("<fim_middle>",), repo_name=("<repo_name>",),
           file_sep=("<file_sep>",), model_names=r"starcoder"),
    Family("santacoder", ("<fim-prefix>",), ("<fim-suffix>",), ("<fim-middle>",), model_names=r"santacoder"),
    Family("codellama", ("▁<PRE>", "<PRE>"), ("▁<SUF>", "<SUF>"), ("▁<MID>", "<MID>"),
           model_names=r"code[-_ ]?llama"),
    # DeepSeek-Coder's bars are full-width (U+FF5C); the ASCII spelling is accepted too
    Family("deepseek-coder", ("<｜fim▁begin｜>", "<|fim▁begin|>"), ("<｜fim▁hole｜>", "<|fim▁hole|>"),
           ("<｜fim▁end｜>", "<|fim▁end|>"), model_names=r"deepseek[-_ ]?coder"),
    Family("codestral", ("[PREFIX]",), ("[SUFFIX]",), suffix_first=True, model_names=r"codestral"),
)

FIM_WHERE = ("always", "mid-line")
"""Where a FIM model's prompt carries the suffix: ``always``, or ``mid-line``, only where the
cursor's line goes on after the cursor (the prefix alone at a line's end). A model's vocabulary
may say which (``fim_where``: set by ``models.load`` from the model's preset); ``always``
otherwise."""

FIM_END_TOKENS = ("<|fim_pad|>", "<fim_pad>", "<|file_separator|>", "<|file_sep|>", "<file_sep>", "▁<EOT>", "<EOT>")
"""Tokens with which FIM models end a middle (besides their end-of-text): stop tokens."""


@dataclass(frozen=True)
class Template:
    """A family's markers resolved to this tokenizer's ids."""

    family: str
    prefix_id: int
    suffix_id: int
    middle_id: int | None
    suffix_first: bool
    names: tuple[str, str, str | None]
    """The marker tokens' text, for showing the prompt."""
    repo_name_id: int | None = None
    file_sep_id: int | None = None
    mid_line_only: bool = False
    """The suffix is used only where the cursor's line goes on (``FIM_WHERE``)."""

    def applies(self, text: str, cursor: int) -> bool:
        """Whether the FIM layout is used at ``cursor`` of ``text``."""
        if not self.mid_line_only:
            return True
        end = text.find("\n", cursor)
        return bool(text[cursor : len(text) if end < 0 else end].strip())

    @property
    def repository(self) -> bool:
        """Whether other files can be laid out as files of the repository."""
        return self.repo_name_id is not None and self.file_sep_id is not None

    def layout(self, prefix_ids: Sequence[int], suffix_ids: Sequence[int], line_ids: Sequence[int] = (),
               head_ids: Sequence[int] = ()) -> list[int]:
        """The prompt's ids: ``head_ids`` (the repository's files, or nothing) first, then the
        FIM block; the model's next token continues ``line_ids``, the middle's start."""
        middle = [self.middle_id] if self.middle_id is not None else []
        if self.suffix_first:
            return [*head_ids, self.suffix_id, *suffix_ids, self.prefix_id, *prefix_ids, *middle, *line_ids]
        return [*head_ids, self.prefix_id, *prefix_ids, self.suffix_id, *suffix_ids, *middle, *line_ids]


def _resolve(names: tuple[str, ...], vocab: Vocabulary) -> tuple[str, int] | None:
    for name in names:
        token_id = vocab.token_id(name)
        if token_id is not None:
            return name, token_id
    return None


def detect(vocab: Vocabulary) -> Template | None:
    """The FIM template this tokenizer supports, or None (prefix-only prompting)."""
    for family in FAMILIES:
        if any(vocab.token_id(mark) is None for mark in family.marks):
            continue
        prefix, suffix = _resolve(family.prefix, vocab), _resolve(family.suffix, vocab)
        middle = _resolve(family.middle, vocab) if family.middle else None
        if prefix is None or suffix is None or (family.middle and middle is None):
            continue
        repo, sep = _resolve(family.repo_name, vocab), _resolve(family.file_sep, vocab)
        return Template(family.name, prefix[1], suffix[1], middle[1] if middle else None, family.suffix_first,
                        (prefix[0], suffix[0], middle[0] if middle else None),
                        repo[1] if repo and sep else None, sep[1] if repo and sep else None,
                        getattr(vocab, "fim_where", "always") == "mid-line")
    return None


def family_for_model_name(model: str) -> Family | None:
    """The FIM family a served model's name says it belongs to (the engine's tokenizer could not
    be asked), or None."""
    lowered = model.lower()
    return next((f for f in FAMILIES if f.model_names and re.search(f.model_names, lowered)), None)


def marker_texts(family: Family) -> tuple[str, ...]:
    """Every token text ``detect`` would look for in ``family`` (its first spellings)."""
    return tuple(names[0] for names in (family.prefix, family.suffix, family.middle, family.repo_name,
                                        family.file_sep) if names) + family.marks
