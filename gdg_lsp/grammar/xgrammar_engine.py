"""Compiling instantiated grammars for one vocabulary, with a bounded cache.

The cache is keyed by the grammar text: τ_Γ sorts and de-duplicates names and
keeps indentation and healing text out of the grammar, so the same Γ gives the
same text and typing inside one region never recompiles (``compiles`` counts
every real compilation, which the tests and ``bench perf`` read).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import xgrammar as xgr

from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GrammarError
from gdg_lsp.vocab import Vocabulary


@dataclass
class GrammarStats:
    hits: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0
    evictions: int = 0
    bytes: int = 0


class GrammarCache:
    def __init__(self, vocab: Vocabulary, max_bytes: int = 256 * 1024 * 1024, threads: int = 2) -> None:
        self.vocab = vocab
        # XGrammar's own cache is off: this one is bounded by bytes and counted.
        self._compiler = xgr.GrammarCompiler(vocab.tokenizer_info(), max_threads=threads, cache_enabled=False)
        self._entries: BoundedCache[str, xgr.CompiledGrammar] = BoundedCache(
            "grammar.compiled", 4096, max_weight=max_bytes, weigh=lambda compiled: compiled.memory_size_bytes)
        self._compiles = 0
        self._compile_seconds = 0.0

    @property
    def stats(self) -> GrammarStats:
        counts = self._entries.stats
        return GrammarStats(counts.hits, self._compiles, self._compile_seconds, counts.evictions, counts.weight)

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, text: str) -> xgr.CompiledGrammar:
        key = self.key(text)
        if (hit := self._entries.get(key)) is not None:
            return hit
        began = time.perf_counter()
        try:
            compiled = self._compiler.compile_grammar(text)
        except RuntimeError as err:
            raise GrammarError(f"XGrammar could not compile the grammar: {str(err).strip().splitlines()[-1]}") from err
        self._compiles += 1
        self._compile_seconds += time.perf_counter() - began
        return self._entries.put(key, compiled)

    def __len__(self) -> int:
        return len(self._entries)


def accepts(compiled: xgr.CompiledGrammar, text: str) -> bool:
    """True when ``text`` is a prefix of some string of the grammar."""
    return not text or xgr.GrammarMatcher(compiled, terminate_without_stop_token=True).accept_string(text)


def full_match(compiled: xgr.CompiledGrammar, text: str) -> bool:
    """True when ``text`` is a complete string of the grammar."""
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_completed()
