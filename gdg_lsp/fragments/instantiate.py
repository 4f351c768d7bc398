"""τ_Γ: a fragment instantiated for a Γ at one rung, as grammar text.

Every slot becomes the escaped, parenthesised alternation of its query's
answer over Γ (or an open identifier, a fixed expression, context values);
an empty answer raises ``GammaEmptyError`` unless the slot is optional, and
then the derivations that need it are pruned.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.fragments.model import Family, Fragment
from gdg_lsp.gamma import Gamma


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
class Instantiated:
    """τ_Γ's output: the grammar, as a tree and as text, plus what each slot answered.

    ``rules`` is the part built from the template (with each distinct name set
    referenced as a rule of ``sets``): for a given fragment, rung and context it
    is the same whatever the names, and engines compile it once. ``sets`` holds
    the names (the part that is new with each Γ). ``text`` is the whole grammar
    in the template dialect (XGrammar EBNF), rendered on first use.
    """

    fragment: str
    rung: str
    static_text: str
    """``rules`` rendered: the key of everything compiled from them."""
    slot_values: Mapping[str, tuple[str, ...] | str]
    seconds: float
    rules: Mapping[str, ebnf.Expr] = field(default_factory=dict)
    sets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Rule name -> the names it is the alternation of (sorted, unique)."""

    @cached_property
    def text(self) -> str:
        return self.static_text + "".join(f"{rule} ::= {render_alternation(names)}\n" for rule, names in self.sets.items())

    @cached_property
    def key(self) -> str:
        """Identifies the grammar (the same Γ gives the same key) without rendering ``text``."""
        digest = hashlib.sha256(self.static_text.encode("utf-8", "surrogatepass"))
        for rule, names in self.sets.items():
            digest.update(b"\x00" + rule.encode() + b"\x00")
            digest.update("\x01".join(names).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()


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
        return _slot_expr(spec["ebnf"], slot)
    if "identifier" in spec:
        shape = spec["identifier"]
        excluded = _resolve(shape.get("exclude", ()), context)  # "$key": words the hole lists (shell: tool names)
        return _identifier(shape.get("first", "a-zA-Z_"), shape.get("rest", "a-zA-Z0-9_"),
                           tuple(sorted(str(word) for word in excluded)))
    if "names" in spec:
        names = [str(n) for n in spec["names"]]
    elif "context" in spec:
        names = [str(n) for n in context.get(spec["context"], ())]
    else:
        query = {key: _resolve(value, context) for key, value in spec.items() if key != "among"}
        names = gamma.names(**query)
        if "among" in spec:  # a query narrowed to fixed names (an induced pin: the corpus's names)
            among = set(_resolve(spec["among"], context))
            names = [n for n in names if n in among]
    return names or None


@lru_cache(maxsize=256)
def _slot_expr(text: str, slot: str) -> ebnf.Expr:
    """A slot's fixed EBNF (parsed once: the same object each time, which the template cache keys on)."""
    return ebnf.parse(f"x ::= {text}", f"slot %{slot}%")["x"]


@lru_cache(maxsize=32)
def _identifier(first: str, rest: str, exclude: tuple[str, ...]) -> ebnf.Expr:
    return ebnf.identifier_excluding(first, rest, exclude)


@dataclass(frozen=True)
class _Template:
    """The part of an instantiation that only depends on the shape of the slots' answers
    (which are empty, which name sets are equal, which expressions), not on the names."""

    fragment: Fragment
    rules: Mapping[str, ebnf.Expr]
    static_text: str
    set_rule: Mapping[int, str]
    """Distinct name set (by first appearance among the answers) -> its rule."""
    reached: tuple[tuple[tuple[str, int], str], ...]
    """The slots the grammar kept ((slot, member), how explain shows it), in order."""


_TEMPLATES: BoundedCache[tuple, _Template | GammaEmptyError] = BoundedCache("fragments.templates", 512)
"""Templates by fragment, rung and answer shape: a new Γ with the same shape renders only its names."""


def instantiate(fragment: Fragment, rung: str, gamma: Gamma, context: Mapping[str, Any] | None = None) -> Instantiated:
    """τ_Γ: every slot becomes the escaped alternation of its answer.

    Each distinct name set is rendered once, as its own rule, and referenced by
    every slot that has that answer (cheaper to compile; identical sets across
    requests give identical text, which is what the compile cache keys on).
    Family rules are copied once per member (see the module docstring).

    The slots are answered first; the rest (copying, pruning what empty slots
    remove, rendering) depends only on the answers' shape and is kept per shape, so
    a new Γ costs its Γ queries and nothing else.
    """
    began = time.perf_counter()
    context = context or {}
    member_lists: dict[str, list[Mapping[str, Any]]] = {}
    for fam in fragment.families:
        key = fam.members_key(rung)
        members = [m for m in context.get(key, ()) if isinstance(m, Mapping)]
        if not members:
            raise GammaEmptyError(f"family:{fam.name}", f"context list {key!r} has no members")
        member_lists[fam.name] = members
    answers = _answers(fragment, rung, gamma, context, member_lists)
    distinct: dict[tuple[str, ...], int] = {}
    shape = []
    for (slot, member), answer in answers.items():
        if isinstance(answer, GammaEmptyError):
            shape.append((slot, member, "error", str(answer)))
        elif answer is None:
            shape.append((slot, member, "empty"))
        elif isinstance(answer, tuple):
            shape.append((slot, member, "set", distinct.setdefault(answer, len(distinct))))
        else:
            shape.append((slot, member, "expr", id(answer)))
    key = (id(fragment), rung, tuple((fam, len(members)) for fam, members in member_lists.items()), tuple(shape))
    template = _TEMPLATES.get(key)
    if template is None or (isinstance(template, _Template) and template.fragment is not fragment):
        template = _TEMPLATES.put(key, _build(fragment, rung, context, member_lists, answers, distinct))
    if isinstance(template, GammaEmptyError):
        raise template
    names_of = {index: names for names, index in distinct.items()}
    sets = {rule: names_of[index] for index, rule in template.set_rule.items()}
    values: dict[str, tuple[str, ...] | str] = {}
    for pair, shown in template.reached:
        answer = answers[pair]
        values[shown] = () if answer is None else answer if isinstance(answer, tuple) else _shown(answer)  # type: ignore[assignment]
    return Instantiated(fragment.name, rung, template.static_text, values, time.perf_counter() - began,
                        template.rules, sets)


@lru_cache(maxsize=256)
def _shown(expr: ebnf.Expr) -> str:
    return ebnf.render_expr(expr)


def _member_offset(fragment: Fragment, fam: Family, index: int) -> int:
    return 1000 * (fragment.families.index(fam) + 1) + index


def _answers(fragment: Fragment, rung: str, gamma: Gamma, context: Mapping[str, Any],
             member_lists: Mapping[str, list[Mapping[str, Any]]]) -> dict[tuple[str, int], Any]:
    """Every slot's answer, ``(slot, member) -> None | names (sorted, unique) | expression``,
    or the GammaEmptyError it raises (raised only if the grammar keeps the slot)."""
    family_rules = {rule for fam in fragment.families for rule in fam.rules}
    scopes: list[tuple[int, Mapping[str, Any], set[str]]] = [
        (-1, context, {s for name, expr in fragment.rules.items() if name not in family_rules for s in ebnf.slots(expr)})]
    for fam in fragment.families:
        used = {s for name in fam.rules for s in ebnf.slots(fragment.rules[name])}
        for index, member in enumerate(member_lists[fam.name]):
            scopes.append((_member_offset(fragment, fam, index), {**context, **member}, used))
    answers: dict[tuple[str, int], Any] = {}
    for member, scope, used in scopes:
        for slot in (s for s in fragment.slots if s in used):
            try:
                answer = _answer(fragment.slots[slot].spec_for(rung), slot, gamma, scope)
            except GammaEmptyError as err:
                answer = err
            answers[(slot, member)] = tuple(sorted(set(answer))) if isinstance(answer, list) else answer
    return answers


def _build(fragment: Fragment, rung: str, context: Mapping[str, Any], member_lists: Mapping[str, list[Mapping[str, Any]]],
           answers: Mapping[tuple[str, int], Any], distinct: Mapping[tuple[str, ...], int]) -> _Template | GammaEmptyError:
    """Copy the families, put the answers in the slots, prune what empty slots remove, render."""
    set_rules: dict[int, str] = {}
    reached: dict[tuple[str, int], str] = {}

    def replacement(slot_name: str, member: int) -> ebnf.Expr | None:
        answer = answers[(slot_name, member)]
        if isinstance(answer, GammaEmptyError):
            raise answer
        shown = slot_name if member < 0 else f"{slot_name}[{member}]"
        reached.setdefault((slot_name, member), shown)
        if answer is None:
            if not fragment.slots[slot_name].optional:
                raise GammaEmptyError(shown, dict(fragment.slots[slot_name].spec_for(rung)))
            return None
        if isinstance(answer, tuple):
            index = distinct[answer]
            return ebnf.Ref(set_rules.setdefault(index, f"gamma_set_{len(set_rules)}"))
        return answer

    family_of = {rule: fam for fam in fragment.families for rule in fam.rules}

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

    try:
        rules: dict[str, ebnf.Expr | None] = {}
        for name, expr in fragment.rules.items():
            if name in family_of:
                continue
            rules[name] = ebnf.map_leaves(expr, lambda e: replacement(e.name, -1) if isinstance(e, ebnf.Slot) else outside_ref(e))
        for fam in fragment.families:
            for index in range(len(member_lists[fam.name])):
                fix = inside_ref(fam, index)
                offset = _member_offset(fragment, fam, index)
                for name in fam.rules:
                    rules[copy_name(name, index)] = ebnf.map_leaves(
                        fragment.rules[name],
                        lambda e, fix=fix, offset=offset: replacement(e.name, offset) if isinstance(e, ebnf.Slot) else fix(e),
                    )
        try:
            live = ebnf.prune_empty_rules(rules)  # type: ignore[arg-type]
        except GrammarError as err:  # every derivation needed an empty optional slot
            raise GammaEmptyError("root", str(err)) from err
    except GammaEmptyError as err:
        return err
    return _Template(fragment, live, ebnf.render(live), set_rules, tuple(reached.items()))
