"""One interface to the grammar engines: compile an instantiated fragment, match tokens against it.

The decoder, the executor, π and ``explain`` use only this module; each engine
(``xgrammar_engine``, ``llguidance_engine``) implements it from the same
source, the fragment's grammar tree (``fragments.Instantiated``), in its own
dialect:

- ``GrammarEngine.get(grammar)``: the compiled grammar for one vocabulary,
  cached (a bounded cache keyed by the grammar: the same Γ never compiles twice);
  ``grammar`` is an ``Instantiated`` or a grammar text in the template dialect.
- ``Compiled.matcher()``: a fresh matcher, which fills the next-token bitmask
  (one bit per token, 32 to an int32, the layout both engines write), checks
  or accepts a token, accepts bytes (text typed or healed: one step),
  rolls steps back, and says whether the fragment may end here.
- ``accepts`` / ``full_match``: whether a text is a prefix of / a string of the
  grammar (π's check of the typed text; the gate tests).

``gdg.grammarEngine`` picks the engine: ``auto`` is ``DEFAULT``, the one that
``gdg-lsp bench perf --only grammar`` measured faster (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from gdg_lsp.caches import BoundedCache
from gdg_lsp.fragments import ebnf
from gdg_lsp.fragments.instantiate import Instantiated
from gdg_lsp.vocab import Vocabulary

ENGINES = ("llguidance", "xgrammar")
DEFAULT = "llguidance"
"""What ``auto`` means: llguidance, the measured winner, now that both engines are equivalent on
every grammar the differential test compiles (tests/unit/test_engine_equivalence.py: the same
corpus positives accepted, the same mined ghosts refused, the same next tokens on sampled
prefixes, with no exception). Earlier the Lark emitted for llguidance refused positives that
XGrammar accepted (a literal's blank read into one lexeme with an optional tail: 14 of 47
induced ``T.gemm`` regions; a dotted member ``self._path`` read out of ``self._pathcls``), and
``auto`` was XGrammar. Measured (docs/PERFORMANCE.md "Grammar engines"):
``gdg-lsp bench perf --only grammar,decode --holes 4 --gamma-sizes 1000,10000 --grammar-reps 3``."""

Grammar = Instantiated | str
"""What engines compile: τ_Γ's output, or a whole grammar text in the template dialect."""


def resolve(setting: str) -> str:
    """The engine a ``gdg.grammarEngine`` value stands for."""
    if setting == "auto":
        return DEFAULT
    if setting not in ENGINES:
        raise ValueError(f"unknown grammar engine {setting!r}; expected auto or one of {', '.join(ENGINES)}")
    return setting


def grammar_key(grammar: Grammar) -> str:
    if isinstance(grammar, Instantiated):
        return grammar.key
    import hashlib

    return hashlib.sha256(grammar.encode("utf-8", "surrogatepass")).hexdigest()


def grammar_parts(grammar: Grammar) -> tuple[str, dict[str, ebnf.Expr], dict[str, tuple[str, ...]]]:
    """(the part without Γ's names as text, as rules, the name sets) of a grammar;
    a text has no separate name sets."""
    if isinstance(grammar, Instantiated):
        return grammar.static_text, dict(grammar.rules), dict(grammar.sets)
    return grammar, ebnf.parse(grammar), {}


def grammar_rules(grammar: Grammar) -> dict[str, ebnf.Expr]:
    """The whole grammar as a tree (each name set as an alternation of literals)."""
    _, rules, sets = grammar_parts(grammar)
    for rule, names in sets.items():
        options = tuple(ebnf.Lit(n) for n in names)
        rules[rule] = options[0] if len(options) == 1 else ebnf.Alt(options)
    return rules


DIALECTS = ("ebnf", "lark", "gbnf")
"""What ``explain --dialect`` prints: the template dialect (XGrammar's EBNF), llguidance's Lark, llama.cpp's GBNF."""


def in_dialect(grammar: Grammar, dialect: str) -> str:
    """``grammar`` as text in one of ``DIALECTS``."""
    if dialect == "ebnf":
        return template_text(grammar)
    if dialect == "lark":
        from gdg_lsp.grammar.llguidance_engine import lark_text

        return lark_text(grammar)
    if dialect == "gbnf":
        from gdg_lsp.grammar import dialects

        return dialects.render(grammar_rules(grammar), "gbnf")
    raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")


def template_text(grammar: Grammar) -> str:
    return grammar.text if isinstance(grammar, Instantiated) else grammar


