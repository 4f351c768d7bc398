"""The EBNF dialect of fragment templates, as a syntax tree.

Templates are XGrammar EBNF plus ``%slot%`` atoms. Parsing them (rather than
editing text) gives three things: slots can be replaced structurally, a slot
whose answer is empty can remove exactly the derivations that need it (and
whatever then becomes empty, up to the root), and a grammar can be printed in
another engine's dialect (llama.cpp's GBNF) from the same tree.

Supported: ``name ::= expr`` rules (continued on following lines), ``|``,
sequences, ``"string"`` literals with ``\\" \\\\ \\n \\r \\t \\uXXXX
\\UXXXXXXXX`` escapes, ``[...]`` character classes (kept verbatim), rule
references, ``( ... )`` groups, ``? * + {m} {m,} {m,n}`` repetition, ``%slot%``
atoms, and ``#`` comments on their own lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from gdg_lsp.errors import GrammarError

# -- tree ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lit:
    text: str


@dataclass(frozen=True, slots=True)
class CharClass:
    source: str  # verbatim, brackets included


@dataclass(frozen=True, slots=True)
class Ref:
    name: str


@dataclass(frozen=True, slots=True)
class Slot:
    name: str


@dataclass(frozen=True, slots=True)
class Repeat:
    item: Expr
    min: int
    max: int | None  # None: unbounded


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    options: tuple[Expr, ...]


Expr = Lit | CharClass | Ref | Slot | Repeat | Seq | Alt

EMPTY = Seq(())


# -- parsing ---------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<rule>[A-Za-z_][A-Za-z0-9_\-]*\s*::=)
  | (?P<name>[A-Za-z_][A-Za-z0-9_\-]*)
  | (?P<slot>%[A-Za-z_][A-Za-z0-9_]*%)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<cls>\[(?:[^\]\\\n]|\\.)*\])
  | (?P<brace>\{\s*\d+\s*(?:,\s*\d*\s*)?\})
  | (?P<op>[|()?*+])
    """,
    re.VERBOSE,
)


def _strip_comments(text: str) -> str:
    # split on newlines only: str.splitlines also breaks at U+2028 and other separators,
    # which a name in a string literal may hold
    return "\n".join("" if line.lstrip().startswith("#") else line for line in text.split("\n"))


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in "\"\\'":
            out.append(nxt)
            i += 2
        elif nxt in "nrt0":
            out.append({"n": "\n", "r": "\r", "t": "\t", "0": "\0"}[nxt])
            i += 2
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U":
            out.append(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        else:
            raise GrammarError(f"unsupported escape \\{nxt} in string literal")
    return "".join(out)


class _Parser:
    def __init__(self, text: str, origin: str) -> None:
        self.origin = origin
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        text = _strip_comments(text)
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                line = text.count("\n", 0, pos) + 1
                raise GrammarError(f"{origin}:{line}: cannot read {text[pos:pos + 20]!r}")
            if m.lastgroup != "ws":
                self.tokens.append((m.lastgroup or "", m.group(), text.count("\n", 0, pos) + 1))
            pos = m.end()
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def rules(self) -> dict[str, Expr]:
        rules: dict[str, Expr] = {}
        while self.peek() is not None:
            kind, value, line = self.take()
            if kind != "rule":
                raise GrammarError(f"{self.origin}:{line}: expected `name ::=`, found {value!r}")
            name = value.split("::=")[0].strip()
            if name in rules:
                raise GrammarError(f"{self.origin}:{line}: rule {name!r} is defined twice")
            rules[name] = self.alternation()
        return rules

    def alternation(self) -> Expr:
        options = [self.sequence()]
        while (tok := self.peek()) is not None and tok[1] == "|":
            self.take()
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self) -> Expr:
        items: list[Expr] = []
        while (tok := self.peek()) is not None and tok[0] != "rule" and tok[1] not in ("|", ")"):
            items.append(self.postfix())
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def postfix(self) -> Expr:
        item = self.atom()
        while (tok := self.peek()) is not None and (tok[1] in ("?", "*", "+") or tok[0] == "brace"):
            _, value, _ = self.take()
            if value == "?":
                item = Repeat(item, 0, 1)
            elif value == "*":
                item = Repeat(item, 0, None)
            elif value == "+":
                item = Repeat(item, 1, None)
            else:
                inner = value[1:-1].replace(" ", "")
                if "," in inner:
                    lo, hi = inner.split(",")
                    item = Repeat(item, int(lo), int(hi) if hi else None)
                else:
                    item = Repeat(item, int(inner), int(inner))
        return item

    def atom(self) -> Expr:
        kind, value, line = self.take()
        if kind == "string":
            return Lit(_unescape(value[1:-1]))
        if kind == "cls":
            return CharClass(value)
        if kind == "name":
            return Ref(value)
        if kind == "slot":
            return Slot(value[1:-1])
        if value == "(":
            inner = self.alternation()
            closing = self.take()
            if closing[1] != ")":
                raise GrammarError(f"{self.origin}:{closing[2]}: expected `)`")
            return inner
        raise GrammarError(f"{self.origin}:{line}: unexpected {value!r}")


