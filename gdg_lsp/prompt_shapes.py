"""How a prompt is laid out for a model: the text before the cursor alone, or fill-in-the-middle.

A model trained for fill-in-the-middle (FIM) has special tokens that mark the
text before the cursor (prefix), the text after it (suffix) and where the
generated middle starts; each family spells and orders them its own way. The
family is read from the tokenizer (which special tokens it has), never from
the model's name. A model without such tokens gets the prefix alone.

The layouts (token ids, no BOS, as the prefix-only prompt):

| family | layout |
|---|---|
| starcoder | ``<fim_prefix>`` prefix ``<fim_suffix>`` suffix ``<fim_middle>`` |
| santacoder | ``<fim-prefix>`` prefix ``<fim-suffix>`` suffix ``<fim-middle>`` |
| qwen2.5-coder | ``<|fim_prefix|>`` prefix ``<|fim_suffix|>`` suffix ``<|fim_middle|>`` |
| codegemma | as qwen2.5-coder; told apart by its ``<|file_separator|>`` token |
| codellama | ``▁<PRE>`` prefix ``▁<SUF>`` suffix ``▁<MID>`` |
| deepseek-coder | ``<｜fim▁begin｜>`` prefix ``<｜fim▁hole｜>`` suffix ``<｜fim▁end｜>`` |
| codestral | ``[SUFFIX]`` suffix ``[PREFIX]`` prefix (suffix first; the middle follows the prefix) |

Token healing works unchanged: the prefix's last token(s) are backed off and
the middle must start with their text.
"""

from __future__ import annotations

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


FAMILIES: tuple[Family, ...] = (
    Family("codegemma", ("<|fim_prefix|>",), ("<|fim_suffix|>",), ("<|fim_middle|>",), marks=("<|file_separator|>",)),
    Family("qwen2.5-coder", ("<|fim_prefix|>",), ("<|fim_suffix|>",), ("<|fim_middle|>",)),
    Family("starcoder", ("<fim_prefix>",), ("<fim_suffix>",), ("<fim_middle>",)),
    Family("santacoder", ("<fim-prefix>",), ("<fim-suffix>",), ("<fim-middle>",)),
    Family("codellama", ("▁<PRE>", "<PRE>"), ("▁<SUF>", "<SUF>"), ("▁<MID>", "<MID>")),
    # DeepSeek-Coder's bars are full-width (U+FF5C); the ASCII spelling is accepted too
    Family("deepseek-coder", ("<｜fim▁begin｜>", "<|fim▁begin|>"), ("<｜fim▁hole｜>", "<|fim▁hole|>"),
           ("<｜fim▁end｜>", "<|fim▁end|>")),
    Family("codestral", ("[PREFIX]",), ("[SUFFIX]",), suffix_first=True),
)

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

    def layout(self, prefix_ids: Sequence[int], suffix_ids: Sequence[int]) -> list[int]:
        """The prompt's ids; the model's next token is the first of the middle."""
        middle = [self.middle_id] if self.middle_id is not None else []
        if self.suffix_first:
            return [self.suffix_id, *suffix_ids, self.prefix_id, *prefix_ids, *middle]
        return [self.prefix_id, *prefix_ids, self.suffix_id, *suffix_ids, *middle]

    def show(self, prefix: str, suffix: str) -> str:
        """The prompt as text (``explain``)."""
        p, s, m = self.names
        if self.suffix_first:
            return f"{s}{suffix}{p}{prefix}{m or ''}"
        return f"{p}{prefix}{s}{suffix}{m or ''}"


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
        return Template(family.name, prefix[1], suffix[1], middle[1] if middle else None, family.suffix_first,
                        (prefix[0], suffix[0], middle[0] if middle else None))
    return None
