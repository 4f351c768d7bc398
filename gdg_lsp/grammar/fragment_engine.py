"""The grammar engine as the fragment gate and the inductor use it: one adapter.

The gate must judge a fragment with the engine the decoder masks with, so it
compiles through the same ``GrammarCache`` and asks the same matcher. This
module is the only place the gate, ``gdg-lsp induce`` and the fragment
library touch an engine: re-pointing them at another engine is a change here.

- ``byte_engine()``: a one-byte-per-token vocabulary, where the question is
  only "is this text in the grammar's language" (the language does not depend
  on the vocabulary);
- ``token_engine(vocab)``: a model's vocabulary, for ``free_bits``: Σ log2
  |allowed tokens| along the text's own tokenization, what the decoder counts
  when asked to (decoding/engine.py, ``measure_free_bits``), for the path the
  text takes instead of the path a model would take.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import xgrammar as xgr

from gdg_lsp.grammar.xgrammar_engine import GrammarCache, accepts, full_match
from gdg_lsp.vocab import ListVocabulary, Vocabulary


class FragmentEngine:
    """compile / accepts (a prefix of the language) / full_match / free_bits over one vocabulary."""

    def __init__(self, cache: GrammarCache) -> None:
        self.cache = cache
        self.vocab: Vocabulary = cache.vocab

    @property
    def compiles(self) -> int:
        return self.cache.stats.compiles

    def compile(self, text: str) -> Any:
        """The compiled grammar (cached by text); raises ``GrammarError`` when the engine refuses it."""
        return self.cache.get(text)

    def accepts(self, compiled: Any, text: str) -> bool:
        return accepts(compiled, text)

    def full_match(self, compiled: Any, text: str) -> bool:
        return full_match(compiled, text)

    def free_bits(self, compiled: Any, text: str) -> float | None:
        """Σ log2 |allowed tokens| over the tokens of ``text`` and the end of the region
        (None when the grammar refuses one of them)."""
        ids = self.vocab.encode(text).ids
        matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
        size = self.vocab.size
        bitmask = xgr.allocate_token_bitmask(1, size)
        bits = 0.0
        for token in ids:
            bits += math.log2(max(self._allowed(matcher, bitmask, size), 1))
            if not matcher.accept_token(token):
                return None
        return bits if matcher.is_completed() else None

    @staticmethod
    def _allowed(matcher: Any, bitmask: Any, size: int) -> int:
        if not matcher.fill_next_token_bitmask(bitmask):
            return size  # the engine says every token is allowed
        unpacked = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        return int(unpacked[:size].sum())


@functools.lru_cache(maxsize=1)
def byte_engine() -> FragmentEngine:
    """Grammars over a one-byte-per-token vocabulary (model-free language questions)."""
    tokens = [bytes([b]).decode("latin-1") for b in range(1, 256)]
    return FragmentEngine(GrammarCache(ListVocabulary(tokens), max_bytes=64 * 1024 * 1024))


def token_engine(vocab: Vocabulary) -> FragmentEngine:
    """Grammars over a model's vocabulary (for free_bits)."""
    return FragmentEngine(GrammarCache(vocab, max_bytes=256 * 1024 * 1024))
