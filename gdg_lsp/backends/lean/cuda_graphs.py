"""The GPU decode step: static shapes, captured once as a CUDA graph, replayed per token.

At batch 1 a small model's eager step on a big GPU is launch-bound: a 0.5B
model launches hundreds of kernels per token and the GPU idles between them
(transformers' eager loop: 33-55 tokens/s on an H200, where reading the
weights would allow thousands). A CUDA graph replays the whole step as one
launch, but only if every kernel sees the same shapes and the same buffers on
every step. ``StaticLlama`` arranges that on top of ``fast_llama``:

- the KV cache has a fixed capacity (it is never reallocated while a graph
  holds its addresses; outgrowing it drops the graph, grows the cache and
  captures again);
- the step reads its token and its position from one-element device buffers
  (the position selects the RoPE row and the cache row with ``index_select``
  and ``index_copy_``, not with Python slicing);
- attention runs over the whole capacity under a mask ``key position <= pos``
  built on the device, so its shapes do not change as the sequence grows;
- the logits land in one output buffer.

``BatchedGraphs`` does the same for the steps of several sequences at once
(``decoding/batching.py``): one graph per set of slots that step together.

Prefills (several tokens, variable length) stay eager, in ``LeanLlama.forward``,
and write into the same cache. On a CPU, or with ``use_graph=False``, the static
step runs eagerly: the same arithmetic, which is what the CPU tests check
against transformers; the GPU tests (marker ``gpu``) check graph replay against
it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from gdg_lsp.backends.lean.llama import (
    FastLlamaBackend,
    LeanLlama,
    LlamaWeights,
    apply_rope,
    feed_forward,
    rms_norm,
)
from gdg_lsp.caches import BoundedCache
from gdg_lsp.vocab import Vocabulary

DEFAULT_CAPACITY = 4096
"""Tokens the static cache holds: the prompt window (gdg.contextTokens, 1024 by
default) plus a suggestion fits with room to spare."""

WARMUP_STEPS = 2
"""Eager runs on a side stream before capture (lets cuBLAS pick and allocate its workspaces)."""

MAX_BATCHED_GRAPHS = 64
"""Batched-step graphs kept, one per set of slots that stepped together (least recently used
out, captured again when that set comes back): N slots make 2^N - N - 1 sets, 11 at the
default 4 and 65,519 at 16, and each graph holds buffers of its own on the GPU."""


class StaticLlama(LeanLlama):
    """``LeanLlama`` whose single-token step has static shapes (graph-capturable)."""

    def __init__(self, weights: LlamaWeights, capacity: int = DEFAULT_CAPACITY, use_graph: bool | None = None) -> None:
        super().__init__(weights, min(capacity, weights.shape.max_positions))
        device = weights.device
        self.use_graph = (str(device).startswith("cuda") and torch.cuda.is_available()) if use_graph is None else use_graph
        self._token = torch.zeros(1, dtype=torch.long, device=device)
        self._pos = torch.zeros(1, dtype=torch.long, device=device)
        self._graph: torch.cuda.CUDAGraph | None = None
        self._graph_capacity = 0
        self._out: torch.Tensor | None = None
        self.captures = 0
        """How many graphs were captured (1 unless the cache had to grow): read by tests and bench."""
        self.replays = 0

    # -- the static step ------------------------------------------------------------------

    def _static_step(self) -> torch.Tensor:
        s, w, cache = self.shape, self.w, self.cache
        H, KV, D, G = s.heads, s.kv_heads, s.head_dim, s.group
        h = w.embed_rows(self._token).to(w.dtype)  # [1, hidden]
        cos = self._cos.index_select(0, self._pos)
        sin = self._sin.index_select(0, self._pos)
        # True where a key may be attended: positions up to and including this one
        visible = (torch.arange(cache.capacity, device=self._pos.device) <= self._pos).view(1, cache.capacity)
        for index, layer in enumerate(w.layers):
            x = rms_norm(h, layer.ln1, s.rms_eps)
            qkv = layer.qkv(x)
            q = qkv[:, : H * D].view(1, H, D).transpose(0, 1)
            k = qkv[:, H * D : (H + KV) * D].view(1, KV, D).transpose(0, 1)
            v = qkv[:, (H + KV) * D :].view(1, KV, D).transpose(0, 1)
            q = apply_rope(q, cos, sin)
            k = apply_rope(k, cos, sin)
            keys, values = cache.k[index], cache.v[index]
            keys.index_copy_(1, self._pos, k.to(keys.dtype))
            values.index_copy_(1, self._pos, v.to(values.dtype))
            qg = q.reshape(KV, G, D)
            attn = torch.nn.functional.scaled_dot_product_attention(
                qg, keys, values, attn_mask=visible, scale=self._scale)
            out = attn.reshape(H, 1, D).transpose(0, 1).reshape(1, H * D)
            h = feed_forward(h + layer.o(out), layer, s.rms_eps)
        last = rms_norm(h, w.norm, s.rms_eps)
        return w.head(last)[0].float()

    def _capture(self) -> None:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(WARMUP_STEPS):  # writes the cache row at pos: the real step overwrites it
                self._static_step()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._out = self._static_step()
        self._graph, self._graph_capacity = graph, self.cache.capacity
        self.captures += 1

    def step_token(self, token: int) -> torch.Tensor:
        cache = self.cache
        position = cache.length
        cache.ensure(position + 1)  # grows (reallocates) only past the capacity
        self._token.fill_(token)
        self._pos.fill_(position)
        if not self.use_graph:
            logits = self._static_step()
        else:
            if self._graph is None or self._graph_capacity != cache.capacity:
                self._capture()
            assert self._graph is not None and self._out is not None
            self._graph.replay()
            self.replays += 1
            logits = self._out
        cache.length = position + 1
        return logits

    def forward(self, ids: Sequence[int], allowed: torch.Tensor | None = None,
                logits: bool = True) -> torch.Tensor | None:  # type: ignore[override]
        if len(ids) != 1 or not logits:
            return super().forward(ids, allowed, logits=logits)  # prefill: eager, variable length
        row = self.step_token(int(ids[0]))
        if allowed is None:
            return row
        out = torch.full_like(row, -math.inf)
        out[allowed] = row[allowed]
        return out


class GraphLlamaBackend(FastLlamaBackend):
    """``FastLlamaBackend`` over ``StaticLlama``: CUDA-graph steps on a GPU, static eager steps elsewhere."""

    def __init__(self, weights: LlamaWeights, vocab: Vocabulary, name: str, device: str = "cpu",
                 capacity: int = DEFAULT_CAPACITY, use_graph: bool | None = None) -> None:
        super().__init__(weights, vocab, name, device)
        # (FastLlamaBackend hands out logits[: vocab].cpu(): a copy, so the graph's
        # output buffer is never seen by the caller)
        self.model = StaticLlama(weights, capacity, use_graph)

    @property
    def extends_exactly(self) -> bool:
        # A draft's forward runs eagerly (the graph is captured for one token): on a
        # GPU that is hundreds of kernel launches against one graph replay per step,
        # so drafting is left to the CPU until it is measured on a GPU.
        return not self.model.use_graph and super().extends_exactly

# -- several sequences per step (decoding/batching.py) ----------------------------------------


def static_batched_step(models: Sequence[StaticLlama], tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """One token for each of B sequences in one forward, with static shapes: ``tokens``
    and ``positions`` are [B] device buffers, the result is [B, vocab] logits.

    The linears run on the stacked rows; each row attends over its own cache's whole
    capacity under the mask ``key position <= its position`` (as ``_static_step``)."""
    first = models[0]
    s, w = first.shape, first.w
    B = len(models)
    H, KV, D, G = s.heads, s.kv_heads, s.head_dim, s.group
    h = w.embed_rows(tokens).to(w.dtype)  # [B, hidden]
    cos = first._cos.index_select(0, positions)[:, None, :]  # [B, 1, D]: each row at its own position
    sin = first._sin.index_select(0, positions)[:, None, :]
    where = [positions[b : b + 1] for b in range(B)]
    visible = [(torch.arange(m.cache.capacity, device=positions.device) <= where[b]).view(1, m.cache.capacity)
               for b, m in enumerate(models)]
    for index, layer in enumerate(w.layers):
        x = rms_norm(h, layer.ln1, s.rms_eps)
        qkv = layer.qkv(x)
        q = apply_rope(qkv[:, : H * D].view(B, H, D), cos, sin)
        k = apply_rope(qkv[:, H * D : (H + KV) * D].view(B, KV, D), cos, sin)
        v = qkv[:, (H + KV) * D :].view(B, KV, D)
        rows = []
        for b, model in enumerate(models):
            keys, values = model.cache.k[index], model.cache.v[index]
            keys.index_copy_(1, where[b], k[b : b + 1].transpose(0, 1).to(keys.dtype))
            values.index_copy_(1, where[b], v[b : b + 1].transpose(0, 1).to(values.dtype))
            attn = torch.nn.functional.scaled_dot_product_attention(
                q[b].reshape(KV, G, D), keys, values, attn_mask=visible[b], scale=first._scale)
            rows.append(attn.reshape(H * D))
        h = feed_forward(h + layer.o(torch.stack(rows)), layer, s.rms_eps)
    return w.head(rms_norm(h, w.norm, s.rms_eps)).float()


class BatchedGraphs:
    """``static_batched_step`` captured as CUDA graphs, one per set of slots stepping
    together (a graph bakes in the addresses of its sequences' caches; with N slots
    there are at most 2^N - N - 1 sets of two or more, captured when first met; the
    ``MAX_BATCHED_GRAPHS`` used last are kept). Without a graph (a CPU, ``use_graph=False``)
    the same step runs eagerly."""

    def __init__(self) -> None:
        self._graphs: BoundedCache[tuple[int, ...], tuple[tuple[int, ...], torch.Tensor, torch.Tensor, Any,
                                                          torch.Tensor]] = \
            BoundedCache("lean.batched-graphs", MAX_BATCHED_GRAPHS)
        self.captures = 0
        self.replays = 0

    def step(self, models: Sequence[StaticLlama], tokens: Sequence[int], positions: Sequence[int]) -> list[torch.Tensor]:
        """Logits for each row (one token appended to each model's sequence at ``positions``)."""
        device = models[0].w.device
        token_ids = torch.tensor(list(tokens), dtype=torch.long)
        at = torch.tensor(list(positions), dtype=torch.long)
        if not models[0].use_graph:
            logits = static_batched_step(models, token_ids.to(device), at.to(device))
            return list(logits.unbind(0))
        key = tuple(id(m) for m in models)
        capacities = tuple(m.cache.capacity for m in models)
        entry = self._graphs.get(key)
        if entry is None or entry[0] != capacities:  # new set, or a cache grew (reallocated): capture again
            entry = self._graphs.put(key, self._capture(models, capacities, token_ids, at))
        _, token_buf, pos_buf, graph, out = entry
        token_buf.copy_(token_ids)
        pos_buf.copy_(at)
        graph.replay()
        self.replays += 1
        # copies: the next replay of this graph overwrites its output buffer
        return [row.clone() for row in out.unbind(0)]

    def _capture(self, models: Sequence[StaticLlama], capacities: tuple[int, ...], token_ids: torch.Tensor,
                 at: torch.Tensor) -> tuple:
        device = models[0].w.device
        # the real inputs: the warm-up runs write the cache rows at these positions, the replay overwrites them
        token_buf = token_ids.to(device)
        pos_buf = at.to(device)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(WARMUP_STEPS):
                static_batched_step(models, token_buf, pos_buf)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = static_batched_step(models, token_buf, pos_buf)
        self.captures += 1
        return capacities, token_buf, pos_buf, graph, out
