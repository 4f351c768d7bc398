"""Printing a grammar tree as llguidance's Lark: words at the lexer, structure at the parser.

Fragment templates are written for a scannerless engine (XGrammar): every
character is a grammar symbol, and "every lexeme owns the blanks before it"
is only a convention. llguidance lexes first: its lexer reads, greedily and
without backtracking, the longest run of bytes that one of the lexemes the
parser allows can still extend, then hands the parser every lexeme that
matched it. A lexeme that could be longer therefore never ends early: a
naive translation where ``"is" [ \\t]+ "not"`` is one lexeme reads
``x is nothing`` as ``is not`` + ``hing`` and fails, and a blank that the
template gives to a keyword (``"if" [ \\t]``) is taken from the name after it.

So the grammar is rewritten on the tree, keeping its language:

- A *lexeme* is a blank-free core (a literal, a class, a regular rule or
  slot answer with no blank inside) with the blanks before it as a prefix:
  ``[ \\t]{m,n} core``. Blanks are never a lexeme of their own and never end
  one: a blank run anywhere (between words of a regular rule, at the end of
  a keyword, alone in a rule) is carried to the next core as its prefix
  (``pending``), through rule boundaries: a rule used after a blank gets a
  variant with the blank in its first lexemes (``r__p1_1``), and a rule that
  ends with blanks has them carried to whatever follows it. A run of blanks
  then always belongs to the one lexeme after it, and the lexer decides what
  that lexeme is at the first non-blank byte, with every candidate alive.
- Regular rules with one core (``NAME ::= [ \\t]* %name%``, the Γ sets, an
  identifier) become named terminals, so each Γ alternation is written once
  (as a prefix-shared regular expression, ``set_regex``) however many
  lexemes use it.
- What the template leaves as characters repeated at rule level
  (``([^"\\\\] | "{" expr "}")*``) becomes one lexeme per run (``[^"\\\\]+``):
  the language is the same, the parser sees runs instead of characters.

What remains different from the scannerless reading is where the template
itself lets a longer word swallow a shorter one and its follower (``1.`` as
a number before ``.real``); tests/unit/test_engine_equivalence.py measures
that on the corpus, and every string llguidance accepts is one XGrammar
accepts (each lexeme matches exactly its part of the template).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf
from gdg_lsp.grammar.dialects import CharSet, distinct_names, parse_class

Expr = ebnf.Expr
Blank = tuple[tuple[str, int, int | None], ...]
"""A run of blanks: segments (which blanks, min, max; max None: unbounded), one after another.
Which blanks: ``b`` either (``[ \\t]``), ``s`` a space, ``t`` a tab, so that a literal
space in a template (``", "``) stays exactly one space in the Lark output."""
NO_BLANK: Blank = ()
_BLANK_SET = CharSet(((9, 9), (32, 32)))
_BLANK_CHARS = {" ": "s", "\t": "t"}
_NAMED_CORE_CHARS = 400
"""A core printed longer than this is a terminal of its own, shared by the lexemes built on it."""
_ALONE = frozenset("([{.<")
"""Characters that are lexemes by themselves when written in a template next to another word."""


def _add(a: Blank, b: Blank) -> Blank:
    """``a`` then ``b`` (adjacent segments of the same blanks merged)."""
    out = list(a)
    for seg in b:
        if out and out[-1][0] == seg[0]:
            kind, lo, hi = out[-1]
            out[-1] = (kind, lo + seg[1], None if hi is None or seg[2] is None else hi + seg[2])
        else:
            out.append(seg)
    return tuple(s for s in out if s[2] != 0)


def _blank_literal(text: str) -> Blank | None:
    """A literal made only of spaces and tabs as a run (None: it has another character)."""
    if not text or any(ch not in _BLANK_CHARS for ch in text):
        return None
    run: Blank = NO_BLANK
    for ch in text:
        run = _add(run, ((_BLANK_CHARS[ch], 1, 1),))
    return run


_PIECES = re.compile(r"[ \t]+|[^ \t]+")


def _literal_pieces(expr: ebnf.Lit) -> ebnf.Seq | None:
    """A literal with blanks and other characters, as its pieces (``" transpose_B="``:
    a space, then the word): a blank inside a literal is a blank like any other, carried
    to the word after it, so that no lexeme ends with an optional blank-led tail that the
    lexer would read past without giving back (llguidance does not backtrack)."""
    pieces = _PIECES.findall(expr.text)
    if len(pieces) < 2:
        return None
    split = _PIECE_CACHE.get(expr.text)
    return split if split is not None else _PIECE_CACHE.put(expr.text, ebnf.Seq(tuple(ebnf.Lit(p) for p in pieces)))


_PIECE_CACHE: BoundedCache[str, ebnf.Seq] = BoundedCache("grammar.lark-literal-pieces", 4096)
"""Literals split once each: the built-in fragments hold a few hundred, users' fragment files
(hot-reloaded) add theirs, so the map is bounded like every other cache."""


def _blank_run(expr: Expr) -> Blank | None:
    """``expr`` as a run of blanks, or None when it matches anything else."""
    if isinstance(expr, ebnf.Lit):
        return _blank_literal(expr.text)
    if isinstance(expr, ebnf.CharClass):
        try:
            return (("b", 1, 1),) if parse_class(expr.source) == _BLANK_SET else None
        except GrammarError:
            return None
    if isinstance(expr, ebnf.Repeat):
        inner = _blank_run(expr.item)
        if inner is None or len(inner) != 1 or inner[0][1] != inner[0][2]:
            return None
        kind, n, _ = inner[0]
        return _add(NO_BLANK, ((kind, n * expr.min, None if expr.max is None else n * expr.max),))
    if isinstance(expr, ebnf.Seq):
        total = NO_BLANK
        for item in expr.items:
            run = _blank_run(item)
            if run is None:
                return None
            total = _add(total, run)
        return total
    return None


# -- regular expressions, Rust syntax (llguidance's /.../) ------------------------------------


def _regex_char(code: int) -> str:
    ch = chr(code)
    return ch if ch.isascii() and (ch.isalnum() or ch == "_") else f"\\x{{{code:X}}}"


def regex_literal(text: str) -> str:
    """A Rust regex matching exactly ``text`` (every character but ASCII letters, digits
    and ``_`` as ``\\x{..}``, so no character of a name can act as regex syntax)."""
    return "".join(_regex_char(ord(ch)) for ch in text)


def regex_class(charset: CharSet) -> str:
    body = "".join(_regex_char(lo) if lo == hi else f"{_regex_char(lo)}-{_regex_char(hi)}" for lo, hi in charset.ranges)
    if charset.negated:
        return f"[^{body}]" if body else r"[\x{0}-\x{10FFFF}]"
    if not body:
        raise GrammarError("an empty character class cannot be printed (prune it first)")
    return f"[{body}]"


_PLAIN = re.compile(r"[A-Za-z0-9_]*")


def set_regex(names: Iterable[str]) -> str:
    """One regular expression matching exactly ``names``, common prefixes shared
    (a trie): llguidance reads a 10,000-name alternation this way several times
    faster than as 10,000 string literals. Built over the sorted names, each level
    one pass over the range that shares its prefix, a lone name's rest written out."""
    words = sorted(set(names))
    escaped: dict[str, str] = {}
    plain = _PLAIN.fullmatch("".join(words)) is not None  # identifiers only: nothing to escape

    def esc(text: str) -> str:
        if plain:
            return text
        out = []
        for ch in text:
            if (e := escaped.get(ch)) is None:
                e = escaped[ch] = _regex_char(ord(ch))
            out.append(e)
        return "".join(out)

    def build(lo: int, hi: int, depth: int) -> str:
        """The words[lo:hi] (sharing their first ``depth`` characters) after that prefix."""
        ends = len(words[lo]) == depth  # sorted: the shortest (the prefix itself) comes first
        start = lo + 1 if ends else lo
        branches = []
        i = start
        while i < hi:
            ch = words[i][depth]
            j = i + 1
            while j < hi and words[j][depth] == ch:
                j += 1
            branches.append(esc(words[i][depth:]) if j == i + 1 else esc(ch) + build(i, j, depth + 1))
            i = j
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if ends:
            body = f"(?:{body})?"
        return body

    return build(0, len(words), 0) if words else ""


