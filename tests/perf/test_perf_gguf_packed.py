"""GGUF block-quantized weights kept packed (``backends/lean/quant.py``, ``qkernels.cpp``).

Each block type the kernels take (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K) is
tested on random blocks against gguf's own numpy de-quantizers: the packed tiles read
back exactly the weights gguf gives, and a product differs from the exact fp32 product
of those weights by no more than the activations' rounding allows (half a step of each
32-input block's int8 scale, summed over the row's weights), on every kernel this CPU
runs (AVX512-VNNI and AVX2 here). A Qwen-shaped model built from such tensors (a Q4_K_M
file's mix: Q5_0 and Q4_K projections, Q8_0 and Q6_K ones, a Q8_0 output layer, Q5_0
embeddings) decodes the greedy tokens of its de-quantized fp32 twin. The step's other
native kernels (RMSNorm, one token's attention) are checked against torch's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

from gdg_lsp.backends.lean import native
from gdg_lsp.backends.lean.llama import FastLlamaBackend, LlamaShape, build_weights
from gdg_lsp.backends.lean.quant import PACKED_TYPES, PackedMatrix, QuantLinear, QuantTensor
from tests.perf.agreement import greedy_agreement

pytestmark = pytest.mark.skipif(not native.available(), reason=f"no native kernels here: {native.kernels()}")

TYPES = [GGMLQuantizationType[name] for name in PACKED_TYPES.values()]
SCALE_OFFSETS = {  # where each block keeps its fp16 scale (and minimum), in bytes
    "Q4_0": (0,), "Q5_0": (0,), "Q8_0": (0,), "Q4_1": (0, 2), "Q5_1": (0, 2), "Q4_K": (0, 2), "Q5_K": (0, 2),
    "Q6_K": (208,),
}
KERNELS = ["avx512-vnni", "avx2"] if native.kernels() == "avx512-vnni" else ["avx2"]


def random_blocks(qtype: GGMLQuantizationType, rows: int, cols: int, seed: int = 0, scale: float = 0.02) -> QuantTensor:
    """Random codes and sub-block scales (any bytes are valid blocks) with small positive fp16
    scales: weights of the size a model has."""
    rng = np.random.default_rng(seed)
    per_block, block_bytes = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, (rows, cols // per_block, block_bytes), dtype=np.uint8)
    for offset in SCALE_OFFSETS[qtype.name]:
        halves = (rng.random((rows, cols // per_block)) * scale + scale / 20).astype(np.float16)
        blocks[:, :, offset : offset + 2] = halves.view(np.uint8).reshape(rows, cols // per_block, 2)
    return QuantTensor(int(qtype), rows, cols, blocks.reshape(rows, -1))


@pytest.fixture(params=KERNELS)
def kernels(request):
    best = native.kernels()
    assert native.limit_kernels(request.param) == request.param
    yield request.param
    native.limit_kernels(best)


def rounding_bound(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """How far an int8-activation product may be from the exact one: each input is rounded
    by at most half its 32-block's step (max |x| / 127), times |weight|, summed."""
    step = x.abs().reshape(x.shape[0], -1, 32).amax(-1) / 127
    return (weight.abs().reshape(weight.shape[0], -1, 32).sum(-1)[None] * step[:, None, :] / 2).sum(-1)


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_packed_tiles_hold_exactly_ggufs_weights(qtype):
    tensor = random_blocks(qtype, rows=40, cols=512)  # 40: the last tile is part padding
    exact = torch.from_numpy(quants.dequantize(tensor.raw, qtype))
    assert torch.equal(tensor.dequantize(), exact)
    matrix = PackedMatrix(tensor)
    assert torch.equal(matrix.unpack(), exact)
    assert torch.equal(matrix.unpack(17, 5), exact[17:22])