def parse(text: str, origin: str = "<grammar>") -> dict[str, Expr]:
    """Parse a template into ``{rule name: expression}`` in definition order."""
    return _Parser(text, origin).rules()


# -- printing --------------------------------------------------------------


def escape_literal(text: str) -> str:
    """``text`` as an EBNF string literal that matches exactly ``text``.

    Only what the literal syntax needs is escaped (quote, backslash) plus every
    control character, each as fixed-width ``\\uXXXX`` (a variable-width
    ``\\x`` escape would swallow following hex digits). Everything else,
    including non-ASCII, is written as itself.
    """
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def print_expr(expr: Expr, leaf: Callable[[Expr], str], parent: str = "alt") -> str:
    """Print ``expr`` in the EBNF notation the engines share (``?``, ``*``, ``+``,
    ``{m,n}``, ``|``, parentheses only where precedence needs them); ``leaf``
    prints literals, classes, references and slots, which is where dialects differ."""
    if isinstance(expr, Repeat):
        inner = print_expr(expr.item, leaf, "postfix")
        bounds = (expr.min, expr.max)
        if bounds == (0, 1):
            return inner + "?"
        if bounds == (0, None):
            return inner + "*"
        if bounds == (1, None):
            return inner + "+"
        if expr.max is None:
            return f"{inner}{{{expr.min},}}"
        if expr.min == expr.max:
            return f"{inner}{{{expr.min}}}"
        return f"{inner}{{{expr.min},{expr.max}}}"
    if isinstance(expr, Seq):
        if not expr.items:
            return '""'
        text = " ".join(print_expr(item, leaf, "seq") for item in expr.items)
        return f"({text})" if parent == "postfix" and len(expr.items) > 1 else text
    if isinstance(expr, Alt):
        text = " | ".join(print_expr(option, leaf, "alt") for option in expr.options)
        return text if parent == "alt" else f"({text})"
    return leaf(expr)


def _template_leaf(expr: Expr) -> str:
    if isinstance(expr, Lit):
        return escape_literal(expr.text)
    if isinstance(expr, CharClass):
        return expr.source
    if isinstance(expr, Ref):
        return expr.name
    if isinstance(expr, Slot):
        return f"%{expr.name}%"
    raise TypeError(expr)


def _render(expr: Expr, parent: str = "alt") -> str:
    return print_expr(expr, _template_leaf, parent)


def render(rules: dict[str, Expr]) -> str:
    return "".join(f"{name} ::= {_render(expr)}\n" for name, expr in rules.items())


def render_expr(expr: Expr) -> str:
    return _render(expr, "postfix")


# -- transformations -------------------------------------------------------


def map_slots(expr: Expr, fn: Callable[[str], Expr | None]) -> Expr | None:
    """Replace every slot by ``fn(name)``; ``None`` means "matches nothing".

    Nothing propagates: a sequence with a required empty item is empty, an
    alternation drops empty options, an optional empty repetition matches the
    empty string. Returns ``None`` when the whole expression can match nothing.
    """
    return _prune(expr, lambda e: fn(e.name) if isinstance(e, Slot) else e)


