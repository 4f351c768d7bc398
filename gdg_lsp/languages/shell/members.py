"""The members of the grammar's "tool" family: what may follow each known tool.

Each member is a mapping of slot name to a list of words (``[""]`` switches a
derivation on, ``[]`` off); grammars/shell/command.ebnf says what each slot
does. Members are computed from Γ only (``Gamma.names``/``bindings``), so the
grammar's candidates are exactly Γ's names.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from gdg_lsp.gamma import Gamma
from gdg_lsp.languages.shell.names import plain
from gdg_lsp.languages.shell.roles import REVISION_KINDS, ROLES, Role, kind_is_known, names_of_kind

ON: list[str] = [""]
OFF: list[str] = []


def _short(word: str) -> bool:
    return len(word) == 2 and word[0] == "-" and word[1] != "-"


class _Options:
    """Γ's Option bindings grouped by tool and subcommand, read in one pass (a member per
    subcommand scanned every binding again: 170 ms for git's 1,900 options)."""

    def __init__(self, gamma: Gamma) -> None:
        self.gamma = gamma
        self.by_scope: dict[tuple[str, str], list] = {}
        for binding in gamma.bindings("Option"):
            self.by_scope.setdefault((binding.attrs.get("tool"), binding.attrs.get("sub")), []).append(binding)

    def slots(self, tool: str, sub: str, excluded: Sequence[str] = (),
              typed: Collection[str] = ()) -> dict[str, list[str]] | None:
        """The option slots of ``tool sub`` (``sub`` "" for the tool's own), or None when unknown.
        A spelling the tool's convention derives (``derived``) is in them only when ``typed`` holds it."""
        source = self.gamma.lookup(f"source:tool:{tool}" + (f" {sub}" if sub else ""))
        if source is None or source.sort != "Source" or source.attrs.get("options_open"):
            return None
        flags, valued, optval = [], [], []
        for b in self.by_scope.get((tool, sub), ()):
            word = b.attrs["word"]
            if word in excluded or (b.attrs.get("derived") and word not in typed):
                continue
            {"required": valued, "optional": optval}.get(b.attrs["value"], flags).append(word)
        shorts = [w for w in flags if _short(w)]
        short_valued = [w for w in valued if _short(w)]
        return {"flag": sorted(flags), "valued": sorted(valued), "optval": sorted(optval), "shortf": sorted(shorts),
                "letters": sorted({w[1] for w in shorts}), "svalued": sorted(short_valued),
                "soptval": sorted(w for w in optval if _short(w)), "vletters": sorted({w[1] for w in short_valued})}


_WHOLE_ONLY = ("shortf", "letters", "svalued", "soptval", "vletters")
"""Before a subcommand only whole options are written (no bundles, no attached values)."""


def _option_slots(prefix: str, options: dict[str, list[str]] | None) -> dict[str, list[str]]:
    if options is None:
        return {f"t_{prefix}oopen": ON}
    return {f"t_{prefix}{key}": value for key, value in options.items() if not (prefix and key in _WHOLE_ONLY)}


def _positional(slot: str, kind: str | None, gamma: Gamma) -> dict[str, list[str]]:
    if kind == "none":
        return {}
    if kind is None or not kind_is_known(kind, gamma):
        return {f"t_{slot}_open": ON}
    written = names_of_kind(kind, gamma) or []
    # a quoted word (names.shell_word) stands alone: quotes around it or a suffix after it
    # would make the shell read another name
    return {f"t_{slot}": [w for w in written if plain(w)], f"t_{slot}_quoted": [w for w in written if not plain(w)],
            f"t_{slot}_rev": ON if kind in REVISION_KINDS else OFF}


def _member(tool: str, **slots: list[str]) -> dict[str, Any]:
    return {"t_tool": [tool], **slots}