_BLANK_CLASS = {"b": r"[\x{9}\x{20}]", "s": r"\x{20}", "t": r"\x{9}"}


def _blank_regex(run: Blank) -> str:
    out = []
    for kind, lo, hi in run:
        out.append(_BLANK_CLASS[kind] + ("" if (lo, hi) == (1, 1) else _bounds(lo, hi)))
    return "".join(out)


def _blank_tag(run: Blank) -> str:
    """``run`` in a rule name."""
    return "".join(f"{kind}{lo}_{'n' if hi is None else hi}" for kind, lo, hi in run) or "0"


# -- the lexical grammar: what the parser sees --------------------------------------------------


@dataclass(frozen=True)
class _Term:
    name: str  # a terminal


@dataclass(frozen=True)
class _Rule:
    name: str  # a Lark rule


@dataclass(frozen=True)
class _Seq:
    items: tuple


@dataclass(frozen=True)
class _Alt:
    options: tuple


@dataclass(frozen=True)
class _Extern:
    name: str  # a rule defined outside the emitted text (a Γ set with blanks in its names)


@dataclass(frozen=True)
class _Rep:
    item: object
    min: int
    max: int | None


_EMPTY = _Seq(())


def _seq(items: Iterable) -> object:
    out: list = []
    for item in items:
        if isinstance(item, _Seq):
            out.extend(item.items)
        else:
            out.append(item)
    return out[0] if len(out) == 1 else _Seq(tuple(out))


def _alt(options: Iterable) -> object:
    out: list = []
    for option in options:
        for o in option.options if isinstance(option, _Alt) else (option,):
            if o not in out:
                out.append(o)
    return out[0] if len(out) == 1 else _Alt(tuple(out))


@dataclass(frozen=True)
class Pending:
    """Text read but not yet made a lexeme, carried to the next core: a blank run, then
    possibly a short literal core (a string's prefix, ``fr`` of ``fr'...'``, held so that
    the lexer reads it with the quote instead of as the start of a name)."""

    blank: Blank = NO_BLANK
    core: Expr | None = None


NOTHING = Pending()
Variants = dict[Pending, object]
"""What an expression becomes after a pending text: for each text left pending at its
end (to go to whatever follows), the parser expression."""


def _merge(into: Variants, key: Pending, expr: object) -> None:
    into[key] = _alt([into[key], expr]) if key in into else expr


@dataclass(frozen=True)
class _Option:
    """One way a regular expression splits: blanks, a blank-free core, blanks."""

    lead: Blank
    core: Expr | None  # None: the option is blanks only
    trail: Blank


class _Internal(Exception):
    """A regular expression with blanks between its words: it is parsed, not lexed."""


def _nullable_regular(expr: Expr, rules: Mapping[str, Expr]) -> bool:
    if isinstance(expr, ebnf.Lit):
        return expr.text == ""
    if isinstance(expr, ebnf.CharClass):
        return False
    if isinstance(expr, ebnf.Ref):
        return _nullable_regular(rules[expr.name], rules)
    if isinstance(expr, ebnf.Repeat):
        return expr.min == 0 or _nullable_regular(expr.item, rules)
    if isinstance(expr, ebnf.Seq):
        return all(_nullable_regular(i, rules) for i in expr.items)
    if isinstance(expr, ebnf.Alt):
        return any(_nullable_regular(o, rules) for o in expr.options)
    raise TypeError(expr)


def _nonempty(expr: Expr, rules: Mapping[str, Expr]) -> Expr | None:
    """The non-empty strings of a regular ``expr`` (None: there are none)."""
    if not _nullable_regular(expr, rules):
        return expr
    if isinstance(expr, ebnf.Lit):
        return None
    if isinstance(expr, ebnf.Ref):
        return _nonempty(rules[expr.name], rules)
    if isinstance(expr, ebnf.Repeat):
        inner = _nonempty(expr.item, rules)
        if inner is None or expr.max == 0:
            return None
        rest = ebnf.Repeat(expr.item, max(expr.min - 1, 0), None if expr.max is None else expr.max - 1)
        return ebnf.Seq((inner, rest)) if rest.max != 0 else inner
    if isinstance(expr, ebnf.Seq):
        # some item is non-empty: the first non-empty one is at position i
        options = []
        for i, item in enumerate(expr.items):
            head = _nonempty(item, rules)
            if head is not None:
                options.append(ebnf.Seq((head, *expr.items[i + 1 :])))
        return None if not options else options[0] if len(options) == 1 else ebnf.Alt(tuple(options))
    if isinstance(expr, ebnf.Alt):
        options = [o for o in (_nonempty(o, rules) for o in expr.options) if o is not None]
        return None if not options else options[0] if len(options) == 1 else ebnf.Alt(tuple(options))
    raise TypeError(expr)


