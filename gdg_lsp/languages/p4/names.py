"""Which names an included P4 file may add to Γ.

An included header is written by whoever wrote the repository, and what it
declares becomes Γ in every program that includes it. Declarations come through
the parser, whose identifiers are P4's (``[A-Za-z_][A-Za-z0-9_]*``), so they
cannot hold a line break; but macros are read by the preprocessor, whose names
are any word (``#define naïve 1`` is read, and ``naïve`` is no P4 identifier)
and whose values are the rest of the line (a bidirectional override or an
escape sequence included, shown by hover). So each included name is checked
here: a P4 identifier that ``words.control_free`` allows (which also bounds its
length); a macro's value must pass the same ban, tabs aside. What fails is left
out of the file's declarations and noted in ``words.REJECTIONS``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from gdg_lsp import words
from gdg_lsp.languages.p4.preprocess import Define
from gdg_lsp.languages.p4.symbols import Sym

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def why_not(name: str) -> str | None:
    """Why ``name`` cannot be a name of Γ (None: it can)."""
    if (why := words.control_free(name)) is not None:
        return why
    if not _IDENTIFIER.match(name):
        return "it is not a P4 identifier (letters, digits and _ of ASCII)"
    return None


def why_not_macro(define: Define) -> str | None:
    if (why := why_not(define.name)) is not None:
        return why
    value = define.value.replace("\t", " ")  # a value may be long: each piece is checked for characters
    for start in range(0, len(value), words.MAX_NAME_CHARS):
        if (why := words.control_free(value[start:start + words.MAX_NAME_CHARS])) is not None:
            return f"its value: {why}"
    return None


def admitted_syms(syms: Iterable[Sym], source: str) -> list[Sym]:
    """``syms`` less those whose name fails ``why_not`` (and members whose names fail)."""
    kept = []
    for sym in syms:
        if (why := why_not(sym.name)) is not None:
            words.REJECTIONS.note(words.Rejected(source, sym.name, why))
            continue
        members = [m for m in sym.members if _member_ok(m, source)]
        kept.append(sym if len(members) == len(sym.members) else replace(sym, members=members))
    return kept


def _member_ok(member: Sym, source: str) -> bool:
    why = why_not(member.name)
    if why is not None:
        words.REJECTIONS.note(words.Rejected(source, member.name, why))
    return why is None


def admitted_defines(defines: Mapping[str, Define], source: str) -> dict[str, Define]:
    """``defines`` less the macros ``why_not_macro`` refuses."""
    kept = {}
    for name, define in defines.items():
        if (why := why_not_macro(define)) is not None:
            words.REJECTIONS.note(words.Rejected(source, name, why))
        else:
            kept[name] = define
    return kept
