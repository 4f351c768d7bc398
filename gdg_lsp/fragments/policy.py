"""π: the tightest rung of a fragment whose slots are non-empty and whose grammar accepts the typed text."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.fragments.instantiate import Instantiated, instantiate
from gdg_lsp.fragments.model import CONSTRAINTS, Fragment
from gdg_lsp.gamma import Gamma


@dataclass(frozen=True)
class Attempt:
    rung: str
    outcome: str  # chosen | empty-slot | rejects-typed-text | compile-error
    detail: str = ""


@dataclass
class Choice:
    """π's decision: the rung (None for the unconstrained arm) and how it got there."""

    constraint: str
    rung: str | None
    grammar: Instantiated | None = None
    compiled: Any = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def guaranteed(self) -> bool:
        """True when the rung's slots are Γ-slots: every reference position the fragment
        slots is drawn from Γ. Positions a fragment leaves open (a Python attribute after
        a value of unknown type) are reported per statement (``Analyzer.coverage``)."""
        return self.rung in ("pin", "ctx", "gamma")

    def explain(self) -> str:
        lines = [f"constraint={self.constraint}, rung={self.rung or 'none (unconstrained)'}"]
        lines += [f"  {a.rung}: {a.outcome}{' - ' + a.detail if a.detail else ''}" for a in self.attempts]
        return "\n".join(lines)


def rungs_for(constraint: str, fragment: Fragment) -> tuple[str, ...]:
    if constraint == "none":
        return ()
    if constraint == "syntax":
        return tuple(r for r in fragment.rungs if r == "base")
    if constraint == "scope":
        return fragment.rungs
    raise ValueError(f"unknown constraint {constraint!r}; expected one of {', '.join(CONSTRAINTS)}")


def choose(
    fragment: Fragment,
    gamma: Gamma,
    context: Mapping[str, Any],
    typed: str,
    constraint: str,
    compile_grammar: Callable[[Instantiated], Any],
    accepts: Callable[[Any, str], bool],
) -> Choice:
    """π: the tightest rung whose slots are all non-empty and whose grammar accepts
    the text already typed in the region; otherwise one rung up.

    ``compile_grammar`` (given τ_Γ's output) and ``accepts`` come from the grammar
    engine the decoder uses (the same compiled object is later used for masking). When no rung fits, ``rung`` is None and
    the attempts say why; the caller must then not suggest anything under a
    constrained arm.
    """
    choice = Choice(constraint, None)
    for rung in rungs_for(constraint, fragment):
        try:
            grammar = instantiate(fragment, rung, gamma, context)
        except GammaEmptyError as err:
            choice.attempts.append(Attempt(rung, "empty-slot", str(err)))
            continue
        except GrammarError as err:  # optional slots emptied every derivation
            choice.attempts.append(Attempt(rung, "empty-slot", str(err)))
            continue
        try:
            compiled = compile_grammar(grammar)
        except Exception as err:  # an engine error must not take the request down
            choice.attempts.append(Attempt(rung, "compile-error", str(err).splitlines()[0][:200]))
            continue
        if not accepts(compiled, typed):
            choice.attempts.append(Attempt(rung, "rejects-typed-text", repr(typed[-60:])))
            continue
        choice.attempts.append(Attempt(rung, "chosen"))
        choice.rung, choice.grammar, choice.compiled = rung, grammar, compiled
        return choice
    return choice