class LarkEmitter:
    """One grammar's translation. ``literal_sets`` names rules that are alternations of
    literals known only per request (the Γ sets): they are referenced as terminals
    ``set_terminal(name)`` whose definitions ``set_definitions`` prints separately, so
    the rest can be emitted once and cached. ``nullable_sets`` are those containing
    the empty string; ``empty_only_sets`` those that are nothing else."""

    def __init__(self, rules: Mapping[str, Expr], literal_sets: Iterable[str] = (),
                 nullable_sets: Iterable[str] = (), empty_only_sets: Iterable[str] = (),
                 spaced_sets: Iterable[str] = ()) -> None:
        self.rules = dict(rules)
        self.spaced = set(spaced_sets)
        self.sets = set(literal_sets) - self.spaced
        self.nullable_sets = set(nullable_sets)
        self.empty_only_sets = set(empty_only_sets)
        for name in self.sets:  # opaque here: an alternation of literals
            self.rules.setdefault(name, ebnf.Lit("x"))
        for name in self.spaced:  # parsed, not lexed (see spaced_set_rules): never regular
            self.rules[name] = ebnf.Ref(name)
        self.spaced_requests: dict[str, tuple[str, str]] = {}
        """Rule name -> (Γ set, the Lark terminal text that must come before its first word)."""
        self.regular = self._regular_rules()
        self._decomposed: dict[str, list[_Option] | None] = {}
        self._core_terms: dict[str, str] = {}  # regular rule -> its core terminal
        self._cores: dict[str, Expr] = {}  # regular rule -> its core (what Ref(rule) means inside a core)
        self._split_memo: dict[int, tuple[Expr, list[_Option] | None]] = {}
        self._regular_memo: dict[int, tuple[Expr, bool]] = {}
        self._variant_memo: dict[tuple[int, Pending], tuple[Expr, Variants]] = {}
        self._held_ids: dict[Expr, int] = {}
        self._groups: dict[int, tuple[ebnf.Seq, tuple[Expr, ...]]] = {}
        self.terminals: dict[str, str] = {}  # terminal name -> Lark terminal body
        self._term_of: dict[str, str] = {}  # body -> terminal name
        self._guess: dict[tuple[str, Pending], set[Pending]] = {}
        self._bodies: dict[tuple[str, Pending], Variants] = {}
        self._reps: dict[tuple, str] = {}
        self.lark_rules: dict[str, object] = {}

    # -- which rules are regular --------------------------------------------------------------

    def _regular_rules(self) -> set[str]:
        regular: dict[str, bool] = {}
        visiting: set[str] = set()

        def visit(name: str) -> bool:
            if name in regular:
                return regular[name]
            if name in visiting:
                return False  # recursion: context-free
            visiting.add(name)
            ok = all(visit(ref) for ref in ebnf.references(self.rules[name]))
            visiting.discard(name)
            regular[name] = ok
            return ok

        for name in self.rules:
            visit(name)
        # a rule on a cycle through a rule visited first was marked regular too early
        changed = True
        while changed:
            changed = False
            for name, ok in regular.items():
                if ok and not all(regular.get(r, False) for r in ebnf.references(self.rules[name])):
                    regular[name] = False
                    changed = True
        return {name for name, ok in regular.items() if ok}

    def _is_regular(self, expr: Expr) -> bool:
        if isinstance(expr, ebnf.Ref):
            return expr.name in self.regular
        if (known := self._regular_memo.get(id(expr))) is not None:
            return known[1]
        ok = all(r in self.regular for r in ebnf.references(expr))
        self._regular_memo[id(expr)] = (expr, ok)
        return ok

    def _split(self, expr: Expr) -> list[_Option] | None:
        """``_decompose`` remembered per expression; None for an internal blank."""
        if (known := self._split_memo.get(id(expr))) is not None:
            return known[1]
        try:
            options: list[_Option] | None = self._decompose(expr)
        except _Internal:
            options = None
        self._split_memo[id(expr)] = (expr, options)
        return options

    # -- splitting regular expressions into blanks and a core ------------------------------------

    def _decompose(self, expr: Expr) -> list[_Option]:
        """The options of a regular ``expr`` as (blanks, core, blanks); raises _Internal
        when an option has blanks between two words."""
        if (run := _blank_run(expr)) is not None:
            return [_Option(run, None, NO_BLANK)]
        if isinstance(expr, ebnf.Lit) and (pieces := _literal_pieces(expr)) is not None:
            return self._decompose(pieces)
        if isinstance(expr, (ebnf.Lit, ebnf.CharClass)):
            return [_Option(NO_BLANK, expr, NO_BLANK)]
        if isinstance(expr, ebnf.Ref):
            options = self._rule_options(expr.name)
            if options is None:
                raise _Internal(expr.name)
            return options
        if isinstance(expr, ebnf.Alt):
            # options with the same blanks around them share one core (one lexeme, not one per word)
            grouped: dict[tuple[Blank, Blank, bool], list[Expr | None]] = {}
            for option in expr.options:
                for o in self._decompose(option):
                    grouped.setdefault((o.lead, o.trail, o.core is None), []).append(o.core)
            return [_Option(lead, None if blank else (cores[0] if len(cores) == 1 else ebnf.Alt(tuple(cores))), trail)  # type: ignore[arg-type]
                    for (lead, trail, blank), cores in grouped.items()]
        if isinstance(expr, ebnf.Repeat):
            options = self._decompose(expr.item)
            if any(o.lead != NO_BLANK or o.trail != NO_BLANK or o.core is None for o in options):
                raise _Internal("blanks inside a repetition")
            core = options[0].core if len(options) == 1 else ebnf.Alt(tuple(o.core for o in options))  # type: ignore[misc]
            return [_Option(NO_BLANK, ebnf.Repeat(core, expr.min, expr.max), NO_BLANK)]  # type: ignore[arg-type]
        if isinstance(expr, ebnf.Seq):
            combos: list[_Option] = [_Option(NO_BLANK, None, NO_BLANK)]
            for item in expr.items:
                parts = self._decompose(item)
                nxt = []
                for left, right in itertools.product(combos, parts):
                    nxt.append(self._join(left, right))
                if len(nxt) > 64:
                    raise _Internal("too many ways to split")
                combos = nxt
            return combos
        raise TypeError(expr)

    def _join(self, left: _Option, right: _Option) -> _Option:
        if left.core is None:  # blanks so far
            if right.core is None:
                return _Option(_add(_add(left.lead, right.lead), right.trail), None, NO_BLANK)
            return _Option(_add(left.lead, right.lead), right.core, right.trail)
        if right.core is None:
            return _Option(left.lead, left.core, _add(_add(left.trail, right.lead), right.trail))
        if left.trail != NO_BLANK or right.lead != NO_BLANK:
            raise _Internal("blanks between two words")
        # An opening bracket, a dot or ``<`` is a lexeme of its own: read inside a longer one
        # (``m[7`` of a path ``m[7]``, ``1.`` of a number, ``<T`` of type arguments), the lexer
        # would not give it back to ``m`` + a slice ``[7:4]``, to ``1`` + an attribute ``.real``,
        # or to a comparison ``a < T``.
        # Only where the template writes the character: a class that merely includes it (a
        # command name's `[a-zA-Z0-9_./~[]`) is a word's character, and the word stays one lexeme.
        if (self._edge_chars(left.core, last=True, literals=True) or set()) & _ALONE \
                or (self._edge_chars(right.core, literals=True) or set()) & _ALONE:
            raise _Internal("a bracket or a dot between two words")
        return _Option(left.lead, ebnf.Seq((left.core, right.core)), right.trail)

    def _rule_options(self, name: str) -> list[_Option] | None:
        if name in self._decomposed:
            return self._decomposed[name]
        if name not in self.regular:
            self._decomposed[name] = None
            return None
        if name in self.sets:
            options = [_Option(NO_BLANK, ebnf.Ref(name), NO_BLANK)]
        else:
            try:
                options = self._decompose(self.rules[name])
            except _Internal:
                options = None
            if options is not None and len(options) == 1 and options[0].core is not None:
                # one core: Ref(name) stands for it; a large one (an identifier that is not a
                # keyword) is a named terminal, so that the lexemes built on it share it
                only = options[0]
                self._cores[name] = only.core  # type: ignore[assignment]
                text = self._term_text(only.core)  # type: ignore[arg-type]
                if len(text) > _NAMED_CORE_CHARS:
                    self._core_terms[name] = self._define(text, hint=name)
                options = [_Option(only.lead, ebnf.Ref(name), only.trail)]
        self._decomposed[name] = options
        return options

    # -- terminals --------------------------------------------------------------------------------

    def _define(self, body: str, hint: str = "") -> str:
        if (known := self._term_of.get(body)) is not None:
            return known
        base = "".join(ch for ch in hint.upper() if ch.isalnum() or ch == "_").strip("_") or "T"
        name = f"{base}_{len(self.terminals)}"
        self.terminals[name] = body
        self._term_of[body] = name
        return name

    def _regex(self, expr: Expr) -> str | None:
        """``expr`` (regular) as one Rust regular expression, or None when it uses a named
        terminal (a Γ set, a large core)."""
        if isinstance(expr, ebnf.Lit):
            return regex_literal(expr.text)
        if isinstance(expr, ebnf.CharClass):
            return regex_class(parse_class(expr.source))
        if isinstance(expr, ebnf.Ref):
            if expr.name in self.empty_only_sets:  # a switch that is on (its one answer is ""): nothing to read
                return ""
            if expr.name in self.sets:
                return None
            self._rule_options(expr.name)
            if expr.name in self._core_terms:
                return None
            return self._regex(self._cores.get(expr.name) or self.rules[expr.name])
        if isinstance(expr, ebnf.Seq):
            parts = [self._regex(item) for item in expr.items]
            return None if any(p is None for p in parts) else "".join(parts)  # type: ignore[arg-type]
        if isinstance(expr, ebnf.Alt):
            if all(isinstance(o, ebnf.Lit) and o.text for o in expr.options):  # names: one shared-prefix regex
                return "(?:" + set_regex(o.text for o in expr.options) + ")"  # type: ignore[union-attr]
            parts = [self._regex(o) for o in expr.options]
            return None if any(p is None for p in parts) else "(?:" + "|".join(parts) + ")"  # type: ignore[arg-type]
        if isinstance(expr, ebnf.Repeat):
            inner = self._regex(expr.item)
            return None if inner is None else f"(?:{inner}){_bounds(expr.min, expr.max)}"
        raise TypeError(expr)

    def _term_text(self, expr: Expr, parent: str = "alt") -> str:
        """``expr`` (regular) in Lark's terminal syntax: one regular expression where it can be."""
        if (regex := self._regex(expr)) is not None:
            return f"/{regex}/" if regex else '""'
        if isinstance(expr, ebnf.Lit):
            return f"/{regex_literal(expr.text)}/" if expr.text else '""'
        if isinstance(expr, ebnf.CharClass):
            return f"/{regex_class(parse_class(expr.source))}/"
        if isinstance(expr, ebnf.Ref):
            if expr.name in self.empty_only_sets:
                return '""'
            if expr.name in self.sets:
                return set_terminal(expr.name)
            self._rule_options(expr.name)
            if expr.name in self._core_terms:
                return self._core_terms[expr.name]
            return self._term_text(self._cores.get(expr.name) or self.rules[expr.name], parent)
        if isinstance(expr, ebnf.Seq):
            if not expr.items:
                return '""'
            text = " ".join(self._term_text(i, "seq") for i in expr.items)
            return f"({text})" if parent == "postfix" and len(expr.items) > 1 else text
        if isinstance(expr, ebnf.Alt):
            if all(isinstance(o, ebnf.Lit) and o.text for o in expr.options):  # names: one shared-prefix regex
                return f"/{set_regex(o.text for o in expr.options)}/"  # type: ignore[union-attr]
            text = " | ".join(self._term_text(o, "alt") for o in expr.options)
            return text if parent == "alt" else f"({text})"
        if isinstance(expr, ebnf.Repeat):
            inner = self._term_text(expr.item, "postfix")
            return inner + _bounds(expr.min, expr.max)
        raise TypeError(expr)

    def _lexeme(self, prefix: Blank, core: Expr) -> _Term:
        """The terminal matching blanks ``prefix`` then the non-empty ``core``."""
        if prefix == NO_BLANK and isinstance(core, ebnf.Ref):
            if core.name in self.sets:
                return _Term(set_terminal(core.name))
            if core.name in self._core_terms:
                return _Term(self._core_terms[core.name])
        regex = self._regex(core)
        if regex is not None:
            body = f"/{_blank_regex(prefix) if prefix != NO_BLANK else ''}{regex}/"
        else:
            body = self._term_text(core, "seq")
            if prefix != NO_BLANK:
                body = f"/{_blank_regex(prefix)}/ {body}"
        hint = core.name if isinstance(core, ebnf.Ref) else "L"
        return _Term(self._define(body, hint))

    # -- the parser's expressions -------------------------------------------------------------------

    def _attach(self, pending: Pending, lead: Blank) -> tuple[object, Blank, Expr | None]:
        """Before a core with blanks ``lead``: (the lexeme to emit first, if any; the blank
        prefix of the core's lexeme; the held core that starts it, if any)."""
        if pending.core is None:
            return _EMPTY, _add(pending.blank, lead), None
        if lead == NO_BLANK:
            return _EMPTY, pending.blank, pending.core
        return self._lexeme(pending.blank, pending.core), lead, None

    def _then_blank(self, pending: Pending, blank: Blank) -> tuple[object, Pending]:
        """Blanks read after ``pending``: (the lexeme to emit first, if any; what is pending)."""
        if blank == NO_BLANK:
            return _EMPTY, pending
        if pending.core is None:
            return _EMPTY, Pending(_add(pending.blank, blank))
        return self._lexeme(pending.blank, pending.core), Pending(blank)

    def _core_variants(self, option: _Option, pending: Pending, hold: bool = False) -> Variants:
        """One option of a regular expression after ``pending``: its core becomes a lexeme
        (or, ``hold``, the pending text), its trailing blanks are left pending."""
        out: Variants = {}
        core = self._nonempty_core(option.core) if option.core is not None else None
        if core is not None:
            flushed, prefix, head = self._attach(pending, option.lead)
            core = core if head is None else ebnf.Seq((head, core))
            if hold:
                _merge(out, Pending(prefix, core), flushed)
            else:
                _merge(out, Pending(option.trail), _seq([flushed, self._lexeme(prefix, core)]))
        if option.core is None or self._nullable_core(option.core):
            flushed, rest = self._then_blank(pending, _add(option.lead, option.trail))
            _merge(out, rest, flushed)
        return out

    def _nullable_core(self, core: Expr) -> bool:
        if isinstance(core, ebnf.Ref) and core.name in self.sets:
            return core.name in self.nullable_sets
        return _nullable_regular(core, self._view())

    def _nonempty_core(self, core: Expr) -> Expr | None:
        if isinstance(core, ebnf.Ref) and core.name in self.sets:
            return None if core.name in self.empty_only_sets else core
        if not self._nullable_core(core):
            return core
        return _nonempty(core, self._view())

    def _view(self) -> Mapping[str, Expr]:
        return _SetView(self.rules, self.sets, self.nullable_sets, self._cores)

    def variants(self, expr: Expr, pending: Pending) -> Variants:
        key = (id(expr), pending)
        if (known := self._variant_memo.get(key)) is not None:
            return known[1]
        out = self._variants(expr, pending)
        self._variant_memo[key] = (expr, out)
        return out

    def _variants(self, expr: Expr, pending: Pending, hold: bool = False) -> Variants:
        if self._is_regular(expr):
            options = self._split(expr)
            if options is not None:
                out: Variants = {}
                for option in options:
                    for key, e in self._core_variants(option, pending, hold).items():
                        _merge(out, key, e)
                return out
        if isinstance(expr, ebnf.Ref) and expr.name in self.spaced:
            return self._spaced_variants(expr.name, pending)
        if isinstance(expr, ebnf.Ref):
            return self._rule_variants(expr.name, pending)
        if isinstance(expr, ebnf.Seq):
            return self._seq_variants(self._grouped(expr), pending)
        if isinstance(expr, ebnf.Alt):
            out = {}
            for option in expr.options:
                for key, e in self.variants(option, pending).items():
                    _merge(out, key, e)
            return out
        if isinstance(expr, ebnf.Repeat):
            return self._repeat_variants(expr, pending)
        if isinstance(expr, ebnf.Lit) and (pieces := _literal_pieces(expr)) is not None:
            return self._seq_variants(self._grouped(pieces), pending)
        if isinstance(expr, (ebnf.Lit, ebnf.CharClass)):  # reached only through _Internal
            return self._core_variants(_Option(NO_BLANK, expr, NO_BLANK), pending)
        raise TypeError(expr)

    def _grouped(self, seq: ebnf.Seq) -> tuple[Expr, ...]:
        """The items of ``seq`` with each run of adjacent regular items that reads as one
        lexeme (``[Ii] [Nn]``) made one item."""
        if (known := self._groups.get(id(seq))) is not None:
            return known[1]
        items: list[Expr] = []
        run: list[Expr] = []

        def close() -> None:
            if run:
                items.append(run[0] if len(run) == 1 else ebnf.Seq(tuple(run)))
                run.clear()

        for item in seq.items:
            if self._lexical(item) and (not run or self._split(ebnf.Seq((*run, item))) is not None):
                run.append(item)
                continue
            close()
            if self._lexical(item):
                run.append(item)
            else:
                items.append(item)
        close()
        grouped = tuple(items)
        self._groups[id(seq)] = (seq, grouped)
        return grouped

    def _seq_variants(self, items: tuple[Expr, ...], pending: Pending) -> Variants:
        # short literal items right before structure are held for its first lexeme
        held = [False] * len(items)
        run_start = None
        for i, item in enumerate(items):
            if self._holdable(item):
                run_start = i if run_start is None else run_start
                continue
            if run_start is not None and not self._lexical(item):
                for k in range(run_start, i):
                    held[k] = True
            run_start = None
        current: Variants = {pending: _EMPTY}
        for item, hold in zip(items, held):
            nxt: Variants = {}
            for before_pending, before in current.items():
                step = self._variants(item, before_pending, hold=True) if hold else self.variants(item, before_pending)
                for key, e in step.items():
                    _merge(nxt, key, _seq([before, e]))
            current = nxt
        return current

    def _lexical(self, expr: Expr) -> bool:
        """A regular expression read as lexemes (not a rule of the parser)."""
        return self._is_regular(expr) and self._split(expr) is not None

    def _holdable(self, expr: Expr) -> bool:
        """Letters written in the template (no rule, no slot), at most 3, nothing after them:
        a string's prefix, which a name could otherwise continue."""
        if not self._lexical(expr) or any(True for _ in ebnf.references(expr)):
            return False
        options = self._split(expr) or []
        return all(o.core is not None and o.lead == NO_BLANK and o.trail == NO_BLANK
                   and (_longest(o.core, self._view()) or 99) <= 3 and _word_chars_only(o.core) for o in options)

    def _repeat_variants(self, expr: ebnf.Repeat, pending: Pending) -> Variants:
        item = expr.item
        if self._is_regular(item) and self._plain(item):
            # a run of blank-free items: one lexeme per run
            options = self._split(item) or []
            core = options[0].core if len(options) == 1 else ebnf.Alt(tuple(o.core for o in options))  # type: ignore[misc]
            run = ebnf.Repeat(core, expr.min, expr.max)  # type: ignore[arg-type]
            return self._core_variants(_Option(NO_BLANK, run, NO_BLANK), pending)
        if isinstance(item, ebnf.Alt) and expr.min == 0 and expr.max is None:
            item = self._runs(item)
            expr = ebnf.Repeat(item, 0, None)
        # the texts left pending between iterations are states, one iteration steps between them
        states: list[Pending] = [pending]
        steps: dict[Pending, Variants] = {}
        while len(steps) < len(states):
            state = next(s for s in states if s not in steps)
            steps[state] = {k: e for k, e in self.variants(item, state).items() if e != _EMPTY}
            for key in steps[state]:
                if key not in states:
                    states.append(key)
        if len(states) == 1 and set(steps[pending]) == {pending}:
            # every iteration starts and ends with the same text pending: Lark's own bounds
            # (unrolling `(SEP t_more t_opts){0,8}` per member of a family grows the tree past use)
            return {pending: _Rep(steps[pending][pending], expr.min, expr.max)}
        if expr.max is not None:
            return self._bounded_layers(expr, item, pending, steps)
        if expr.min > 1:
            raise GrammarError("a repetition of at least two structured items is not supported in Lark output")
        # left-recursive helper rules: rep_t = the strings of one or more iterations ending in state t
        key = (id(item), pending)
        if key not in self._reps:
            self._reps[key] = f"rep{len(self._reps)}"
        names = {t: f"{self._reps[key]}_{i}" for i, t in enumerate(states)}
        for t, name in names.items():
            bodies = []
            if t in steps[pending]:
                bodies.append(steps[pending][t])
            for s in states:
                if t in steps[s]:
                    bodies.append(_seq([_Rule(names[s]), steps[s][t]]))
            self.lark_rules[name] = _alt(bodies) if bodies else _EMPTY
        out = {}
        if expr.min == 0:
            _merge(out, pending, _EMPTY)
        for t, name in names.items():
            if any(t in steps[s] for s in states):
                _merge(out, t, _Rule(name))
        return out

    def _bounded_layers(self, expr: ebnf.Repeat, item: Expr, pending: Pending,
                        steps: dict[Pending, Variants]) -> Variants:
        """``item{min,max}`` whose iterations leave different texts pending: one helper rule per
        count k and state t (the strings of exactly k iterations ending with t pending), each
        made of the rules of k - 1. Unrolled as one tree instead, a repetition inside another
        (``(SEP t_more t_opts){0,8}``, copied per member of a family) grows past use."""
        key = (id(item), pending, expr.max)
        if key not in self._reps:
            self._reps[key] = f"rep{len(self._reps)}"
        out: Variants = {pending: _EMPTY} if expr.min == 0 else {}
        layer: Variants = {pending: _EMPTY}
        for count in range(1, expr.max + 1):
            bodies: Variants = {}
            for before_pending, before in layer.items():
                for t, e in steps.get(before_pending, {}).items():
                    _merge(bodies, t, _seq([before, e]))
            layer = {}
            for i, (t, body) in enumerate(bodies.items()):
                name = f"{self._reps[key]}_{count}_{i}"
                self.lark_rules[name] = body
                layer[t] = _Rule(name)
                if count >= expr.min:
                    _merge(out, t, layer[t])
            if not layer:
                break
        return out

    def _runs(self, item: ebnf.Alt) -> Expr:
        """``(a | b | structure)*`` as ``((a | b)+ | structure)*``: the parser sees runs of
        characters, not characters. An option that could start like a structured one
        stays out of the run: the lexer, reading the ``{`` of a run's ``{{``, would not
        give it back to a field's ``{``."""
        structured = [o for o in item.options if not (self._is_regular(o) and self._plain(o))]
        taken: set[str] | None = set()
        for o in structured:
            firsts = self._first_chars(o)
            taken = None if firsts is None or taken is None else taken | firsts

        def joins_run(option: Expr) -> bool:
            if option in structured or taken is None:
                return False
            if isinstance(option, ebnf.CharClass):
                charset = parse_class(option.source)
                return not any(ch in charset for ch in taken)
            firsts = self._first_chars(option)
            return firsts is not None and not firsts & taken

        lexical = [o for o in item.options if joins_run(o)]
        if not lexical or (len(lexical) == 1 and len(lexical) == len(item.options)):
            return item
        rest = [o for o in item.options if o not in lexical]
        run = ebnf.Repeat(lexical[0] if len(lexical) == 1 else ebnf.Alt(tuple(lexical)), 1, None)
        return ebnf.Alt((run, *rest)) if rest else run

    def _first_chars(self, expr: Expr, depth: int = 0) -> set[str] | None:
        """The characters a string of ``expr`` can start with, when few and known (else None)."""
        return self._edge_chars(expr, depth=depth)

    def _edge_chars(self, expr: Expr, last: bool = False, depth: int = 0, literals: bool = False) -> set[str] | None:
        """The characters a string of ``expr`` can start (``last``: end) with, when few and known (else None);
        ``literals``: only those written as literals (a class contributes none)."""
        if depth > 20:
            return None
        if isinstance(expr, ebnf.Lit):
            return {expr.text[-1 if last else 0]} if expr.text else None
        if isinstance(expr, ebnf.CharClass) and literals:
            return set()
        if isinstance(expr, ebnf.CharClass):
            charset = parse_class(expr.source)
            if charset.negated or sum(hi - lo + 1 for lo, hi in charset.ranges) > 256:
                return None
            return {chr(c) for lo, hi in charset.ranges for c in range(lo, hi + 1)}
        if isinstance(expr, ebnf.Ref):
            if expr.name in self.sets or expr.name in self.spaced:
                return None
            return self._edge_chars(self._cores.get(expr.name) or self.rules[expr.name], last, depth + 1, literals)
        if isinstance(expr, ebnf.Seq):
            out_seq: set[str] = set()
            for item in reversed(expr.items) if last else expr.items:
                if _blank_run(item) is not None:
                    return None
                chars = self._edge_chars(item, last, depth + 1, literals)
                if chars is None:
                    return None
                out_seq |= chars
                if not self._may_be_empty(item, depth + 1):
                    break
            return out_seq
        if isinstance(expr, ebnf.Alt):
            out: set[str] = set()
            for option in expr.options:
                chars = self._edge_chars(option, last, depth + 1, literals)
                if chars is None:
                    return None
                out |= chars
            return out
        if isinstance(expr, ebnf.Repeat):
            return self._edge_chars(expr.item, last, depth + 1, literals)
        return None

    def _may_be_empty(self, expr: Expr, depth: int = 0) -> bool:
        """Whether ``expr`` can match the empty string (True when too deep to tell)."""
        if depth > 20:
            return True
        if isinstance(expr, ebnf.Lit):
            return not expr.text
        if isinstance(expr, ebnf.CharClass):
            return False
        if isinstance(expr, ebnf.Ref):
            if expr.name in self.sets or expr.name in self.spaced:
                return expr.name in self.nullable_sets
            return self._may_be_empty(self._cores.get(expr.name) or self.rules[expr.name], depth + 1)
        if isinstance(expr, ebnf.Repeat):
            return expr.min == 0 or self._may_be_empty(expr.item, depth + 1)
        if isinstance(expr, ebnf.Seq):
            return all(self._may_be_empty(i, depth + 1) for i in expr.items)
        if isinstance(expr, ebnf.Alt):
            return any(self._may_be_empty(o, depth + 1) for o in expr.options)
        return True

    def _plain(self, expr: Expr) -> bool:
        """A regular expression with no blank in it (each of its options a core)."""
        options = self._split(expr)
        return options is not None and all(o.lead == NO_BLANK and o.trail == NO_BLANK and o.core is not None
                                           for o in options)

    def _spaced_variants(self, name: str, pending: Pending) -> Variants:
        """A Γ set whose names have blanks inside: a rule of the per-request part, one per
        text pending before it (its first word's lexeme starts with that text)."""
        prefix = []
        if pending.blank != NO_BLANK:
            prefix.append(f"/{_blank_regex(pending.blank)}/")
        if pending.core is not None:
            prefix.append(self._term_text(pending.core, "seq"))
        rule = f"{spaced_rule(name)}_{len(self.spaced_requests)}"
        known = next((r for r, v in self.spaced_requests.items() if v == (name, " ".join(prefix))), None)
        if known is None:
            self.spaced_requests[rule] = (name, " ".join(prefix))
            known = rule
        out: Variants = {}
        if name not in self.empty_only_sets:
            out[NOTHING] = _Extern(known)
        if name in self.nullable_sets:
            _merge(out, pending, _EMPTY)
        return out

    def _rule_variants(self, name: str, pending: Pending) -> Variants:
        key = (name, pending)
        self._guess.setdefault(key, set())
        if key not in self._seen_keys:
            self._seen_keys.add(key)
            self._pending_keys.append(key)
        return {t: _Rule(self._variant_name(name, pending, t)) for t in self._guess[key]}

    def _variant_name(self, rule: str, pending: Pending, trailing: Pending) -> str:
        def tag(p: Pending) -> str:
            text = _blank_tag(p.blank)
            if p.core is not None:
                text += f"_h{self._held_ids.setdefault(p.core, len(self._held_ids))}"
            return text

        name = rule
        if pending != NOTHING:
            name += f"__p{tag(pending)}"
        if trailing != NOTHING:
            name += f"__t{tag(trailing)}"
        return name

    # -- the whole grammar ----------------------------------------------------------------------

    def emit(self, root: str = "root") -> str:
        """The grammar in Lark, its start rule ``start`` (the Γ sets' definitions apart:
        ``set_definitions(sets, self.spaced_requests)``)."""
        return self.render(self.build(root))

    def build(self, root: str = "root") -> object:
        # least fixpoint of "which texts can a rule (after a pending text) leave pending"
        top = None
        for _ in range(200):
            self.lark_rules = {}
            self._reps = {}
            self._pending_keys: list[tuple[str, Pending]] = []
            self._seen_keys: set[tuple[str, Pending]] = set()
            self._variant_memo = {}
            self.spaced_requests = {}
            top = self.variants(ebnf.Ref(root), NOTHING)
            changed = False
            i = 0
            bodies: dict[tuple[str, Pending], Variants] = {}
            while i < len(self._pending_keys):
                rule, pending = self._pending_keys[i]
                i += 1
                body = self.variants(self.rules[rule], pending)
                bodies[(rule, pending)] = body
                found = set(body)
                if not found <= self._guess[(rule, pending)]:
                    self._guess[(rule, pending)] |= found
                    changed = True
            if not changed:
                self._bodies = bodies
                break
        else:
            raise GrammarError("the grammar's blank structure did not settle (Lark output)")
        for (rule, pending), body in self._bodies.items():
            for t, e in body.items():
                self.lark_rules[self._variant_name(rule, pending, t)] = e
        assert top is not None
        ends = []
        for t, e in top.items():  # what is still pending at the end is the last lexeme
            if t.core is not None:
                e = _seq([e, self._lexeme(t.blank, t.core)])
            elif t.blank != NO_BLANK:
                e = _seq([e, _Term(self._define(f"/{_blank_regex(t.blank)}/", "BLANKS"))])
            ends.append(e)
        return _alt(ends)

    def render(self, start: object) -> str:
        rules = _inline_empty(self.lark_rules)
        start = _substitute(start, rules)
        live = _reachable(start, rules)
        names = _rule_names(live)
        lines = [f"start: {_print(start, names)}"]
        lines += [f"{names[r]}: {_print(rules[r], names)}" for r in live]
        used = _terminals_used([start, *(rules[r] for r in live)])
        lines += [f"{t}: {body}" for t, body in self._terminal_closure(used)]
        return "\n".join(lines) + "\n"

    def _terminal_closure(self, used: set[str]) -> list[tuple[str, str]]:
        out, seen, stack = [], set(), sorted(used)
        while stack:
            t = stack.pop()
            if t in seen or t not in self.terminals:
                continue
            seen.add(t)
            body = self.terminals[t]
            out.append((t, body))
            stack.extend(word for word in body.replace("(", " ").replace(")", " ").replace("|", " ").split()
                         if word in self.terminals)
        return sorted(out)


