"""Compiling instantiated grammars for one vocabulary, with a bounded cache.

The cache is keyed by the grammar text: τ_Γ sorts and de-duplicates names and
keeps indentation and healing text out of the grammar, so the same Γ gives the
same text and typing inside one region never recompiles (``compiles`` counts
every real compilation, which the tests and ``bench perf`` read).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import xgrammar as xgr

from gdg_lsp.vocab import Vocabulary
from gdg_lsp.errors import GrammarError


@dataclass
class CacheStats:
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
        self._entries: OrderedDict[str, xgr.CompiledGrammar] = OrderedDict()
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self.stats = CacheStats()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, text: str) -> xgr.CompiledGrammar:
        key = self.key(text)
        with self._lock:
            if (hit := self._entries.get(key)) is not None:
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return hit
        began = time.perf_counter()
        try:
            compiled = self._compiler.compile_grammar(text)
        except RuntimeError as err:
            raise GrammarError(f"XGrammar could not compile the grammar: {str(err).strip().splitlines()[-1]}") from err
        seconds = time.perf_counter() - began
        with self._lock:
            self.stats.compiles += 1
            self.stats.compile_seconds += seconds
            self._entries[key] = compiled
            self.stats.bytes += compiled.memory_size_bytes
            while self.stats.bytes > self._max_bytes and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                self.stats.bytes -= old.memory_size_bytes
                self.stats.evictions += 1
        return compiled

    def __len__(self) -> int:
        return len(self._entries)


def accepts(compiled: xgr.CompiledGrammar, text: str) -> bool:
    """True when ``text`` is a prefix of some string of the grammar."""
    return not text or xgr.GrammarMatcher(compiled, terminate_without_stop_token=True).accept_string(text)


def full_match(compiled: xgr.CompiledGrammar, text: str) -> bool:
    """True when ``text`` is a complete string of the grammar."""
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    return matcher.accept_string(text) and matcher.is_completed()
