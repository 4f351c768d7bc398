"""TemplateInductor: a fragment and its ladder from a corpus's sibling regions.

Input: the regions of one hole kind (``Site``: the region's syntax tree, the Γ
the language's analyzer sees where it starts, the file it is in). Output: a
fragment file (``fileformat.FragmentFile``) and what the gate needs to judge
it. The steps:

1. **Cluster** the regions by shape (their signatures two levels down);
   clusters of one node type are merged when the proposer scores the pair at
   least ``merge_threshold`` (default: structural similarity; a model can rank
   them instead, ``ModelProposer``). A merge is only a proposal: the gate
   decides whether the result is used.
2. **Anti-unify** each cluster (``antiunify.generalize``): a skeleton of
   what the regions share, with variation points.
3. **Mark references.** An identifier position is a reference position when
   at least half of the names seen there are bound in their region's Γ
   (pooled by the syntactic position: parent node type and field), unless the
   language says that position never references (a keyword argument's name, a
   member after a dot: ``Syntax.not_references``). Each reference position
   becomes a Γ slot; a name the analyzer cannot resolve there makes its region
   *unresolved* (reported, not a positive, not covered).
4. **Render** variation points: reference positions as slots, other
   identifiers, operators and keywords as the alternatives seen, literals as a
   character class, and mixed subtrees as a small grammar of the shapes seen
   there (one production per node type and child sequence, recursive through
   the node types; each variation point has its own rules, so a pointer's
   names and a mask's names stay in different slots).
5. **Ladder.** Each slot reads, tightest first:
   ``pin``: the ``ctx`` answer narrowed to the names the corpus used there;
   ``ctx``: the sorts seen there, filtered on up to ``max_attrs`` attributes
   whose values seen there generalize (every file's values also occur in the
   other files: leave-one-file-out) and exclude some bindings of those sorts;
   ``gamma``: every name of the sorts seen there; ``base``: an open identifier.
   Each rung's slot answer contains the next tighter one's, so the languages
   nest and free_bits can only fall as one tightens.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from gdg_lsp.fragments import ebnf
from gdg_lsp.fragments.antiunify import (
    Generalization,
    PItem,
    PLit,
    PNode,
    PVar,
    Term,
    generalize,
    signature,
    similarity,
)
from gdg_lsp.fragments.fileformat import Example, FragmentFile, HoleSpec
from gdg_lsp.fragments.model import Fragment, SlotSpec
from gdg_lsp.gamma import Binding, Gamma

ENUM_MAX = 8
"""Literal leaves with at most this many distinct texts stay an enumeration; more become a class."""
REFERENCE_SHARE = 0.5
LOFO_SHARE = 0.9


@dataclass(frozen=True)
class Syntax:
    """What the inductor knows about the language's trees (beyond the trees)."""

    identifiers: frozenset[str] = frozenset({"identifier"})
    not_references: frozenset[str] = frozenset()
    """``parent_type.field`` positions whose identifiers never reference (keyword names, members)."""
    keywords: tuple[str, ...] = ()
    atoms: frozenset[str] = frozenset()
    """Node types kept whole (strings)."""


PYTHON_SYNTAX = Syntax(
    not_references=frozenset({"keyword_argument.name", "attribute.attribute", "function_definition.name",
                              "class_definition.name", "default_parameter.name", "typed_parameter.*",
                              "typed_default_parameter.name", "parameters.*", "lambda_parameters.*",
                              "dotted_name.*", "aliased_import.alias", "import_from_statement.*"}),
    keywords=("False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
              "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in",
              "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"),
    atoms=frozenset({"string", "concatenated_string"}),
)
"""tree-sitter-python's trees (Python, TileLang, Triton and other Python-syntax surfaces)."""


@dataclass(frozen=True)
class Site:
    """One region of the hole kind: its tree, and Γ where it starts."""

    where: str
    term: Term
    gamma: Gamma
    file: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.term.render()


