"""What a GGUF file says it holds: its header and tensor table, read without loading a weight.

A model assembled from packages nobody here published is checked against what the
project pins before anything parses it further (``presets``): the magic and the format
version, the architecture and its block count, and the tensor table (how many tensors, of
which ggml types, each one's bytes inside the file). ``read_header`` reads the metadata
key by key, skipping the values it does not need (the tokenizer's 151,936 strings are
passed over by their lengths), and refuses a file whose counts or lengths could not fit
in it: every length is checked against the bytes left before it is used.

Only what the check needs is kept; the converters (``gguf_convert``, transformers) read
the file again their own way once it has passed.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_KEY_BYTES = 1 << 16
KEPT_STRING_BYTES = 1 << 12
"""Longer string values than this are skipped even for a key that is kept (none needs more)."""

GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 30: ("BF16", 1, 2),
}
"""ggml type id -> (name, elements per block, bytes per block): the types whose sizes are known here."""

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEPT_KEYS = ("general.architecture", "general.name", "general.alignment")


class NotGguf(ValueError):
    """The file is not a GGUF file this reader can vouch for; the message says where it went wrong."""


@dataclass(frozen=True)
class Tensor:
    name: str
    type_name: str
    shape: tuple[int, ...]
    offset: int
    """From the start of the data section."""
    nbytes: int


@dataclass(frozen=True)
class GgufHeader:
    version: int
    architecture: str
    name: str
    block_count: int | None
    tensors: tuple[Tensor, ...]
    data_start: int
    metadata: dict[str, object] = field(default_factory=dict, repr=False)

    def type_counts(self) -> dict[str, int]:
        return dict(Counter(t.type_name for t in self.tensors))


class _Reader:
    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle = handle
        self.size = size

    @property
    def left(self) -> int:
        return self.size - self.handle.tell()

    def take(self, count: int, what: str) -> bytes:
        if count < 0 or count > self.left:
            raise NotGguf(f"{what} needs {count:,} bytes at offset {self.handle.tell():,}, but the file ends first")
        return self.handle.read(count)

    def skip(self, count: int, what: str) -> None:
        if count < 0 or count > self.left:
            raise NotGguf(f"{what} needs {count:,} bytes at offset {self.handle.tell():,}, but the file ends first")
        self.handle.seek(count, os.SEEK_CUR)

    def scalar(self, code: str, what: str):
        return struct.unpack(code, self.take(struct.calcsize(code), what))[0]

    def string(self, what: str, keep: int) -> str | None:
        length = self.scalar("<Q", what)
        if length > keep:
            self.skip(length, what)
            return None
        return self.take(length, what).decode("utf-8", "replace")

    def value(self, kind: int, what: str, keep: bool) -> object:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind], what)
        if kind == _STRING:
            return self.string(what, KEPT_STRING_BYTES if keep else -1)
        if kind == _ARRAY:
            item, count = self.scalar("<I", what), self.scalar("<Q", what)
            if item in _SCALARS:
                self.skip(count * struct.calcsize(_SCALARS[item]), what)
            elif item == _STRING:
                if count * 8 > self.left:
                    raise NotGguf(f"{what}: {count:,} strings cannot fit in the {self.left:,} bytes left")
                for _ in range(count):
                    self.string(what, -1)
            else:
                raise NotGguf(f"{what}: an array of value type {item}, which GGUF does not define")
            return count
        raise NotGguf(f"{what}: value type {kind}, which GGUF does not define")


def _tensor_bytes(type_id: int, shape: tuple[int, ...], name: str) -> tuple[str, int]:
    if type_id not in GGML_TYPES:
        raise NotGguf(f"tensor {name!r} has ggml type {type_id}, unknown to this reader")
    type_name, per_block, block_bytes = GGML_TYPES[type_id]
    elements = 1
    for dim in shape:
        elements *= dim
    if shape and shape[0] % per_block:
        raise NotGguf(f"tensor {name!r}: rows of {shape[0]} elements do not split into {type_name} blocks")
    return type_name, elements // per_block * block_bytes


def read_header(path: Path) -> GgufHeader:
    """The header and tensor table of the GGUF file ``path`` (``NotGguf`` with the reason when it
    is not one, or claims more than it holds)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        reader = _Reader(handle, size)
        if handle.read(4) != MAGIC:
            raise NotGguf(f"{path.name} does not start with the GGUF magic")
        version = reader.scalar("<I", "the version")
        if version not in (2, 3):
            raise NotGguf(f"{path.name} is GGUF version {version}; versions 2 and 3 are known")
        tensor_count, kv_count = reader.scalar("<Q", "the tensor count"), reader.scalar("<Q", "the key count")
        metadata: dict[str, object] = {}
        for index in range(kv_count):
            key = reader.string(f"key {index}", MAX_KEY_BYTES)
            if key is None:
                raise NotGguf(f"key {index} is longer than {MAX_KEY_BYTES} bytes")
            kind = reader.scalar("<I", f"the type of {key}")
            keep = key in _KEPT_KEYS or key.endswith(".block_count")
            value = reader.value(kind, key, keep)
            if keep:
                metadata[key] = value
        if tensor_count * 24 > reader.left:
            raise NotGguf(f"{tensor_count:,} tensors cannot be described in the {reader.left:,} bytes left")
        infos = []
        for index in range(tensor_count):
            name = reader.string(f"tensor {index}'s name", MAX_KEY_BYTES) or f"#{index}"
            dims = reader.scalar("<I", f"{name}'s rank")
            if dims > 8:
                raise NotGguf(f"tensor {name!r} claims {dims} dimensions")
            shape = tuple(reader.scalar("<Q", f"{name}'s shape") for _ in range(dims))
            type_id, offset = reader.scalar("<I", f"{name}'s type"), reader.scalar("<Q", f"{name}'s offset")
            infos.append((name, shape, type_id, offset))
        alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or alignment <= 0:
            raise NotGguf(f"general.alignment is {alignment!r}")
        data_start = -(-handle.tell() // alignment) * alignment
    tensors = []
    for name, shape, type_id, offset in infos:
        type_name, nbytes = _tensor_bytes(type_id, shape, name)
        if data_start + offset + nbytes > size:
            raise NotGguf(f"tensor {name!r} ({type_name}, {nbytes:,} bytes at {offset:,}) lies past the file's end")
        tensors.append(Tensor(name, type_name, shape, offset, nbytes))
    architecture = metadata.get("general.architecture")
    if not isinstance(architecture, str):
        raise NotGguf(f"{path.name} names no general.architecture")
    blocks = metadata.get(f"{architecture}.block_count")
    return GgufHeader(version, architecture, str(metadata.get("general.name") or ""),
                      blocks if isinstance(blocks, int) else None, tuple(tensors), data_start, metadata)
