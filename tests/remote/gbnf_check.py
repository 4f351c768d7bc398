"""A strict reader of llama.cpp's GBNF, written from its grammar parser's rules.

The llama.cpp server aborts on a grammar it cannot parse, and llama-cpp-python
takes minutes to build here, so the dialect tests check GBNF with this reader:

- a rule is ``name ::= alternatives``; names are ``[a-zA-Z0-9-]+`` (``_`` is an error);
- outside parentheses a newline ends the rule, except right after ``|``
  (an alternative continued on a new line that starts with ``|`` is an error);
- literals ``"..."`` and classes ``[...]`` know the escapes ``\\x`` (exactly 2
  hex digits), ``\\u`` (4), ``\\U`` (8), ``\\t \\r \\n \\\\ \\" \\[ \\]``; any other
  escape (``\\-``, ``\\^``, ``\\0``...) is an error;
- atoms: literals, classes (``^`` negation, ``a-z`` ranges), rule names, ``.``,
  ``( ... )``; postfix ``* + ? {m} {m,} {m,n}``; ``#`` comments;
- every referenced rule is defined, and ``root`` exists.

``check(text)`` raises ``GbnfError`` with the position; it returns the rule names.
"""

from __future__ import annotations

import re

NAME = re.compile(r"[a-zA-Z0-9-]+")
HEX = {"x": 2, "u": 4, "U": 8}
SIMPLE = {"t", "r", "n", "\\", '"', "[", "]"}
_RULE_START = re.compile(r"[ \t]*::=")
_BOUNDS = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}")
_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")


class GbnfError(ValueError):
    pass


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.defined: list[str] = []
        self.used: set[str] = set()

    def fail(self, why: str) -> None:
        line = self.text.count("\n", 0, self.pos) + 1
        raise GbnfError(f"line {line}: {why} at {self.text[self.pos:self.pos + 30]!r}")

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def space(self, newline_ok: bool) -> None:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in " \t" or (newline_ok and ch in "\r\n"):
                self.pos += 1
            elif ch == "#":
                while self.pos < len(self.text) and self.text[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                return

    def name(self) -> str:
        m = NAME.match(self.text, self.pos)
        if not m:
            self.fail("expected a rule name")
        self.pos = m.end()
        return m.group()

    def char(self, closing: str) -> None:
        ch = self.peek()
        if not ch:
            self.fail(f"unterminated {closing!r}")
        if ch != "\\":
            self.pos += 1
            return
        esc = self.text[self.pos + 1 : self.pos + 2]
        if esc in HEX:
            digits = self.text[self.pos + 2 : self.pos + 2 + HEX[esc]]
            if len(digits) != HEX[esc] or not _HEX_DIGITS.fullmatch(digits):
                self.fail(f"\\{esc} needs exactly {HEX[esc]} hex digits")
            self.pos += 2 + HEX[esc]
        elif esc in SIMPLE:
            self.pos += 2
        else:
            self.fail(f"unknown escape \\{esc}")

    def grammar(self) -> list[str]:
        self.space(True)
        while self.pos < len(self.text):
            name = self.name()
            if name in self.defined:
                self.fail(f"rule {name} defined twice")
            self.defined.append(name)
            self.space(False)
            if not self.text.startswith("::=", self.pos):
                self.fail("expected ::=")
            self.pos += 3
            self.space(True)
            self.alternatives(nested=False)
            if self.pos < len(self.text) and self.peek() not in "\r\n":
                self.fail("expected the end of the rule (a newline)")
            self.space(True)
        if "root" not in self.defined:
            raise GbnfError("no root rule")
        missing = self.used - set(self.defined)
        if missing:
            raise GbnfError(f"undefined rules: {sorted(missing)}")
        return self.defined

    def alternatives(self, nested: bool) -> None:
        self.sequence(nested)
        while self.peek() == "|":
            self.pos += 1
            self.space(True)
            self.sequence(nested)

    def sequence(self, nested: bool) -> None:
        last_atom = False
        while True:
            ch = self.peek()
            if not ch:
                return
            if ch == '"':
                self.pos += 1
                while self.peek() != '"':
                    self.char('"')
                self.pos += 1
                last_atom = True
            elif ch == "[":
                self.pos += 1
                if self.peek() == "^":
                    self.pos += 1
                if self.peek() == "]":
                    self.fail("empty character class")
                while self.peek() != "]":
                    self.char("]")
                    if self.peek() == "-" and self.text[self.pos + 1 : self.pos + 2] != "]":
                        self.pos += 1
                        self.char("]")
                self.pos += 1
                last_atom = True
            elif ch == "(":
                self.pos += 1
                self.space(True)
                self.alternatives(nested=True)
                if self.peek() != ")":
                    self.fail("expected )")
                self.pos += 1
                last_atom = True
            elif ch == ".":
                self.pos += 1
                last_atom = True
            elif ch and NAME.match(ch):
                start = self.pos
                self.used.add(self.name())
                if _RULE_START.match(self.text, self.pos):
                    self.pos = start
                    self.fail("a new rule where the previous one had not ended")
                last_atom = True
            elif ch in "*+?":
                if not last_atom:
                    self.fail(f"{ch} without a preceding element")
                self.pos += 1
            elif ch == "{":
                if not last_atom:
                    self.fail("{ without a preceding element")
                m = _BOUNDS.match(self.text, self.pos)
                if not m:
                    self.fail("bad repetition bounds")
                if m.group(3) and int(m.group(3)) < int(m.group(1)):
                    self.fail("repetition bounds reversed")
                self.pos = m.end()
            elif ch == "_":
                self.fail("'_' is not allowed in a rule name")
            else:
                return
            self.space(nested)


def check(text: str) -> list[str]:
    return _Reader(text).grammar()
