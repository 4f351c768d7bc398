"""Random-weight models written as Hugging Face folders, for ``bench perf``.

Speed does not depend on what the weights are, so a model with the right
shape and random weights measures the same step time as the real one, on a
machine that has no copy of the real one (CI, an offline GPU box). It is
written as an ordinary folder (``config.json``, safetensors, tokenizer) so
that the in-process backends and a server subprocess load it the way they load
any model (``gdg.model`` = the folder).

The tokenizer is a real one (the default model's unless another folder is
given): the grammar masks and the prompts then cost what they cost for real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SHAPES: dict[str, dict[str, Any]] = {
    # enough to exercise every code path in seconds
    "tiny": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "tie_word_embeddings": True},
    # the default model's shape (SmolLM2-135M)
    "smollm2-135m": {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                     "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True,
                     "rope_theta": 100000.0, "rms_norm_eps": 1e-5},
    # Qwen2.5-0.5B: the 0.5B-class model of the GPU target
    "qwen2.5-0.5b": {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                     "num_attention_heads": 14, "num_key_value_heads": 2, "tie_word_embeddings": True,
                     "vocab_size": 151936, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6},
}


def default_tokenizer_dir() -> Path:
    """A folder with the default model's tokenizer (converting the GGUF's tokenizer if needed)."""
    from gdg_lsp.backends import models

    spec = models.resolve("default")
    converted = models.cached_conversion(spec)
    if converted is not None and (converted / "tokenizer.json").is_file():
        return converted
    from transformers import AutoTokenizer

    from gdg_lsp.private_folder import private_folder, remove_entry, why_not_private

    models._offline()
    target = private_folder(models.cache_root() / "tokenizers") / models.converted_dir(spec).name
    if why_not_private(target) is not None:  # not this user's own work: made again
        remove_entry(target)
    if not (target / "tokenizer.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
        tokenizer.save_pretrained(str(target))
    return target


def write_random_model(folder: Path, shape: str = "tiny", tokenizer_dir: Path | None = None, seed: int = 0,
                       dtype: str | None = None) -> Path:
    """Write a random-weight model of ``shape`` (a key of SHAPES) to ``folder``; returns it.

    ``dtype``: of the stored weights; bfloat16 except for ``tiny`` (half the bytes to
    write and read; the backends convert to what they compute in)."""
    dtype = dtype or ("float32" if shape == "tiny" else "bfloat16")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from gdg_lsp.backends import models

    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; expected one of {', '.join(SHAPES)}")
    models._offline()
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir or default_tokenizer_dir()), local_files_only=True)
    params = dict(SHAPES[shape])
    kind = params.pop("model_type")
    params.setdefault("vocab_size", len(tokenizer))
    params["vocab_size"] = max(params["vocab_size"], len(tokenizer))
    config = AutoConfig.for_model(kind, max_position_embeddings=4096, **params)
    config.eos_token_id = tokenizer.eos_token_id
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder
