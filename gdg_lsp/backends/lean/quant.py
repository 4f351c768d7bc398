"""GGUF block-quantized weights kept as the file has them, for the lean decoder's products.

A GGUF file's tensors are blocks of 4- to 8-bit codes with their scales (Q4_0,
Q4_1, Q5_0, Q5_1, Q8_0 per 32 weights; the K-quants Q4_K, Q5_K, Q6_K per 256).
``QuantTensor`` holds one such tensor's rows as raw blocks (a view of the
memory-mapped file). ``QuantLinear`` re-lays the blocks once into tiles of 16
output rows (``qkernels.cpp``, the native extension ``_qkernels`` built with the
package) and multiplies them by activations quantized to int8 per 32 inputs:
the weights are exactly the file's, only the activations are rounded, and a
step reads the file's bytes (≈ 4.5-8.5 bits a weight) rather than 16 bits.
AVX512-VNNI kernels where the CPU has them, AVX2 elsewhere; without either, or
when the extension did not build, ``available()`` is False (``native.py``) and
the caller widens the weights (``dequantize``).

Rows are independent: each activation row has its own scales, so a row's result
does not depend on the other rows of its call (a draft's rows are its steps').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from gdg_lsp.backends.lean import native

_native = native.extension

TILE = 16
"""Output rows per tile of the packed layout."""

PACKED_TYPES = {2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K"}
"""GGUF block types (ggml's ids) that ``QuantLinear`` keeps packed."""

available = native.available


@dataclass(frozen=True)
class QuantTensor:
    """A 2-D GGUF tensor as the file stores it: ``raw`` is [rows, bytes per row] of blocks,
    a row being one output feature's ``cols`` weights."""

    qtype: int
    rows: int
    cols: int
    raw: np.ndarray

    @property
    def type_name(self) -> str:
        from gguf import GGMLQuantizationType

        return GGMLQuantizationType(self.qtype).name

    @property
    def packable(self) -> bool:
        return self.qtype in PACKED_TYPES

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def dequantize(self) -> torch.Tensor:
        """The fp32 weights [rows, cols] (gguf's own de-quantizers)."""
        return self.dequantize_rows(None)

    def dequantize_rows(self, ids: torch.Tensor | Sequence[int] | None) -> torch.Tensor:
        """The fp32 weights of the rows ``ids`` (all rows with None): an embedding lookup."""
        from gguf import GGMLQuantizationType, quants

        raw = self.raw if ids is None else self.raw[np.asarray(ids, dtype=np.int64)]
        values = quants.dequantize(np.ascontiguousarray(raw), GGMLQuantizationType(self.qtype))
        return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).reshape(-1, self.cols)

    def take_rows(self, order: torch.Tensor | np.ndarray) -> QuantTensor:
        """The rows in ``order`` (a permutation, or the first rows): whole rows of blocks move."""
        index = np.asarray(order, dtype=np.int64)
        return QuantTensor(self.qtype, len(index), self.cols, np.ascontiguousarray(self.raw[index]))

    def owned(self) -> QuantTensor:
        """The blocks copied out of the file's mapping: once nothing views the mapping it is
        unmapped, and the file pages packing read stop counting as the process's memory."""
        return QuantTensor(self.qtype, self.rows, self.cols, np.array(self.raw, copy=True))

    def first_rows(self, count: int) -> QuantTensor:
        return self if count >= self.rows else QuantTensor(self.qtype, count, self.cols, self.raw[:count])

    @property
    def nbytes(self) -> int:
        return int(self.raw.nbytes)


def concat(parts: Sequence[QuantTensor]) -> QuantTensor:
    """Rows of tensors of one type and width, one after the other (q|k|v, gate|up)."""
    first = parts[0]
    if any(p.qtype != first.qtype or p.cols != first.cols for p in parts):
        raise ValueError("only tensors of one type and width concatenate")
    if len(parts) == 1:
        return first
    return QuantTensor(first.qtype, sum(p.rows for p in parts), first.cols,
                       np.concatenate([np.ascontiguousarray(p.raw) for p in parts]))


