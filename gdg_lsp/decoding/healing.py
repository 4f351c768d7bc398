"""Token healing: where the prompt stops and what the continuation must start with.

A prompt that ends in indentation or in half a word derails a small model (it
never saw the tokenization that such a cut produces). So the prompt is backed
off to a token boundary before the trailing blanks and partial word (and at
least one token), and the continuation is held to reproduce the removed text
first; the decoder then generates past it naturally, often with a token that
merges the removed text with what follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gdg_lsp.vocab import Encoding, Vocabulary

_TAIL = re.compile(r"\s*\w*\Z")
MAX_HEAL_CHARS = 96


@dataclass(frozen=True)
class HealSplit:
    ids: list[int]  # prompt tokens kept
    heal_start: int  # character offset in the prompt text where the healed text begins
    heal_text: str  # text the continuation must start with


def split(text: str, encoding: Encoding, vocab: Vocabulary, floor: int = 0, min_keep: int = 1) -> HealSplit:
    """Back off the tokens that cover the trailing blanks/partial word of ``text``.

    Token offsets only choose how many tokens to drop; where the kept tokens end
    is measured by decoding them (offsets of byte-level tokenizers may leave
    blanks between tokens uncovered). The healed text never starts before
    ``floor``. At least ``min_keep`` tokens are kept: one for a prompt, which is
    never empty; none for the start of a FIM middle, which follows its marker.
    """
    if not encoding.ids:
        return HealSplit([], 0, text)
    tail = _TAIL.search(text)
    target = tail.start() if tail else len(text)
    target = max(target, len(text) - MAX_HEAL_CHARS, floor)
    keep = len(encoding.ids) - 1  # always back off at least the last token
    while keep > min_keep and encoding.offsets[keep - 1][1] > target:
        keep -= 1
    keep = max(keep, min_keep)
    while keep > min_keep:
        covered = vocab.decode(encoding.ids[:keep])
        if text.startswith(covered):
            break
        keep -= 1  # the kept tokens end inside a character: back off one more
    while keep < len(encoding.ids) and len(vocab.decode(encoding.ids[:keep])) < floor:
        keep += 1  # the floor wins over healing
    if keep == 0:
        return HealSplit([], 0, text)
    covered = vocab.decode(encoding.ids[:keep])
    start = len(covered) if text.startswith(covered) else 0
    if start == 0:  # the tokenizer does not round-trip this text: do not heal
        return HealSplit(list(encoding.ids), len(text), "")
    return HealSplit(encoding.ids[:keep], start, text[start:])