def allocate_bitmask(vocab_size: int) -> torch.Tensor:
    """A next-token bitmask for one sequence: bit i of word j is token 32·j + i."""
    return torch.full((1, (vocab_size + 31) // 32), -1, dtype=torch.int32)


@dataclass
class EngineStats:
    hits: int = 0
    compiles: int = 0
    compile_seconds: float = 0.0
    evictions: int = 0
    bytes: int = 0
    shared: int = 0
    """Asks that found the grammar being compiled by another thread and waited for that compile."""


class Matcher(ABC):
    """The state of one decoding against one compiled grammar."""

    @abstractmethod
    def fill_mask(self, bitmask: torch.Tensor) -> bool:
        """Write the tokens allowed next into ``bitmask``; False when every token is allowed
        (the mask need not be applied)."""

    @abstractmethod
    def allows(self, token: int) -> bool:
        """Whether ``token`` may come next (the state does not change)."""

    @abstractmethod
    def accept_token(self, token: int) -> bool:
        """Advance by ``token`` (one step); False, and no change, when it is not allowed."""

    @abstractmethod
    def accept_bytes(self, data: bytes) -> bool:
        """Advance by ``data`` as one step (typed or healed text); False, and no change,
        when the grammar does not allow it."""

    def accept_text(self, text: str) -> bool:
        """``accept_bytes`` of the text's UTF-8."""
        return self.accept_bytes(text.encode("utf-8", "surrogatepass"))

    @abstractmethod
    def rollback(self, steps: int = 1) -> None:
        """Undo the last ``steps`` accepted tokens or byte strings."""

    @abstractmethod
    def is_complete(self) -> bool:
        """The fragment may end here."""

    @abstractmethod
    def is_terminated(self) -> bool:
        """Nothing can follow (the decoder stops without another model step)."""

    def could_end_with(self, marker: bytes) -> bool:
        """Whether ``marker`` (the fragment's end, a newline) is allowed here."""
        if self.accept_bytes(marker):
            self.rollback(1)
            return True
        return False


@dataclass
class Compiled:
    """A grammar compiled by one engine for one vocabulary."""

    engine: GrammarEngine
    key: str
    handle: Any
    weight: int
    source: Grammar = field(repr=False)

    def matcher(self) -> Matcher:
        return self.engine.new_matcher(self)

    def dialect_text(self) -> str:
        """The grammar as this engine reads it (``explain --dialect``)."""
        return self.engine.dialect_text(self.source)


class GrammarEngine(ABC):
    """Compiles grammars for one vocabulary, with a bounded cache (thread-safe)."""

    name: str = ""

    def __init__(self, vocab: Vocabulary, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.vocab = vocab
        self._entries: BoundedCache[str, Compiled] = BoundedCache(
            f"grammar.{self.name}", 4096, max_weight=max_bytes, weigh=lambda compiled: compiled.weight)
        self._compiles = 0
        self._compile_seconds = 0.0
        self._shared = 0
        self._compiling: dict[str, Future] = {}
        """Grammars being compiled now, by key: a second ask waits for the first one's compile."""
        self._lock = threading.Lock()

    @property
    def stats(self) -> EngineStats:
        counts = self._entries.stats
        return EngineStats(counts.hits, self._compiles, self._compile_seconds, counts.evictions, counts.weight,
                           self._shared)

    @staticmethod
    def key(grammar: Grammar) -> str:
        return grammar_key(grammar)

    def get(self, grammar: Grammar) -> Compiled:
        """The compiled grammar (from the cache when this grammar was compiled before, or from
        the compile another thread has in flight for it: the plan on an analysis thread and
        the decode on a slot, two slots missing the same grammar, compile it once); raises
        GrammarError when the engine cannot compile it."""
        key = grammar_key(grammar)
        if (hit := self._entries.get(key)) is not None:
            return hit
        with self._lock:
            if (hit := self._entries.get(key)) is not None:
                return hit
            pending = self._compiling.get(key)
            if pending is None:
                pending = self._compiling[key] = Future()
                owner = True
            else:
                self._shared += 1
                owner = False
        if not owner:
            return pending.result()  # the compile's own GrammarError when it failed
        began = time.perf_counter()
        try:
            handle, weight = self._compile(grammar)
            compiled = self._entries.put(key, Compiled(self, key, handle, weight, grammar))
        except BaseException as err:
            with self._lock:
                del self._compiling[key]
            pending.set_exception(err)
            raise
        with self._lock:
            self._compiles += 1
            self._compile_seconds += time.perf_counter() - began
            del self._compiling[key]
        pending.set_result(compiled)
        return compiled

    def __len__(self) -> int:
        return len(self._entries)

    @abstractmethod
    def _compile(self, grammar: Grammar) -> tuple[Any, int]:
        """(the engine's compiled object, its weight in bytes); GrammarError on failure."""

    @abstractmethod
    def new_matcher(self, compiled: Compiled) -> Matcher:
        ...

    @abstractmethod
    def dialect_text(self, grammar: Grammar) -> str:
        """``grammar`` in this engine's dialect."""


def accepts(compiled: Compiled, text: str) -> bool:
    """True when ``text`` is a prefix of some string of the grammar."""
    return not text or compiled.matcher().accept_text(text)


def full_match(compiled: Compiled, text: str) -> bool:
    """True when ``text`` is a complete string of the grammar."""
    matcher = compiled.matcher()
    return (not text or matcher.accept_text(text)) and matcher.is_complete()


_BYTE_ENGINES: dict[str, GrammarEngine] = {}
_BYTE_LOCK = threading.Lock()


def byte_engine(name: str = "auto") -> GrammarEngine:
    """The process's one engine of each kind over a one-byte-per-token vocabulary: a
    model-free way to ask whether a grammar accepts a text (the language does not depend
    on the vocabulary). ``explain``, the fragment gate, ``gdg-lsp induce`` and the tests
    all share it: ``auto`` and the engine it stands for are the same object."""
    engine = resolve(name)
    with _BYTE_LOCK:
        if engine not in _BYTE_ENGINES:
            from gdg_lsp.vocab import ByteVocabulary

            _BYTE_ENGINES[engine] = create(engine, ByteVocabulary(), max_bytes=64 * 1024 * 1024)
        return _BYTE_ENGINES[engine]


def create(name: str, vocab: Vocabulary, **options: Any) -> GrammarEngine:
    """A new engine (``name``: a ``gdg.grammarEngine`` value) for ``vocab``; each library is
    imported only when its engine is made."""
    if resolve(name) == "xgrammar":
        from gdg_lsp.grammar.xgrammar_engine import XGrammarEngine

        return XGrammarEngine(vocab, **options)
    from gdg_lsp.grammar.llguidance_engine import LLGuidanceEngine

    return LLGuidanceEngine(vocab, **options)
