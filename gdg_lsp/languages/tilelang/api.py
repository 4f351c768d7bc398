"""The TileLang API surface a document is completed against (``T.<member>``).

The surfaces are data (``grammars/tilelang/api/<version>.json``, written by
``scripts/tilelang_api.py`` from the tilelang wheels without importing them).
``gdg.tilelang.version`` picks one; ``latest`` (the default) is the newest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from gdg_lsp.errors import GdgError
from gdg_lsp.gamma import Binding

LATEST = "latest"
ALL_MEMS = ("global", "shared", "fragment", "local", "barrier", "tmem")

# The tile operations with rules of their own in the grammar (their names are
# not generic members there, so their operand roles cannot be side-stepped).
TYPED_FAMILIES = frozenset({"copy", "gemm", "fill", "clear", "reduce", "atomic"})
LOOP_MEMBERS = frozenset({"Parallel", "Pipelined", "serial", "Serial", "unroll", "Unroll", "vectorized",
                          "Vectorized", "Persistent", "grid", "parallel", "thread_binding"})
KERNEL_MEMBERS = frozenset({"Kernel", "ClusterKernel"})
REDUCE = re.compile(r"reduce_[a-z]+\Z")
ATOMIC = re.compile(r"atomic_(add|max|min|addx2|addx4)\Z")


class UnknownTileLangVersion(GdgError):
    def __init__(self, version: str, known: list[str]) -> None:
        super().__init__(f"no TileLang API surface for version {version!r}; known: {', '.join(known)} (or {LATEST!r})")


def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.+-]|(?<=\d)(?=[a-z])", version) if p)


def _folder():
    return resources.files("gdg_lsp.grammars").joinpath("tilelang").joinpath("api")


@lru_cache(maxsize=1)
def versions() -> tuple[str, ...]:
    """Versions with a surface, oldest first."""
    names = [f.name[: -len(".json")] for f in _folder().iterdir() if f.name.endswith(".json")]
    return tuple(sorted(names, key=_version_key))


@dataclass(frozen=True)
class Surface:
    version: str
    members: tuple[str, ...]
    allocators: Mapping[str, Any]
    annotations: Mapping[str, Any]
    operations: Mapping[str, Any]
    families: Mapping[str, str] = field(default_factory=dict)

    def family(self, member: str) -> str | None:
        return self.families.get(member)

    def bindings(self, modules: Iterable[str]) -> list[Binding]:
        """The members as Γ's global layer holds them: sort ``ApiMember``, named
        ``T.copy`` for each name T bound to tilelang.language (a member is not a
        bare name, so it neither shadows nor is shadowed by one)."""
        return [
            Binding(f"{module}.{name}", "ApiMember", {"member": name, "module": module,
                                                      "family": self.families.get(name, "member"),
                                                      "typed": self.families.get(name) in TYPED_FAMILIES,
                                                      "version": self.version})
            for module in sorted(modules)
            for name in self.members
        ]

    def role_mems(self, operation: str, parameter: str) -> list[str]:
        """Memory spaces the operation accepts for an operand (all when the surface does not say)."""
        role = self.operations.get(operation, {}).get("roles", {}).get(parameter, {})
        return list(role.get("mem") or ALL_MEMS)

    def mem_of_allocator(self, name: str) -> str | None:
        entry = self.allocators.get(name)
        return entry.get("mem") if entry else None

    def mem_of_annotation(self, name: str) -> str | None:
        entry = self.annotations.get(name)
        return entry.get("mem") if entry else None


def _families(members: tuple[str, ...], data: Mapping[str, Any]) -> dict[str, str]:
    families: dict[str, str] = {}
    operations = data.get("operations", {})
    for name in members:
        if name in ("copy", "gemm", "fill", "clear"):
            families[name] = name
        elif REDUCE.match(name) and name in operations:
            families[name] = "reduce"
        elif ATOMIC.match(name) and name in operations:
            families[name] = "atomic"
        elif name in data.get("allocators", {}):
            families[name] = "alloc"
        elif name in LOOP_MEMBERS:
            families[name] = "loop"
        elif name in KERNEL_MEMBERS:
            families[name] = "kernel"
    return families


@lru_cache(maxsize=8)
def load(version: str | None = LATEST) -> Surface:
    """The surface of ``version`` (``latest``/empty: the newest); raises UnknownTileLangVersion."""
    known = versions()
    wanted = (version or LATEST).strip()
    if wanted == LATEST:
        wanted = known[-1]
    if wanted not in known:
        raise UnknownTileLangVersion(wanted, list(known))
    data = json.loads(_folder().joinpath(f"{wanted}.json").read_text(encoding="utf-8"))
    members = tuple(dict.fromkeys(data["members"]))
    return Surface(wanted, members, data.get("allocators", {}), data.get("annotations", {}),
                   data.get("operations", {}), _families(members, data))


def resolve(version: str | None) -> tuple[Surface, str | None]:
    """(surface, problem): an unknown version falls back to the newest, and says so."""
    try:
        return load(version), None
    except UnknownTileLangVersion as err:
        return load(LATEST), f"{err}; using {load(LATEST).version}"
