"""Fragments, τ_Γ (instantiation) and π (the rung policy).

A language's ``grammars/<language>/manifest.toml`` lists its fragments: a
template file (EBNF with ``%slot%`` atoms), the rungs it offers, and for each
slot what it reads at each rung. A slot spec is one of

- ``{ sort = [...], <attr> = value, ... }``: a query over Γ (``Gamma.names``);
  a value ``"$key"`` is taken from the hole's context;
- ``{ ebnf = "..." }``: a fixed EBNF expression (it may name rules of the template);
- ``{ identifier = { first = "a-zA-Z_", rest = "a-zA-Z0-9_", exclude = [...] } }``:
  an open identifier that is none of the excluded (reserved) words;
- ``{ names = [...] }``: fixed literal alternatives;
- ``{ context = "key" }``: literal alternatives from the hole's context.

A slot marked ``optional = true`` may answer with nothing: the derivations that
need it disappear (``return`` outside a function). Any other empty answer
raises ``GammaEmptyError`` and π climbs one rung.

A manifest may list slot specs once for all its fragments (``[slots.<name>]``);
a fragment's own ``[fragments.<f>.slots.<name>]`` replaces the shared spec. A
fragment may name a ``start`` rule: several fragments then share one template
file, each made of the rules reachable from its start (and only their slots).

A fragment may declare rule *families*: a set of its rules copied once per
member of a list the hole's context supplies (``members``, a context key, or
one key per rung). Each member is a mapping whose entries are looked up
before the hole's context when the copy's slots are answered, so one copy
can read "the columns of this table" while another reads "the columns of that
one". Inside a copy, references to rules of the same family stay inside the
copy; a reference from any other rule to a family rule means "any member's
copy" (an alternation). SQL uses this to keep a select list consistent with
the FROM clause the same suggestion writes after it.

Rungs, tightest first: ``pin`` ⊑ ``ctx`` ⊑ ``gamma`` ⊑ ``base``. A slot without
a spec for a rung uses the next looser rung's spec.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Gamma

RUNGS = ("pin", "ctx", "gamma", "base")
"""All rungs, tightest first."""

CONSTRAINTS = ("none", "syntax", "scope")
"""Values of the ``gdg.constraint`` setting (and the arms of the evaluation)."""


def render_alternation(names: Sequence[str]) -> str:
    """Escaped, parenthesised alternation of ``names`` (sorted, de-duplicated).

    Each name becomes one string literal, so no character of a name can act as
    grammar syntax. Raises ``ValueError`` on an empty set: an empty slot is a
    decision for π, never an empty alternation.
    """
    unique = sorted(set(names))
    if not unique:
        raise ValueError("render_alternation needs at least one name")
    return "(" + " | ".join(ebnf.escape_literal(name) for name in unique) + ")"


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


@dataclass(frozen=True)
class Instantiated:
    """τ_Γ's output: grammar text plus what each slot answered (for explain and checks)."""

    fragment: str
    rung: str
    text: str
    slot_values: Mapping[str, tuple[str, ...] | str]
    seconds: float


