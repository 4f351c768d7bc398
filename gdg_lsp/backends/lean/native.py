"""The native CPU kernels of the lean decoder (``qkernels.cpp``, built with the package as
``_qkernels``): packed GGUF products (used through ``quant.py``), RMSNorm and one token's
attention over the KV cache.

The extension is optional: a machine without a C++ compiler installs without it, and a
CPU with neither AVX2 nor AVX512-VNNI cannot run its kernels; ``available()`` is then
False and the decoder runs PyTorch's operations instead (the weights widened).
"""

from __future__ import annotations

import torch

try:  # built from qkernels.cpp by setup.py; imported after torch, so that it shares torch's OpenMP
    from gdg_lsp.backends.lean import _qkernels as extension
except ImportError as err:  # pragma: no cover - depends on the build
    extension = None
    IMPORT_ERROR = str(err)
else:
    IMPORT_ERROR = ""

ISA_NAMES = {0: "none", 1: "avx2", 2: "avx512-vnni"}


def kernels() -> str:
    """The kernels in use (``avx512-vnni``, ``avx2``), or why there are none."""
    if extension is None:
        return f"none (the native extension is not built: {IMPORT_ERROR})"
    return ISA_NAMES.get(extension.isa(), "none")


def available() -> bool:
    """True when the native kernels run here (the extension is built and the CPU has AVX2)."""
    return extension is not None and extension.isa() > 0


def limit_kernels(isa: str) -> str:
    """Use at most the kernels named (``avx2`` runs the AVX2 ones on an AVX-512 CPU: tests);
    returns the kernels now in use."""
    if extension is None:
        return kernels()
    wanted = {name: level for level, name in ISA_NAMES.items()}[isa]
    return ISA_NAMES[extension.set_isa(wanted)]


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm of the rows of ``x`` (fp32, contiguous, on the CPU)."""
    out = torch.empty_like(x)
    extension.rms_norm(x.data_ptr(), weight.data_ptr(), eps, x.numel() // x.shape[-1], x.shape[-1], out.data_ptr())
    return out


def attend_one(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float) -> torch.Tensor:
    """One token's grouped-query attention: q [heads, 1, D] against keys and values
    [kv_heads, length, D] (views of the cache: rows contiguous, heads ``stride(0)`` apart);
    [1, heads * D]."""
    heads, _, dim = q.shape
    kv_heads, length, _ = keys.shape
    q = q.contiguous()
    out = torch.empty(1, heads * dim)
    extension.attend_one(q.data_ptr(), keys.data_ptr(), values.data_ptr(), keys.stride(0), length, heads, kv_heads,
                         dim, scale, out.data_ptr(), torch.get_num_threads())
    return out


def rope_into_cache(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, heads: int, kv_heads: int,
                    keys: torch.Tensor, values: torch.Tensor, start: int) -> torch.Tensor:
    """The queries of ``qkv`` ([n, (heads + 2 kv_heads) * D], contiguous) rotated to their
    positions, [heads, n, D]; their keys rotated and their values written into the cache
    (``keys``/``values`` [kv_heads, capacity, D]) at positions ``start`` ...; cos and sin:
    [n, D] (``llama.rope_tables``)."""
    n, dim = qkv.shape[0], cos.shape[-1]
    q = torch.empty(heads, n, dim)
    offset = start * keys.stride(1) * 4
    extension.rope_into_cache(qkv.data_ptr(), n, heads, kv_heads, dim, cos.data_ptr(), sin.data_ptr(), q.data_ptr(),
                              keys.data_ptr() + offset, values.data_ptr() + offset, keys.stride(0))
    return q


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up of rows [n, 2 * width] holding gate | up (contiguous): [n, width]."""
    n, width = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.empty(n, width)
    extension.silu_mul(gate_up.data_ptr(), n, width, out.data_ptr())
    return out


def release_freed_memory() -> None:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). A load frees hundreds of MB of temporaries (raw blocks concatenated, widened
    copies) that glibc keeps in its heap, counted as the process's memory, until trimmed."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


_AVAILABLE = available()


def fits(*tensors: torch.Tensor) -> bool:
    """True when the native kernels can read these tensors in place (fp32 on the CPU)."""
    return _AVAILABLE and all(t.dtype == torch.float32 and t.device.type == "cpu" for t in tensors)
