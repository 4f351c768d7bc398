"""A backend whose "model" wants to write a fixed script: at each step it prefers the
longest token that continues the script from where the text stands. Under a grammar
it writes the script wherever the grammar allows it and something else where not,
which makes Γ's growth visible deterministically (a random-weight model shows the
guarantee for arbitrary preferences)."""

from __future__ import annotations

import torch


class ScriptedBackend:
    def __init__(self, vocab, script: str) -> None:
        self.vocab = vocab
        self.script = script
        self.text = ""
        self.name = "scripted"

    def reset(self) -> None:
        self.text = ""

    def _logits(self) -> torch.Tensor:
        pos = 0
        for k in range(min(len(self.script), len(self.text)), 0, -1):
            if self.text.endswith(self.script[:k]):
                pos = k
                break
        want = self.script[pos:]
        scores = torch.full((self.vocab.size,), -1.0)
        for i, piece in enumerate(self.vocab.token_bytes):
            text = piece.decode("utf-8", "ignore")
            if text and want.startswith(text):
                scores[i] = float(len(text))
        if not want:
            scores[0] = 100.0  # the stop token
        return scores

    def prefill(self, ids):
        self.text = "".join(self.vocab.token_bytes[i].decode("utf-8", "ignore") for i in ids)
        return self._logits()

    def step(self, token_id: int):
        self.text += self.vocab.token_bytes[token_id].decode("utf-8", "ignore")
        return self._logits()


class NoisyBackend:
    """A random-weight model whose logits get fresh Gaussian noise at every step
    (seeded): greedy decoding of a tiny random model alone tends to repeat one
    token (often a blank) forever, so the noise makes it walk the grammar."""

    def __init__(self, inner, seed: int, scale: float = 3.0) -> None:
        self.inner = inner
        self.vocab = inner.vocab
        self.name = f"noisy-{inner.name}"
        self.generator = torch.Generator().manual_seed(seed)
        self.scale = scale

    def reset(self) -> None:
        self.inner.reset()

    def _noisy(self, logits):
        noise = torch.randn(logits.shape[-1], generator=self.generator) * self.scale
        return logits.float().reshape(-1)[: noise.shape[0]] + noise

    def prefill(self, ids):
        return self._noisy(self.inner.prefill(ids))

    def step(self, token_id: int):
        return self._noisy(self.inner.step(token_id))
