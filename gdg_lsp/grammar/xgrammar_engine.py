"""The XGrammar engine: the template dialect compiled as it is, masks built lazily.

XGrammar reads the templates' own EBNF, so ``dialect_text`` is the grammar
text. Compilation is dynamic (``enable_dynamic_compilation``): the token
masks of a rule are computed the first time the matcher needs them instead of
for every rule up front, which made a new Γ cost hundreds of milliseconds more
on the statement grammars (docs/PERFORMANCE.md). XGrammar's own cache is off:
the engine's bounded cache (``GrammarEngine.get``) keys grammars by content.
"""

from __future__ import annotations

from typing import Any

import torch
import xgrammar as xgr

from gdg_lsp.errors import GrammarError
from gdg_lsp.grammar.engine import Compiled, Grammar, GrammarEngine, Matcher, template_text
from gdg_lsp.vocab import Vocabulary


class XGrammarEngine(GrammarEngine):
    name = "xgrammar"

    def __init__(self, vocab: Vocabulary, max_bytes: int = 256 * 1024 * 1024, threads: int = 2,
                 dynamic: bool = True) -> None:
        super().__init__(vocab, max_bytes)
        self.dynamic = dynamic
        self._compiler = xgr.GrammarCompiler(vocab.tokenizer_info(), max_threads=threads, cache_enabled=False,
                                             enable_dynamic_compilation=dynamic)

    def _compile(self, grammar: Grammar) -> tuple[Any, int]:
        try:
            compiled = self._compiler.compile_grammar(template_text(grammar))
        except RuntimeError as err:
            raise GrammarError(f"XGrammar could not compile the grammar: {str(err).strip().splitlines()[-1]}") from err
        return compiled, compiled.memory_size_bytes

    def new_matcher(self, compiled: Compiled) -> Matcher:
        return XGrammarMatcher(xgr.GrammarMatcher(compiled.handle, terminate_without_stop_token=False))

    def dialect_text(self, grammar: Grammar) -> str:
        return template_text(grammar)


class XGrammarMatcher(Matcher):
    __slots__ = ("_m",)

    def __init__(self, matcher: xgr.GrammarMatcher) -> None:
        self._m = matcher

    def fill_mask(self, bitmask: torch.Tensor) -> bool:
        return self._m.fill_next_token_bitmask(bitmask)

    def allows(self, token: int) -> bool:
        if self._m.accept_token(token):
            self._m.rollback(1)
            return True
        return False

    def accept_token(self, token: int) -> bool:
        return self._m.accept_token(token)

    def accept_bytes(self, data: bytes) -> bool:
        return self._m.accept_string(data)  # one rollback step, whatever its length

    def accept_text(self, text: str) -> bool:
        return self._m.accept_string(text)

    def rollback(self, steps: int = 1) -> None:
        self._m.rollback(steps)

    def is_complete(self) -> bool:
        return self._m.is_completed()

    def is_terminated(self) -> bool:
        return self._m.is_terminated()


GrammarCache = XGrammarEngine
"""The name this engine had before there were two (kept for code written against it)."""
