"""Anti-unification: the least general generalization of sibling regions.

Regions are syntax trees (``Term``, made from tree-sitter nodes by
``term_of``). ``generalize`` aligns the trees of a cluster of regions and keeps
what they share:

- a token every region has at that place stays a literal (``PLit``);
- nodes of one type are aligned child by child (``PNode``): children are
  matched on a signature (their field in the parent, else their token text, else
  their type and name) by a longest common subsequence, one region after the
  other; a child some regions lack becomes optional, and neighbouring optional
  children that always occur together form one optional group. This is the
  hedge (sequence) variant of Plotkin's least general generalization: ``f(a)``
  and ``f(a, b)`` generalize to ``f(a, b?)``, not to a variable;
- everything else is a variation point (``PVar``): the regions' subtrees at
  that place, kept whole for ``induce`` to turn into a slot (names bound
  elsewhere), an enumeration (keywords, members, operators) or a small grammar
  of the shapes seen there.

Leaves inside the region's typed prefix (the trigger, such as ``tl.load(``) are
marked ``fixed``: the user typed them, the grammar replays them as literals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 64
"""Deeper trees are cut (the rest of the region is one leaf of its text)."""


@dataclass(frozen=True, slots=True)
class Term:
    """A region's syntax tree, blanks normalized: ``gap`` is "" or " " before the term's first token."""

    type: str
    named: bool
    field: str
    text: str  # a leaf's token text ("" for inner nodes)
    children: tuple[Term, ...] = ()
    gap: str = ""
    fixed: bool = False

    @property
    def leaf(self) -> bool:
        return not self.children

    def render(self, first: bool = True) -> str:
        """The term's text (its own leading gap left out when ``first``)."""
        head = "" if first else self.gap
        if self.leaf:
            return head + self.text
        return head + "".join(child.render(i == 0) for i, child in enumerate(self.children))

    def leaves(self) -> Iterable[Term]:
        if self.leaf:
            yield self
        for child in self.children:
            yield from child.leaves()


def term_of(node: Any, source: bytes, *, atoms: frozenset[str] = frozenset(), fixed_end: int = -1,
            skip: frozenset[str] = frozenset({"comment"})) -> Term:
    """The ``Term`` of a tree-sitter node over ``source`` (bytes).

    ``atoms``: node types kept as one leaf (strings); ``fixed_end``: leaves ending
    at or before this byte are ``fixed``; ``skip``: node types dropped (comments:
    a region's comment is a blank). Blanks between tokens become "" or " "."""
    state = {"last": node.start_byte}

    def leaf_text(n: Any) -> str:
        return source[n.start_byte:n.end_byte].decode("utf-8", "replace")

    def gap_before(n: Any) -> str:
        # blanks, a line break, a skipped comment: all one blank in the region's text
        return " " if n.start_byte > state["last"] else ""

    def walk(n: Any, field_name: str, depth: int) -> Term | None:
        if n.type in skip:
            return None
        gap = gap_before(n)
        kids: list[Term] = []
        if n.child_count and n.type not in atoms and depth < MAX_DEPTH:
            for index, child in enumerate(n.children):
                term = walk(child, n.field_name_for_child(index) or "", depth + 1)
                if term is not None:
                    kids.append(term)
        if not kids:
            state["last"] = n.end_byte
            return Term(n.type, bool(n.is_named), field_name, leaf_text(n), (), gap,
                        fixed=n.end_byte <= fixed_end)
        first = kids[0]
        kids[0] = Term(first.type, first.named, first.field, first.text, first.children, "", first.fixed)
        return Term(n.type, bool(n.is_named), field_name, "", tuple(kids), gap)

    term = walk(node, "", 0)
    assert term is not None
    return Term(term.type, term.named, term.field, term.text, term.children, "", term.fixed)


# -- patterns -------------------------------------------------------------------------


@dataclass
class PLit:
    text: str


@dataclass
class PVar:
    """A variation point: the subtree each region has here (``None``: none of it)."""

    index: int
    context: tuple[str, str]  # (parent type, field or "*")
    values: list[tuple[int, Term]]  # (region index, its term)