@dataclass(frozen=True)
class Reference:
    start: int
    end: int
    name: str
    binding: Binding | None


@dataclass(frozen=True)
class Candidate:
    """Two clusters the inductor could merge, with an example text of each."""

    a: str
    b: str
    similarity: float


class Proposer(Protocol):
    def score(self, candidates: Sequence[Candidate]) -> list[float]:
        """A score in [0, 1] per candidate merge; merges at or above the threshold are made."""


class StructuralProposer:
    """Merge clusters whose shapes are alike (the default)."""

    def score(self, candidates: Sequence[Candidate]) -> list[float]:
        return [c.similarity for c in candidates]


@dataclass
class SlotStats:
    name: str
    context: tuple[str, str]
    observations: list[tuple[int, str, Binding | None]] = field(default_factory=list)
    """(site index, name, its binding or None when Γ does not have it)."""


@dataclass
class Induction:
    file: FragmentFile
    sites: list[Site]
    clusters: list[list[int]]
    slots: dict[str, SlotStats]
    reference_contexts: set[tuple[str, str]]
    unresolved: dict[int, list[str]]
    """Site index -> names at reference positions that its Γ lacks."""

    syntax_identifiers: frozenset[str] = frozenset({"identifier"})

    def references(self, index: int) -> list[Reference]:
        return references(self.sites[index], self.reference_contexts, self.syntax_identifiers)

    @property
    def positives(self) -> list[int]:
        return [i for i in range(len(self.sites)) if i not in self.unresolved]


# -- reference positions ---------------------------------------------------------------


def _walk(term: Term, parent: str = "", offset: int = 0, first: bool = True):
    """(leaf, (parent type, field), start offset in the rendered text) for every leaf."""
    if not first:
        offset += len(term.gap)
    if term.leaf:
        yield term, (parent, term.field or "*"), offset
        return
    for index, child in enumerate(term.children):
        yield from _walk(child, term.type, offset, index == 0)
        offset += len(child.render(index == 0))


def reference_contexts(sites: Sequence[Site], syntax: Syntax) -> set[tuple[str, str]]:
    """Positions (parent type, field) whose identifiers are names bound elsewhere."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for site in sites:
        for leaf, key, _ in _walk(site.term):
            if leaf.type not in syntax.identifiers or leaf.fixed or f"{key[0]}.{key[1]}" in syntax.not_references:
                continue
            counts[key][1] += 1
            counts[key][0] += site.gamma.lookup(leaf.text) is not None
    return {key for key, (bound, total) in counts.items() if bound >= REFERENCE_SHARE * total}


def references(site: Site, contexts: set[tuple[str, str]], identifiers: frozenset[str]) -> list[Reference]:
    """The reference positions of a region's text."""
    return [Reference(start, start + len(leaf.text), leaf.text, site.gamma.lookup(leaf.text))
            for leaf, key, start in _walk(site.term)
            if leaf.type in identifiers and not leaf.fixed and key in contexts]


# -- clustering ---------------------------------------------------------------------------


def _shape(term: Term, depth: int = 2) -> tuple:
    if depth == 0 or term.leaf:
        return (signature(term),)
    return (term.type, tuple(_shape(c, depth - 1) for c in term.children))


def _flat(term: Term, depth: int = 3) -> list[str]:
    out = [term.type if term.named else term.text]
    if depth and not term.leaf:
        for child in term.children:
            out += _flat(child, depth - 1)
    return out


