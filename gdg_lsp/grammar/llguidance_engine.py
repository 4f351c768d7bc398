"""The llguidance engine: Lark with the names at the lexer, the template part emitted once.

llguidance lexes with regular expressions and parses the lexemes with an
Earley parser; building a matcher is cheap, and a Γ slot that is one lexer
terminal (the names as one prefix-shared regular expression) costs little
however many names it holds. The grammar is printed from the same tree as
XGrammar's (``lark_emitter``): the part built from the template is emitted
once per fragment, rung and context (``_STATIC``, shared by every engine in the
process: it does not depend on the vocabulary), and only the name sets are
printed per request.

A matcher here counts in tokens; text (typed or healed) is fed as the tokens
the vocabulary spells it with, remembered as one step so that ``rollback``
undoes it whole. A token the grammar refuses is checked before it is
consumed: llguidance's matcher would otherwise stop in an error state.
"""

from __future__ import annotations

import threading
from typing import Any

import llguidance
import torch

from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.grammar.engine import Compiled, Grammar, GrammarEngine, Matcher, grammar_parts
from gdg_lsp.grammar.lark_emitter import LarkEmitter, needs_words, set_definitions
from gdg_lsp.vocab import Vocabulary

_STATIC: BoundedCache[tuple, tuple[str, dict]] = BoundedCache("grammar.lark-static", 256)
"""Lark of the template part of a grammar (and what its Γ sets must define), keyed by
its text and the shape of its name sets."""
_STATIC_LOCK = threading.Lock()


def lark_text(grammar: Grammar) -> str:
    """The whole grammar in llguidance's Lark (the template part from the cache)."""
    static_text, rules, sets = grammar_parts(grammar)
    if isinstance(grammar, str):
        sets = _word_sets(rules)
    nullable = tuple(sorted(rule for rule, names in sets.items() if "" in names))
    only_empty = tuple(sorted(rule for rule, names in sets.items() if names == ("",)))
    spaced = tuple(sorted(rule for rule, names in sets.items() if any(needs_words(n) for n in names)))
    key = (static_text, tuple(sorted(sets)), nullable, only_empty, spaced)
    static = _STATIC.get(key)
    if static is None:
        with _STATIC_LOCK:  # one emission per shape, however many requests wait for it
            static = _STATIC.get(key)
            if static is None:
                emitter = LarkEmitter(rules, sets, nullable, only_empty, spaced)
                static = _STATIC.put(key, (emitter.emit(), dict(emitter.spaced_requests)))
    text, requests = static
    return OPTIONS + text + set_definitions(sets, requests)


def _word_sets(rules: dict) -> dict[str, tuple[str, ...]]:
    """In a grammar given as one text (its name sets written inline), the rules that are
    alternations of literals some of which must be printed word by word (``needs_words``:
    ``self.size``): they become name sets, as τ_Γ's own sets are, instead of one lexeme."""
    out = {}
    for rule, body in rules.items():
        options = body.options if isinstance(body, ebnf.Alt) else (body,)
        if all(isinstance(o, ebnf.Lit) for o in options) and any(needs_words(o.text) for o in options):
            out[rule] = tuple(o.text for o in options)
    for rule in out:
        del rules[rule]
    return out


OPTIONS = '%llguidance {"no_forcing": true}\n'
"""Without it, where the grammar forces bytes (``thread`` after ``current_`` when Γ has one such
name) llguidance's mask holds only the token that spells them canonically; the tokens XGrammar
allows there (``t``, ``th``, ...) are allowed too, so both engines offer the model the same choice."""


class _TokenizerWrapper:
    """What llguidance needs to know of a vocabulary: bytes per token, the end, the specials."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self.tokens = list(vocab.token_bytes)
        stops = sorted(vocab.stop_ids)
        self.eos_token_id = stops[0] if stops else None
        self.bos_token_id = None
        self.special_token_ids = sorted(set(vocab.special_ids) | set(vocab.stop_ids))

    def __call__(self, text: bytes | str) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        try:
            return list(self.vocab.encode(text).ids)
        except ValueError:  # a character the vocabulary cannot spell (a test's small vocabulary)
            return []


_TOKENIZERS: BoundedCache[int, tuple[Vocabulary, llguidance.LLTokenizer]] = BoundedCache("grammar.lltokenizer", 8)


def tokenizer_for(vocab: Vocabulary) -> llguidance.LLTokenizer:
    """llguidance's view of ``vocab`` (built once per vocabulary: about a second for 49k tokens)."""
    known = _TOKENIZERS.get(id(vocab))
    if known is not None and known[0] is vocab:
        return known[1]
    wrapper = _TokenizerWrapper(vocab)
    tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(wrapper), n_vocab=vocab.size,
                                       eos_token=sorted(vocab.stop_ids) or None)
    _TOKENIZERS.put(id(vocab), (vocab, tokenizer))
    return tokenizer