class PackedMatrix:
    """One tensor's weights in the kernels' tiles (rows padded to a multiple of 16)."""

    def __init__(self, tensor: QuantTensor, threads: int | None = None) -> None:
        if _native is None or not tensor.packable:
            raise ValueError(f"{tensor.type_name} weights cannot be packed here ({native.kernels()})")
        self.qtype, self.rows, self.cols = tensor.qtype, tensor.rows, tensor.cols
        self.tiles = -(-tensor.rows // TILE)
        per_tile = _native.sizes(self.qtype, self.cols)
        kinds = (torch.uint8, torch.int16, torch.int16, torch.uint8, torch.uint8)
        # zeroed: the packer ORs codes into place, and a padding row must stay 0
        self._buffers = [torch.zeros(max(1, self.tiles * n), dtype=kind) for n, kind in zip(per_tile, kinds)]
        self._nbytes = sum(self.tiles * n * torch.tensor([], dtype=kind).element_size()
                           for n, kind in zip(per_tile, kinds))
        raw = np.ascontiguousarray(tensor.raw)
        _native.pack(*self._args(), raw.ctypes.data, tensor.rows, raw.shape[1], threads or torch.get_num_threads())

    def _args(self) -> tuple[int, ...]:
        return (self.qtype, self.cols, self.tiles, *(b.data_ptr() for b in self._buffers))

    def matmul_into(self, x: torch.Tensor, out: torch.Tensor, tiles: torch.Tensor | None = None,
                    bias: torch.Tensor | None = None) -> None:
        """``out[:, i*16 + r] = x @ row r of tile i + bias`` (every tile, or those listed in
        ``tiles``). ``x``: [M, cols] fp32 contiguous; ``out``: fp32 rows of stride
        ``out.stride(0)``; ``bias``: fp32, padded to whole tiles (``padded_bias``)."""
        count = self.tiles if tiles is None else tiles.numel()
        _native.matmul(*self._args(), x.data_ptr(), x.shape[0], 0 if tiles is None else tiles.data_ptr(), count,
                       out.data_ptr(), out.stride(0), 0 if bias is None else bias.data_ptr(), torch.get_num_threads())

    def padded_bias(self, bias: torch.Tensor) -> torch.Tensor:
        """This matrix's part of a bias, zeros in its padding rows: what ``matmul_into`` adds."""
        padded = torch.zeros(self.tiles * TILE)
        padded[: self.rows] = bias.float()
        return padded

    def unpack(self, first: int = 0, count: int | None = None) -> torch.Tensor:
        """Rows ``first .. first + count`` read back from the tiles as fp32 (tests)."""
        count = self.rows - first if count is None else count
        out = torch.empty(count, self.cols)
        _native.unpack(*self._args(), first, count, out.data_ptr())
        return out

    @property
    def nbytes(self) -> int:
        return self._nbytes


class QuantLinear:
    """A projection over packed GGUF tensors (several stacked, each its own type: q|k|v),
    fp32 activations and results."""

    rows_independent = True

    def __init__(self, parts: Sequence[QuantTensor], bias: torch.Tensor | None = None) -> None:
        groups: list[list[QuantTensor]] = []
        for part in parts:  # neighbours of one type share tiles
            if groups and groups[-1][-1].qtype == part.qtype:
                groups[-1].append(part)
            else:
                groups.append([part])
        self._matrices = [PackedMatrix(concat(group)) for group in groups]
        self.in_features = parts[0].cols
        self.out_features = sum(m.rows for m in self._matrices)
        self.bias = None if bias is None else bias.float().contiguous()
        starts = [sum(m.rows for m in self._matrices[:i]) for i in range(len(self._matrices))]
        # each matrix adds its part of the bias as it stores its results
        self._biases = [None if bias is None else m.padded_bias(self.bias[start : start + m.rows])
                        for m, start in zip(self._matrices, starts)]
        self.kind = "gguf:" + "+".join(PACKED_TYPES[m.qtype] for m in self._matrices)
        # each matrix writes its tiles straight into its columns when no tile spills over the next
        self._in_place = all(m.rows % TILE == 0 for m in self._matrices)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).float().contiguous()
        out = torch.empty(x2.shape[0], self.out_features)
        column = 0
        for matrix, bias in zip(self._matrices, self._biases):
            if self._in_place:
                matrix.matmul_into(x2, out[:, column:], bias=bias)
            else:
                part = torch.empty(x2.shape[0], matrix.tiles * TILE)
                matrix.matmul_into(x2, part, bias=bias)
                out[:, column : column + matrix.rows] = part[:, : matrix.rows]
            column += matrix.rows
        return out.reshape(*lead, self.out_features)

    def rows(self, x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """``self(x)[..., ids]``, computing only the tiles that hold ``ids`` (the output layer
        over the tokens a grammar allows)."""
        if len(self._matrices) != 1:
            return self(x).index_select(-1, ids)
        matrix = self._matrices[0]
        x2 = x.reshape(-1, self.in_features).float().contiguous()
        ids = ids.to(torch.long)
        tiles = torch.unique(ids // TILE)  # sorted
        part = torch.empty(x2.shape[0], tiles.numel() * TILE)
        matrix.matmul_into(x2, part, tiles.contiguous(), bias=self._biases[0])
        where = torch.searchsorted(tiles, ids // TILE) * TILE + ids % TILE
        return part.index_select(1, where).reshape(*x.shape[:-1], ids.numel())

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self._matrices)


def packable(parts: Sequence[object]) -> bool:
    """True when ``parts`` are GGUF tensors ``QuantLinear`` can keep packed here."""
    return available() and all(isinstance(p, QuantTensor) and p.packable and p.cols % 32 == 0 for p in parts)