def _word_chars_only(expr: Expr) -> bool:
    """Every character ``expr`` (a template's literals and classes) can match is a letter, digit or ``_``."""
    if isinstance(expr, ebnf.Lit):
        return all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in expr.text)
    if isinstance(expr, ebnf.CharClass):
        charset = parse_class(expr.source)
        return not charset.negated and all(chr(c).isascii() and (chr(c).isalnum() or chr(c) == "_")
                                           for lo, hi in charset.ranges for c in range(lo, hi + 1))
    if isinstance(expr, ebnf.Repeat):
        return _word_chars_only(expr.item)
    if isinstance(expr, (ebnf.Seq, ebnf.Alt)):
        return all(_word_chars_only(e) for e in (expr.items if isinstance(expr, ebnf.Seq) else expr.options))
    return False


def _longest(expr: Expr, rules: Mapping[str, Expr]) -> int | None:
    """The length of the longest string of a regular ``expr`` (None: unbounded or unknown)."""
    if isinstance(expr, ebnf.Lit):
        return len(expr.text)
    if isinstance(expr, ebnf.CharClass):
        return 1
    if isinstance(expr, ebnf.Ref):
        body = rules[expr.name]
        return None if body is expr else _longest(body, rules)
    if isinstance(expr, ebnf.Seq):
        total = 0
        for item in expr.items:
            n = _longest(item, rules)
            if n is None:
                return None
            total += n
        return total
    if isinstance(expr, ebnf.Alt):
        lengths = [_longest(o, rules) for o in expr.options]
        return None if any(n is None for n in lengths) else max(lengths)  # type: ignore[type-var]
    if isinstance(expr, ebnf.Repeat):
        n = _longest(expr.item, rules)
        return None if n is None or expr.max is None else n * expr.max
    return None