@pytest.mark.parametrize("qtype", TYPES, ids=lambda t: t.name)
def test_packed_product_is_exact_up_to_the_activations_rounding(qtype, kernels):
    tensor = random_blocks(qtype, rows=48, cols=512, seed=1)
    weight = tensor.dequantize()
    linear = QuantLinear([tensor], bias=torch.randn(48))
    torch.manual_seed(2)
    x = torch.randn(5, 512) * torch.linspace(0.1, 3, 512)  # blocks of different ranges
    exact = x @ weight.T + linear.bias
    got = linear(x)
    error = (got - exact).abs()
    assert bool((error <= rounding_bound(x, weight) + 1e-4).all()), float((error / rounding_bound(x, weight)).max())
    assert float(error.max()) > 0  # the activations are rounded: the test sees the kernel, not a copy
    # a row's result is the same alone (each row has its own scales): drafts are steps
    torch.testing.assert_close(linear(x[3:4]), got[3:4], atol=1e-6, rtol=0)
    # a prefill-sized call (several passes of rows) agrees with row-by-row calls
    many = torch.randn(70, 512)
    torch.testing.assert_close(linear(many)[65:67], linear(many[65:67]), atol=1e-6, rtol=0)
    # the rows a grammar allows, computed alone
    ids = torch.tensor([47, 0, 16, 15, 33])
    torch.testing.assert_close(linear.rows(x, ids), got[:, ids], atol=1e-6, rtol=0)


def test_stacked_tensors_of_different_types_are_one_projection(kernels):
    q, k = random_blocks(GGMLQuantizationType.Q5_0, 64, 256, 3), random_blocks(GGMLQuantizationType.Q5_0, 32, 256, 4)
    v = random_blocks(GGMLQuantizationType.Q8_0, 24, 256, 5)  # 24 rows: a tile spills past it
    bias = torch.randn(120)
    linear = QuantLinear([q, k, v], bias)
    assert linear.kind == "gguf:Q5_0+Q8_0" and linear.out_features == 120
    x = torch.randn(2, 256)
    weight = torch.cat([q.dequantize(), k.dequantize(), v.dequantize()])
    error = (linear(x) - x @ weight.T - bias).abs()
    assert bool((error <= rounding_bound(x, weight) + 1e-4).all())


def test_packed_weights_read_the_files_bytes_not_widened_ones():
    tensor = random_blocks(GGMLQuantizationType.Q4_K, 64, 1024)
    matrix = PackedMatrix(tensor)
    assert matrix.nbytes <= tensor.nbytes * 1.15  # Q4_K: 4.5 bits a weight, fp16 would be 16
    assert matrix.nbytes < 64 * 1024 * 2 / 3


def _qwen_blocks(vocab_size: int) -> tuple[LlamaShape, dict]:
    """A two-layer Qwen2 of a Q4_K_M file's mix of block types (widths that K-quants allow)."""
    config = {"model_type": "qwen2", "vocab_size": vocab_size, "hidden_size": 256, "intermediate_size": 512,
              "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
              "tie_word_embeddings": False}
    shape = LlamaShape.from_config(config)
    T = GGMLQuantizationType
    state: dict = {"model.embed_tokens.weight": random_blocks(T.Q5_0, vocab_size, 256, 10, scale=0.2),
                   "lm_head.weight": random_blocks(T.Q8_0, vocab_size, 256, 11, scale=0.02),
                   "model.norm.weight": torch.ones(256)}
    generator = torch.Generator().manual_seed(0)
    for layer in range(2):
        p = f"model.layers.{layer}."
        seed = 100 * (layer + 1)
        state.update({
            p + "self_attn.q_proj.weight": random_blocks(T.Q4_K, 256, 256, seed + 1, 0.002),
            p + "self_attn.k_proj.weight": random_blocks(T.Q5_0, 128, 256, seed + 2, 0.01),
            p + "self_attn.v_proj.weight": random_blocks(T.Q8_0 if layer else T.Q6_K, 128, 256, seed + 3, 0.005),
            p + "self_attn.o_proj.weight": random_blocks(T.Q5_K, 256, 256, seed + 4, 0.005),
            p + "mlp.gate_proj.weight": random_blocks(T.Q4_K, 512, 256, seed + 5, 0.01),
            p + "mlp.up_proj.weight": random_blocks(T.Q4_1, 512, 256, seed + 6, 0.01),
            p + "mlp.down_proj.weight": random_blocks(T.Q6_K if layer else T.Q4_0, 256, 512, seed + 7, 0.0005),
            p + "input_layernorm.weight": torch.ones(256), p + "post_attention_layernorm.weight": torch.ones(256),
        })
        for part, rows in (("q", 256), ("k", 128), ("v", 128)):
            state[p + f"self_attn.{part}_proj.bias"] = torch.randn(rows, generator=generator) * 0.1
    return shape, state


