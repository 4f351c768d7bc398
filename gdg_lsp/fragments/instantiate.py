"""τ_Γ: a fragment instantiated for a Γ at one rung, as grammar text.

Every slot becomes the escaped, parenthesised alternation of its query's
answer over Γ (or an open identifier, a fixed expression, context values);
an empty answer raises ``GammaEmptyError`` unless the slot is optional, and
then the derivations that need it are pruned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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
    expr_rules: dict[int, tuple[str, ebnf.Expr, str]] = {}
    """id(answer) -> (rule, expression, its text): an expression answer (an open identifier, a
    fixed EBNF) is one rule referenced by every slot that has it, rendered once (inlined, the
    keyword-excluding identifier was rendered and pruned once per slot: most of τ_Γ's time)."""
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
            known = expr_rules.get(id(answer))
            if known is None:
                known = expr_rules[id(answer)] = (f"gamma_expr_{len(expr_rules)}", answer, ebnf.render_expr(answer))
            result, values[shown] = ebnf.Ref(known[0]), known[2]
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
    ) + "".join(f"{rule} ::= {rendered}\n" for rule, _, rendered in expr_rules.values())
    return Instantiated(fragment.name, rung, text, values, time.perf_counter() - began)