class _SetView(Mapping):
    """The rules with each Γ set read as "" (nullable) or a non-empty literal."""

    def __init__(self, rules: Mapping[str, Expr], sets: set[str], nullable: set[str], cores: Mapping[str, Expr]) -> None:
        self._rules, self._sets, self._nullable, self._cores = rules, sets, nullable, cores

    def __getitem__(self, name: str) -> Expr:
        if name in self._sets:
            return ebnf.Lit("") if name in self._nullable else ebnf.Lit("x")
        return self._cores.get(name) or self._rules[name]

    def __iter__(self):
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)


def set_terminal(rule: str) -> str:
    """The terminal a literal-set rule (a Γ set) is printed as."""
    return "SET_" + "".join(ch for ch in rule.upper() if ch.isalnum() or ch == "_")


def spaced_rule(rule: str) -> str:
    """The Lark rules a Γ set with blanks in its names is printed as start with this."""
    return "set_" + "".join(ch for ch in rule.lower() if ch.isalnum() or ch == "_")


def has_blank(name: str) -> bool:
    return " " in name or "\t" in name


def needs_words(name: str) -> bool:
    """A Γ name printed word by word (a rule of lexemes) rather than inside one lexeme: one
    with blanks (``ORDER BY``) or dots (``self.size``). As one lexeme, the lexer (greedy,
    without backtracking) would read a member ``self._path`` out of ``self._pathcls`` and
    refuse the rest, where the template also allows ``self`` ``.`` and a new attribute."""
    return has_blank(name) or ("." in name and name.strip(". \t") != "")


