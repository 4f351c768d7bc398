"""Weight formats for the matrix products of the lean decoder (``llama.py``).

At batch 1 a decode step is a chain of matrix-vector products: the time goes
into reading the weights. The formats:

- ``DenseLinear``: the weights as they are (fp32 on CPU, bf16 on a GPU).
- ``Int8Linear``: int8 weights with one fp32 scale per output row, run by
  PyTorch's fbgemm kernel for dynamically quantized linears (activations are
  quantized per call, to 7 bits as fbgemm needs on AVX2 to avoid saturation).
  It reads a quarter of the bytes, but the per-call activation scale moves the
  logits enough to change greedy choices (``gdg.engine=lean-int8`` only).
- ``Fp16Linear``: fp16 weights, fp32 activations and results (fbgemm's fp16
  kernel): half the bytes of fp32 at a rounding of 2^-11 of each weight.
- ``Int4Linear``: 4-bit weights in groups of 32 inputs, each group with its own
  scale and offset, run by PyTorch's packed int4 kernel (bf16 activations). Used
  only where it is lossless: for weights that already are 4-bit groups (a GGUF
  file's Q4_0/Q4_1 tensors, like the default model's layers) it keeps every
  weight while reading an eighth of fp32's bytes.
- ``SplitLinear``: one format for a few rows (a decode step, a draft, a small
  batch: bandwidth-bound) and another for many (a prefill chunk: compute-bound).

These are the formats of weights given as fp32 tensors (a Hugging Face folder, or a
GGUF file where the native kernels are missing). A GGUF file's blocks themselves are
kept packed by ``quant.QuantLinear`` (every block type of a Q4_K_M file).

Weight-only formats (all but ``Int8Linear``) compute each row of the input on
its own: a row's result does not depend on the other rows of its call.

Each can also produce the product for a subset of output rows (``rows``): the
output layer then only computes the logits of the tokens the grammar allows.
"""

from __future__ import annotations

import warnings

import torch

from gdg_lsp.backends.lean.quant import QuantLinear


