"""A model's vocabulary as the decoder sees it: bytes per token, stop tokens, encoding.

Two kinds: ``HFVocabulary`` wraps a Hugging Face tokenizer (the real models),
``ListVocabulary`` is a fixed list of strings with greedy longest-match
encoding (property tests with a random-weight model and a tiny vocabulary,
where the mask has to work hard).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import xgrammar as xgr

from gdg_lsp import prompt_shapes

# Stop tokens used by chat-tuned small models. SmolLM2's default stop is
# <|im_end|>; <|endoftext|> must stop it too.
STOP_TOKEN_TEXTS = ("<|im_end|>", "<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "<end_of_turn>")



@dataclass(frozen=True)
class Encoding:
    ids: list[int]
    offsets: list[tuple[int, int]]  # character spans of each token in the encoded text


class Vocabulary:
    """Base: subclasses fill ``token_bytes``, ``stop_ids``, ``special_ids``."""

    token_bytes: list[bytes]
    stop_ids: frozenset[int]
    special_ids: frozenset[int]

    @property
    def size(self) -> int:
        return len(self.token_bytes)

    def encode(self, text: str) -> Encoding:
        raise NotImplementedError

    def token_id(self, name: str) -> int | None:
        """The id of the token spelled ``name`` in the tokenizer's own vocabulary (special
        tokens such as ``<fim_prefix>``), or None; a plain list of strings has no such tokens."""
        return None

    def tokenizer_info(self) -> xgr.TokenizerInfo:
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        return b"".join(self.token_bytes[i] for i in ids).decode("utf-8", "replace")

    @cached_property
    def blank_start(self) -> "np.ndarray":
        """Tokens whose text starts with a space or a tab."""
        return np.array([b[:1] in (b" ", b"\t") for b in self.token_bytes], dtype=bool)

    @cached_property
    def _sorted(self) -> tuple[list[bytes], np.ndarray]:
        pairs = sorted(
            (b, i) for i, b in enumerate(self.token_bytes)
            if b and i not in self.special_ids and i not in self.stop_ids
        )
        return [b for b, _ in pairs], np.array([i for _, i in pairs], dtype=np.int64)

    @cached_property
    def _by_bytes(self) -> dict[bytes, list[int]]:
        table: dict[bytes, list[int]] = {}
        for i, b in enumerate(self.token_bytes):
            if b and i not in self.special_ids and i not in self.stop_ids:
                table.setdefault(b, []).append(i)
        return table

    def warm(self) -> None:
        """Build the tables decoding reads (blank starts, the sorted vocabulary for healing):
        ≈ 0.3 s for a 49k-token vocabulary, spent while the model loads instead of in the first
        request."""
        for table in ("blank_start", "_sorted", "_by_bytes"):
            getattr(self, table)

    def healing_candidates(self, pending: bytes) -> np.ndarray:
        """Tokens consistent with having to produce ``pending`` next: a token that
        is a prefix of it, or a token that starts with all of it (int64 ids).

        The tokens that start with ``pending`` are one slice of the sorted
        vocabulary (half of it for a blank): found by two bisections, never
        walked in Python."""
        shorter: list[int] = []
        for k in range(1, len(pending)):
            shorter.extend(self._by_bytes.get(pending[:k], ()))
        keys, ids = self._sorted
        lo = bisect.bisect_left(keys, pending)
        hi = lo
        if pending:
            stripped = pending.rstrip(b"\xff")
            if stripped:  # the first byte string after every extension of pending
                upper = stripped[:-1] + bytes([stripped[-1] + 1])
                hi = bisect.bisect_left(keys, upper, lo)
            else:
                hi = len(keys)
        longer = ids[lo:hi]
        return np.concatenate([np.array(shorter, dtype=np.int64), longer]) if shorter else longer.copy()


class HFVocabulary(Vocabulary):
    def __init__(self, tokenizer: Any, vocab_size: int | None = None) -> None:
        self.tokenizer = tokenizer
        self._names = tokenizer.get_vocab()
        self._limit = vocab_size
        stops = self._stop_ids(tokenizer)
        if prompt_shapes.detect(self) is not None:  # a FIM model ends its middle with these
            stops = sorted({*stops, *(i for t in prompt_shapes.FIM_END_TOKENS if (i := self.token_id(t)) is not None)})
        self._info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab_size, stop_token_ids=stops or None)
        self.token_bytes = list(self._info.decoded_vocab)
        self.stop_ids = frozenset(self._info.stop_token_ids)
        specials = set(self._info.special_token_ids) | set(getattr(tokenizer, "all_special_ids", []) or [])
        self.special_ids = frozenset(specials - set(self.stop_ids))

    def token_id(self, name: str) -> int | None:
        found = self._names.get(name)
        return found if found is not None and (self._limit is None or found < self._limit) else None

    @staticmethod
    def _stop_ids(tokenizer: Any) -> list[int]:
        vocab = tokenizer.get_vocab()
        ids = {vocab[t] for t in STOP_TOKEN_TEXTS if t in vocab}
        if tokenizer.eos_token_id is not None:
            ids.add(tokenizer.eos_token_id)
        return sorted(ids)

    def encode(self, text: str) -> Encoding:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return Encoding(list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]])

    def tokenizer_info(self) -> xgr.TokenizerInfo:
        return self._info


class ListVocabulary(Vocabulary):
    """A fixed vocabulary of strings; token 0 is the stop token."""

    def __init__(self, tokens: Sequence[str]) -> None:
        if len(set(tokens)) != len(tokens):
            raise ValueError("duplicate tokens")
        self.tokens = ["</s>", *tokens]
        self.token_bytes = [b"", *(t.encode("utf-8") for t in tokens)]
        self.stop_ids = frozenset({0})
        self.special_ids = frozenset()
        self._longest = max(len(t) for t in tokens)
        self._index = {t: i for i, t in enumerate(self.tokens) if i}

    def encode(self, text: str) -> Encoding:
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        pos = 0
        while pos < len(text):
            for length in range(min(self._longest, len(text) - pos), 0, -1):
                if (tid := self._index.get(text[pos : pos + length])) is not None:
                    ids.append(tid)
                    offsets.append((pos, pos + length))
                    pos += length
                    break
            else:
                raise ValueError(f"character {text[pos]!r} is not in the vocabulary")
        return Encoding(ids, offsets)

    def tokenizer_info(self) -> xgr.TokenizerInfo:
        return xgr.TokenizerInfo(
            list(self.token_bytes), vocab_type=xgr.VocabType.RAW, stop_token_ids=[0]
        )


class ByteVocabulary(Vocabulary):
    """One token per byte (and a stop token, 256): model-free questions about a grammar's
    language (does it accept this text?) get the same answer from every engine."""

    def __init__(self) -> None:
        self.token_bytes = [bytes([b]) for b in range(256)] + [b""]
        self.stop_ids = frozenset({256})
        self.special_ids = frozenset()
        self._info: xgr.TokenizerInfo | None = None

    def encode(self, text: str) -> Encoding:
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        for i, ch in enumerate(text):
            raw = ch.encode("utf-8", "surrogatepass")
            ids.extend(raw)
            offsets.extend([(i, i + 1)] * len(raw))
        return Encoding(ids, offsets)

    def tokenizer_info(self) -> xgr.TokenizerInfo:
        if self._info is None:
            self._info = xgr.TokenizerInfo(list(self.token_bytes), vocab_type=xgr.VocabType.RAW, stop_token_ids=[256])
        return self._info
