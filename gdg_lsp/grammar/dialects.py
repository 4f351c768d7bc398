"""Printing a grammar tree in the dialect of the engine that will apply it.

Fragment templates are XGrammar EBNF (``gdg_lsp.fragments.ebnf``). A remote engine reads
one of three dialects:

- ``xgrammar`` (vLLM with ``--structured-outputs-config.backend xgrammar``):
  the template dialect itself.
- ``lark`` (vLLM with ``--structured-outputs-config.backend guidance``, the
  llama.cpp server built with llguidance after a ``%llguidance {}`` line, and
  the local llguidance engine): printed by ``lark_emitter`` from the same tree.
- ``gbnf`` (the llama.cpp server): rule names are ``[a-zA-Z0-9-]+`` (an
  underscore is a syntax error); a rule ends at the end of its line unless
  inside parentheses, so every rule is printed on one line; character classes
  know no ``\\-`` or ``\\^`` escapes; ``\\x`` reads exactly two hex digits
  (XGrammar reads any number).

Both printers write only what both engines read the same way: string literals
escape the quote, the backslash and control characters as fixed-width
``\\uXXXX``; character classes are re-printed from their parsed set with
every character outside a small printable set as ``\\uXXXX``/``\\UXXXXXXXX``.
That common subset is also what lets ``validate`` check a GBNF text with
XGrammar's parser before it is sent: a text both parsers read, read the same.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import xgrammar as xgr

from gdg_lsp.errors import GrammarError
from gdg_lsp.fragments import ebnf

DIALECTS = ("xgrammar", "gbnf", "lark")

# -- character classes --------------------------------------------------------------

_SAFE_IN_CLASS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ !#$%&'()*+,./:;<=>?@`{|}~")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "f": "\f", "v": "\v", "a": "\a", "b": "\b", "e": "\x1b"}


@dataclass(frozen=True)
class CharSet:
    """A character class as a set: sorted, merged code-point ranges, possibly negated."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False

    def __contains__(self, ch: str) -> bool:
        code = ord(ch)
        inside = any(lo <= code <= hi for lo, hi in self.ranges)
        return inside != self.negated

    @property
    def empty(self) -> bool:
        return not self.negated and not self.ranges

    def without(self, chars: Iterable[str]) -> CharSet:
        """The same set less ``chars``."""
        codes = [(ord(c), ord(c)) for c in chars]
        if self.negated:
            return CharSet(_merge(list(self.ranges) + codes), True)
        out = list(self.ranges)
        for code, _ in codes:
            split: list[tuple[int, int]] = []
            for lo, hi in out:
                if lo <= code <= hi:
                    if lo < code:
                        split.append((lo, code - 1))
                    if code < hi:
                        split.append((code + 1, hi))
                else:
                    split.append((lo, hi))
            out = split
        return CharSet(tuple(out), False)

    def source(self) -> str:
        """The class in the common subset of both dialects."""
        body = "".join(_class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}" for lo, hi in self.ranges)
        return f"[{'^' if self.negated else ''}{body}]"


