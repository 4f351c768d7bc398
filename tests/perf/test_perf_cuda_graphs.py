"""The static-shape step of ``decoding/cuda_graphs.py``.

On the CPU it runs eagerly and must compute what transformers computes (the
same arithmetic is what a CUDA graph replays); with a GPU (marker ``gpu``) the
replayed graph must give the eager step's logits, captured once.
"""

from __future__ import annotations

import pytest
import torch

from gdg_lsp.backends.transformers_backend import TorchBackend
from gdg_lsp.backends.lean.cuda_graphs import GraphLlamaBackend
from gdg_lsp.backends.lean.llama import LlamaShape, build_weights


def _models(vocab, kind="llama", device="cpu", capacity=64, use_graph=None, seed=0):
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        kind, vocab_size=vocab.size, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    weights = build_weights(LlamaShape.from_config(config.to_dict()), state, quant="none", device=device,
                            dtype=torch.float32, vocab_rows=vocab.size)
    return TorchBackend(model, vocab, "reference"), GraphLlamaBackend(weights, vocab, "static", device, capacity, use_graph)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_static_step_matches_transformers_on_cpu(tiny_vocab, kind):
    reference, static = _models(tiny_vocab, kind, capacity=32)
    assert static.model.use_graph is False  # no CUDA here: the same step, eagerly
    prompt = tiny_vocab.encode("def f(x):\n    return x\n").ids
    torch.testing.assert_close(static.prefill(prompt), reference.prefill(prompt), atol=1e-4, rtol=1e-4)
    # enough steps to outgrow the 32-token cache: it grows and the step still agrees
    for token in tiny_vocab.encode("print(abc, len(xy), x) if not x else None\n").ids:
        torch.testing.assert_close(static.step(token), reference.step(token), atol=1e-4, rtol=1e-4)
    assert static.model.cache.capacity > 32
    shorter = prompt[:5] + tiny_vocab.encode("lambda").ids
    torch.testing.assert_close(static.prefill(shorter), reference.prefill(shorter), atol=1e-4, rtol=1e-4)


def test_allowed_ids_mask_the_static_step(tiny_vocab):
    _, static = _models(tiny_vocab)
    static.prefill(tiny_vocab.encode("x = ").ids)
    allowed = torch.tensor([1, 2, 3])
    logits = static.step(5, allowed=allowed)
    assert torch.isfinite(logits[allowed]).all() and torch.isneginf(logits).sum() == tiny_vocab.size - 3


@pytest.mark.gpu
def test_graph_replay_matches_the_eager_step_on_cuda(tiny_vocab):
    _, graph = _models(tiny_vocab, device="cuda", capacity=64, use_graph=True)
    _, eager = _models(tiny_vocab, device="cuda", capacity=64, use_graph=False)
    prompt = tiny_vocab.encode("def f(x):\n    return x\n").ids
    torch.testing.assert_close(graph.prefill(prompt), eager.prefill(prompt), atol=1e-4, rtol=1e-4)
    tokens = tiny_vocab.encode("print(abc, len(xy))\n").ids
    for token in tokens:
        torch.testing.assert_close(graph.step(token), eager.step(token), atol=1e-4, rtol=1e-4)
    assert graph.model.captures == 1 and graph.model.replays == len(tokens)
    # a new prompt reuses the graph: the position lives in a device buffer
    again = prompt[:4] + tokens[:3]
    torch.testing.assert_close(graph.prefill(again), eager.prefill(again), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(graph.step(tokens[0]), eager.step(tokens[0]), atol=1e-4, rtol=1e-4)
    assert graph.model.captures == 1


def test_the_static_step_drafts_on_cpu_and_its_draft_rows_are_its_steps(tiny_vocab):
    from tests.perf.test_perf_lean import assert_drafts_are_steps

    _, static = _models(tiny_vocab, use_graph=False)
    assert_drafts_are_steps(static, tiny_vocab)  # the static step after a truncation: its position moved back


@pytest.mark.gpu
def test_graph_backends_do_not_draft(tiny_vocab):
    from gdg_lsp.decoding.engine import Decoder

    _, graph = _models(tiny_vocab, device="cuda", capacity=64, use_graph=True)
    assert not graph.extends_exactly and Decoder(graph).draft_tokens == 0
