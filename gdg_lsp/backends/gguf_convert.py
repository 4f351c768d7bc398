"""Converting a Llama-architecture GGUF file to a Hugging Face folder, quickly.

transformers' own GGUF loading (``from_pretrained(gguf_file=...)``) parses the
file's metadata with the ``gguf`` package element by element, twice (tokenizer,
then model), and builds its name tables for every architecture on each call:
≈ 25 s for the default model on a quiet core, most of a first start. This
module reads the file once through transformers' memory-mapped reader
(``transformers.integrations.gguf``), de-quantizes each tensor with its
vectorised kernels, renames the tensors to Hugging Face's Llama names, undoes
the row permutation llama.cpp applies to the query and key projections, and
writes ``model.safetensors``, ``config.json`` and the tokenizer.

Only ``general.architecture == "llama"`` is handled here (SmolLM2, Llama,
Mistral-style files); anything else, or a transformers without these readers,
raises ``UnsupportedGguf`` and ``models`` falls back to transformers' path.

``read_blocks`` reads a Llama or Qwen2 file's tensors for the lean decoder
without de-quantizing them: block-quantized ones as ``QuantTensor`` views of
the memory-mapped file (``lean/quant.py`` packs them), the rest as fp32.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch


class UnsupportedGguf(ValueError):
    """This converter does not handle the file (the caller uses transformers' path)."""


_LAYER_NAMES = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
_TOP_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
_LAYER = re.compile(r"blk\.(\d+)\.(\w+)\.(weight|bias)")


def hf_name(gguf_name: str) -> str:
    """``blk.3.attn_q.weight`` → ``model.layers.3.self_attn.q_proj.weight``."""
    if match := _LAYER.fullmatch(gguf_name):
        layer, part, kind = match.groups()
        if part not in _LAYER_NAMES:
            raise UnsupportedGguf(f"unexpected tensor {gguf_name}")
        return f"model.layers.{layer}.{_LAYER_NAMES[part]}.{kind}"
    stem, _, kind = gguf_name.rpartition(".")
    if stem not in _TOP_NAMES:
        raise UnsupportedGguf(f"unexpected tensor {gguf_name}")
    return f"{_TOP_NAMES[stem]}.{kind}"


def unpermute_rows(weight: torch.Tensor, heads: int) -> torch.Tensor:
    """Undo llama.cpp's rotary layout of a query/key projection: within each head,
    it interleaves the two halves of the head's rows; Hugging Face keeps them apart."""
    half = weight.shape[0] // heads // 2
    return weight.reshape(heads, half, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


BLOCK_ARCHITECTURES = ("llama", "qwen2")
"""Architectures whose GGUF tensors ``read_blocks`` names (Qwen2's names are Llama's plus
biases; only Llama's files carry llama.cpp's rotary row order)."""


def read_blocks(gguf_path: Path, heads: int, kv_heads: int) -> dict[str, Any]:
    """The tensors of ``gguf_path`` under Hugging Face's names, as the lean decoder reads
    them: block-quantized ones as ``QuantTensor`` (raw blocks, memory-mapped, rows in
    Hugging Face's order), float ones as fp32 tensors. ``heads`` and ``kv_heads`` (the
    model's config) undo the rotary row order of a Llama file's query and key rows."""
    import numpy as np

    from gdg_lsp.backends.gguf_header import GGML_TYPES, read_header
    from gdg_lsp.backends.lean.quant import QuantTensor

    header = read_header(gguf_path)  # the tensor table, the tokenizer's strings skipped by length
    if header.architecture not in BLOCK_ARCHITECTURES:
        raise UnsupportedGguf(f"architecture {header.architecture!r}")
    type_ids = {name: type_id for type_id, (name, _, _) in GGML_TYPES.items()}
    floats = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
    mapped = np.memmap(gguf_path, dtype=np.uint8, mode="r")
    out: dict[str, Any] = {}
    for tensor in header.tensors:
        name = hf_name(tensor.name)
        start = header.data_start + tensor.offset
        data = mapped[start : start + tensor.nbytes]
        cols = int(tensor.shape[0])
        rows = int(np.prod(tensor.shape[1:], dtype=np.int64)) if len(tensor.shape) > 1 else 1
        if tensor.type_name in floats:
            values = data.view(floats[tensor.type_name])
            if tensor.type_name == "BF16":
                as_float = torch.from_numpy(values.astype(np.int32) << 16).view(torch.float32)
            else:
                as_float = torch.from_numpy(values.astype(np.float32))
            out[name] = as_float.reshape(tuple(int(d) for d in reversed(tensor.shape))).contiguous()
        else:
            out[name] = QuantTensor(type_ids[tensor.type_name], rows, cols, data.reshape(rows, -1))
    if header.architecture == "llama":
        for suffix, count in (("self_attn.q_proj.weight", heads), ("self_attn.k_proj.weight", kv_heads)):
            for name in [n for n in out if n.endswith(suffix)]:
                order = unpermute_rows(torch.arange(_rows(out[name])), count)
                out[name] = out[name].take_rows(order) if isinstance(out[name], QuantTensor) else out[name][order]
    return out


def _rows(tensor: Any) -> int:
    return tensor.rows if hasattr(tensor, "rows") else int(tensor.shape[0])


def _readers() -> Any:
    try:
        from transformers.integrations.gguf import (
            GgufHeader,
            load_gguf_state_dict,
            read_gguf_metadata,
        )
        from transformers.integrations.gguf.dequant import dequantize
        from transformers.integrations.gguf.gguf_tokenizer_mapping import (
            convert_gguf_tokenizer,
            get_gguf_tokenizer,
        )
        from transformers.integrations.gguf.reader import _TORCH_DTYPE
    except ImportError as err:  # an older transformers: its own path is used
        raise UnsupportedGguf(f"this transformers has no GGUF readers ({err})") from err
    return (GgufHeader, load_gguf_state_dict, read_gguf_metadata, dequantize, _TORCH_DTYPE,
            get_gguf_tokenizer, convert_gguf_tokenizer)


def convert(gguf_path: Path, target: Path, progress: Any = lambda message, percent: None) -> None:
    """Write the Hugging Face folder for ``gguf_path`` into ``target`` (which exists)."""
    (GgufHeader, load_gguf_state_dict, read_gguf_metadata, dequantize, float_types,
     get_gguf_tokenizer, convert_gguf_tokenizer) = _readers()
    from safetensors.torch import save_file
    from transformers import LlamaConfig, PreTrainedTokenizerFast

    header = GgufHeader.from_file(str(gguf_path))
    if header.architecture != "llama":
        raise UnsupportedGguf(f"architecture {header.architecture!r}")
    metadata, names = read_gguf_metadata(str(gguf_path))
    arch = "llama."
    heads = int(metadata[arch + "attention.head_count"])
    kv_heads = int(metadata.get(arch + "attention.head_count_kv", heads))
    if arch + "rope.scaling.type" in metadata:
        raise UnsupportedGguf("rope scaling")

    progress("Converting model weights", 30)
    types = header.ggml_types
    state: dict[str, torch.Tensor] = {}
    for name, lazy in load_gguf_state_dict(header).items():
        raw = lazy[...]
        if types[name] in float_types:
            values = raw.float()
        else:  # blocks: de-quantized, then shaped as the tensor table says
            shape = next(info.shape for info in header.tensors if info.name == name)
            values = dequantize(raw.reshape(-1), types[name]).reshape(shape)
        target_name = hf_name(name)
        if target_name.endswith("self_attn.q_proj.weight"):
            values = unpermute_rows(values, heads)
        elif target_name.endswith("self_attn.k_proj.weight"):
            values = unpermute_rows(values, kv_heads)
        state[target_name] = values.contiguous()
    tied = "lm_head.weight" not in state

    progress("Writing the converted model", 80)
    tokens = metadata.get("tokenizer.ggml.tokens")
    vocab_size = int(metadata.get(arch + "vocab_size", tokens if isinstance(tokens, int) else len(tokens or ())))
    embedding = int(metadata[arch + "embedding_length"])
    config = LlamaConfig(
        vocab_size=vocab_size or state["model.embed_tokens.weight"].shape[0],
        hidden_size=embedding,
        intermediate_size=int(metadata[arch + "feed_forward_length"]),
        num_hidden_layers=int(metadata[arch + "block_count"]),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=int(metadata.get(arch + "rope.dimension_count", embedding // heads)),
        max_position_embeddings=int(metadata[arch + "context_length"]),
        rms_norm_eps=float(metadata[arch + "attention.layer_norm_rms_epsilon"]),
        rope_parameters={"rope_type": "default", "rope_theta": float(metadata.get(arch + "rope.freq_base", 10000.0))},
        tie_word_embeddings=tied,
        bos_token_id=metadata.get("tokenizer.ggml.bos_token_id"),
        eos_token_id=metadata.get("tokenizer.ggml.eos_token_id"),
        pad_token_id=metadata.get("tokenizer.ggml.padding_token_id"),
        unk_token_id=metadata.get("tokenizer.ggml.unknown_token_id"),
        architectures=["LlamaForCausalLM"],
        dtype="float32",
    )
    config.save_pretrained(str(target))
    save_file(state, str(target / "model.safetensors"), metadata={"format": "pt"})

    architecture, tokenizer_dict, tokenizer_config = get_gguf_tokenizer(str(gguf_path))
    backend, extra = convert_gguf_tokenizer(architecture, tokenizer_dict)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **{**tokenizer_config, **extra})
    tokenizer.save_pretrained(str(target))
