"""The grammar of what may follow a typed prefix (for engines that start from a rule).

The local decoder replays the text already typed in the region into its
matcher and holds the first tokens to the healed text. A remote engine cannot
be handed a matcher state, only a grammar and a prompt. So the grammar it gets
is rewritten on the tree:

- ``derive(G, p)`` is the Brzozowski derivative of G by the string p: the
  strings w with p·w in L(G). With p = the typed region text, the engine starts
  where the local matcher would be after the replay.
- ``restrict(G, blanks)``: the strings of G that do not start with one of
  ``blanks`` (a region that starts after a line's indentation must not indent
  it again).
- ``request_grammar`` puts them together: ``root ::= "<healed text>" D``, so
  the continuation starts with the backed-off end of the prompt (token
  healing, kept through the grammar: the engine may pick a token that merges
  the healed text with what follows) and then continues as the local matcher
  would have allowed.

Each step is one pass over the expressions that can start the remaining text;
rules reached through a step become new rules (``<rule>_d<k>``), so recursion
(left recursion included) stays a finite grammar. Nullability is a least
fixpoint; rules that derive no finite string are pruned at the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.grammar.dialects import CharSet, parse_class

Expr = ebnf.Expr
_PENDING = object()  # a derived rule whose body is being built


@dataclass(frozen=True)
class _Derive:
    char: str


@dataclass(frozen=True)
class _Restrict:
    forbidden: frozenset[str]


_Op = _Derive | _Restrict


def _seq(items: Iterable[Expr | None]) -> Expr | None:
    out: list[Expr] = []
    for item in items:
        if item is None:
            return None
        if isinstance(item, ebnf.Seq):
            out.extend(item.items)
        else:
            out.append(item)
    if not out:
        return ebnf.EMPTY
    return out[0] if len(out) == 1 else ebnf.Seq(tuple(out))


def _alt(options: Iterable[Expr | None]) -> Expr | None:
    out: list[Expr] = []
    seen: set[Expr] = set()
    for option in options:
        if option is None:
            continue
        for o in option.options if isinstance(option, ebnf.Alt) else (option,):
            if o not in seen:
                seen.add(o)
                out.append(o)
    if not out:
        return None
    return out[0] if len(out) == 1 else ebnf.Alt(tuple(out))


def _repeat(item: Expr, lo: int, hi: int | None) -> Expr:
    if hi == 0:
        return ebnf.EMPTY
    if (lo, hi) == (1, 1):
        return item
    return ebnf.Repeat(item, lo, hi)


BLANKS = frozenset(" \t")

AVOID_BLANKS = 4
"""Leading blanks ``Continuations.avoiding`` looks past (a closer after more is let through)."""


class Continuations:
    """Derivatives and first-character restrictions over one parsed grammar."""

    def __init__(self, rules: dict[str, Expr]) -> None:
        self.rules: dict[str, object] = dict(rules)
        self._origin = {name: name for name in rules}
        self._derived: dict[tuple[str, _Op], str] = {}
        self._nullable: dict[str, bool] = {}
        self._classes: dict[str, CharSet] = {}
        self._counter = 0

    # -- public operations --------------------------------------------------------------

    def derive(self, expr: Expr, text: str) -> Expr | None:
        """The strings w such that text·w is a string of ``expr``; None if there are none."""
        current: Expr | None = expr
        for ch in text:
            if current is None:
                return None
            current = self._step(current, _Derive(ch))
        return current

    def restrict(self, expr: Expr, forbidden: frozenset[str]) -> Expr | None:
        """The strings of ``expr`` that do not start with a character of ``forbidden``."""
        nonempty = self._step(expr, _Restrict(forbidden))
        return _alt([nonempty, ebnf.EMPTY if self.nullable(expr) else None])

    def avoiding(self, expr: Expr, avoid: str, blanks: int = AVOID_BLANKS) -> Expr | None:
        """The strings of ``expr`` whose text, blanks before it aside, does not start with
        ``avoid``'s first character (``DecodeSpec.avoid_start``: a closer the text after the
        cursor already has); up to ``blanks`` leading blanks are followed."""
        first = frozenset(avoid[:1])
        if not first:
            return expr
        options = [self.restrict(expr, BLANKS | first)]
        if blanks:
            for blank in sorted(BLANKS):
                after = self.derive(expr, blank)
                if after is not None:
                    options.append(_seq([ebnf.Lit(blank), self.avoiding(after, avoid, blanks - 1)]))
        return _alt(options)

    def after(self, typed: str, heal: str, no_blank_start: bool, avoid_start: str = "") -> Expr:
        """What a region's generation may be once ``typed`` is in (see ``request_grammar``).
        Raises GrammarError when nothing can follow ``typed``."""
        rest = self.derive(ebnf.Ref("root"), typed)
        if rest is not None and no_blank_start:
            rest = self.restrict(rest, BLANKS)
        if rest is None:
            raise GrammarError(f"the grammar allows nothing after the typed text {typed[-60:]!r}")
        if avoid_start:  # where only the avoided text can come, the local decode ends there too
            rest = self.avoiding(rest, avoid_start) or rest
        return _seq([ebnf.Lit(heal), rest]) if heal else rest  # type: ignore[return-value]

    def nullable(self, expr: Expr) -> bool:
        return self._nullable_expr(expr, {})

    def grammar(self, root: Expr) -> dict[str, Expr]:
        """A standalone grammar whose ``root`` is ``root``: the rules it reaches,
        pruned of those that derive no finite string."""
        reached: set[str] = set()
        stack = list(ebnf.references(root))
        while stack:
            name = stack.pop()
            if name in reached:
                continue
            reached.add(name)
            body = self.rules[name]
            if body is not None:
                stack.extend(ebnf.references(body))  # type: ignore[arg-type]
        rename: dict[str, str] = {}
        if "root" in reached:  # the original root is used inside: it needs another name
            fresh = "root_"
            while fresh in self.rules:
                fresh += "_"
            rename = {"root": fresh}
        candidate: dict[str, Expr | None] = {
            rename.get(n, n): (None if self.rules[n] is None else _rename(self.rules[n], rename))  # type: ignore[arg-type]
            for n in reached
        }
        candidate["root"] = _rename(root, rename)
        productive = _productive(candidate)
        if "root" not in productive:
            raise GrammarError("the grammar matches nothing after the typed text")
        live = {n: _prune_dead(b, productive) for n, b in candidate.items() if n in productive}
        return {n: live[n] for n in ebnf.reachable(live, "root")}  # type: ignore[misc]

    # -- one step ----------------------------------------------------------------------

    def _step(self, expr: Expr, op: _Op) -> Expr | None:
        if isinstance(expr, ebnf.Lit):
            if not expr.text:
                return None
            if isinstance(op, _Derive):
                if expr.text[0] != op.char:
                    return None
                return ebnf.Lit(expr.text[1:]) if len(expr.text) > 1 else ebnf.EMPTY
            return None if expr.text[0] in op.forbidden else expr
        if isinstance(expr, ebnf.CharClass):
            charset = self._charset(expr.source)
            if isinstance(op, _Derive):
                return ebnf.EMPTY if op.char in charset else None
            narrowed = charset.without(c for c in op.forbidden if c in charset)
            if narrowed == charset:
                return expr
            return None if narrowed.empty else ebnf.CharClass(narrowed.source())
        if isinstance(expr, ebnf.Ref):
            name = self._rule(expr.name, op)
            return None if self.rules[name] is None else ebnf.Ref(name)
        if isinstance(expr, ebnf.Seq):
            options: list[Expr | None] = []
            for i, item in enumerate(expr.items):
                first = self._step(item, op)
                if first is not None:
                    options.append(_seq([first, *expr.items[i + 1 :]]))
                if not self.nullable(item):
                    break
            return _alt(options)
        if isinstance(expr, ebnf.Alt):
            return _alt(self._step(option, op) for option in expr.options)
        if isinstance(expr, ebnf.Repeat):
            if expr.max == 0:
                return None
            first = self._step(expr.item, op)
            if first is None:
                return None
            rest = _repeat(expr.item, max(expr.min - 1, 0), None if expr.max is None else expr.max - 1)
            return _seq([first, rest])
        if isinstance(expr, ebnf.Slot):
            raise GrammarError(f"slot %{expr.name}% in a grammar to rewrite (instantiate it first)")
        raise TypeError(expr)

    def _rule(self, name: str, op: _Op) -> str:
        key = (name, op)
        if (known := self._derived.get(key)) is not None:
            return known
        if name not in self.rules:
            raise GrammarError(f"the grammar uses undefined rule {name!r}")
        body = self.rules[name]
        if body is _PENDING:  # cannot happen: a step only reads rules of earlier steps
            raise GrammarError(f"rule {name!r} is read while it is being built")
        origin = self._origin[name]
        self._counter += 1
        new = f"{origin}_d{self._counter}"
        while new in self.rules:
            self._counter += 1
            new = f"{origin}_d{self._counter}"
        self._derived[key] = new
        self._origin[new] = origin
        self.rules[new] = _PENDING
        self.rules[new] = None if body is None else self._step(body, op)  # type: ignore[arg-type]
        return new

    def _charset(self, source: str) -> CharSet:
        if (known := self._classes.get(source)) is None:
            known = self._classes[source] = parse_class(source)
        return known

    # -- nullability ---------------------------------------------------------------------

    def _nullable_expr(self, expr: Expr, assume: dict[str, bool]) -> bool:
        if isinstance(expr, ebnf.Lit):
            return not expr.text
        if isinstance(expr, ebnf.CharClass):
            return False
        if isinstance(expr, ebnf.Ref):
            if expr.name in assume:
                return assume[expr.name]
            return self._nullable_rule(expr.name)
        if isinstance(expr, ebnf.Seq):
            return all(self._nullable_expr(item, assume) for item in expr.items)
        if isinstance(expr, ebnf.Alt):
            return any(self._nullable_expr(option, assume) for option in expr.options)
        if isinstance(expr, ebnf.Repeat):
            return expr.min == 0 or self._nullable_expr(expr.item, assume)
        raise TypeError(expr)

    def _nullable_rule(self, name: str) -> bool:
        if (known := self._nullable.get(name)) is not None:
            return known
        group: list[str] = []
        seen: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen or current in self._nullable:
                continue
            seen.add(current)
            group.append(current)
            body = self.rules.get(current)
            if body is _PENDING:
                raise GrammarError(f"rule {current!r} is read while it is being built")
            if body is not None:
                stack.extend(ebnf.references(body))  # type: ignore[arg-type]
        assume = dict.fromkeys(group, False)
        changed = True
        while changed:  # least fixpoint: a rule becomes nullable once one option is
            changed = False
            for current in group:
                body = self.rules.get(current)
                if not assume[current] and body is not None and self._nullable_expr(body, assume):  # type: ignore[arg-type]
                    assume[current] = True
                    changed = True
        self._nullable.update(assume)
        return self._nullable[name]


def _rename(expr: Expr, names: dict[str, str]) -> Expr:
    if not names:
        return expr
    if isinstance(expr, ebnf.Ref):
        return ebnf.Ref(names.get(expr.name, expr.name))
    if isinstance(expr, ebnf.Repeat):
        return ebnf.Repeat(_rename(expr.item, names), expr.min, expr.max)
    if isinstance(expr, ebnf.Seq):
        return ebnf.Seq(tuple(_rename(item, names) for item in expr.items))
    if isinstance(expr, ebnf.Alt):
        return ebnf.Alt(tuple(_rename(option, names) for option in expr.options))
    return expr


def _prune_dead(expr: Expr | None, alive: set[str]) -> Expr | None:
    """``expr`` without the options that need a rule outside ``alive``."""
    if expr is None:
        return None
    if isinstance(expr, ebnf.Ref):
        return expr if expr.name in alive else None
    if isinstance(expr, ebnf.Repeat):
        inner = _prune_dead(expr.item, alive)
        if inner is None:
            return None if expr.min > 0 else ebnf.EMPTY
        return ebnf.Repeat(inner, expr.min, expr.max)
    if isinstance(expr, ebnf.Seq):
        return _seq(_prune_dead(item, alive) for item in expr.items)
    if isinstance(expr, ebnf.Alt):
        return _alt(_prune_dead(option, alive) for option in expr.options)
    return expr


def _productive(rules: dict[str, Expr | None]) -> set[str]:
    """Rules that derive at least one finite string (least fixpoint)."""
    done: set[str] = set()

    def derives(expr: Expr) -> bool:
        if isinstance(expr, (ebnf.Lit, ebnf.CharClass)):
            return True
        if isinstance(expr, ebnf.Ref):
            return expr.name in done
        if isinstance(expr, ebnf.Seq):
            return all(derives(item) for item in expr.items)
        if isinstance(expr, ebnf.Alt):
            return any(derives(option) for option in expr.options)
        if isinstance(expr, ebnf.Repeat):
            return expr.min == 0 or derives(expr.item)
        return False

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in done and body is not None and derives(body):
                done.add(name)
                changed = True
    return done


def request_grammar(rules: dict[str, Expr], typed: str, heal: str, no_blank_start: bool,
                    avoid_start: str = "") -> dict[str, Expr]:
    """The grammar to send for one region.

    ``typed``: region text the local matcher would already have consumed (the
    replay plus the part of the healed text inside the region). ``heal``: the
    text the continuation must start with (the backed-off end of the prompt).
    ``no_blank_start``: the region is empty so far and must not start with a
    blank. ``avoid_start``: what the generation after ``heal`` may not start with,
    blanks aside (``Continuations.avoiding``). Raises GrammarError when nothing can
    follow ``typed``.
    """
    algebra = Continuations(rules)
    return algebra.grammar(algebra.after(typed, heal, no_blank_start, avoid_start))
