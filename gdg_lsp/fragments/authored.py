"""Which words of a suggestion a fragment's own template wrote: text no Γ slot vouches for.

A Γ slot is the guarantee: every name it lets through is a name of Γ. The rest of a
template is its author's text. For gdg-lsp's own fragments (``grammars/``) that text is
gdg-lsp's; for a fragment from a user's file it is the file's (a cloned repository's,
perhaps): a literal such as ``"print(msg); __import__('os').system(...)"`` is in every
suggestion decoded under it, slot or no slot, and must never be labelled guaranteed.

``unvouched(text, ...)`` judges each word of a decoded statement (a run of word
characters; a dotted chain ``a.b.c`` part by part): it is vouched when it is a name of Γ
(the longest start of the chain that Γ names reaches it), a keyword of the language as gdg-lsp knows it (never a file's own
``keywords``), or a number, and it contains none of the words the template itself can
write (``template_words``: its literals, the fixed ``names``/``ebnf`` answers of the rung's
slots). A template that spells words character by character (a class of at most
``NARROW`` word characters, such as ``[e]``) vouches for no word at all. Punctuation and
blanks are never words. Conservative by design: a Γ name that merely contains a literal's
word is not vouched for either.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable
from dataclasses import dataclass

from gdg_lsp.fragments import ebnf
from gdg_lsp.fragments.model import Fragment

NARROW = 3
_WORD = re.compile(r"\w+")
_CHAIN = re.compile(r"\w+(?:\.\w+)*")


@dataclass(frozen=True)
class TemplateWords:
    words: frozenset[str]
    """Words of the template's own text at the rung."""
    spells: bool
    """The template has a narrow class of word characters: it can spell any word."""


def template_words(fragment: Fragment, rung: str) -> TemplateWords:
    words: set[str] = set()
    spells = False
    exprs: list[ebnf.Expr] = list(fragment.rules.values())
    for slot in fragment.slots.values():
        try:
            spec = slot.spec_for(rung)
        except Exception:  # a slot without a spec for this rung: the rung is never instantiated
            continue
        if "names" in spec:
            words.update(w for name in spec["names"] for w in _WORD.findall(str(name)))
        elif "ebnf" in spec:
            exprs.append(ebnf.parse(f"x ::= {spec['ebnf']}", "slot")["x"])
    for expr in exprs:
        for leaf in _leaves(expr):
            if isinstance(leaf, ebnf.Lit):
                words.update(_WORD.findall(leaf.text))
            elif isinstance(leaf, ebnf.CharClass) and _narrow_word_class(leaf.source):
                spells = True
    return TemplateWords(frozenset(words), spells)


def unvouched(text: str, written: TemplateWords, names: Container[str], keywords: Container[str],
              start: int = 0) -> list[str]:
    """The words of ``text`` no Γ slot vouches for (the module docstring), in order, once each;
    only words that end after ``start`` (the text before it was typed, a word it ends in is judged whole)."""
    out: list[str] = []
    for chain in _CHAIN.finditer(text):
        parts = chain.group().split(".")
        named = max((n for n in range(1, len(parts) + 1) if ".".join(parts[:n]) in names), default=0)
        end = chain.start()
        for index, part in enumerate(parts):
            end += len(part) + (index > 0)
            if end <= start:
                continue
            authored = written.spells or any(word in part for word in written.words)
            vouched = index < named or part[0].isdigit() or (index == 0 and part in keywords)
            if (authored or not vouched) and part not in out:
                out.append(part)
    return out


def _leaves(expr: ebnf.Expr) -> Iterable[ebnf.Expr]:
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ebnf.Seq):
            stack.extend(node.items)
        elif isinstance(node, ebnf.Alt):
            stack.extend(node.options)
        elif isinstance(node, ebnf.Repeat):
            stack.append(node.item)
        else:
            yield node


def _narrow_word_class(source: str) -> bool:
    body = source[1:-1]
    if body.startswith("^"):
        return False  # all but a few characters: open text the model chooses
    word_chars = {c for c in ebnf.expand_class(body.replace("\\", "")) if _WORD.fullmatch(c)}
    return 0 < len(word_chars) <= NARROW
