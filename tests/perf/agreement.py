"""Greedy agreement of two backends of one model on corpus code: the check a packed or
quantized engine passes against the exact (fp32) decoder."""

from __future__ import annotations

from pathlib import Path

import torch

CORPUS = Path("/work/shared/corpus/python")
FALLBACK = "import os\n\n\ndef main(argv):\n"


def greedy_agreement(exact, other, prompt_tokens: int = 300, steps: int = 16) -> int:
    """Of ``steps`` greedy steps after the first corpus file's first ``prompt_tokens`` tokens,
    how many pick the exact decoder's token (both fed the exact decoder's choice)."""
    source = sorted(CORPUS.rglob("*.py")) if CORPUS.is_dir() else []
    text = source[0].read_text(encoding="utf-8", errors="replace") if source else FALLBACK
    ids = exact.vocab.encode(text).ids[:prompt_tokens]
    a, b = exact.prefill(ids), other.prefill(ids)
    agree = 0
    for _ in range(steps):
        token = int(torch.argmax(a))
        agree += token == int(torch.argmax(b))
        a, b = exact.step(token), other.step(token)
    return agree