def map_leaves(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr | None:
    """Like ``map_slots`` for every leaf (slot, rule reference, literal, class):
    ``fn`` returns the replacement, or ``None`` for "matches nothing"."""
    return _prune(expr, fn)


def _prune(expr: Expr, leaf: Callable[[Expr], Expr | None]) -> Expr | None:
    if isinstance(expr, (Slot, Ref, Lit, CharClass)):
        return leaf(expr)
    if isinstance(expr, Repeat):
        inner = _prune(expr.item, leaf)
        if inner is None:
            return None if expr.min > 0 else EMPTY
        return Repeat(inner, expr.min, expr.max)
    if isinstance(expr, Seq):
        items = []
        for item in expr.items:
            pruned = _prune(item, leaf)
            if pruned is None:
                return None
            if pruned != EMPTY:
                items.append(pruned)
        return items[0] if len(items) == 1 else Seq(tuple(items))
    if isinstance(expr, Alt):
        options = [p for option in expr.options if (p := _prune(option, leaf)) is not None]
        if not options:
            return None
        return options[0] if len(options) == 1 else Alt(tuple(options))
    raise TypeError(expr)


def prune_empty_rules(rules: dict[str, Expr], root: str = "root") -> dict[str, Expr]:
    """Remove rules that match nothing (and every use of them that requires them),
    then rules no longer reachable from ``root``. Raises when the root itself is empty."""
    live = dict(rules)
    while True:
        dead = {name for name, expr in live.items() if expr is None}
        if not dead:
            # a rule left only with alternatives that recurse into it derives no text either
            # (`a ::= a " + " b` once `b`'s slot was empty); the engine would accept its prefixes
            # and the decoder would reach a dead end
            dead = set(live) - _productive(live)  # type: ignore[arg-type]
            if not dead:
                break
        live = {name: expr for name, expr in live.items() if expr is not None}
        live = {
            name: _prune(expr, lambda e: None if isinstance(e, Ref) and e.name in dead else e)
            for name, expr in live.items()
        }
        if root not in live or live[root] is None:
            raise GrammarError("the grammar matches nothing once empty slots are removed")
    keep = reachable(live, root)  # once: per rule it made large grammars quadratic
    return {name: expr for name, expr in live.items() if name in keep}


def _productive(rules: dict[str, Expr]) -> set[str]:
    """The rules that derive at least one string (rules not in ``rules`` are taken to)."""
    productive: set[str] = set()

    def derives(expr: Expr) -> bool:
        if isinstance(expr, Ref):
            return expr.name in productive or expr.name not in rules
        if isinstance(expr, Repeat):
            return expr.min == 0 or derives(expr.item)
        if isinstance(expr, Seq):
            return all(derives(item) for item in expr.items)
        if isinstance(expr, Alt):
            return any(derives(option) for option in expr.options)
        return True  # literals, classes, slots

    changed = True
    while changed:
        changed = False
        for name, expr in rules.items():
            if name not in productive and derives(expr):
                productive.add(name)
                changed = True
    return productive


def references(expr: Expr) -> Iterable[str]:
    if isinstance(expr, Ref):
        yield expr.name
    elif isinstance(expr, Repeat):
        yield from references(expr.item)
    elif isinstance(expr, (Seq, Alt)):
        for child in expr.items if isinstance(expr, Seq) else expr.options:
            yield from references(child)


def slots(expr: Expr) -> Iterable[str]:
    if isinstance(expr, Slot):
        yield expr.name
    elif isinstance(expr, Repeat):
        yield from slots(expr.item)
    elif isinstance(expr, (Seq, Alt)):
        for child in expr.items if isinstance(expr, Seq) else expr.options:
            yield from slots(child)


def reachable(rules: dict[str, Expr], root: str = "root") -> set[str]:
    seen: set[str] = set()
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        stack.extend(references(rules[name]))
    return seen


def _char_ranges(chars: set[str]) -> str:
    """A character class matching exactly ``chars`` (ASCII letters, digits, ``_``...)."""
    ordered = sorted(chars)
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ord(ordered[j + 1]) == ord(ordered[j]) + 1:
            j += 1
        lo, hi = ordered[i], ordered[j]
        esc = lambda c: "\\" + c if c in "\\]^-[" else c  # noqa: E731
        parts.append(esc(lo) if i == j else f"{esc(lo)}-{esc(hi)}")
        i = j + 1
    return "[" + "".join(parts) + "]"


def expand_class(spec: str) -> set[str]:
    """The characters of a simple class body like ``a-zA-Z0-9_``."""
    chars: set[str] = set()
    i = 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            chars.update(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            chars.add(spec[i])
            i += 1
    return chars


def identifier_excluding(first: str, rest: str, excluded: Iterable[str]) -> Expr:
    """An identifier (``[first][rest]*``) that is none of ``excluded`` (reserved words).

    A context-free grammar has no "but not", so the reserved words are spelled
    out as a trie: at each node the identifier may take a child's letter (and
    stay on the trie), take any other letter (and then anything), or end, unless
    the node ends a reserved word.
    """
    first_chars, rest_chars = expand_class(first), expand_class(rest)
    trie: dict = {}
    for word in excluded:
        if not word or word[0] not in first_chars or any(c not in rest_chars for c in word[1:]):
            continue  # not spellable as an identifier: nothing to exclude
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node["$end"] = True
    tail = Repeat(CharClass(_char_ranges(rest_chars)), 0, None)

    def build(node: dict, depth: int) -> Expr:
        allowed = first_chars if depth == 0 else rest_chars
        children = {k: v for k, v in node.items() if k != "$end"}
        options: list[Expr] = []
        for ch in sorted(children):
            options.append(Seq((Lit(ch), build(children[ch], depth + 1))))
        others = allowed - set(children)
        if others:
            options.append(Seq((CharClass(_char_ranges(others)), tail)))
        if depth > 0 and not node.get("$end"):
            options.append(EMPTY)
        return options[0] if len(options) == 1 else Alt(tuple(options))

    return build(trie, 0)


def check(rules: dict[str, Expr], origin: str, root: str = "root") -> None:
    """Fail on undefined rules or a missing root (unused rules are allowed: variants share files)."""
    if root not in rules:
        raise GrammarError(f"{origin}: no `{root}` rule")
    for name, expr in rules.items():
        for ref in references(expr):
            if ref not in rules:
                raise GrammarError(f"{origin}: rule {name!r} uses undefined rule {ref!r}")
