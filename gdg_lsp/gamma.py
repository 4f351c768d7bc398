"""Γ: the environment at the cursor.

A persistent global layer (builtins, workspace schemas, API surfaces, included
files) under a stack of lexical frames. Bindings are write-once within a frame:
a later declaration of the same name in the same frame does not change the sort
the frame already recorded (Python rebinding a function name to a value keeps
it a Function as far as Γ is concerned; what matters is that the name exists).

``Gamma.names`` is the only way a grammar slot reads Γ.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gdg_lsp.errors import NestingLimitError

MAX_FRAMES = 32
"""Nesting cap for lexical frames. The 33rd push is refused (NestingLimitError)."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a binding was declared (0-based line and code-point column)."""

    uri: str | None
    line: int
    character: int
    detail: str | None = None

    def describe(self) -> str:
        where = f"line {self.line + 1}, column {self.character + 1}"
        return f"{self.uri}:{where}" if self.uri else where


@dataclass(frozen=True, slots=True)
class Binding:
    name: str
    sort: str
    attrs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    origin: Origin | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.attrs, MappingProxyType):
            object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))


class Frame:
    """One lexical scope's bindings, in declaration order."""

    __slots__ = ("kind", "_bindings")

    def __init__(self, kind: str, bindings: Iterable[Binding] = ()) -> None:
        self.kind = kind
        self._bindings: dict[str, Binding] = {}
        for binding in bindings:
            self.declare(binding)

    def declare(self, binding: Binding) -> Binding:
        """Add ``binding`` unless the name is already bound here; return the binding in force."""
        return self._bindings.setdefault(binding.name, binding)

    def get(self, name: str) -> Binding | None:
        return self._bindings.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._bindings

    def __iter__(self) -> Iterator[Binding]:
        return iter(self._bindings.values())

    def __len__(self) -> int:
        return len(self._bindings)

    def copy(self) -> Frame:
        clone = Frame(self.kind)
        clone._bindings = dict(self._bindings)
        return clone

    def replaced(self, bindings: Iterable[Binding], kind: str | None = None) -> Frame:
        """A copy in which ``bindings`` take the place of those with their names (added at
        the end when a name is new): facts learnt about a name later (Python: the members
        Γ knows of a receiver), without rebuilding the frame binding by binding."""
        clone = self.copy()
        if kind is not None:
            clone.kind = kind
        for binding in bindings:
            clone._bindings[binding.name] = binding
        return clone

    def __repr__(self) -> str:
        return f"Frame({self.kind!r}, {len(self)} bindings)"


def _is_collection(wanted: Any) -> bool:
    return isinstance(wanted, Collection) and not isinstance(wanted, (str, bytes))


def _matches(value: Any, wanted: Any) -> bool:
    if _is_collection(wanted):
        return value in wanted
    return value == wanted


class Gamma:
    """A global layer plus a stack of frames; the innermost binding of a name wins."""

    __slots__ = ("_global", "_frames")

    def __init__(
        self,
        global_layer: Iterable[Binding] | Frame = (),
        frames: Iterable[Frame] = (),
    ) -> None:
        self._global = global_layer if isinstance(global_layer, Frame) else Frame("global", global_layer)
        self._frames: list[Frame] = list(frames)
        if len(self._frames) > MAX_FRAMES:
            raise NestingLimitError(
                f"Γ has {len(self._frames)} nested frames; the limit is {MAX_FRAMES}"
            )

    # -- structure ---------------------------------------------------------

    @property
    def depth(self) -> int:
        return len(self._frames)

    @property
    def frames(self) -> tuple[Frame, ...]:
        return tuple(self._frames)

    @property
    def global_layer(self) -> Frame:
        return self._global

    def push(self, kind: str, bindings: Iterable[Binding] = ()) -> Frame:
        if len(self._frames) >= MAX_FRAMES:
            raise NestingLimitError(
                f"cannot open a {kind} scope: {MAX_FRAMES} nested scopes is the limit"
            )
        frame = Frame(kind, bindings)
        self._frames.append(frame)
        return frame

    def pop(self) -> Frame:
        if not self._frames:
            raise IndexError("pop from a Γ with no frames")
        return self._frames.pop()

    def declare(self, binding: Binding) -> Binding:
        """Declare into the innermost frame (the global layer when there is none)."""
        target = self._frames[-1] if self._frames else self._global
        return target.declare(binding)

    def overlay(self) -> Gamma:
        """A copy whose frames can grow without touching this Γ (the global layer is shared).

        The executor uses it: declarations a suggestion makes go into the overlay,
        never into the analyzer's Γ for the document.
        """
        return Gamma(self._global, [frame.copy() for frame in self._frames])

    # -- queries -----------------------------------------------------------

    def lookup(self, name: str) -> Binding | None:
        for frame in reversed(self._frames):
            if (binding := frame.get(name)) is not None:
                return binding
        return self._global.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.lookup(name) is not None

    def visible(self) -> dict[str, Binding]:
        """Every visible binding, shadowing resolved (innermost wins)."""
        seen: dict[str, Binding] = {}
        for frame in [*reversed(self._frames), self._global]:
            for binding in frame:
                seen.setdefault(binding.name, binding)
        return seen

    def bindings(self, sort: str | Collection[str] | None = None, *, has: str | Collection[str] = (),
                 lacks: str | Collection[str] = (), **attr_filters: Any) -> list[Binding]:
        """Visible bindings of ``sort`` whose attrs match every filter, sorted by name.

        A filter value that is a collection means "any of"; a binding that lacks a
        filtered attribute does not match. ``has`` and ``lacks`` name attributes a
        binding must carry (with any value) or must not carry (Python: a name whose
        members Γ knows is a receiver, one whose members it does not know is not).
        """
        has = (has,) if isinstance(has, str) else tuple(has)
        lacks = (lacks,) if isinstance(lacks, str) else tuple(lacks)
        filtered = bool(has or lacks or attr_filters)
        sorts = None if sort is None else set(sort) if _is_collection(sort) else {sort}  # read once: Γ may hold 10,000 names
        result = []
        for binding in self.visible().values():
            if sorts is not None and binding.sort not in sorts:
                continue
            if filtered and (
                any(key not in binding.attrs for key in has) or any(key in binding.attrs for key in lacks)
                or any(key not in binding.attrs or not _matches(binding.attrs[key], wanted)
                       for key, wanted in attr_filters.items())
            ):
                continue
            result.append(binding)
        result.sort(key=lambda b: b.name)
        return result

    def names(self, sort: str | Collection[str] | None = None, *, has: str | Collection[str] = (),
              lacks: str | Collection[str] = (), **attr_filters: Any) -> list[str]:
        """The contract every grammar slot reads Γ through: sorted, unique names."""
        return [b.name for b in self.bindings(sort, has=has, lacks=lacks, **attr_filters)]

    def by_sort(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for binding in sorted(self.visible().values(), key=lambda b: (b.sort, b.name)):
            grouped.setdefault(binding.sort, []).append(binding.name)
        return grouped

    def __len__(self) -> int:
        return len(self.visible())

    def __repr__(self) -> str:
        return f"Gamma({len(self._global)} global, frames={[f.kind for f in self._frames]})"
