"""The fast GGUF converter's pieces: tensor names and the query/key row layout."""

from __future__ import annotations

import pytest
import torch

from gdg_lsp.backends import gguf_convert


def llama_cpp_permute(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """What llama.cpp's converter does to q_proj/k_proj rows (the GGUF layout)."""
    return weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


@pytest.mark.parametrize("heads,head_dim,columns", [(9, 64, 576), (3, 64, 576), (4, 8, 5), (2, 4, 1)])
def test_unpermuting_restores_hugging_face_rows(heads, head_dim, columns):
    weight = torch.randn(heads * head_dim, columns) if columns > 1 else torch.randn(heads * head_dim)
    gguf_layout = llama_cpp_permute(weight, heads)
    assert not torch.equal(gguf_layout, weight)  # the layouts differ: the test can fail
    assert torch.equal(gguf_convert.unpermute_rows(gguf_layout, heads), weight)


def test_tensor_names():
    assert gguf_convert.hf_name("token_embd.weight") == "model.embed_tokens.weight"
    assert gguf_convert.hf_name("output_norm.weight") == "model.norm.weight"
    assert gguf_convert.hf_name("output.weight") == "lm_head.weight"
    assert gguf_convert.hf_name("blk.12.attn_q.weight") == "model.layers.12.self_attn.q_proj.weight"
    assert gguf_convert.hf_name("blk.0.ffn_down.weight") == "model.layers.0.mlp.down_proj.weight"
    assert gguf_convert.hf_name("blk.3.attn_v.bias") == "model.layers.3.self_attn.v_proj.bias"
    for unknown in ("blk.0.attn_qkv.weight", "rope_freqs.weight", "blk.x.attn_q.weight"):
        with pytest.raises(gguf_convert.UnsupportedGguf):
            gguf_convert.hf_name(unknown)


def test_a_file_the_fast_path_refuses_goes_through_transformers(tmp_path, monkeypatch):
    from gdg_lsp.backends import models

    def refuse(path, staging, progress):
        (staging / "half-written").write_text("x")  # must not survive into the result
        raise gguf_convert.UnsupportedGguf("architecture 'qwen3'")

    def slow(spec, staging, progress):
        (staging / "config.json").write_text("{}")

    monkeypatch.setattr(gguf_convert, "convert", refuse)
    monkeypatch.setattr(models, "_convert_gguf_with_transformers", slow)
    spec = models.ModelSpec("m", "gguf", tmp_path / "m.gguf")
    target = tmp_path / "cache" / "m"
    models._convert_gguf(spec, target, lambda message, percent: None)
    assert sorted(p.name for p in target.iterdir()) == ["config.json", "gdg-source.txt"]
    assert "converted by transformers" in (target / "gdg-source.txt").read_text()
    assert [p.name for p in target.parent.iterdir()] == ["m"]  # no staging folder left behind
