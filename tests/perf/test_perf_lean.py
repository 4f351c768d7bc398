"""The lean decoder (``decoding/fast_llama.py``) computes what transformers computes.

Fast tests compare it with ``TorchBackend`` on tiny random-weight Llama and
Qwen2 models (grouped-query attention, q/k/v biases, tied and untied output
layers), through prefill, steps, prefix reuse and KV-cache growth; the slow
one on the default model itself.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.transformers_backend import TorchBackend
from gdg_lsp.backends.lean.llama import (
    FastLlamaBackend,
    LlamaShape,
    UnsupportedModel,
    build_weights,
)
from gdg_lsp.decoding.engine import Decoder


def _pair(vocab, kind: str = "llama", tied: bool = True, quant: str = "none", seed: int = 0, capacity: int = 1024):
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        kind, vocab_size=vocab.size, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=tied,
        rope_theta=10000.0,
    )
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if kind == "qwen2":  # random init leaves the biases at zero: give them values
        with torch.no_grad():
            for layer in model.model.layers:
                for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                    proj.bias.normal_(0, 0.5)
    reference = TorchBackend(model, vocab, "reference")
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    shape = LlamaShape.from_config(config.to_dict())
    lean = FastLlamaBackend(build_weights(shape, state, quant=quant, vocab_rows=vocab.size), vocab, "lean")
    if capacity < 1024:
        from gdg_lsp.backends.lean.llama import KVCache

        lean.model.cache = KVCache(shape, "cpu", torch.float32, capacity)
    return reference, lean


@pytest.mark.parametrize("kind,tied", [("llama", True), ("llama", False), ("qwen2", True)])
def test_logits_match_transformers(tiny_vocab, kind, tied):
    reference, lean = _pair(tiny_vocab, kind, tied)
    prompt = tiny_vocab.encode("def f(x):\n    return x + len(xy)\n").ids
    torch.testing.assert_close(lean.prefill(prompt), reference.prefill(prompt), atol=1e-4, rtol=1e-4)
    for token in tiny_vocab.encode("print(abc)").ids:
        torch.testing.assert_close(lean.step(token), reference.step(token), atol=1e-4, rtol=1e-4)
    # a new request sharing a prefix: both reuse their caches from the common prefix
    other = prompt[:7] + tiny_vocab.encode("if not x:").ids
    torch.testing.assert_close(lean.prefill(other), reference.prefill(other), atol=1e-4, rtol=1e-4)
    assert lean.stats.reused_tokens == reference.stats.reused_tokens > 0


def test_extend_gives_the_logits_of_each_step_and_truncate_forgets(tiny_vocab):
    """A draft checked in one forward: row i is what a step over token i gives, and
    a refused draft's tail is forgotten so that the next step sees only the kept part."""
    _, lean = _pair(tiny_vocab)
    assert_drafts_are_steps(lean, tiny_vocab)


def assert_drafts_are_steps(backend, vocab, atol: float = 1e-4, rtol: float = 1e-4) -> None:
    """``backend`` drafts, its ``extend`` rows are its steps' logits (to ``atol``/``rtol``:
    fp32 rounding unless the weights say otherwise), and a truncation leaves the next
    step where the kept part of the draft left it."""
    assert backend.extends_exactly and Decoder(backend).draft_tokens > 0
    prompt = vocab.encode("def f(x):\n    return x").ids
    draft = vocab.encode(" + len(xy)").ids
    backend.prefill(prompt)
    stepped = torch.stack([backend.step(t) for t in draft])
    backend.prefill(prompt)
    rows = backend.extend(draft)
    assert rows.shape == stepped.shape
    torch.testing.assert_close(rows, stepped, atol=atol, rtol=rtol)
    assert torch.equal(rows.argmax(-1), stepped.argmax(-1))
    backend.truncate(len(prompt) + 2)  # keep two draft tokens, refuse the rest
    other = vocab.encode("(").ids[0]
    after = backend.step(other)
    backend.prefill(prompt + draft[:2])
    torch.testing.assert_close(after, backend.step(other), atol=atol, rtol=rtol)


def test_int8_weights_decode_without_drafts(tiny_vocab):
    """int8 activations are quantized per forward: a draft's rows would not be the
    steps' logits, so the decoder does not draft over such a backend (a build
    without int8 kernels falls back to fp32 weights, which draft)."""
    _, lean = _pair(tiny_vocab, quant="int8")
    assert lean.extends_exactly == (lean.quant == "none")
    assert (Decoder(lean).draft_tokens > 0) == (lean.quant == "none")


def test_cache_grows_past_its_capacity(tiny_vocab):
    reference, lean = _pair(tiny_vocab, capacity=8)
    prompt = tiny_vocab.encode("for x in ab:\n    print(x, abc, len(xy))\n" * 3).ids
    assert len(prompt) > 64
    torch.testing.assert_close(lean.prefill(prompt), reference.prefill(prompt), atol=1e-4, rtol=1e-4)
    assert lean.model.cache.capacity >= len(prompt)
    torch.testing.assert_close(lean.step(prompt[3]), reference.step(prompt[3]), atol=1e-4, rtol=1e-4)


