"""The fast converter against transformers' own GGUF loading, on the default model:
the same tensors bit for bit, the same model shape, the same tokenizer."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_the_default_model_converts_as_transformers_converts_it(tmp_path, corpus):
    from safetensors.torch import load_file
    from transformers import PreTrainedTokenizerFast

    from gdg_lsp.backends import gguf_convert, models

    spec = models.resolve("default")
    fast, reference = tmp_path / "fast", tmp_path / "reference"
    fast.mkdir()
    reference.mkdir()
    gguf_convert.convert(spec.path, fast)
    models._convert_gguf_with_transformers(spec, reference, lambda message, percent: None)

    mine, theirs = load_file(str(fast / "model.safetensors")), load_file(str(reference / "model.safetensors"))
    assert set(mine) == set(theirs)
    for name, tensor in theirs.items():
        assert mine[name].shape == tensor.shape and mine[name].dtype == tensor.dtype, name
        assert bool((mine[name] == tensor).all()), name

    config, expected = (json.loads((d / "config.json").read_text()) for d in (fast, reference))
    for key in ("model_type", "architectures", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps",
                "rope_parameters", "tie_word_embeddings", "bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        assert config.get(key) == expected.get(key), key

    a = PreTrainedTokenizerFast.from_pretrained(str(fast), local_files_only=True)
    b = PreTrainedTokenizerFast.from_pretrained(str(reference), local_files_only=True)
    assert a.all_special_ids == b.all_special_ids and a.eos_token == b.eos_token
    files = sorted(corpus.rglob("*.py"))[:25] + sorted(corpus.rglob("*.sql"))[:5] + sorted(corpus.rglob("*.p4"))[:5]
    assert len(files) > 20
    for path in files:
        text = path.read_text(errors="replace")[:8000]
        assert a.encode(text) == b.encode(text), path