class DenseLinear:
    kind = "dense"
    rows_independent = True

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        self.weight = weight.contiguous()
        self.bias = None if bias is None else bias.contiguous()
        self.out_features, self.in_features = self.weight.shape

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight, self.bias)

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``self(x)[..., ids]`` without computing the other rows."""
        weight = self.weight.index_select(0, ids)
        bias = None if self.bias is None else self.bias.index_select(0, ids)
        return torch.nn.functional.linear(x, weight, bias)

    @property
    def nbytes(self) -> int:
        return self.weight.numel() * self.weight.element_size()


def int8_available() -> bool:
    """True when this PyTorch build has the CPU kernels for dynamically quantized linears."""
    try:
        return "fbgemm" in torch.backends.quantized.supported_engines or "x86" in torch.backends.quantized.supported_engines
    except Exception:  # a build without the quantized backends
        return False


def quantize_rows(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: (int8 weights, fp32 scales) with ``weight ≈ q * scale[:, None]``."""
    weight = weight.float()
    scale = weight.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    q = torch.round(weight / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return q, scale


class Int8Linear:
    kind = "int8"
    rows_independent = False
    """The activations of a call share one quantization scale."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 quantized: tuple[torch.Tensor, torch.Tensor] | None = None, keep_rows: bool = False) -> None:
        q, scale = quantized if quantized is not None else quantize_rows(weight)
        self.out_features, self.in_features = q.shape
        self.bias = None if bias is None else bias.float().contiguous()
        with warnings.catch_warnings():  # the quantized-tensor constructors warn about their future
            warnings.simplefilter("ignore")
            qtensor = torch._make_per_channel_quantized_tensor(
                q, scale.double(), torch.zeros(q.shape[0], dtype=torch.long), 0)
            self._packed = torch.ops.quantized.linear_prepack(qtensor, self.bias)
        # the row subset (the output layer) needs the plain int8 rows as well
        self._q = q if keep_rows else None
        self._scale = scale.float() if keep_rows else None
        self._nbytes = q.numel() + scale.numel() * 4

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # reduce_range: 7-bit activations, so that fbgemm's u8*s8 pair sums cannot saturate
        return torch.ops.quantized.linear_dynamic(x, self._packed, True)

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        if self._q is None:
            return self(x).index_select(-1, ids)
        rows = self._q.index_select(0, ids).float()
        out = torch.nn.functional.linear(x, rows) * self._scale.index_select(0, ids)
        if self.bias is not None:
            out = out + self.bias.index_select(0, ids)
        return out

    @property
    def nbytes(self) -> int:
        return self._nbytes * (2 if self._q is not None else 1)


def fp16_available() -> bool:
    """True when this PyTorch build has fbgemm's fp16-weight linear (x86 builds)."""
    try:
        return "fbgemm" in torch.backends.quantized.supported_engines and hasattr(torch.ops.quantized, "linear_prepack_fp16")
    except Exception:
        return False


class Fp16Linear:
    """fp16 weights, fp32 activations and results (fbgemm)."""

    kind = "fp16"
    rows_independent = True

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        self.out_features, self.in_features = weight.shape
        self.bias = None if bias is None else bias.float().contiguous()
        self._packed = torch.ops.quantized.linear_prepack_fp16(weight.float().contiguous(), self.bias)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic_fp16(x, self._packed)

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self(x).index_select(-1, ids)  # the packed weights cannot be sliced

    @property
    def nbytes(self) -> int:
        return self.out_features * self.in_features * 2


def bf16_native() -> bool:
    """True when the CPU multiplies bf16 in hardware (AVX512-BF16 or AMX): bf16 products
    then run about twice as fast as fp32 ones, else they are emulated."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_bf16", "amx_bf16"} & set(flags.split()))


class Bf16Linear:
    """bf16 weights and products, fp32 activations and results at the boundary."""

    kind = "bf16"
    rows_independent = True

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None) -> None:
        self.weight = weight.to(torch.bfloat16).contiguous()
        self.bias = None if bias is None else bias.to(torch.bfloat16).contiguous()
        self.out_features, self.in_features = self.weight.shape

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight, self.bias).float()

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self(x).index_select(-1, ids)

    @property
    def nbytes(self) -> int:
        return self.weight.numel() * 2


INT4_GROUP = 32
"""Inputs per scale of ``Int4Linear``: the block size of GGUF's Q4_0 and Q4_1."""


def quantize_groups(weight: torch.Tensor, group: int = INT4_GROUP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric 4-bit groups: (codes 0..15 [out, in] int32, scale and minimum [out, in/group]),
    ``weight ≈ code * scale + minimum``. The minimum and maximum of a group map to 0 and 15,
    which is how Q4_1 was made: its values come back unchanged."""
    out_features, in_features = weight.shape
    grouped = weight.float().reshape(out_features, in_features // group, group)
    low, high = grouped.amin(-1), grouped.amax(-1)
    scale = (high - low) / 15
    codes = torch.round((grouped - low[..., None]) / scale.clamp(min=1e-30)[..., None]).clamp_(0, 15)
    return codes.to(torch.int32).reshape(out_features, in_features), scale, low


def int4_available() -> bool:
    """True when this PyTorch build has the packed int4 CPU kernel (torch >= 2.5)."""
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and hasattr(
        torch.ops.aten, "_convert_weight_to_int4pack_for_cpu")


def lossless_int4(weight: torch.Tensor, group: int = INT4_GROUP) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """``quantize_groups(weight)`` when it loses nothing (``weight`` is 4-bit groups
    already: every value comes back from its code to within a thousandth of its
    group's step), else None. Shapes the packing kernel does not take give None."""
    out_features, in_features = weight.shape
    if in_features % group or out_features % 16:
        return None
    codes, scale, low = quantize_groups(weight, group)
    grouped = weight.float().reshape(out_features, -1, group)
    back = codes.reshape(out_features, -1, group).float() * scale[..., None] + low[..., None]
    if bool(((back - grouped).abs() > scale[..., None] * 1e-3 + 1e-12).any()):
        return None
    return codes, scale, low


class Int4Linear:
    """4-bit groups through PyTorch's packed int4 kernel: bf16 activations, fp32 result.

    The kernel computes ``(code - 8) * scale + zero`` per weight, so ``zero`` is the
    group's minimum plus 8 scales; scale and zero are bf16, as the kernel needs."""

    kind = "int4"
    rows_independent = True

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, group: int = INT4_GROUP,
                 quantized: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> None:
        self.out_features, self.in_features = weight.shape
        self.group = group
        codes, scale, low = quantized if quantized is not None else quantize_groups(weight, group)
        self._packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1)
        # [in/group, out, 2]: the layout the kernel reads
        self._scale_zero = torch.stack([scale, low + 8 * scale], -1).transpose(0, 1).contiguous().to(torch.bfloat16)
        self.bias = None if bias is None else bias.float().contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(
            x.to(torch.bfloat16), self._packed, self.group, self._scale_zero).float()
        return out if self.bias is None else out + self.bias

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self(x).index_select(-1, ids)

    @property
    def nbytes(self) -> int:
        return self.out_features * self.in_features // 2 + self._scale_zero.numel() * 2


STEP_ROWS = 8
"""Rows up to which ``SplitLinear`` runs its step format: a step, a draft of up to 7
tokens (``engine.DRAFT_TOKENS`` + 1). Beyond it the products are compute-bound
and the bulk format is faster (a prefill chunk)."""


class SplitLinear:
    """A bandwidth-saving format for a few rows, another for many; the same weights."""

    def __init__(self, step: Int4Linear | Fp16Linear | DenseLinear, bulk: Bf16Linear | Fp16Linear | DenseLinear,
                 rows: int = STEP_ROWS) -> None:
        self.step, self.bulk, self.max_step_rows = step, bulk, rows
        self.kind = f"{step.kind}+{bulk.kind}"
        self.rows_independent = step.rows_independent and bulk.rows_independent
        self.out_features, self.in_features = bulk.out_features, bulk.in_features

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (self.step if x.shape[0] <= self.max_step_rows else self.bulk)(x)

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return (self.step if x.shape[0] <= self.max_step_rows else self.bulk).rows(x, ids)

    @property
    def nbytes(self) -> int:
        return self.step.nbytes + self.bulk.nbytes


Linear = DenseLinear | Int8Linear | Bf16Linear | Fp16Linear | Int4Linear | SplitLinear | QuantLinear


def fp16_or_dense(weight: torch.Tensor, bias: torch.Tensor | None = None) -> Fp16Linear | DenseLinear:
    """fp16 weights with fp32 activations and results; fp32 where this build lacks fbgemm."""
    if fp16_available():
        return Fp16Linear(weight, bias)
    return DenseLinear(weight.float(), None if bias is None else bias.float())


def packed_linear(weight: torch.Tensor, bias: torch.Tensor | None = None, bulk_bf16: bool = False) -> Linear:
    """The CPU format of ``quant="packed"`` for one projection.

    Steps (a few rows, bandwidth-bound): 4-bit groups where that loses nothing,
    else fp16. Prefill chunks (compute-bound): bf16 with ``bulk_bf16`` (a CPU with
    bf16 products), else the step's fp16."""
    quantized = lossless_int4(weight) if int4_available() else None
    step: Int4Linear | Fp16Linear | DenseLinear = (
        Int4Linear(weight, bias, quantized=quantized) if quantized is not None else fp16_or_dense(weight, bias))
    if bulk_bf16:
        return SplitLinear(step, Bf16Linear(weight, bias))
    if isinstance(step, Int4Linear):
        return SplitLinear(step, fp16_or_dense(weight, bias))
    return step
