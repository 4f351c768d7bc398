"""What a fragment is: a template with slots, the rungs it offers, what each slot reads at each rung.

Rungs, tightest first: ``pin`` ⊑ ``ctx`` ⊑ ``gamma`` ⊑ ``base``. A slot without
a spec for a rung uses the next looser rung's spec (see manifest.py for the
file format these are loaded from).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf

RUNGS = ("pin", "ctx", "gamma", "base")
"""All rungs, tightest first."""

CONSTRAINTS = ("none", "syntax", "scope")
"""Values of the ``gdg.constraint`` setting (and the arms of the evaluation)."""


@dataclass(frozen=True)
class SlotSpec:
    name: str
    per_rung: Mapping[str, Mapping[str, Any]]
    optional: bool = False

    def spec_for(self, rung: str) -> Mapping[str, Any]:
        for candidate in RUNGS[RUNGS.index(rung) :]:
            if candidate in self.per_rung:
                return self.per_rung[candidate]
        if "all" in self.per_rung:
            return self.per_rung["all"]
        raise GrammarError(f"slot %{self.name}% has no spec for rung {rung!r}")


@dataclass(frozen=True)
class Family:
    """Rules instantiated once per member of a context list (see the module docstring)."""

    name: str
    rules: tuple[str, ...]
    members: Mapping[str, str]  # rung (or "all") -> context key holding the member list

    def members_key(self, rung: str) -> str:
        for candidate in RUNGS[RUNGS.index(rung) :]:
            if candidate in self.members:
                return self.members[candidate]
        if "all" in self.members:
            return self.members["all"]
        raise GrammarError(f"family {self.name!r} has no members for rung {rung!r}")


@dataclass(frozen=True)
class Fragment:
    language: str
    name: str
    anchor: str
    rungs: tuple[str, ...]  # tightest first
    rules: Mapping[str, ebnf.Expr]
    slots: Mapping[str, SlotSpec]
    description: str = ""
    families: tuple[Family, ...] = ()