def members(gamma: Gamma, tools: Sequence[str], typed: Collection[str] = ()) -> list[dict[str, Any]]:
    """One member per tool (its own options and positionals), one per subcommand
    with a role or known options, and one for the rest of the tool's subcommands.
    ``typed``: the derived option spellings the line holds (``typed_derived``)."""
    found: list[dict[str, Any]] = []
    options = _Options(gamma)
    for tool in tools:
        known = f"source:tool:{tool}" in gamma
        subcommands = [b.attrs["word"] for b in gamma.bindings("Subcommand", tool=tool)]
        roles = [r for r in ROLES if r.tool == tool]
        bare_role = next((r for r in roles if r.sub is None), None)
        top = options.slots(tool, "", typed=typed)
        bare: dict[str, Any] = {"t_bare": ON, **_option_slots("", top)}
        if bare_role is not None:
            bare |= _positional("first", bare_role.first, gamma) | _positional("more", bare_role.more, gamma)
        elif not subcommands and not [r for r in roles if r.sub]:
            bare |= {"t_first_open": ON, "t_more_open": ON}  # unknown tool, or one without subcommands
        if tool == "make":
            bare["t_assign"] = ON
        found.append(_member(tool, **bare))
        sub_roles = [r for r in roles if r.sub and (not known or r.sub in subcommands)]
        given = set()
        for role in sub_roles:
            found.append(_sub_member(gamma, options, tool, role, top, roles, typed))
            given.add(role.sub)
        described = [b.attrs["word"] for b in gamma.bindings("Source") if b.attrs.get("kind", "").startswith(f"tool:{tool} ")]
        for sub in described:
            if sub not in given:
                found.append(_sub_member(gamma, options, tool, Role(tool, sub, None, None), top, roles, typed))
                given.add(sub)
        rest = [s for s in subcommands if s not in given]
        if rest:
            found.append(_member(tool, t_sub=rest, t_nolead=ON, t_oopen=ON, t_first_open=ON, t_more_open=ON,
                                 **_option_slots("g", top)))
        # A tool that says nothing about itself but has roles (git not installed, a
        # repository present) offers only its role subcommands: an open subcommand
        # word would reach `checkout <anything>`; other lines fall back to the base rung.
    return found


def _sub_member(gamma: Gamma, options: _Options, tool: str, role: Role, top: dict[str, list[str]] | None,
                roles: Sequence[Role], typed: Collection[str] = ()) -> dict[str, Any]:
    # the plain member of a subcommand leaves out the lead words of its siblings (`git branch -d`)
    excluded = [] if role.lead else [w for r in roles if r.sub == role.sub for w in r.lead]
    member = {"t_sub": [role.sub], **_option_slots("g", top),
              **_option_slots("", options.slots(tool, role.sub, excluded, typed))}
    member |= {"t_lead_word": list(role.lead)} if role.lead else {"t_nolead": ON}
    member |= _positional("first", role.first, gamma) | _positional("more", role.more, gamma)
    if role.colon:
        member["t_colon"] = ON
    return _member(tool, **member)


_OPTION_WORD = re.compile(r"(?<!\S)--?[^\s=]+")
MIN_DERIVED_PREFIX = 3
"""A partly typed option (``--no-f``) brings in the derived spellings it begins, once it is this long."""


def derived_words(gamma: Gamma) -> frozenset[str]:
    """The option spellings of Γ that a tool's convention derives (``derived``)."""
    return frozenset(b.attrs["word"] for b in gamma.bindings("Option", derived=True))


def typed_derived(typed: str, derived: Collection[str]) -> frozenset[str]:
    """The ``derived`` option spellings the typed line writes, whole or, for its last word, begun:
    the grammar takes those, and only those, so a user who types git's ``--no-ff`` stays on the
    gamma rung while the model is never offered a derived one nobody typed (git 2.39 refuses
    ``--no-ours``, which its convention would derive)."""
    words = _OPTION_WORD.findall(typed)
    if not words or not derived:
        return frozenset()
    partial = words[-1] if typed and not typed[-1].isspace() and typed.endswith(words[-1]) else None
    whole = set(words) - ({partial} if partial else set())
    found = {w for w in whole if w in derived}
    if partial and len(partial) >= MIN_DERIVED_PREFIX:
        found |= {w for w in derived if w.startswith(partial)}
    return frozenset(found)


def open_members(tools: Sequence[str]) -> list[dict[str, Any]]:
    """The base rung: every known tool's name, then anything."""
    return [{"t_tool": sorted(set(tools)), "t_bare": ON, "t_oopen": ON, "t_first_open": ON, "t_more_open": ON,
             "t_assign": ON}]
