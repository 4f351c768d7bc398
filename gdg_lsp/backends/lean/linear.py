"""Weight formats for the matrix products of the lean decoder (``fast_llama``).

At batch 1 a decode step is a chain of matrix-vector products: the time goes
into reading the weights. Two formats:

- ``DenseLinear``: the weights as they are (fp32 on CPU, bf16 on a GPU).
- ``Int8Linear``: int8 weights with one fp32 scale per output row, run by
  PyTorch's fbgemm kernel for dynamically quantized linears (activations are
  quantized per call, to 7 bits as fbgemm needs on AVX2 to avoid saturation).
  It reads a quarter of the bytes: on the 2-core AVX2 machine this is what
  makes a step of the default model ~2x faster (measured by ``bench perf``).

Both can also produce the product for a subset of output rows (``rows``): the
output layer then only computes the logits of the tokens the grammar allows.
"""

from __future__ import annotations

import warnings

import torch


class DenseLinear:
    kind = "dense"

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


Linear = DenseLinear | Int8Linear