class LLGuidanceEngine(GrammarEngine):
    name = "llguidance"

    def __init__(self, vocab: Vocabulary, max_bytes: int = 256 * 1024 * 1024) -> None:
        super().__init__(vocab, max_bytes)
        self.tokenizer = tokenizer_for(vocab)
        # Large lexemes (a 10,000-name slot) are walked lazily, when a mask needs them,
        # not over the whole vocabulary when the matcher is built. A mask on the Python
        # statement grammar can take 15,000 Earley items (inside a call's arguments, where
        # expressions and comprehensions both stay possible): 4x llguidance's default
        # limit leaves room, and costs at most a few milliseconds.
        self._limits = llguidance.LLParserLimits(precompute_large_lexemes=False, verbose_errors=False,
                                                 step_max_items=200_000)
        self._stop_words = tuple((i // 32, 1 << (i % 32)) for i in sorted(vocab.stop_ids) if i < vocab.size)

    def _compile(self, grammar: Grammar) -> tuple[Any, int]:
        try:
            text = lark_text(grammar)
        except (KeyError, RecursionError, TypeError, ValueError) as err:  # a tree the emitter cannot print
            raise GrammarError(f"the grammar cannot be written as Lark: {err!r}"[:300]) from err
        matcher = llguidance.LLMatcher(self.tokenizer, text, log_level=0, limits=self._limits)
        if matcher.is_error():
            raise GrammarError(f"llguidance could not compile the grammar: {matcher.get_error().strip()[:300]}")
        return matcher, 2 * len(text) + 64 * 1024

    def new_matcher(self, compiled: Compiled) -> Matcher:
        return LLGuidanceMatcher(compiled.handle.deep_copy(), self.tokenizer, self._stop_words)

    def dialect_text(self, grammar: Grammar) -> str:
        return lark_text(grammar)


_NO_EXTENSION = "NoExtension"
"""How llguidance's error starts when no token can follow (a dead end or a finished grammar), not a failure."""


class LLGuidanceMatcher(Matcher):
    __slots__ = ("_m", "_tokenizer", "_steps", "_stop_words")

    def __init__(self, matcher: llguidance.LLMatcher, tokenizer: llguidance.LLTokenizer,
                 stop_words: tuple[tuple[int, int], ...]) -> None:
        self._m = matcher
        self._tokenizer = tokenizer
        self._steps: list[int] = []  # tokens consumed by each step, for rollback
        self._stop_words = stop_words  # (word, bit) of each stop token in a bitmask row

    def fill_mask(self, bitmask: torch.Tensor) -> bool:
        # straight into the tensor's memory (llguidance.torch would import torch.compile's machinery)
        row = bitmask[0]
        accepting = self._m.is_accepting()
        self._m.unsafe_compute_mask_ptr(row.data_ptr(), row.numel() * row.element_size())
        if self._m.is_error():
            if not self._m.get_error().startswith(_NO_EXTENSION):  # a limit hit: not a mask to trust
                raise GrammarError(f"llguidance could not compute the mask: {self._m.get_error()[:200]}")
            # no token of the vocabulary extends the text (found only now): the stop tokens if the
            # grammar may end here, else nothing, as XGrammar's mask says
            row.zero_()
            for word, bit in self._stop_words if accepting else ():
                row[word] = int(row[word]) | bit if bit < 2**31 else int(row[word]) | (bit - 2**32)
        return True

    def allows(self, token: int) -> bool:
        return self._m.validate_tokens([token]) == 1

    def accept_token(self, token: int) -> bool:
        if self._m.validate_tokens([token]) != 1:
            return False
        self._m.consume_token(token)
        self._steps.append(1)
        return True

    def accept_bytes(self, data: bytes) -> bool:
        tokens = self._tokenizer.tokenize_bytes(data) if data else []
        if self._tokenizer.decode_bytes(tokens) != data:
            return False  # the vocabulary cannot spell it, so no decoding can produce it
        if self._m.validate_tokens(tokens) != len(tokens):
            return False
        if tokens and not self._m.consume_tokens(tokens):
            raise GrammarError(f"llguidance refused tokens it validated: {self._m.get_error()}")
        self._steps.append(len(tokens))
        return True

    def rollback(self, steps: int = 1) -> None:
        count = 0
        for _ in range(steps):
            count += self._steps.pop()
        if count:
            self._m.rollback(count)

    def is_complete(self) -> bool:
        return self._m.is_accepting()

    def is_terminated(self) -> bool:
        return self._m.is_stopped()
