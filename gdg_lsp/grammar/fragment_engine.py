"""The grammar engine as the fragment gate and the inductor use it: one adapter.

The gate must judge a fragment with the engine the decoder masks with, so it
compiles through the same engine interface (``grammar/engine.py``, the
default engine) and asks the same matcher. This
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

import math
from typing import Any

import numpy as np

from gdg_lsp.grammar import engine as grammar_engines
from gdg_lsp.grammar.engine import Compiled, GrammarEngine, accepts, allocate_bitmask, full_match
from gdg_lsp.vocab import Vocabulary


class FragmentEngine:
    """compile / accepts (a prefix of the language) / full_match / free_bits over one vocabulary."""

    def __init__(self, cache: GrammarEngine) -> None:
        self.cache = cache
        self.vocab: Vocabulary = cache.vocab

    @property
    def compiles(self) -> int:
        return self.cache.stats.compiles

    def compile(self, text: Any) -> Compiled:
        """The compiled grammar (cached by text); raises ``GrammarError`` when the engine refuses it."""
        return self.cache.get(text)

    def accepts(self, compiled: Compiled, text: str) -> bool:
        return accepts(compiled, text)

    def full_match(self, compiled: Compiled, text: str) -> bool:
        return full_match(compiled, text)

    def free_bits(self, compiled: Compiled, text: str) -> float | None:
        """Σ log2 |allowed tokens| over the tokens of ``text`` and the end of the region
        (None when the grammar refuses one of them)."""
        ids = self.vocab.encode(text).ids
        matcher = compiled.matcher()
        size = self.vocab.size
        bitmask = allocate_bitmask(size)
        bits = 0.0
        for token in ids:
            bits += math.log2(max(self._allowed(matcher, bitmask, size), 1))
            if not matcher.accept_token(token):
                return None
        return bits if matcher.is_complete() else None

    @staticmethod
    def _allowed(matcher: Any, bitmask: Any, size: int) -> int:
        if not matcher.fill_mask(bitmask):
            return size  # the engine says every token is allowed
        unpacked = np.unpackbits(bitmask.numpy().view(np.uint8), bitorder="little")
        return int(unpacked[:size].sum())


def byte_engine() -> FragmentEngine:
    """Grammars over a one-byte-per-token vocabulary (model-free language questions),
    compiled by the engine ``gdg.grammarEngine = auto`` masks with: the process's one byte
    engine (``grammar.engine.byte_engine``), which ``explain`` and the tests use too."""
    return FragmentEngine(grammar_engines.byte_engine("auto"))


def token_engine(vocab: Vocabulary) -> FragmentEngine:
    return FragmentEngine(grammar_engines.create("auto", vocab, max_bytes=256 * 1024 * 1024))
