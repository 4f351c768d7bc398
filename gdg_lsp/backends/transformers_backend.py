"""A transformers causal LM run in-process (``gdg.engine = transformers``).

``TorchBackend`` keeps the KV cache of the last sequence: a request whose
prompt shares a prefix with the previous one (the usual case: the user typed
a few characters) only runs the model on the tokens after the common prefix.
Any checkpoint transformers can load works here; the lean engine
(``backends/lean``) is faster where the architecture allows it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from gdg_lsp.backends.base import BackendStats, common_prefix
from gdg_lsp.vocab import Vocabulary


class TorchBackend:
    def __init__(self, model: Any, vocab: Vocabulary, name: str, device: str = "cpu") -> None:
        self.model = model.eval()
        self.vocab = vocab
        self.name = name
        self.device = device
        self.stats = BackendStats()
        self._ids: list[int] = []
        self._cache: Any = None
        self._vocab_size = vocab.size

    def reset(self) -> None:
        self._ids = []
        self._cache = None

    def _forward(self, ids: Sequence[int]) -> torch.Tensor:
        from transformers import DynamicCache

        if self._cache is None:
            self._cache = DynamicCache()
        began = time.perf_counter()
        with torch.inference_mode():
            inputs = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
            # the cache is updated in place; only the last position's logits are needed
            out = self.model(input_ids=inputs, cache=self._cache, use_cache=True, logits_to_keep=1)
        self.stats.model_seconds += time.perf_counter() - began
        self._ids.extend(ids)
        # Some checkpoints pad the output layer beyond the tokenizer: the decoder
        # only ever picks among real tokens.
        return out.logits[0, -1, : self._vocab_size].float().cpu()

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        if not ids:
            raise ValueError("empty prompt")
        keep = common_prefix(self._ids, ids)
        keep = min(keep, len(ids) - 1)  # at least one token must run to give logits
        if self._cache is not None and keep < len(self._ids):
            try:
                # transformers 5 takes the number of tokens to drop, as a negative count
                self._cache.crop(-(len(self._ids) - keep))
                self._ids = self._ids[:keep]
            except Exception:  # a cache type without crop: start over
                self.reset()
                keep = 0
        if self._cache is None:
            keep = 0
        self.stats.reused_tokens += keep
        self.stats.prefill_tokens += len(ids) - keep
        return self._forward(ids[keep:])

    def step(self, token_id: int) -> torch.Tensor:
        self.stats.steps += 1
        return self._forward([token_id])