@dataclass
class PItem:
    pattern: Pattern
    gaps: set[str]  # blanks seen before it
    regions: set[int]  # the regions that have it


@dataclass
class PGroup:
    items: list[PItem]
    optional: bool


@dataclass
class PNode:
    type: str
    groups: list[PGroup]


Pattern = PLit | PVar | PNode


@dataclass
class Generalization:
    pattern: Pattern
    variables: list[PVar] = field(default_factory=list)


def signature(term: Term) -> str:
    """What aligns children across regions: the field, else the token, else type (and name)."""
    if term.field:
        return "@" + term.field
    if not term.named:
        return "'" + term.text
    for child in term.children:
        if child.field == "name" and child.leaf:
            return f"{term.type}:{child.text}"
    return "*"


def _lcs_pairs(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """2·|LCS| / (|a| + |b|): 1 for equal sequences, 0 for nothing in common."""
    return 2 * len(_lcs_pairs(a, b)) / (len(a) + len(b)) if a or b else 1.0


def align(rows: Sequence[tuple[int, Sequence[Term]]]) -> list[dict[int, Term]]:
    """Columns of children: each maps a region index to its child in that column."""
    columns: list[tuple[str, dict[int, Term]]] = []
    for region, children in rows:
        sigs = [signature(c) for c in children]
        pairs = _lcs_pairs([sig for sig, _ in columns], sigs)
        merged: list[tuple[str, dict[int, Term]]] = []
        ci = si = 0
        for col, child in [*pairs, (len(columns), len(children))]:
            merged.extend(columns[ci:col])
            merged.extend((sigs[k], {region: children[k]}) for k in range(si, child))
            if col < len(columns):
                sig, members = columns[col]
                merged.append((sig, {**members, region: children[child]}))
            ci, si = col + 1, child + 1
        columns = merged
    return [members for _, members in columns]


class _Generalizer:
    def __init__(self, identifiers: frozenset[str]) -> None:
        self.identifiers = identifiers
        self.variables: list[PVar] = []

    def var(self, context: tuple[str, str], values: list[tuple[int, Term]]) -> PVar:
        variable = PVar(len(self.variables), context, values)
        self.variables.append(variable)
        return variable

    def generalize(self, values: list[tuple[int, Term]], context: tuple[str, str]) -> Pattern:
        terms = [t for _, t in values]
        first = terms[0]
        if all(t.fixed for t in terms) and len({t.text for t in terms}) == 1:
            return PLit(first.text)
        if all(t.leaf and t.type == first.type and t.text == first.text for t in terms) \
                and first.type not in self.identifiers:
            return PLit(first.text)  # the same token everywhere (a keyword, `1`, `'inf'`): LGG keeps it
        same = all(t.named and t.type == first.type and not t.leaf for t in terms)
        if not same or first.type in self.identifiers:
            return self.var(context, values)
        regions = {region for region, _ in values}
        groups: list[PGroup] = []
        for members in align([(region, term.children) for region, term in values]):
            column = sorted(members.items())
            kids = [t for _, t in column]
            field_name = kids[0].field or "*"
            item = PItem(self.generalize(column, (first.type, field_name)), {t.gap for t in kids}, set(members))
            optional = set(members) != regions
            if groups and optional and groups[-1].optional and groups[-1].items[-1].regions == set(members):
                groups[-1].items.append(item)
            else:
                groups.append(PGroup([item], optional))
        return PNode(first.type, groups)


def generalize(regions: Sequence[tuple[int, Term]], identifiers: frozenset[str] = frozenset({"identifier"})) -> Generalization:
    """The least general generalization of ``regions`` ((region index, term) pairs).

    ``identifiers``: node types that name things; they are always variation points
    (even where every region has the same name, it may be a reference)."""
    g = _Generalizer(identifiers)
    pattern = g.generalize(list(regions), ("", "root"))
    return Generalization(pattern, g.variables)