def set_definitions(sets: Mapping[str, Iterable[str]], spaced: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The Γ sets in Lark (the per-request part of the grammar): each set one terminal
    (the empty string left out: the emitter knows which sets are nullable), and each
    set whose names have blanks inside as rules, word by word (``spaced``: from
    ``LarkEmitter.spaced_requests``): a name's blank belongs to the word after it, so
    the lexer never reads past a blank into a longer name it then cannot finish."""
    lines = []
    spaced = spaced or {}
    spaced_sets = {name for name, _ in spaced.values()}
    for rule, names in sets.items():
        words = [n for n in names if n]
        if words and rule not in spaced_sets:
            lines.append(f"{set_terminal(rule)}: /{set_regex(words)}/")
    counter = itertools.count()
    for rule_name, (rule, prefix) in spaced.items():
        lines += _spaced_set_rules(rule_name, prefix, [n for n in sets[rule] if n], counter)
    return "\n".join(lines) + ("\n" if lines else "")


_WORD = re.compile(r"[ \t]*(?:[^ \t.]+|\.)|[ \t]+")
"""A name's words: blanks belong to the word after them; a dot is a word of its own."""


def _spaced_set_rules(rule_name: str, prefix: str, names: list[str], counter: Iterable[int]) -> list[str]:
    end = object()
    trie: dict = {}
    for name in names:
        node = trie
        for word in _WORD.findall(name):
            node = node.setdefault(word, {})
        node[end] = True
    lines: list[str] = []
    terms = iter(counter)

    def lexeme(words: list[str], first: bool) -> str:
        term = f"SETW_{rule_name.upper()}_{next(terms)}"
        body = f"/{set_regex(words)}/"
        lines.append(f"{term}: {prefix} {body}" if first and prefix else f"{term}: {body}")
        return term

    def expr(node: dict, first: bool) -> str:
        leaves = [w for w, child in node.items() if w is not end and set(child) == {end}]
        options = [lexeme(leaves, first)] if leaves else []
        for word, child in node.items():
            if word is end or word in leaves:
                continue
            rest = expr({k: v for k, v in child.items() if k is not end}, False)
            options.append(f"{lexeme([word], first)} ({rest}){'?' if end in child else ''}")
        return " | ".join(options)

    return [f"{rule_name}: {expr(trie, True)}", *lines]


def _bounds(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, 1):
        return "?"
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if hi is None:
        return f"{{{lo},}}"
    if lo == hi:
        return f"{{{lo}}}"
    return f"{{{lo},{hi}}}"


def _inline_empty(rules: dict[str, object]) -> dict[str, object]:
    """Rules whose body is empty are replaced by nothing where they are used."""
    rules = dict(rules)
    while True:
        empty = {name for name, body in rules.items() if body == _EMPTY}
        if not empty:
            return rules
        for name in empty:
            del rules[name]
        rules = {name: _substitute(body, rules, empty) for name, body in rules.items()}


def _substitute(expr: object, rules: Mapping[str, object], empty: set[str] | None = None) -> object:
    if isinstance(expr, _Rule):
        if empty is not None and expr.name in empty:
            return _EMPTY
        if empty is None and expr.name not in rules:
            return _EMPTY
        return expr
    if isinstance(expr, _Seq):
        return _seq(_substitute(i, rules, empty) for i in expr.items)
    if isinstance(expr, _Alt):
        return _alt(_substitute(o, rules, empty) for o in expr.options)
    if isinstance(expr, _Rep):
        inner = _substitute(expr.item, rules, empty)
        return _EMPTY if inner == _EMPTY else _Rep(inner, expr.min, expr.max)
    return expr


def _children(expr: object) -> Iterable[object]:
    if isinstance(expr, _Seq):
        return expr.items
    if isinstance(expr, _Alt):
        return expr.options
    if isinstance(expr, _Rep):
        return (expr.item,)
    return ()


def _reachable(start: object, rules: Mapping[str, object]) -> list[str]:
    seen: list[str] = []
    known: set[str] = set()
    stack = [start]
    while stack:
        expr = stack.pop()
        if isinstance(expr, _Rule):
            if expr.name not in known and expr.name in rules:
                known.add(expr.name)
                seen.append(expr.name)
                stack.append(rules[expr.name])
            continue
        stack.extend(_children(expr))
    return seen


def _terminals_used(exprs: Iterable[object]) -> set[str]:
    used: set[str] = set()
    stack = list(exprs)
    while stack:
        expr = stack.pop()
        if isinstance(expr, _Term):
            used.add(expr.name)
        stack.extend(_children(expr))
    return used


def _rule_names(names: Iterable[str]) -> dict[str, str]:
    return distinct_names(names, lambda name: "r_" + "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name.lower()),
                          "_", taken=("start",))


def _print(expr: object, names: Mapping[str, str], parent: str = "alt") -> str:
    if isinstance(expr, (_Term, _Extern)):
        return expr.name
    if isinstance(expr, _Rule):
        return names[expr.name]
    if isinstance(expr, _Seq):
        if not expr.items:
            return '""'
        text = " ".join(_print(i, names, "seq") for i in expr.items)
        return f"({text})" if parent == "postfix" and len(expr.items) > 1 else text
    if isinstance(expr, _Alt):
        options = [o for o in expr.options if o != _EMPTY]
        optional = len(options) < len(expr.options)
        text = " | ".join(_print(o, names, "alt") for o in options)
        if optional:
            single = len(options) == 1 and not isinstance(options[0], (_Seq, _Alt))
            return (text if single else f"({text})") + "?"
        return text if parent == "alt" else f"({text})"
    if isinstance(expr, _Rep):
        return _print(expr.item, names, "postfix") + _bounds(expr.min, expr.max)
    raise TypeError(expr)
