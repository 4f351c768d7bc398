"""What each argument of a command is: a subcommand, an option, an option's
value, a lead word, a positional of a known kind, or open text.

One reading for diagnostics and hover (the grammar encodes the same table,
``roles``); options come from Γ (``Option`` bindings), so a value-taking
option consumes the next word only when the tool said it takes one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.shell.commands import Command, Word
from gdg_lsp.languages.shell.roles import KIND_SORTS, REVISION_KINDS, ROLES, Role, role_for

_REVISION = re.compile(r"[~^].*\Z")
_HEX = re.compile(r"[0-9a-f]{7,40}\Z")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


@dataclass(frozen=True)
class Part:
    word: Word
    role: str
    """tool | subcommand | option | value | lead | positional | assignment | after-dashdash | unknown
    (``value``: an option's value, or the word after an option whose tool did not say)"""
    kind: str | None = None
    """For a positional: its kind (roles.KIND_SORTS keys, remote-ref, words:...), None when open."""
    option: str | None = None
    """For an option: its name as listed (``--quiet`` of ``--quiet``; ``--format`` of ``--format=%H``)."""


@dataclass(frozen=True)
class Reading:
    tool: str
    sub: str | None
    role: Role | None
    parts: tuple[Part, ...]


def _options(gamma: Gamma, tool: str, sub: str) -> dict[str, Binding]:
    return {b.attrs["word"]: b for b in gamma.bindings("Option", tool=tool, sub=sub)}


def options_known(gamma: Gamma, tool: str, sub: str | None) -> bool:
    """Whether the options of ``tool sub`` are known: it described itself, and not as a text that
    lists only some of them (jq 1.6's "Some of the options include")."""
    source = gamma.lookup(f"source:tool:{tool}" + (f" {sub}" if sub else ""))
    return source is not None and source.sort == "Source" and not source.attrs.get("options_open")


def has_subcommands(tool: str, gamma: Gamma) -> bool:
    return bool(gamma.bindings("Subcommand", tool=tool)) or any(r.tool == tool and r.sub for r in ROLES)


def read(command: Command, gamma: Gamma) -> Reading:
    tool = command.name.text or ""
    args = list(command.args)
    parts: list[Part] = [Part(command.name, "tool")]
    i = 0
    sub: str | None = None
    if has_subcommands(tool, gamma):
        top = _options(gamma, tool, "")
        while i < len(args) and (args[i].text or "").startswith("-") and args[i].text != "--":
            i = _option(args, i, top, parts)
        if i < len(args):
            sub = args[i].text
            parts.append(Part(args[i], "subcommand"))
            i += 1
        if sub is None:
            return Reading(tool, None, None, tuple(parts + [Part(a, "unknown") for a in args[i:]]))
    role = role_for(tool, sub, (a.text or "" for a in args[i:]))
    options = _options(gamma, tool, sub or "")
    known = options_known(gamma, tool, sub)
    position = 0
    lead_seen = False
    dashdash = False
    while i < len(args):
        word = args[i]
        text = word.text
        if dashdash:
            parts.append(Part(word, "after-dashdash"))
        elif text == "--":
            dashdash = True
            parts.append(Part(word, "after-dashdash"))
        elif role is not None and role.lead and not lead_seen and text in role.lead:
            lead_seen = True
            parts.append(Part(word, "lead"))
        elif text is not None and text.startswith("-") and len(text) > 1:
            after = _option(args, i, options, parts)
            if not known and after == i + 1 and "=" not in text and i + 1 < len(args) \
                    and not (args[i + 1].text or "-").startswith("-"):
                # the tool did not say whether this option takes a value: the next word is not judged
                parts.append(Part(args[i + 1], "value"))
                after += 1
            i = after
            continue
        elif tool == "make" and text is not None and _ASSIGNMENT.match(text):
            parts.append(Part(word, "assignment"))
        else:
            kind = None
            if role is not None:
                kind = role.first if position == 0 else role.more
            parts.append(Part(word, "positional", kind))
            position += 1
        i += 1
    return Reading(tool, sub, role, tuple(parts))


def _option(args: Sequence[Word], i: int, options: dict[str, Binding], parts: list[Part]) -> int:
    """Record the option at ``i`` (and its value); return the index after them."""
    word = args[i]
    text = word.text or ""
    name = text.split("=", 1)[0]
    binding = options.get(name)
    takes = binding is not None and binding.attrs.get("value") == "required"
    attached = "=" in text
    if binding is None and len(text) > 2 and text[1] != "-" and f"-{text[1]}" in options:
        name, binding = f"-{text[1]}", options[f"-{text[1]}"]  # -mmsg, -abc, -am: the first letter names it
        takes, attached = _bundle(text, options)
    parts.append(Part(word, "option", option=name))
    if takes and not attached and i + 1 < len(args):
        parts.append(Part(args[i + 1], "value"))
        return i + 2
    return i + 1


def _bundle(text: str, options: dict[str, Binding]) -> tuple[bool, bool]:
    """``-abc``, ``-mmsg``, ``-am``: (whether a letter of it takes a value, whether that value is
    in the word): after the first such letter the rest of the word is its value; when it is the
    last letter, the next word is (``git commit -am msg``)."""
    for at, letter in enumerate(text[1:], 1):
        binding = options.get(f"-{letter}")
        if binding is None:
            return False, True
        if binding.attrs.get("value") == "required":
            return True, at < len(text) - 1
        if binding.attrs.get("value") == "optional":
            return False, True  # make's -j4: the rest of the word, never the next one
    return False, True


def ref_word(text: str, kind: str | None) -> str:
    """The name a positional of ``kind`` refers to: ``main`` of ``main~2``, ``+main:dest``."""
    word = text
    if kind in REVISION_KINDS:
        word = word.lstrip("+").split(":", 1)[0]
        word = _REVISION.sub("", word)
    return word


def skip_check(text: str, kind: str | None) -> bool:
    """Words a positional of ``kind`` may hold that are not names of Γ: a commit id,
    a glob, an empty word."""
    if not text or any(c in text for c in "*?[{"):
        return True
    return kind in REVISION_KINDS and bool(_HEX.match(text))


def sorts_of(kind: str | None) -> tuple[str, ...]:
    if kind is None or kind == "none" or kind.startswith("words:"):
        return ()
    if kind == "remote-ref":
        return ("RemoteBranch", "Branch", "Tag")
    return KIND_SORTS[kind]
