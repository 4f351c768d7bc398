"""Packed weights for the CPU step (``backends/lean/linear.py``, ``quant="packed"``,
``gdg.engine`` auto/lean-packed).

4-bit groups are used only where they lose nothing: weights that already are 4-bit
groups (a GGUF file's Q4_0/Q4_1 tensors) come back from their codes unchanged, and
any other weights are refused. The packed decoder is checked against the fp32 one
on tiny random models whose layers were made 4-bit groups, as the default model's
are (logits to bf16 rounding, greedy tokens, drafts, batches); the slow test runs
the default model itself.
"""

from __future__ import annotations

import pytest
import torch

from gdg_lsp.backends.lean.linear import (
    INT4_GROUP,
    STEP_ROWS,
    Int4Linear,
    SplitLinear,
    lossless_int4,
    quantize_groups,
)
from gdg_lsp.backends.lean.llama import FastLlamaBackend, LeanLlama, LlamaShape, build_weights
from gdg_lsp.decoding.engine import Decoder
from tests.perf.agreement import greedy_agreement

def as_4bit_groups(weight: torch.Tensor) -> torch.Tensor:
    """What a Q4_1 tensor of a GGUF file de-quantizes to: 4-bit codes, a scale and a
    minimum per 32 inputs."""
    codes, scale, low = quantize_groups(weight)
    rows, cols = weight.shape
    return (codes.reshape(rows, -1, INT4_GROUP).float() * scale[..., None] + low[..., None]).reshape(rows, cols)


def test_4bit_groups_come_back_unchanged_and_other_weights_are_refused():
    torch.manual_seed(0)
    weight = as_4bit_groups(torch.randn(64, 96))
    codes, scale, low = lossless_int4(weight)
    back = codes.reshape(64, -1, INT4_GROUP).float() * scale[..., None] + low[..., None]
    torch.testing.assert_close(back.reshape(64, 96), weight, atol=1e-6, rtol=1e-6)  # float rounding only
    assert codes.min() >= 0 and codes.max() <= 15
    assert lossless_int4(torch.randn(64, 96)) is None  # 4 bits would lose most of these
    assert lossless_int4(as_4bit_groups(torch.randn(64, 96))[:, :80]) is None  # not whole groups
    assert lossless_int4(torch.randn(60, 64)) is None  # rows the packing kernel does not take


def test_int4_product_is_the_weights_product_to_bf16_rounding():
    torch.manual_seed(1)
    weight = as_4bit_groups(torch.randn(128, 64) * 0.1)
    x = torch.randn(3, 64)
    exact = x @ weight.T
    got = Int4Linear(weight)(x)
    assert got.dtype == torch.float32 and got.shape == exact.shape
    torch.testing.assert_close(got, exact, atol=0.02 * exact.abs().max().item(), rtol=0.02)
    # a row's result does not depend on the other rows of its call
    torch.testing.assert_close(Int4Linear(weight)(x[1:2]), got[1:2], atol=1e-6, rtol=1e-6)


def test_split_linear_runs_steps_and_chunks_through_their_formats():
    class Tagged:
        kind = "tagged"
        rows_independent = True
        out_features, in_features = 4, 2

        def __init__(self, value: float) -> None:
            self.value = value

        def __call__(self, x):
            return torch.full((x.shape[0], 4), self.value)

    split = SplitLinear(Tagged(1.0), Tagged(2.0))  # type: ignore[arg-type]
    assert split(torch.zeros(1, 2))[0, 0] == 1.0
    assert split(torch.zeros(STEP_ROWS, 2))[0, 0] == 1.0  # a draft
    assert split(torch.zeros(STEP_ROWS + 1, 2))[0, 0] == 2.0  # a prefill chunk


def _state(vocab, kind: str = "llama", seed: int = 0):
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        kind, vocab_size=vocab.size, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = {}
    for name, value in model.state_dict().items():
        value = value.detach().clone()
        if name.startswith("model.layers.") and name.endswith("proj.weight"):
            value = as_4bit_groups(value * 4)  # larger weights: logits that are not all near ties
        elif name.endswith("proj.bias"):
            value.normal_(0, 0.5)
        state[name] = value
    return LlamaShape.from_config(config.to_dict()), state