def test_a_packed_qwen_model_decodes_its_dequantized_twins_tokens(tiny_vocab):
    shape, blocks = _qwen_blocks(tiny_vocab.size)
    widened = {k: v.dequantize() if isinstance(v, QuantTensor) else v for k, v in blocks.items()}
    exact = FastLlamaBackend(build_weights(shape, widened, quant="none", vocab_rows=tiny_vocab.size), tiny_vocab, "fp32")
    packed = FastLlamaBackend(build_weights(shape, dict(blocks), quant="packed", vocab_rows=tiny_vocab.size),
                              tiny_vocab, "packed")
    kinds = {layer.qkv.kind for layer in packed.weights.layers} | {packed.weights.layers[0].gate_up.kind}
    assert kinds == {"gguf:Q4_K+Q5_0+Q6_K", "gguf:Q4_K+Q5_0+Q8_0", "gguf:Q4_K+Q4_1"}
    assert packed.weights.head.kind == "gguf:Q8_0" and isinstance(packed.weights.embed, QuantTensor)
    assert packed.weights.nbytes < exact.weights.nbytes / 3
    prompt = tiny_vocab.encode("def f(x):\n    return x + len(xy)\n" * 4).ids
    a, b = exact.prefill(prompt), packed.prefill(prompt)
    similar, agree = [], 0
    for _ in range(24):  # both fed the fp32 decoder's greedy tokens
        token = int(torch.argmax(a))
        agree += token == int(torch.argmax(b))
        similar.append(float(torch.nn.functional.cosine_similarity(a, b, dim=0)))
        a, b = exact.step(token), packed.step(token)
    # only the activations are rounded (a wrong layout, scale or stacking gives unrelated
    # logits); query and key weights are kept small: attention over random keys that is
    # nearly one-hot turns that rounding into other choices (cosine 0.95 at 5x these).
    # Logits move by up to ~4% of their range, so a near-tie may go the other way
    assert min(similar) > 0.999, similar
    assert agree >= 22
    # the grammar's allowed tokens: their logits alone, the same values
    allowed = torch.tensor([2, 5, 30, tiny_vocab.size - 1])
    packed.truncate(len(prompt))
    full = packed.step(7)
    packed.truncate(len(prompt))
    only = packed.step(7, allowed=allowed)
    torch.testing.assert_close(only[allowed], full[allowed], atol=1e-5, rtol=0)
    assert bool(torch.isinf(only).sum() == only.numel() - allowed.numel())


def test_packed_drafts_and_batches_are_single_steps(tiny_vocab):
    from tests.perf.test_perf_lean import assert_drafts_are_steps
    from tests.perf.test_perf_packed import assert_batch_rows_are_single_rows

    shape, blocks = _qwen_blocks(tiny_vocab.size)
    packed = FastLlamaBackend(build_weights(shape, blocks, quant="packed", vocab_rows=tiny_vocab.size), tiny_vocab, "p")
    assert packed.extends_exactly
    assert_drafts_are_steps(packed, tiny_vocab, atol=1e-4, rtol=1e-4)
    assert_batch_rows_are_single_rows(packed.weights, tiny_vocab, steps=3)


