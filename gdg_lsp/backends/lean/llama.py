"""A lean decoder for Llama-family models (Llama, SmolLM2, Qwen2): the fast ModelBackend.

transformers' generic forward costs more than the arithmetic at batch 1 on a
CPU: per step it builds masks and position tensors, walks a dynamic cache and
runs every projection as its own product over fp32 weights. This backend runs
the same mathematics with

- a KV cache preallocated per layer (grown by doubling), so a step writes one
  row and attends to a view: no concatenation, and cropping to a shared prefix
  is free;
- fused projections (q|k|v as one product, gate|up as one);
- on CPU, weights packed (``quant="packed"``, ``gdg.engine`` auto): a GGUF
  file's block-quantized tensors as the file has them, multiplied by int8
  activations (``quant.py``: Q4_0 ... Q8_0, Q4_K, Q5_K, Q6_K, for steps and
  prefill chunks alike); from a Hugging Face folder, 4-bit groups where the
  weights are 4-bit groups already and fp16 else (``linear.py``); fp32 with
  ``quant="none"``, int8 with dynamically quantized activations with ``"int8"``;
- the output layer evaluated only where logits are used: for the last prompt
  token of a prefill (not for the chunks before it), for every token of a
  draft, and only on the token ids the grammar allows when the caller passes
  them (``step(token, allowed=...)``), the rest left at -inf;
- one fused attention kernel for a single-token step (grouped-query heads
  read their shared key head in place).

It implements the ModelBackend protocol of ``backends.py`` and keeps the
prefix reuse of ``TorchBackend``. ``load_weights`` reads a Hugging Face folder
(``config.json`` + safetensors) directly, without building a transformers
model, and with ``gguf=`` (packed, CPU) the weights from the GGUF file itself.
The GPU path (static shapes, one CUDA graph per step) is in ``cuda_graphs.py``
and reuses these weights.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from gdg_lsp.backends.base import BackendStats, PrefillCancelled, common_prefix
from gdg_lsp.backends.lean import native
from gdg_lsp.backends.lean.linear import (
    DenseLinear,
    Int8Linear,
    Linear,
    bf16_native,
    fp16_or_dense,
    int8_available,
    packed_linear,
)
from gdg_lsp.backends.lean.quant import QuantLinear, QuantTensor, packable
from gdg_lsp.vocab import Vocabulary

PREFILL_CHUNK = 256
"""Most prompt tokens per forward during a prefill (bounds the attention scores' memory)."""

CHUNK_MACS = 12e9
"""Multiply-adds of the layers per prefill chunk. A prefill stops between chunks when a newer
request cancels it, so a chunk is what that request may wait: about 0.15 s on one core with
the packed kernels (≈ 80 GMAC/s), whatever the model (``prefill_chunk``). Smaller chunks cost
little: the weights are read once per chunk, and at 32 tokens a chunk of the 0.5B coder spent
as long per token as at 256 (docs/PERFORMANCE.md)."""


def prefill_chunk(shape: LlamaShape) -> int:
    """Prompt tokens per prefill forward for this model: ``CHUNK_MACS`` worth of its layers'
    products (SmolLM2-135M 112, Qwen2.5-0.5B 32, Qwen2.5-1.5B 16), a multiple of 16 within
    16 .. ``PREFILL_CHUNK``."""
    attention = shape.hidden * (shape.heads + 2 * shape.kv_heads) * shape.head_dim + shape.heads * shape.head_dim * shape.hidden
    per_token = shape.layers * (attention + 3 * shape.hidden * shape.intermediate)
    return max(16, min(PREFILL_CHUNK, int(CHUNK_MACS // per_token) // 16 * 16))

QUANTS = ("none", "int8", "packed")
"""Weight formats of ``build_weights`` (``linear.py``): fp32 (bf16 on a GPU); int8 with
activations quantized per call; packed for the CPU step."""


class UnsupportedModel(ValueError):
    """The checkpoint is not one this decoder implements; the caller falls back to transformers."""


@dataclass(frozen=True)
class LlamaShape:
    vocab_size: int
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    rms_eps: float
    rope_theta: float
    max_positions: int
    tied: bool
    qkv_bias: bool

    @property
    def group(self) -> int:
        return self.heads // self.kv_heads

    @classmethod
    def from_config(cls, config: dict) -> LlamaShape:
        kind = config.get("model_type")
        if kind not in ("llama", "qwen2"):
            raise UnsupportedModel(f"model type {kind!r} (the lean decoder runs llama and qwen2)")
        if config.get("hidden_act", "silu") != "silu":
            raise UnsupportedModel(f"activation {config.get('hidden_act')!r}")
        rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) not in ("default", None):
            raise UnsupportedModel(f"rope scaling {rope.get('rope_type', rope.get('type'))!r}")
        if config.get("mlp_bias"):
            raise UnsupportedModel("biased MLP")
        if kind == "qwen2" and config.get("use_sliding_window"):
            raise UnsupportedModel("sliding-window attention")
        heads = int(config["num_attention_heads"])
        hidden = int(config["hidden_size"])
        theta = rope.get("rope_theta", config.get("rope_theta", 10000.0))
        return cls(
            vocab_size=int(config["vocab_size"]), hidden=hidden, intermediate=int(config["intermediate_size"]),
            layers=int(config["num_hidden_layers"]), heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            rms_eps=float(config.get("rms_norm_eps", 1e-6)), rope_theta=float(theta),
            max_positions=int(config.get("max_position_embeddings", 4096)),
            tied=bool(config.get("tie_word_embeddings", False)),
            qkv_bias=kind == "qwen2" or bool(config.get("attention_bias", False)),
        )


@dataclass
class LayerWeights:
    ln1: torch.Tensor
    qkv: Linear
    o: Linear
    ln2: torch.Tensor
    gate_up: Linear
    down: Linear


@dataclass
class LlamaWeights:
    shape: LlamaShape
    embed: torch.Tensor | QuantTensor | None
    """Token embeddings (a GGUF tensor's blocks, de-quantized row by row as tokens are
    looked up); None when they are read from the int8 output layer (tied)."""
    layers: list[LayerWeights]
    norm: torch.Tensor
    head: Linear
    quant: str
    device: str
    dtype: torch.dtype

    def embed_rows(self, ids: torch.Tensor) -> torch.Tensor:
        if isinstance(self.embed, QuantTensor):
            return self.embed.dequantize_rows(ids.cpu()).to(ids.device)
        if self.embed is not None:
            return self.embed.index_select(0, ids)
        head = self.head  # tied and int8: dequantize the rows
        return head._q.index_select(0, ids).float() * head._scale.index_select(0, ids)[:, None]  # type: ignore[union-attr]

    @property
    def rows_independent(self) -> bool:
        """True when each input row's result is computed on its own: a draft's rows are
        then its steps' logits (to rounding), and a batch's rows the single rows'. Not
        with ``int8``, whose activations share one quantization scale per call."""
        return self.quant != "int8"

    @property
    def nbytes(self) -> int:
        total = sum(l.qkv.nbytes + l.o.nbytes + l.gate_up.nbytes + l.down.nbytes for l in self.layers) + self.head.nbytes
        if isinstance(self.embed, QuantTensor):
            return total + self.embed.nbytes
        return total + (0 if self.embed is None else self.embed.numel() * self.embed.element_size())


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise UnsupportedModel(f"no safetensors weights in {folder}")
    out: dict[str, torch.Tensor] = {}
    for path in files:
        out.update(load_file(str(path)))
    return out


def _widened(tensor: torch.Tensor | QuantTensor) -> torch.Tensor:
    return tensor.dequantize() if isinstance(tensor, QuantTensor) else tensor


def build_weights(shape: LlamaShape, state: dict[str, torch.Tensor | QuantTensor], quant: str = "int8",
                  device: str = "cpu", dtype: torch.dtype | None = None, vocab_rows: int | None = None) -> LlamaWeights:
    """Arrange a Hugging Face state dict for the lean decoder.

    ``quant``: one of ``QUANTS`` (``int8`` and ``packed`` on CPU only: ``none``
    elsewhere). ``vocab_rows`` keeps only the first rows of the output layer
    (checkpoints pad it beyond the tokenizer). A value may be a GGUF tensor's blocks
    (``QuantTensor``, from ``gguf_convert.read_blocks``): ``packed`` keeps those
    packed (``QuantLinear``) where this machine has the kernels, every other format
    de-quantizes them.
    """
    if quant not in QUANTS:
        raise ValueError(f"unknown quantization {quant!r}")
    if quant != "none" and device != "cpu" or quant == "int8" and not int8_available():
        quant = "none"
    dtype = dtype or (torch.float32 if device == "cpu" else torch.bfloat16)
    state = {k.removeprefix("model."): v for k, v in state.items()}

    def get(name: str) -> Any:
        if name not in state:
            raise UnsupportedModel(f"weight {name} is missing")
        return state.pop(name)

    bulk_bf16 = quant == "packed" and bf16_native()
    keep_blocks = quant == "packed" and device == "cpu"

    def linear(parts: list[Any], bias: torch.Tensor | None = None) -> Linear:
        if keep_blocks and packable(parts):
            return QuantLinear(parts, bias)
        weight = torch.cat([_widened(part) for part in parts]) if len(parts) > 1 else _widened(parts[0])
        if quant == "int8":
            return Int8Linear(weight, bias)
        if quant == "packed":
            return packed_linear(weight, bias, bulk_bf16=bulk_bf16)
        return DenseLinear(weight.to(device=device, dtype=dtype),
                           None if bias is None else bias.to(device=device, dtype=dtype))

    def norm(name: str) -> torch.Tensor:
        return _widened(get(name)).to(device=device, dtype=torch.float32 if device == "cpu" else dtype).contiguous()

    layers = []
    for i in range(shape.layers):
        p = f"layers.{i}."
        qkv_w = [get(p + "self_attn.q_proj.weight"), get(p + "self_attn.k_proj.weight"),
                 get(p + "self_attn.v_proj.weight")]
        qkv_b = None
        if shape.qkv_bias:
            qkv_b = torch.cat([_widened(get(p + "self_attn.q_proj.bias")), _widened(get(p + "self_attn.k_proj.bias")),
                               _widened(get(p + "self_attn.v_proj.bias"))])
        gate_up = [get(p + "mlp.gate_proj.weight"), get(p + "mlp.up_proj.weight")]
        layers.append(LayerWeights(
            ln1=norm(p + "input_layernorm.weight"), qkv=linear(qkv_w, qkv_b),
            o=linear([get(p + "self_attn.o_proj.weight")]), ln2=norm(p + "post_attention_layernorm.weight"),
            gate_up=linear(gate_up), down=linear([get(p + "mlp.down_proj.weight")]),
        ))
    embed = get("embed_tokens.weight")
    head_w = state.get("lm_head.weight", embed) if not shape.tied else embed
    rows = min(vocab_rows or head_w.shape[0], head_w.shape[0])
    if keep_blocks and packable([head_w]):
        # the output layer's blocks packed (it only ever sees a few rows); the
        # embeddings stay the file's blocks, de-quantized per looked-up token
        head: Linear = QuantLinear([head_w.first_rows(rows)])
        embed_kept: torch.Tensor | QuantTensor | None = embed.owned() if isinstance(embed, QuantTensor) else embed.float()
        return LlamaWeights(shape, embed_kept, layers, norm("norm.weight"), head, quant, device, dtype)
    tied_here = head_w is embed
    embed = _widened(embed)
    head_w = embed if tied_here else _widened(head_w)
    if quant == "int8":
        head: Linear = Int8Linear(head_w[:rows], keep_rows=True)
        embed_kept = None if (shape.tied or head_w is embed) and rows == embed.shape[0] else embed.float()
    elif quant == "packed":
        # fp16 weights, fp32 logits (it only ever sees a few rows); packed weights
        # cannot be read by rows: the embeddings stay fp32
        head = fp16_or_dense(head_w[:rows])
        embed_kept = embed.float()
    else:
        head = DenseLinear(head_w[:rows].to(device=device, dtype=dtype))
        if head_w is embed and rows == embed.shape[0]:
            embed_kept = head.weight  # tied: one copy
        else:
            embed_kept = embed.to(device=device, dtype=dtype)
    return LlamaWeights(shape, embed_kept, layers, norm("norm.weight"), head, quant, device, dtype)


def load_weights(folder: Path, quant: str = "int8", device: str = "cpu", vocab_rows: int | None = None,
                 gguf: Path | None = None) -> LlamaWeights:
    """The lean weights of the model in ``folder`` (its ``config.json`` and safetensors).

    ``gguf``: the GGUF file ``folder`` was converted from. With ``quant="packed"`` on a
    CPU that has the native kernels (``native.available()``), the weights are read
    from it instead, its block-quantized tensors kept packed (a Q4_K_M file's Q4_K,
    Q5_0, Q6_K and Q8_0 tensors as it has them); elsewhere it is not read."""
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    shape = LlamaShape.from_config(config)
    state: dict[str, Any] | None = None
    if gguf is not None and quant == "packed" and device == "cpu" and native.available():
        from gdg_lsp.backends.gguf_convert import UnsupportedGguf, read_blocks

        try:
            state = read_blocks(gguf, shape.heads, shape.kv_heads)
        except UnsupportedGguf:
            state = None
    weights = build_weights(shape, state if state is not None else _tensors(folder), quant, device, vocab_rows=vocab_rows)
    if state is not None:
        native.release_freed_memory()  # the packing's temporaries
    return weights


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if native.fits(x, weight) and x.is_contiguous():  # a step runs 2 per layer: 13 µs each in torch, 0.4 here
        return native.rms_norm(x, weight, eps)
    if x.dtype == weight.dtype == torch.float32:  # one fused kernel
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)
    xf = x.float()  # bf16 on a GPU: normalised in fp32, scaled in bf16, as transformers does
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(weight.dtype) * weight


def rope_tables(shape: LlamaShape, positions: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """cos and signed sin for each position, [positions, head_dim], in the rotate-half layout
    of HF checkpoints. The sine's first half is negated: rotating half of x is then a roll
    (``apply_rope``)."""
    half = shape.head_dim // 2
    inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, half, dtype=torch.float64) * 2 / shape.head_dim))
    angles = torch.arange(positions, dtype=torch.float64)[:, None] * inv_freq[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    sin = angles.sin()
    sin[:, :half] = -sin[:, :half]
    return angles.cos().float().to(device), sin.float().to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [..., n, head_dim]; cos and signed sin (``rope_tables``): [n, head_dim].
    x·cos + (-x₂, x₁)·sin, where (x₂, x₁) is x rolled by half a head."""
    xf = x.float()
    return torch.addcmul(xf * cos, xf.roll(x.shape[-1] // 2, -1), sin).to(x.dtype)


def causal_mask(start: int, n: int, group: int, device: Any) -> torch.Tensor | None:
    """Attention mask of ``n`` new tokens after ``start`` cached ones, for the G*n query
    rows of grouped-query attention: causal over the new tokens, everything before
    them visible; None for a single token (it sees the whole cache)."""
    if n == 1:
        return None
    rows = torch.arange(n, device=device)[:, None] + start
    return (torch.arange(start + n, device=device)[None, :] <= rows).repeat(group, 1)


def feed_forward(h: torch.Tensor, layer: "LayerWeights", eps: float,
                 linear: Callable[[Linear, torch.Tensor], torch.Tensor] = lambda lin, x: lin(x)) -> torch.Tensor:
    """The residual stream after a layer's MLP half (SwiGLU). ``linear`` applies a
    projection (the batched step runs int8 ones row by row)."""
    x = rms_norm(h, layer.ln2, eps)
    gate_up = linear(layer.gate_up, x)
    if native.fits(gate_up) and gate_up.is_contiguous():
        return h + linear(layer.down, native.silu_mul(gate_up))
    gate, up = gate_up.chunk(2, dim=-1)
    return h + linear(layer.down, torch.nn.functional.silu(gate) * up)


def attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor | None,
           scale: float) -> torch.Tensor:
    """Grouped-query attention of ``n`` new tokens: q [heads, n, D] against the cached
    keys and values [kv_heads, length, D] (``causal_mask``); [n, heads * D]."""
    heads, n, dim = q.shape
    kv_heads = keys.shape[0]
    if n == 1 and native.fits(q, keys, values) and keys.stride(1) == dim and keys.stride() == values.stride():
        # a CPU step: each query head reads its key head in place, 2-3x faster than torch's kernel
        return native.attend_one(q, keys, values, scale)
    if n == 1:  # a step: one fused kernel, each query head reading its key head in place
        attn = torch.nn.functional.scaled_dot_product_attention(
            q[None], keys[None], values[None], scale=scale, enable_gqa=True)
    else:  # the G query heads that share a key head, batched as G*n query rows
        attn = torch.nn.functional.scaled_dot_product_attention(
            q.reshape(kv_heads, heads // kv_heads * n, dim), keys, values, attn_mask=mask, scale=scale)
    return attn.reshape(heads, n, dim).transpose(0, 1).reshape(n, heads * dim)


class KVCache:
    """Keys and values per layer, [kv_heads, capacity, head_dim], grown by doubling."""

    def __init__(self, shape: LlamaShape, device: str, dtype: torch.dtype, capacity: int = 1024) -> None:
        self.shape = shape
        self.device = device
        self.dtype = dtype
        self.capacity = 0
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self.length = 0
        self.ensure(capacity)

    def ensure(self, needed: int) -> None:
        if needed <= self.capacity:
            return
        if needed > self.shape.max_positions:
            raise ValueError(f"sequence of {needed} tokens is longer than the model's {self.shape.max_positions}")
        capacity = max(needed, min(self.shape.max_positions, max(64, self.capacity * 2)))
        s = self.shape
        # zeros, not empty: the static step (cuda_graphs) attends over the whole
        # capacity under a mask, and 0 * NaN from uninitialised memory is NaN
        k = [torch.zeros(s.kv_heads, capacity, s.head_dim, device=self.device, dtype=self.dtype) for _ in range(s.layers)]
        v = [torch.zeros(s.kv_heads, capacity, s.head_dim, device=self.device, dtype=self.dtype) for _ in range(s.layers)]
        for old, new in zip(self.k + self.v, k + v):
            new[:, : self.length].copy_(old[:, : self.length])
        self.k, self.v, self.capacity = k, v, capacity


class LeanLlama:
    """The forward pass over ``LlamaWeights`` for one sequence (batch 1)."""

    def __init__(self, weights: LlamaWeights, capacity: int = 1024) -> None:
        self.w = weights
        self.shape = weights.shape
        cache_dtype = torch.float32 if weights.device == "cpu" else weights.dtype
        self.cache = KVCache(self.shape, weights.device, cache_dtype, min(capacity, self.shape.max_positions))
        self._cos, self._sin = rope_tables(self.shape, self.shape.max_positions, weights.device)
        self._scale = 1.0 / math.sqrt(self.shape.head_dim)

    def forward(self, ids: Sequence[int], allowed: torch.Tensor | None = None,
                every_position: bool = False, logits: bool = True) -> torch.Tensor | None:
        """Append ``ids`` to the cached sequence; logits for the token after them.

        With ``allowed`` (token ids), only those logits are computed: the result
        has -inf elsewhere. With ``every_position``, logits after each of the
        ``ids`` ([len(ids), vocab]; ``allowed`` is ignored): one forward checks
        a whole draft (``FastLlamaBackend.extend``). With ``logits=False`` only
        the cache is filled and None is returned (a prefill chunk that is not
        the prompt's last: nobody reads its logits)."""
        s, w, cache = self.shape, self.w, self.cache
        n = len(ids)
        start = cache.length
        cache.ensure(start + n)
        tokens = torch.tensor(list(ids), dtype=torch.long, device=w.device)
        h = w.embed_rows(tokens).to(w.dtype)
        cos, sin = self._cos[start : start + n], self._sin[start : start + n]
        mask = causal_mask(start, n, s.group, w.device)
        H, KV, D = s.heads, s.kv_heads, s.head_dim
        native_cache = native.fits(cache.k[0]) and D % 2 == 0
        for index, layer in enumerate(w.layers):
            x = rms_norm(h, layer.ln1, s.rms_eps)
            qkv = layer.qkv(x).contiguous()
            keys, values = cache.k[index], cache.v[index]
            if native_cache:  # one call: queries rotated, keys rotated and values written into the cache
                q = native.rope_into_cache(qkv, cos, sin, H, KV, keys, values, start)
            else:
                # queries and keys rotated together: [H + KV, n, D]
                qk = apply_rope(qkv[:, : (H + KV) * D].view(n, H + KV, D).transpose(0, 1), cos, sin)
                q, k = qk[:H], qk[H:]
                v = qkv[:, (H + KV) * D :].view(n, KV, D).transpose(0, 1)
                keys[:, start : start + n].copy_(k)
                values[:, start : start + n].copy_(v)
            out = attend(q, keys[:, : start + n], values[:, : start + n], mask, self._scale)
            h = feed_forward(h + layer.o(out), layer, s.rms_eps)
        cache.length = start + n
        if not logits:
            return None
        if every_position:
            return w.head(rms_norm(h, w.norm, s.rms_eps)).float()
        last = rms_norm(h[-1:], w.norm, s.rms_eps)
        if allowed is None:
            return w.head(last)[0].float()
        out = torch.full((w.head.out_features,), -math.inf, device=w.device)
        out[allowed] = w.head.rows(last, allowed)[0].float()
        return out


class FastLlamaBackend:
    """ModelBackend over ``LeanLlama`` with the prefix reuse of ``TorchBackend``."""

    def __init__(self, weights: LlamaWeights, vocab: Vocabulary, name: str, device: str = "cpu") -> None:
        self.weights = weights
        self.model = LeanLlama(weights)
        self.vocab = vocab
        self.name = name
        self.device = device
        self.stats = BackendStats()
        self._ids: list[int] = []
        self._vocab_size = vocab.size

    @property
    def quant(self) -> str:
        return self.weights.quant

    def reset(self) -> None:
        self._ids = []
        self.model.cache.length = 0

    def _forward(self, ids: Sequence[int], allowed: torch.Tensor | None = None, cancel=None) -> torch.Tensor:
        began = time.perf_counter()
        size = prefill_chunk(self.weights.shape)
        with torch.inference_mode():
            logits = None
            for at in range(0, len(ids), size):
                if at and cancel is not None and cancel.is_set():
                    self.stats.model_seconds += time.perf_counter() - began
                    self._ids.extend(ids[:at])  # what the cache holds: the next request reuses it
                    raise PrefillCancelled(f"cancelled after {at} of {len(ids)} prompt tokens")
                chunk = ids[at : at + size]
                last = at + size >= len(ids)
                logits = self.model.forward(chunk, allowed if last else None, logits=last)
        self.stats.model_seconds += time.perf_counter() - began
        self._ids.extend(ids)
        assert logits is not None
        logits = logits[: self._vocab_size]
        return logits if logits.device.type == "cpu" else logits.cpu()

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        return self.prefill_until(ids, None)

    def prefill_until(self, ids: Sequence[int], cancel) -> torch.Tensor:
        """``prefill``, stopping between chunks (``prefill_chunk``) once ``cancel`` is set."""
        if not ids:
            raise ValueError("empty prompt")
        keep = min(common_prefix(self._ids, ids), len(ids) - 1)
        self._ids = self._ids[:keep]
        self.model.cache.length = keep  # the rows after it are overwritten
        self.stats.reused_tokens += keep
        self.stats.prefill_tokens += len(ids) - keep
        return self._forward(list(ids[keep:]), cancel=cancel)

    def step(self, token_id: int, allowed: torch.Tensor | None = None) -> torch.Tensor:
        self.stats.steps += 1
        return self._forward([token_id], allowed)

    @property
    def extends_exactly(self) -> bool:
        """True when ``extend``'s rows are what steps give (to float rounding). Not
        with int8 weights: activations are quantized with one scale per forward, so
        a row depends on the other rows of its forward."""
        return self.weights.rows_independent

    def extend(self, ids: Sequence[int]) -> torch.Tensor:
        """Append ``ids`` in one forward; row i holds the logits after ``ids[: i + 1]``.

        A forward over a few tokens costs about one step on a CPU (the weights
        are read once for all of them), which is what makes checking a draft
        (``engine.Decoder``) cheaper than stepping through it."""
        self.stats.steps += 1
        began = time.perf_counter()
        with torch.inference_mode():
            # the eager forward, also under StaticLlama (its graph is for one token)
            logits = LeanLlama.forward(self.model, list(ids), every_position=True)
        self.stats.model_seconds += time.perf_counter() - began
        self._ids.extend(ids)
        logits = logits[:, : self._vocab_size]
        return logits if logits.device.type == "cpu" else logits.cpu()

    def truncate(self, length: int) -> None:
        """Forget every token after the first ``length`` (the refused part of a draft)."""
        if length < len(self._ids):
            self._ids = self._ids[:length]
            self.model.cache.length = length