def _backends(vocab, kind: str = "llama"):
    shape, state = _state(vocab, kind)
    exact = FastLlamaBackend(build_weights(shape, dict(state), quant="none", vocab_rows=vocab.size), vocab, "fp32")
    packed = FastLlamaBackend(build_weights(shape, dict(state), quant="packed", vocab_rows=vocab.size), vocab, "packed")
    return exact, packed


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_packed_decoder_gives_the_fp32_decoders_tokens(tiny_vocab, kind):
    exact, packed = _backends(tiny_vocab, kind)
    assert packed.quant == "packed"
    layer = packed.weights.layers[0]
    assert {layer.qkv.kind, layer.gate_up.kind, layer.down.kind, layer.o.kind} <= {"int4+bf16", "int4+fp16", "int4+dense"}
    prompt = tiny_vocab.encode("def f(x):\n    return x + len(xy)\n" * 3).ids
    assert len(prompt) > STEP_ROWS  # the prefill runs through the bulk format
    a, b = exact.prefill(prompt), packed.prefill(prompt)
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.999
    agree = 0
    for _ in range(16):  # the same inputs for both: the fp32 decoder's greedy tokens
        token = int(torch.argmax(a))
        agree += token == int(torch.argmax(b))
        a, b = exact.step(token), packed.step(token)
        assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.999
    assert agree >= 15


def test_packed_drafts_are_its_steps(tiny_vocab):
    from tests.perf.test_perf_lean import assert_drafts_are_steps

    _, packed = _backends(tiny_vocab)
    assert packed.extends_exactly and Decoder(packed).draft_tokens > 0
    # bf16 activations: a draft's rows and the steps' logits agree to bf16 rounding
    assert_drafts_are_steps(packed, tiny_vocab, atol=0.05, rtol=0.02)


def assert_batch_rows_are_single_rows(weights, vocab, steps: int = 4) -> None:
    """Three sequences stepped together give each one's logits alone (to fp32 rounding)."""
    from gdg_lsp.backends.lean.batching import batched_step

    prompts = [vocab.encode(p).ids for p in ["def f(x):\n    return", "for ab in xy:\n    print(", "import"]]
    single = [LeanLlama(weights) for _ in prompts]
    batched = [LeanLlama(weights) for _ in prompts]
    for a, b, ids in zip(single, batched, prompts):
        a.forward(ids)
        b.forward(ids)
    tokens = [3, 7, 11]
    for _ in range(steps):
        expected = [m.forward([t]) for m, t in zip(single, tokens)]
        got = batched_step(batched, tokens, [None] * 3)
        for e, g in zip(expected, got):
            torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)
        tokens = [int(torch.argmax(g)) for g in got]


def test_packed_batch_rows_are_single_rows(tiny_vocab):
    _, packed = _backends(tiny_vocab)
    assert_batch_rows_are_single_rows(packed.weights, tiny_vocab)


def test_packed_needs_a_cpu_and_keeps_fp32_elsewhere(tiny_vocab):
    shape, state = _state(tiny_vocab)
    weights = build_weights(shape, state, quant="packed", device="meta", vocab_rows=tiny_vocab.size)
    assert weights.quant == "none"


@pytest.mark.slow
def test_default_model_layers_are_lossless_4bit_and_decode_the_fp32_tokens():
    """The default model's layers are Q4_1 in its GGUF file: packed, every weight is kept;
    greedy tokens on corpus code are the fp32 decoder's."""
    from gdg_lsp.backends import models

    spec = models.resolve("default")
    from gdg_lsp.settings import Settings

    exact = models.load(spec, "cpu", engine="lean")
    default = Settings()  # what a user gets: the engine and threads chosen by `bench perf --only engines`
    packed = models.load(spec, "cpu", threads=default.threads, engine=default.engine)
    assert packed.quant == "packed" and torch.get_num_threads() == 1
    # the file's own Q4_1 blocks, read as they are (or packed again as int4 from a conversion)
    assert all(layer.gate_up.kind in ("gguf:Q4_1", "gguf:Q4_1+Q4_1") or layer.gate_up.kind.startswith("int4")
               for layer in packed.weights.layers), {layer.gate_up.kind for layer in packed.weights.layers}
    assert greedy_agreement(exact, packed) >= 15