def test_other_formats_widen_the_blocks(tiny_vocab):
    shape, blocks = _qwen_blocks(tiny_vocab.size)
    weights = build_weights(shape, blocks, quant="none", vocab_rows=tiny_vocab.size)
    assert weights.layers[0].qkv.kind == "dense" and isinstance(weights.embed, torch.Tensor)


@pytest.mark.parametrize("heads,kv_heads,dim", [(9, 3, 64), (14, 2, 64), (12, 2, 128), (4, 4, 32)])
def test_native_attention_of_one_token_is_torchs(heads, kv_heads, dim, kernels):
    torch.manual_seed(heads)
    capacity, length = 300, 211
    keys, values = torch.randn(kv_heads, capacity, dim), torch.randn(kv_heads, capacity, dim)
    q = torch.randn(heads, 1, dim) * 3
    scale = 1 / math.sqrt(dim)
    k, v = keys[:, :length], values[:, :length]
    expected = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None], scale=scale, enable_gqa=True)
    got = native.attend_one(q, k, v, scale)
    torch.testing.assert_close(got, expected.reshape(1, heads * dim), atol=2e-6, rtol=1e-5)


def test_native_rms_norm_is_torchs():
    x, w = torch.randn(3, 896) * 4, torch.randn(896)
    torch.testing.assert_close(native.rms_norm(x, w, 1e-6), torch.nn.functional.rms_norm(x, (896,), w, 1e-6),
                               atol=1e-5, rtol=1e-5)


def test_native_rotary_positions_and_cache_writes_are_torchs():
    from gdg_lsp.backends.lean.llama import apply_rope, rope_tables

    shape = LlamaShape.from_config({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 128, "intermediate_size": 64,
                                    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
                                    "rope_theta": 1000000.0})
    cos, sin = rope_tables(shape, 64)
    heads, kv_heads, dim, n, start = 4, 2, 32, 5, 9
    qkv = torch.randn(n, (heads + 2 * kv_heads) * dim)
    keys, values = torch.zeros(kv_heads, 40, dim), torch.zeros(kv_heads, 40, dim)
    q = native.rope_into_cache(qkv, cos[start : start + n], sin[start : start + n], heads, kv_heads, keys, values, start)
    qk = apply_rope(qkv[:, : (heads + kv_heads) * dim].view(n, heads + kv_heads, dim).transpose(0, 1),
                    cos[start : start + n], sin[start : start + n])
    torch.testing.assert_close(q, qk[:heads], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(keys[:, start : start + n], qk[heads:], atol=1e-6, rtol=1e-6)
    assert torch.equal(values[:, start : start + n], qkv[:, (heads + kv_heads) * dim :].view(n, kv_heads, dim).transpose(0, 1))
    assert not keys[:, :start].any() and not keys[:, start + n :].any()  # nothing else written


def test_native_silu_times_up_is_torchs():
    gate_up = torch.randn(3, 2 * 200) * 6  # far into both tails of the sigmoid
    gate, up = gate_up.chunk(2, dim=-1)
    torch.testing.assert_close(native.silu_mul(gate_up), torch.nn.functional.silu(gate) * up, atol=1e-5, rtol=1e-5)


@pytest.mark.slow
def test_the_default_models_file_blocks_decode_the_fp32_tokens():
    """SmolLM2's GGUF file read as blocks (Q4_1 layers, Q8_0 embeddings and output layer), as
    ``load_weights(gguf=)`` reads it: the fp32 decoder's greedy tokens on corpus code."""
    from gdg_lsp.backends import models
    from gdg_lsp.backends.lean.llama import load_weights

    spec = models.resolve("default")
    exact = models.load(spec, "cpu", engine="lean")
    weights = load_weights(models.cached_conversion(spec), "packed", vocab_rows=exact.vocab.size, gguf=spec.path)
    assert {layer.gate_up.kind for layer in weights.layers} == {"gguf:Q4_1"} and weights.head.kind == "gguf:Q8_0"
    packed = FastLlamaBackend(weights, exact.vocab, "packed")
    assert greedy_agreement(exact, packed) >= 15
