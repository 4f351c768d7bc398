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


def _write_gguf(path, architecture: str, tensors: dict) -> None:
    """A GGUF file of ``tensors`` (name -> (float32 array, block type)), quantized by gguf itself."""
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_block_count(1)
    for name, (values, qtype) in tensors.items():
        data = gguf.quants.quantize(values, qtype) if qtype != gguf.GGMLQuantizationType.F32 else values
        writer.add_tensor(name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@pytest.mark.parametrize("architecture", ["llama", "qwen2"])
def test_read_blocks_gives_hugging_face_names_rows_and_the_files_blocks(tmp_path, architecture):
    import gguf
    import numpy as np

    from gdg_lsp.backends.lean.quant import QuantTensor

    T = gguf.GGMLQuantizationType
    rng = np.random.default_rng(0)
    heads, kv_heads, head_dim, hidden = 4, 2, 8, 64
    q = rng.standard_normal((heads * head_dim, hidden)).astype(np.float32)
    k = rng.standard_normal((kv_heads * head_dim, hidden)).astype(np.float32)
    stored_q = llama_cpp_permute(torch.from_numpy(q), heads).numpy() if architecture == "llama" else q
    stored_k = llama_cpp_permute(torch.from_numpy(k), kv_heads).numpy() if architecture == "llama" else k
    norm = rng.standard_normal(hidden).astype(np.float32)
    path = tmp_path / "tiny.gguf"
    _write_gguf(path, architecture, {"blk.0.attn_q.weight": (stored_q, T.Q8_0), "blk.0.attn_k.weight": (stored_k, T.Q4_0),
                                     "blk.0.attn_norm.weight": (norm, T.F32)})
    state = gguf_convert.read_blocks(path, heads, kv_heads)
    assert sorted(state) == ["model.layers.0.input_layernorm.weight", "model.layers.0.self_attn.k_proj.weight",
                             "model.layers.0.self_attn.q_proj.weight"]
    q_blocks, k_blocks = state["model.layers.0.self_attn.q_proj.weight"], state["model.layers.0.self_attn.k_proj.weight"]
    assert isinstance(q_blocks, QuantTensor) and q_blocks.type_name == "Q8_0" and q_blocks.shape == q.shape
    assert k_blocks.type_name == "Q4_0" and k_blocks.shape == k.shape
    # the file's blocks, de-quantized by gguf, in Hugging Face's row order (llama.cpp's undone for Llama)
    for blocks, original, qtype in ((q_blocks, q, T.Q8_0), (k_blocks, k, T.Q4_0)):
        expected = gguf.quants.dequantize(gguf.quants.quantize(original, qtype), qtype)
        assert np.array_equal(blocks.dequantize().numpy(), expected)
    assert torch.equal(state["model.layers.0.input_layernorm.weight"], torch.from_numpy(norm))


def test_read_blocks_refuses_an_architecture_it_does_not_name(tmp_path):
    import gguf
    import numpy as np

    path = tmp_path / "other.gguf"
    _write_gguf(path, "gemma", {"blk.0.attn_norm.weight": (np.ones(32, dtype=np.float32), gguf.GGMLQuantizationType.F32)})
    with pytest.raises(gguf_convert.UnsupportedGguf, match="gemma"):
        gguf_convert.read_blocks(path, 1, 1)