def cluster(sites: Sequence[Site], proposer: Proposer, threshold: float) -> list[list[int]]:
    groups: dict[tuple, list[int]] = {}
    for index, site in enumerate(sites):
        groups.setdefault(_shape(site.term), []).append(index)
    clusters = list(groups.values())
    parent = list(range(len(clusters)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pairs = [(i, j) for i in range(len(clusters)) for j in range(i + 1, len(clusters))
             if sites[clusters[i][0]].term.type == sites[clusters[j][0]].term.type]
    candidates = [Candidate(sites[clusters[i][0]].text, sites[clusters[j][0]].text,
                            similarity(_flat(sites[clusters[i][0]].term), _flat(sites[clusters[j][0]].term)))
                  for i, j in pairs]
    scores = proposer.score(candidates) if candidates else []
    for (i, j), score in sorted(zip(pairs, scores), key=lambda p: -p[1]):
        if score >= threshold:
            parent[find(j)] = find(i)
    merged: dict[int, list[int]] = {}
    for index, members in enumerate(clusters):
        merged.setdefault(find(index), []).extend(members)
    return [sorted(m) for m in sorted(merged.values(), key=lambda m: (-len(m), m[0]))]


# -- rendering -----------------------------------------------------------------------------


def _rule_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"


def _class_source(chars: set[str]) -> str:
    out = []
    for ch in sorted(chars):
        out.append("\\" + ch if ch in "]\\^-" else (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 else ch))
    return "[" + "".join(out) + "]"


def _gap(gaps: set[str]) -> ebnf.Expr | None:
    if gaps == {""}:
        return None
    if gaps == {" "}:
        return ebnf.Lit(" ")
    return ebnf.Repeat(ebnf.Lit(" "), 0, 1)


def _seq(items: list[ebnf.Expr]) -> ebnf.Expr:
    """A sequence, its adjacent literals joined ("tl" "." "load" is "tl.load")."""
    out: list[ebnf.Expr] = []
    for item in items:
        if item == ebnf.EMPTY:
            continue
        if isinstance(item, ebnf.Seq):
            item = _seq(list(item.items))
            if isinstance(item, ebnf.Seq):
                for inner in item.items:
                    _push(out, inner)
                continue
        _push(out, item)
    if not out:
        return ebnf.EMPTY
    return out[0] if len(out) == 1 else ebnf.Seq(tuple(out))


def _push(out: list[ebnf.Expr], item: ebnf.Expr) -> None:
    if out and isinstance(out[-1], ebnf.Lit) and isinstance(item, ebnf.Lit):
        out[-1] = ebnf.Lit(out[-1].text + item.text)
    else:
        out.append(item)


def _alt(options: list[ebnf.Expr]) -> ebnf.Expr:
    unique = list(dict.fromkeys(options))
    return unique[0] if len(unique) == 1 else ebnf.Alt(tuple(unique))


class _Renderer:
    def __init__(self, sites: Sequence[Site], syntax: Syntax, contexts: set[tuple[str, str]]) -> None:
        self.sites = sites
        self.syntax = syntax
        self.contexts = contexts
        self.rules: dict[str, ebnf.Expr] = {}
        self.slots: dict[str, SlotStats] = {}
        self._slot_keys: dict[tuple, str] = {}

    # leaves ------------------------------------------------------------------------------

    def slot(self, key: tuple, context: tuple[str, str], values: Sequence[tuple[int, str]]) -> ebnf.Expr:
        name = self._slot_keys.get(key)
        if name is None:
            name = self._slot_keys[key] = f"ref_{len(self._slot_keys) + 1}"
            self.slots[name] = SlotStats(name, context)
        stats = self.slots[name]
        for region, text in values:
            stats.observations.append((region, text, self.sites[region].gamma.lookup(text)))
        return ebnf.Slot(name)

    def identifiers(self, key: tuple, context: tuple[str, str], values: Sequence[tuple[int, str]]) -> ebnf.Expr:
        if context in self.contexts:
            return self.slot(key, context, values)
        return _alt([ebnf.Lit(text) for text in sorted({t for _, t in values})])

    @staticmethod
    def atoms(texts: set[str]) -> ebnf.Expr:
        if len(texts) <= ENUM_MAX:
            return _alt([ebnf.Lit(t) for t in sorted(texts)])
        quotes = {t[0] for t in texts if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'"}
        if quotes and all(len(t) >= 2 and t[0] == t[-1] and t[0] in quotes for t in texts):
            return _alt([ebnf.Seq((ebnf.Lit(q), ebnf.Repeat(ebnf.CharClass(f"[^{q}\\\\\\n]"), 0, 64),
                                   ebnf.Lit(q))) for q in sorted(quotes)])
        chars = set("".join(texts))
        if chars & set("0123456789"):
            chars |= set("0123456789")
        longest = max(len(t) for t in texts)
        return ebnf.Repeat(ebnf.CharClass(_class_source(chars)), 1, min(max(2 * longest, 8), 32))

    # variation points --------------------------------------------------------------------

    def variable(self, var: PVar, prefix: str) -> ebnf.Expr:
        terms = [t for _, t in var.values]
        if all(t.leaf and t.type in self.syntax.identifiers for t in terms):
            return self.identifiers(("skeleton", prefix, var.index), var.context,
                                    [(r, t.text) for r, t in var.values])
        if all(t.leaf and not t.named for t in terms):
            return _alt([ebnf.Lit(t) for t in sorted({t.text for t in terms})])
        if all(t.leaf for t in terms) and not any(t.type in self.syntax.identifiers for t in terms):
            return self.atoms({t.text for t in terms})
        return _Treebank(self, f"{prefix}v{var.index}").root(var.context, var.values)

    def pattern(self, pattern: PNode | PLit | PVar, prefix: str) -> ebnf.Expr:
        if isinstance(pattern, PLit):
            return ebnf.Lit(pattern.text)
        if isinstance(pattern, PVar):
            return self.variable(pattern, prefix)
        parts: list[ebnf.Expr] = []
        for group in pattern.groups:
            inner = _seq([self.item(item, prefix) for item in group.items])
            parts.append(ebnf.Repeat(inner, 0, 1) if group.optional else inner)
        return _seq(parts)

    def item(self, item: PItem, prefix: str) -> ebnf.Expr:
        gap = _gap(item.gaps)
        body = self.pattern(item.pattern, prefix)
        return _seq([gap, body]) if gap is not None else body


class _Treebank:
    """The shapes seen at one variation point, as rules: per node type its child sequences,
    per (parent type, field) the node types seen there."""

    def __init__(self, renderer: _Renderer, prefix: str) -> None:
        self.r = renderer
        self.prefix = prefix
        self.at: dict[tuple[str, str], set[str]] = defaultdict(set)  # context -> node types
        self.productions: dict[str, dict[tuple, list[set[str]]]] = defaultdict(dict)  # type -> shape -> gaps
        self.leaves: dict[tuple[tuple[str, str], str], list[tuple[int, str]]] = defaultdict(list)

    def nonterminal(self, context: tuple[str, str]) -> str:
        return f"{self.prefix}_{_rule_name(context[0] or 'top')}_{_rule_name(context[1])}"

    def observe(self, region: int, term: Term, context: tuple[str, str]) -> None:
        self.at[context].add(term.type)
        if term.leaf:
            self.leaves[(context, term.type)].append((region, term.text))
            return
        shape = []
        for child in term.children:
            if child.named:
                sub = (term.type, child.field or "*")
                shape.append(("sub", sub))
                self.observe(region, child, sub)
            else:
                shape.append(("lit", child.text))
        gaps = self.productions[term.type].setdefault(tuple(shape), [set() for _ in term.children])
        for slot_gaps, child in zip(gaps, term.children):
            slot_gaps.add(child.gap)

    def root(self, context: tuple[str, str], values: Sequence[tuple[int, Term]]) -> ebnf.Expr:
        for region, term in values:
            self.observe(region, term, context)
        for ctx in list(self.at):
            self.r.rules[self.nonterminal(ctx)] = self.context_rule(ctx)
        for node_type, shapes in self.productions.items():
            options = []
            for shape, gaps in shapes.items():
                parts: list[ebnf.Expr] = []
                for index, ((kind, payload), seen) in enumerate(zip(shape, gaps)):
                    gap = _gap(seen) if index else None
                    if gap is not None:
                        parts.append(gap)
                    parts.append(ebnf.Lit(payload) if kind == "lit" else ebnf.Ref(self.nonterminal(payload)))
                options.append(_seq(parts))
            self.r.rules[f"{self.prefix}_{_rule_name(node_type)}_node"] = _alt(options)
        return ebnf.Ref(self.nonterminal(context))

    def context_rule(self, context: tuple[str, str]) -> ebnf.Expr:
        options = []
        for node_type in sorted(self.at[context]):
            leaves = self.leaves.get((context, node_type))
            if node_type in self.productions:
                options.append(ebnf.Ref(f"{self.prefix}_{_rule_name(node_type)}_node"))
            if leaves:
                if node_type in self.r.syntax.identifiers:
                    options.append(self.r.identifiers((self.prefix, context), context, leaves))
                else:
                    options.append(self.r.atoms({text for _, text in leaves}))
        return _alt(options)


# -- the ladder ----------------------------------------------------------------------------


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def ladder(stats: SlotStats, sites: Sequence[Site], syntax: Syntax, max_attrs: int = 2,
           fallback_sorts: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The slot's spec per rung (see the module docstring)."""
    bound = [(region, name, b) for region, name, b in stats.observations if b is not None]
    sorts = sorted({b.sort for _, _, b in bound}) or sorted(fallback_sorts)
    names = sorted({name for _, name, _ in bound})
    base = {"identifier": {"first": "a-zA-Z_", "rest": "a-zA-Z0-9_", "exclude": list(syntax.keywords)}}
    gamma = {"sort": sorts}
    chosen = choose_attrs(bound, sites, sorts, max_attrs)
    ctx = {"sort": sorts, **{attr: values for attr, values in chosen}}
    pin = {**ctx, "among": names} if names else dict(ctx)
    return {"pin": pin, "ctx": ctx, "gamma": gamma, "base": base}


def choose_attrs(bound: Sequence[tuple[int, str, Binding]], sites: Sequence[Site], sorts: Sequence[str],
                 max_attrs: int) -> list[tuple[str, list[Any]]]:
    """Attributes whose values seen at a slot generalize across files and narrow its sorts' bindings."""
    if not bound:
        return []
    keys = set.intersection(*({k for k, v in b.attrs.items() if _scalar(v)} for _, _, b in bound))
    domain: list[Binding] = []
    seen_gammas: set[int] = set()
    for site in sites:
        if id(site.gamma) in seen_gammas:
            continue
        seen_gammas.add(id(site.gamma))
        domain += [b for b in site.gamma.visible().values() if b.sort in sorts]
    scored = []
    for key in sorted(keys):
        values = {b.attrs[key] for _, _, b in bound}
        if not domain:
            continue
        excluded = sum(1 for b in domain if b.attrs.get(key, _MISSING) not in values) / len(domain)
        if excluded <= 0:
            continue
        by_file: dict[str, set] = defaultdict(set)
        counts: Counter = Counter()
        for region, _, b in bound:
            by_file[sites[region].file].add(b.attrs[key])
            counts[sites[region].file] += 1
        if len(by_file) < 2:
            continue
        kept = sum(counts[f] for f, vals in by_file.items()
                   if vals <= set().union(*(v for g, v in by_file.items() if g != f)))
        if kept / sum(counts.values()) >= LOFO_SHARE:
            scored.append((excluded, key, sorted(values, key=str)))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [(key, values) for _, key, values in scored[:max_attrs]]


_MISSING = object()


# -- the whole ----------------------------------------------------------------------------


@dataclass
class Options:
    language: str
    name: str
    kind: str = ""
    triggers: tuple[str, ...] = ()
    anchor: str = "Hole"
    description: str = ""
    merge_threshold: float = 0.5
    max_attrs: int = 2
    examples: int = 12
    provenance: Mapping[str, Any] = field(default_factory=dict)
    language_table: Mapping[str, Any] | None = None


def induce(sites: Sequence[Site], syntax: Syntax, options: Options, proposer: Proposer | None = None) -> Induction:
    if not sites:
        raise ValueError("no regions of this kind in the corpus")
    sites = list(sites)
    contexts = reference_contexts(sites, syntax)
    groups = cluster(sites, proposer or StructuralProposer(), options.merge_threshold)
    renderer = _Renderer(sites, syntax, contexts)
    alternatives = []
    for number, members in enumerate(groups):
        general: Generalization = generalize([(i, sites[i].term) for i in members], syntax.identifiers)
        prefix = f"c{number}" if len(groups) > 1 else "c"
        alternatives.append(renderer.pattern(general.pattern, prefix))
    rules = {"root": _alt(alternatives), **renderer.rules}
    pooled: dict[tuple[str, str], set[str]] = defaultdict(set)
    for stats in renderer.slots.values():
        pooled[stats.context] |= {b.sort for _, _, b in stats.observations if b is not None}
    slots = {}
    for name, stats in renderer.slots.items():
        per_rung = ladder(stats, sites, syntax, options.max_attrs, sorted(pooled[stats.context]))
        # optional: a slot Γ cannot fill here removes the alternatives that need it, not the rung
        slots[name] = SlotSpec(name, MappingProxyType(per_rung), optional=True)
    unresolved: dict[int, list[str]] = {}
    for index, site in enumerate(sites):
        missing = [r.name for r in references(site, contexts, syntax.identifiers) if r.binding is None]
        if missing:
            unresolved[index] = missing
    fragment = Fragment(options.language, options.name, options.anchor, ("pin", "ctx", "gamma", "base"),
                        rules, slots, options.description)
    induction = Induction(FragmentFile(fragment, ebnf.render(rules)), sites, groups, renderer.slots, contexts,
                          unresolved, syntax.identifiers)
    examples = pick_examples(induction, options.examples)
    induction.file = FragmentFile(fragment, ebnf.render(rules), HoleSpec(options.kind, tuple(options.triggers)),
                                  examples, options.language_table, options.provenance)
    return induction


def example_gamma(site: Site, refs: Sequence[Reference], extra: int = 6) -> dict[str, dict[str, Any]]:
    """The Γ an example records: its references' bindings and a few other names of the site
    (of other sorts first, so that the load-time gate can mine wrong-sort negatives)."""
    gamma: dict[str, dict[str, Any]] = {}

    def add(b: Binding) -> None:
        gamma[b.name] = {"sort": b.sort, **{k: v for k, v in b.attrs.items() if _scalar(v) and k != "sort"}}

    for ref in refs:
        if ref.binding is not None:
            add(ref.binding)
    used_sorts = {g["sort"] for g in gamma.values()}
    others = sorted((b for b in site.gamma.visible().values() if b.name not in gamma),
                    key=lambda b: (b.sort in used_sorts, b.sort, b.name))
    others = [b for b in others if re.fullmatch(r"[A-Za-z_]\w*", b.name)]
    by_sort: dict[str, list[Binding]] = defaultdict(list)
    for b in others:
        by_sort[b.sort].append(b)
    picked = 0
    while picked < extra and any(by_sort.values()):
        for sort in sorted(by_sort, key=lambda s: (s in used_sorts, s)):
            if by_sort[sort] and picked < extra:
                add(by_sort[sort].pop(0))
                picked += 1
    return gamma


def pick_examples(induction: Induction, count: int) -> tuple[Example, ...]:
    """Up to ``count`` positives, spread over the clusters."""
    picked: list[int] = []
    pools = [[i for i in members if i not in induction.unresolved] for members in induction.clusters]
    while len(picked) < count and any(pools):
        for pool in pools:
            if pool and len(picked) < count:
                picked.append(pool.pop(len(pool) // 2))
    out = []
    for index in sorted(picked):
        site = induction.sites[index]
        refs = induction.references(index)
        out.append(Example(site.text, MappingProxyType(example_gamma(site, refs)),
                           MappingProxyType(dict(site.context))))
    return tuple(out)
