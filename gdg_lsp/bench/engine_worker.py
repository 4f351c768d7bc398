"""One engine of ``bench perf --only engines`` in a process of its own.

``engines.EngineProcess`` runs ``python -m gdg_lsp.bench.engine_worker ENGINE MODEL THREADS`` and
drives it over its pipes, so that an engine that crashes (llama.cpp's native code has segfaulted
on some CPUs) is reported by the benchmark instead of ending it, and so that each engine's
memory is its own process's (its peak resident set, measured from after the load).

The protocol: the parent writes one JSON object per line on the worker's stdin; the worker
answers each with one JSON line on its stdout, followed for ``prefill`` and ``step`` by the
logits as raw float32 (``"n"`` of them). ``"s"`` is the seconds the engine itself took, so
the pipe's transfer is not part of an engine's time. The first line the worker writes says
whether it loaded (``{"ready": ...}``) or why not (``{"error": ...}``). Anything else printed
(libraries, native code) goes to stderr, never into the protocol.

ops: ``prefill`` (ids, from an empty cache), ``step`` (token), ``reset``, ``threads`` (count),
``encode`` (text: the reference's tokenizer), ``memory``, ``quit``.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import torch

from gdg_lsp.backends.lean import native

LLAMA_CPP = "llama.cpp"


def memory_mb() -> dict[str, float]:
    """This process's resident set and its peak (Linux /proc; zeros elsewhere)."""
    found = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in found:
                    found[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return {"rss_mb": round(found["VmRSS"], 1), "peak_mb": round(found["VmHWM"], 1)}


def reset_peak() -> None:
    """Start the peak resident set again from now (Linux: ``clear_refs`` 5), so that the peak
    reported is the running engine's, not its load's transient buffers."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass


def packed_from_gguf(backend: Any, spec: Any) -> tuple[Any, bool]:
    """The backend with its packed weights read from the GGUF file's blocks, as
    ``load_weights(gguf=)`` reads them, when ``models.load`` widened them (it does until it
    passes the file's path); (backend, whether it was rebuilt)."""
    from gdg_lsp.backends import models
    from gdg_lsp.backends.lean.llama import FastLlamaBackend, load_weights

    weights = getattr(backend, "weights", None)
    if (spec.kind != "gguf" or weights is None or weights.quant != "packed" or not native.available()
            or any(layer.gate_up.kind.startswith("gguf:") for layer in weights.layers)):
        return backend, False
    folder = models.cached_conversion(spec)
    if folder is None:
        return backend, False
    vocab = backend.vocab
    del weights, backend
    gc.collect()
    rebuilt = FastLlamaBackend(load_weights(folder, "packed", vocab_rows=vocab.size, gguf=spec.path), vocab, spec.name)
    rebuilt.prefill([0, 1])
    rebuilt.reset()
    return rebuilt, True


class _LlamaCpp:
    """llama.cpp over the model's GGUF file, rebuilt when the thread count changes."""

    def __init__(self, path: Path, threads: int) -> None:
        from gdg_lsp.bench.engines import LlamaCppModel

        self.path, self._make = path, LlamaCppModel
        self.model = LlamaCppModel(path, threads)

    def set_threads(self, count: int) -> None:
        self.model = None
        gc.collect()
        self.model = self._make(self.path, count)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def load(engine: str, model: str, threads: int) -> tuple[Any, dict[str, Any]]:
    from gdg_lsp.backends import models

    spec = models.resolve(model)
    if engine == LLAMA_CPP:
        if spec.kind != "gguf":
            raise ValueError(f"llama.cpp needs a .gguf model; {spec.describe()} is not one")
        return _LlamaCpp(spec.path, threads), {"vocab": None, "bridge": False}
    backend = models.load(spec, "cpu", threads=threads, engine=engine)
    backend, bridged = packed_from_gguf(backend, spec)
    layer = getattr(getattr(backend, "weights", None), "layers", [None])[0]
    return backend, {"vocab": backend.vocab.size, "bridge": bridged,
                     "kinds": sorted({layer.qkv.kind, layer.gate_up.kind, layer.down.kind}) if layer else []}


def _write(channel: BinaryIO, message: dict[str, Any], payload: bytes = b"") -> None:
    channel.write((json.dumps(message) + "\n").encode("utf-8") + payload)
    channel.flush()


def serve(engine: str, model: str, threads: int, commands: BinaryIO, channel: BinaryIO) -> int:
    torch.set_num_threads(threads)
    began = time.perf_counter()
    try:
        backend, facts = load(engine, model, threads)
    except Exception as err:  # a missing package, a model it cannot run: said, not raised
        _write(channel, {"error": f"{type(err).__name__}: {err}"})
        return 1
    gc.collect()
    load_memory = memory_mb()
    native.release_freed_memory()  # what the load freed (the bridge's widened weights among it)
    reset_peak()
    _write(channel, {"ready": True, "load_s": round(time.perf_counter() - began, 2),
                     "load_peak_mb": load_memory["peak_mb"], **facts})
    with torch.inference_mode():
        for line in commands:
            request = json.loads(line)
            op = request["op"]
            if op in ("prefill", "step"):
                began = time.perf_counter()
                logits = backend.prefill(request["ids"]) if op == "prefill" else backend.step(request["token"])
                values = logits.detach().float().contiguous().numpy()
                seconds = time.perf_counter() - began
                _write(channel, {"s": seconds, "n": int(values.size)}, values.tobytes())
            elif op == "reset":
                backend.reset()
                _write(channel, {"ok": True})
            elif op == "threads":
                torch.set_num_threads(int(request["count"]))
                if hasattr(backend, "set_threads"):
                    backend.set_threads(int(request["count"]))
                _write(channel, {"ok": True})
            elif op == "encode":
                _write(channel, {"ids": backend.vocab.encode(request["text"]).ids})
            elif op == "memory":
                _write(channel, memory_mb())
            elif op == "quit":
                break
            else:
                _write(channel, {"error": f"unknown op {op!r}"})
    return 0


def main(argv: list[str]) -> int:
    engine, model, threads = argv[0], argv[1], int(argv[2])
    channel = os.fdopen(os.dup(1), "wb")  # the protocol's own copy of stdout
    os.dup2(2, 1)  # whatever else writes to stdout (C libraries) lands on stderr
    sys.stdout = sys.stderr
    return serve(engine, model, threads, sys.stdin.buffer, channel)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