def test_allowed_rows_only(tiny_vocab):
    _, lean = _pair(tiny_vocab)
    prompt = tiny_vocab.encode("x = ").ids
    lean.prefill(prompt[:-1])
    full = lean.step(prompt[-1])
    lean.prefill(prompt[:-1])
    allowed = torch.tensor([3, 5, 17, tiny_vocab.size - 1])
    partial = lean.step(prompt[-1], allowed=allowed)
    torch.testing.assert_close(partial[allowed], full[allowed], atol=1e-5, rtol=1e-5)
    others = torch.ones(tiny_vocab.size, dtype=torch.bool)
    others[allowed] = False
    assert torch.isneginf(partial[others]).all()


def test_int8_weights_stay_close(tiny_vocab):
    from gdg_lsp.backends.lean.linear import int8_available

    if not int8_available():
        pytest.skip("this PyTorch build has no quantized CPU kernels")  # the engine then falls back to fp32
    reference, lean = _pair(tiny_vocab, quant="int8")
    assert lean.quant == "int8"
    prompt = tiny_vocab.encode("def f(x):\n    return x\n").ids
    a, b = reference.prefill(prompt), lean.prefill(prompt)
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.99


def test_unsupported_checkpoints_are_refused():
    base = {"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 8,
            "num_hidden_layers": 1, "num_attention_heads": 2}
    assert LlamaShape.from_config(base).kv_heads == 2
    for change in ({"model_type": "gpt2"}, {"hidden_act": "gelu"}, {"rope_scaling": {"rope_type": "yarn"}},
                   {"mlp_bias": True}):
        with pytest.raises(UnsupportedModel):
            LlamaShape.from_config({**base, **change})


def test_engine_setting_picks_the_backend(tmp_path):
    from gdg_lsp.backends import models
    from gdg_lsp.bench.random_model import write_random_model
    from gdg_lsp.errors import ModelUnavailableError

    folder = write_random_model(tmp_path / "tiny", "tiny")
    spec = models.resolve(str(folder))
    auto = models.load(spec, "cpu", engine="auto")
    lean = models.load(spec, "cpu", engine="lean")
    plain = models.load(spec, "cpu", engine="transformers")
    assert isinstance(auto, FastLlamaBackend) and isinstance(lean, FastLlamaBackend) and isinstance(plain, TorchBackend)
    assert (auto.quant, lean.quant) == ("packed", "none")  # on a CPU auto packs the weights for the step
    ids = lean.vocab.encode("import os\nprint(os.").ids
    torch.testing.assert_close(lean.prefill(ids), plain.prefill(ids), atol=1e-4, rtol=1e-4)
    assert torch.nn.functional.cosine_similarity(auto.prefill(ids), plain.prefill(ids), dim=0) > 0.999
    # a checkpoint the lean decoder does not run: auto falls back, lean says why
    config = (folder / "config.json").read_text()
    (folder / "config.json").write_text(config.replace('"hidden_act": "silu"', '"hidden_act": "gelu"'))
    assert isinstance(models.load(spec, "cpu", engine="auto"), TorchBackend)
    with pytest.raises(ModelUnavailableError, match="lean"):
        models.load(spec, "cpu", engine="lean")
    with pytest.raises(ValueError):
        models.load(spec, "cpu", engine="fast")


def _brute_candidates(vocab, pending: bytes) -> list[int]:
    out = []
    for i, piece in enumerate(vocab.token_bytes):
        if not piece or i in vocab.special_ids or i in vocab.stop_ids:
            continue
        if (len(piece) < len(pending) and pending.startswith(piece)) or piece.startswith(pending):
            out.append(i)
    return sorted(out)


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1, max_size=6) | st.sampled_from([b" ", b"    ", b"\n    ", b"se", b"\xff", b"a\xff"]))
def test_healing_candidates_are_exactly_the_consistent_tokens(tiny_vocab, pending):
    assert sorted(tiny_vocab.healing_candidates(pending).tolist()) == _brute_candidates(tiny_vocab, pending)


@pytest.mark.parametrize("pending", [b" ", b"    ", b"self.", b"\n", b"\xe2\x80", b"zz", b"\xff"])
def test_healing_candidates_on_the_real_vocabulary(smol_vocab, pending):
    assert sorted(smol_vocab.healing_candidates(pending).tolist()) == _brute_candidates(smol_vocab, pending)


@pytest.mark.slow
def test_lean_matches_transformers_on_the_default_model():
    from gdg_lsp.backends import models

    spec = models.resolve("default")
    lean = models.load(spec, "cpu", engine="lean")
    plain = models.load(spec, "cpu", engine="transformers")
    assert isinstance(lean, FastLlamaBackend)
    ids = lean.vocab.encode("import os\n\n\ndef main(argv):\n    for arg in argv:\n        print(").ids
    a, b = lean.prefill(ids), plain.prefill(ids)
    torch.testing.assert_close(a, b, atol=2e-3, rtol=1e-3)
    for _ in range(12):  # greedy continuations agree token for token
        token = int(torch.argmax(a))
        assert token == int(torch.argmax(b))
        a, b = lean.step(token), plain.step(token)