def _merge(ranges: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _class_char(code: int) -> str:
    ch = chr(code)
    if ch in _SAFE_IN_CLASS:
        return ch
    return f"\\u{code:04X}" if code <= 0xFFFF else f"\\U{code:08X}"


def parse_class(source: str) -> CharSet:
    """Parse an XGrammar character class (brackets included) into a CharSet."""
    if not (source.startswith("[") and source.endswith("]")):
        raise GrammarError(f"not a character class: {source!r}")
    body = source[1:-1]
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    ranges: list[tuple[int, int]] = []
    i = 0  # a '-' between two atoms makes a range; anywhere else it is itself
    while i < len(body):
        lo, j = _class_atom(body, i)
        if j < len(body) - 1 and body[j] == "-":
            hi, k = _class_atom(body, j + 1)
            if hi < lo:
                raise GrammarError(f"character class {source!r}: range {chr(lo)!r}-{chr(hi)!r} is reversed")
            ranges.append((lo, hi))
            i = k
        else:
            ranges.append((lo, lo))
            i = j
    return CharSet(_merge(ranges), negated)


def _class_atom(body: str, i: int) -> tuple[int, int]:
    ch = body[i]
    if ch != "\\":
        return ord(ch), i + 1
    if i + 1 >= len(body):
        raise GrammarError(f"character class ends in a backslash: [{body}]")
    nxt = body[i + 1]
    if nxt in _SIMPLE_ESCAPES:
        return ord(_SIMPLE_ESCAPES[nxt]), i + 2
    if nxt in "uU":
        width = 4 if nxt == "u" else 8
        digits = body[i + 2 : i + 2 + width]
        if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise GrammarError(f"bad \\{nxt} escape in character class [{body}]")
        return int(digits, 16), i + 2 + width
    if nxt == "x":  # XGrammar reads every following hex digit
        m = re.match(r"[0-9a-fA-F]+", body[i + 2 :])
        if not m:
            raise GrammarError(f"bad \\x escape in character class [{body}]")
        return int(m.group(), 16), i + 2 + m.end()
    return ord(nxt), i + 2  # \] \[ \\ \- \^ \" ...


# -- printing -------------------------------------------------------------------------


def _literal(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _expr(expr: ebnf.Expr, names: dict[str, str]) -> str:
    def leaf(expr: ebnf.Expr) -> str:
        if isinstance(expr, ebnf.Lit):
            return _literal(expr.text)
        if isinstance(expr, ebnf.CharClass):
            charset = parse_class(expr.source)
            if charset.empty:
                raise GrammarError(f"empty character class {expr.source!r} (prune it before printing)")
            return charset.source()
        if isinstance(expr, ebnf.Ref):
            return names[expr.name]
        if isinstance(expr, ebnf.Slot):
            raise GrammarError(f"slot %{expr.name}% left in a grammar to send (instantiate it first)")
        raise TypeError(expr)

    return ebnf.print_expr(expr, leaf)


def rule_names(names: Iterable[str], dialect: str) -> dict[str, str]:
    """Each rule's name in ``dialect``; ``root`` stays ``root``, no two names collide."""
    names = list(names)
    if dialect == "xgrammar":
        return {n: n for n in names}
    ordered = sorted(names, key=lambda n: n != "root")  # root first: it keeps its name
    return distinct_names(ordered, lambda name: re.sub(r"[^a-zA-Z0-9-]", "-", name) or "r", "-")


def distinct_names(names: Iterable[str], spell: Callable[[str], str], joiner: str,
                   taken: Iterable[str] = ()) -> dict[str, str]:
    """Each name spelled as a dialect allows (``spell``), made distinct by a count after
    ``joiner`` when two spell the same (or one spells a name in ``taken``)."""
    out: dict[str, str] = {}
    used = set(taken)
    for name in names:
        base = spell(name)
        candidate, k = base, 1
        while candidate in used:
            k += 1
            candidate = f"{base}{joiner}{k}"
        used.add(candidate)
        out[name] = candidate
    return out


def render(rules: dict[str, ebnf.Expr], dialect: str) -> str:
    """The grammar as text for ``dialect``: one rule per line, ``root`` first."""
    if dialect not in DIALECTS:
        raise GrammarError(f"unknown grammar dialect {dialect!r} (expected {', '.join(DIALECTS)})")
    if "root" not in rules:
        raise GrammarError("the grammar has no root rule")
    if dialect == "lark":
        from gdg_lsp.grammar.lark_emitter import LarkEmitter  # it reads this module's classes

        return LarkEmitter(rules).emit()
    names = rule_names(rules, dialect)
    order = ["root", *(n for n in rules if n != "root")]
    return "".join(f"{names[n]} ::= {_expr(rules[n], names)}\n" for n in order)


_GBNF_NAME = re.compile(r"[a-zA-Z0-9-]+")


def validate(text: str, dialect: str) -> None:
    """Raise GrammarError unless the engine of ``dialect`` can parse ``text``.

    XGrammar parses both EBNF dialects (the GBNF printer writes only the common
    subset); for GBNF the printer's own promises are checked as well: names, one
    rule per line, no escape llama.cpp does not know. Lark is checked by llguidance.
    """
    if dialect == "lark":
        import llguidance

        problem = llguidance.LLMatcher.validate_grammar(text)
        if problem:
            raise GrammarError(f"the lark grammar does not parse: {problem.strip().splitlines()[0][:300]}")
        return
    if dialect == "gbnf":
        for number, line in enumerate(text.splitlines(), 1):
            name, sep, _ = line.partition(" ::= ")
            if not sep or not _GBNF_NAME.fullmatch(name):
                raise GrammarError(f"GBNF line {number} is not `name ::= ...` with a llama.cpp rule name: {line[:80]!r}")
            if re.search(r"(?<!\\)(?:\\\\)*\\[-^x]", line):
                raise GrammarError(f"GBNF line {number} uses an escape llama.cpp reads differently: {line[:80]!r}")
    try:
        xgr.Grammar.from_ebnf(text)
    except RuntimeError as err:
        message = str(err).strip().splitlines()[-1] if str(err).strip() else repr(err)
        raise GrammarError(f"the {dialect} grammar does not parse: {message}") from err