def _resolve(value: Any, context: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        key = value[1:]
        if key not in context:
            raise GammaEmptyError(key, f"context value ${key} is not known at this hole")
        return context[key]
    return value


def _answer(spec: Mapping[str, Any], slot: str, gamma: Gamma, context: Mapping[str, Any]) -> ebnf.Expr | list[str] | None:
    """A slot's answer: an EBNF expression, a list of literal names, or None (empty)."""
    if "ebnf" in spec:
        rules = ebnf.parse(f"x ::= {spec['ebnf']}", f"slot %{slot}%")
        return rules["x"]
    if "identifier" in spec:
        shape = spec["identifier"]
        return _identifier(shape.get("first", "a-zA-Z_"), shape.get("rest", "a-zA-Z0-9_"),
                           tuple(shape.get("exclude", ())))
    if "names" in spec:
        names = [str(n) for n in spec["names"]]
    elif "context" in spec:
        names = [str(n) for n in context.get(spec["context"], ())]
    else:
        query = {key: _resolve(value, context) for key, value in spec.items()}
        names = gamma.names(**query)
    return names or None


@lru_cache(maxsize=32)
def _identifier(first: str, rest: str, exclude: tuple[str, ...]) -> ebnf.Expr:
    return ebnf.identifier_excluding(first, rest, exclude)


def instantiate(fragment: Fragment, rung: str, gamma: Gamma, context: Mapping[str, Any] | None = None) -> Instantiated:
    """τ_Γ: every slot becomes the escaped alternation of its answer.

    Each distinct name set is rendered once, as its own rule, and referenced by
    every slot that has that answer (cheaper to compile; identical sets across
    requests give identical text, which is what the compile cache keys on).
    Family rules are copied once per member (see the module docstring).
    """
    began = time.perf_counter()
    context = context or {}
    set_rules: dict[tuple[str, ...], str] = {}
    values: dict[str, tuple[str, ...] | str] = {}
    answers: dict[tuple[str, int], ebnf.Expr | None] = {}

    def replacement(slot_name: str, scope: Mapping[str, Any], member: int) -> ebnf.Expr | None:
        if (slot_name, member) in answers:
            return answers[(slot_name, member)]
        slot = fragment.slots[slot_name]
        answer = _answer(slot.spec_for(rung), slot_name, gamma, scope)
        shown = slot_name if member < 0 else f"{slot_name}[{member}]"
        if answer is None:
            if not slot.optional:
                raise GammaEmptyError(shown, dict(slot.spec_for(rung)))
            result, values[shown] = None, ()
        elif isinstance(answer, list):
            key = tuple(sorted(set(answer)))
            result = ebnf.Ref(set_rules.setdefault(key, f"gamma_set_{len(set_rules)}"))
            values[shown] = key
        else:
            result, values[shown] = answer, ebnf.render_expr(answer)
        answers[(slot_name, member)] = result
        return result

    family_of = {rule: fam for fam in fragment.families for rule in fam.rules}
    member_lists: dict[str, list[Mapping[str, Any]]] = {}
    for fam in fragment.families:
        key = fam.members_key(rung)
        members = [m for m in context.get(key, ()) if isinstance(m, Mapping)]
        if not members:
            raise GammaEmptyError(f"family:{fam.name}", f"context list {key!r} has no members")
        member_lists[fam.name] = members

    def copy_name(rule: str, member: int) -> str:
        return f"{rule}__{family_of[rule].name}_{member}"

    def outside_ref(expr: ebnf.Expr) -> ebnf.Expr:
        # from outside a family, a family rule means any member's copy
        if isinstance(expr, ebnf.Ref) and expr.name in family_of:
            fam = family_of[expr.name]
            copies = tuple(ebnf.Ref(copy_name(expr.name, i)) for i in range(len(member_lists[fam.name])))
            return copies[0] if len(copies) == 1 else ebnf.Alt(copies)
        return expr

    def inside_ref(fam: Family, member: int) -> Callable[[ebnf.Expr], ebnf.Expr]:
        def fix(expr: ebnf.Expr) -> ebnf.Expr:
            if isinstance(expr, ebnf.Ref) and expr.name in family_of:
                if family_of[expr.name] is fam:
                    return ebnf.Ref(copy_name(expr.name, member))
                return outside_ref(expr)
            return expr
        return fix

    rules: dict[str, ebnf.Expr | None] = {}
    for name, expr in fragment.rules.items():
        if name in family_of:
            continue
        rules[name] = ebnf.map_leaves(expr, lambda e: replacement(e.name, context, -1) if isinstance(e, ebnf.Slot) else outside_ref(e))
    for fam in fragment.families:
        for index, member in enumerate(member_lists[fam.name]):
            scope = {**context, **member}
            fix = inside_ref(fam, index)
            offset = 1000 * (fragment.families.index(fam) + 1) + index
            for name in fam.rules:
                rules[copy_name(name, index)] = ebnf.map_leaves(
                    fragment.rules[name],
                    lambda e, scope=scope, fix=fix, offset=offset: (
                        replacement(e.name, scope, offset) if isinstance(e, ebnf.Slot) else fix(e)
                    ),
                )
    try:
        live = ebnf.prune_empty_rules(rules)  # type: ignore[arg-type]
    except GrammarError as err:  # every derivation needed an empty optional slot
        raise GammaEmptyError("root", str(err)) from err
    text = ebnf.render(live) + "".join(
        f"{rule} ::= {render_alternation(names)}\n" for names, rule in set_rules.items()
    )
    return Instantiated(fragment.name, rung, text, values, time.perf_counter() - began)


# -- manifests ---------------------------------------------------------------


@lru_cache(maxsize=None)
def load_fragments(language: str) -> Mapping[str, Fragment]:
    """The fragments of ``grammars/<language>/`` (parsed once per process)."""
    folder = resources.files("gdg_lsp.grammars").joinpath(language)
    manifest_file = folder.joinpath("manifest.toml")
    if not manifest_file.is_file():
        raise GrammarError(f"no grammars for language {language!r} (missing {manifest_file})")
    manifest = tomllib.loads(manifest_file.read_text(encoding="utf-8"))
    shared_slots = manifest.get("slots", {})
    fragments: dict[str, Fragment] = {}
    for name, entry in manifest.get("fragments", {}).items():
        origin = f"grammars/{language}/{entry['file']}"
        rules = ebnf.parse(folder.joinpath(entry["file"]).read_text(encoding="utf-8"), origin)
        parsed = set(rules)
        if start := entry.get("start"):
            # several fragments share one template, each from its own start rule
            if start not in rules:
                raise GrammarError(f"{origin}: start rule {start!r} of fragment {name!r} is not defined")
            rules = {"root": ebnf.Ref(start), **{k: v for k, v in rules.items() if k != "root"}}
        ebnf.check(rules, origin)
        rules = {k: v for k, v in rules.items() if k in ebnf.reachable(rules)}
        rungs = tuple(entry.get("rungs", ("gamma", "base")))
        unknown = set(rungs) - set(RUNGS)
        if unknown:
            raise GrammarError(f"{origin}: unknown rungs {sorted(unknown)}")
        rungs = tuple(r for r in RUNGS if r in rungs)
        slot_specs = {
            slot: SlotSpec(
                slot,
                {k: v for k, v in spec.items() if k in (*RUNGS, "all")},
                bool(spec.get("optional", False)),
            )
            for slot, spec in {**shared_slots, **entry.get("slots", {})}.items()
        }
        used = {s for expr in rules.values() for s in ebnf.slots(expr)}
        if missing := used - set(slot_specs):
            raise GrammarError(f"{origin}: slots {sorted(missing)} have no spec in the manifest")
        families = []
        for fam_name, fam in entry.get("families", {}).items():
            members = fam.get("members")
            members = {"all": members} if isinstance(members, str) else dict(members or {})
            listed = tuple(fam.get("rules", ()))
            if not members or not listed:
                raise GrammarError(f"{origin}: family {fam_name!r} needs `members` and `rules`")
            if unknown := [r for r in listed if r not in parsed]:
                raise GrammarError(f"{origin}: family {fam_name!r} names undefined rules {unknown}")
            fam_rules = tuple(r for r in listed if r in rules)  # those this fragment's start reaches
            if "root" in fam_rules:
                raise GrammarError(f"{origin}: the root rule cannot belong to family {fam_name!r}")
            families.append(Family(fam_name, fam_rules, members))
        if len({r for f in families for r in f.rules}) != sum(len(f.rules) for f in families):
            raise GrammarError(f"{origin}: a rule belongs to two families")
        fragments[name] = Fragment(
            language, name, entry.get("anchor", "Stmt"), rungs, rules,
            {k: v for k, v in slot_specs.items() if k in used}, entry.get("description", ""),
            tuple(families),
        )
    return fragments


def fragment(language: str, name: str) -> Fragment:
    fragments = load_fragments(language)
    if name not in fragments:
        raise GrammarError(f"language {language!r} has no fragment {name!r}")
    return fragments[name]


# -- the policy π ----------------------------------------------------------------


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
    compile_grammar: Callable[[str], Any],
    accepts: Callable[[Any, str], bool],
) -> Choice:
    """π: the tightest rung whose slots are all non-empty and whose grammar accepts
    the text already typed in the region; otherwise one rung up.

    ``compile_grammar`` and ``accepts`` come from the decoder (the same compiled
    object is later used for masking). When no rung fits, ``rung`` is None and
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
            compiled = compile_grammar(grammar.text)
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
