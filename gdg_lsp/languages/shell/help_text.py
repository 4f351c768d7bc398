"""Reading a tool's own ``--help`` text: its subcommands and its options.

Help texts have no standard layout, so this reads the two shapes nearly every
tool uses:

- options: lines that start with ``-`` (or ``[-`` in a usage synopsis); the
  option column ends at the first run of two blanks or `` : ``. An option
  followed by ``=x``, `` <x>``, an upper-case word or a single word before the
  column ends takes a value; ``[=x]`` makes the value optional.
- subcommands: indented lines after a heading that mentions "commands"
  (``Commands:``, ``Main Porcelain Commands``, ``All commands:``), as a first
  word per line or as comma-separated lists.

What is not recognised contributes nothing: a position whose set is unknown
stays open rather than being guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class OptionSpec:
    name: str
    """As written: ``--quiet``, ``-q``."""
    takes_value: bool = False
    """The next word (or ``=value``) is the option's value."""
    optional_value: bool = False
    """``--opt[=value]``: a value may follow only after ``=``."""

    def payload(self) -> list:
        return [self.name, self.takes_value, self.optional_value]


_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9?][A-Za-z0-9_-]*)")
_VALUE_AFTER = re.compile(r"(?P<eq>\[?=)|(?: (?P<word><[^>]*>|\[?[A-Za-z][\w.-]*\]?)(?P<end>$|[,|\]=]| \.\.\.| \||\s))")
_ALIAS_GAP = re.compile(r"\s*[,|]\s*|\s+\S+,\s*|=\S+,\s*")
"""What separates two spellings of one option: ``-q, --quiet``, ``-w|--workspace``,
``-C DIR, --directory=DIR``."""
_COLUMN_END = re.compile(r" {2,}|\t| : ")
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
MAX_OPTIONS = 600
MAX_SUBCOMMANDS = 300


def _head(line: str) -> str:
    """The option column of an option line (the description cut off)."""
    stripped = line.strip()
    if stripped.startswith("[") or stripped.startswith("usage") or stripped.startswith("Usage"):
        return stripped  # a synopsis: the whole line is options
    found = _COLUMN_END.search(stripped)
    return stripped[: found.start()] if found else stripped


def parse_options(text: str) -> list[OptionSpec]:
    """Options listed in ``text``, de-duplicated (a valued spelling wins over a flag)."""
    found: dict[str, OptionSpec] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not (stripped.startswith("-") or stripped.startswith("[-") or stripped.startswith("[--")
                or re.match(r"(?i)usage:", stripped) or (stripped.startswith("[") and " -" in stripped)):
            continue
        head = _head(line)
        group: list[OptionSpec] = []
        previous_end = None
        for match in _OPTION.finditer(head):
            name = match.group(1)
            if name in ("-", "--") or len(name) > 48:
                continue
            if previous_end is not None and not _ALIAS_GAP.fullmatch(head[previous_end:match.start()]):
                _keep(found, group)
                group = []
            group.append(_spec(name, head[match.end():]))
            previous_end = match.end()
        _keep(found, group)
        if len(found) >= MAX_OPTIONS:
            break
    return sorted(found.values())


def _spec(name: str, after: str) -> OptionSpec:
    value = _VALUE_AFTER.match(after)
    if value is None:
        return OptionSpec(name)
    if value.group("eq"):
        optional = value.group("eq").startswith("[")
        return OptionSpec(name, not optional, optional)
    word = value.group("word")
    if word.startswith("[") and word.endswith("]"):
        return OptionSpec(name, False, True)
    return OptionSpec(name, True, False)


def _keep(found: dict[str, OptionSpec], group: list[OptionSpec]) -> None:
    """Record one option's spellings; a value any spelling shows applies to all."""
    takes = any(s.takes_value for s in group)
    optional = not takes and any(s.optional_value for s in group)
    for spec in group:
        merged = OptionSpec(spec.name, takes, optional)
        old = found.get(spec.name)
        if old is None or (merged.takes_value and not old.takes_value):
            found[spec.name] = merged


def parse_subcommands(text: str) -> list[str]:
    """Subcommands listed under a heading that mentions commands."""
    names: list[str] = []
    inside = False
    for line in text.splitlines():
        if not line.strip():
            continue
        indented = line[:1] in (" ", "\t")
        if not indented:
            lowered = line.lower()
            inside = "command" in lowered and ("commands" in lowered or lowered.rstrip().endswith(":"))
            continue
        if not inside:
            continue
        stripped = line.strip()
        if "," in stripped and not _COLUMN_END.search(stripped):
            candidates = [part.strip() for part in stripped.split(",")]
        else:
            candidates = [re.split(r"\s", stripped, maxsplit=1)[0].rstrip("*:")]
        for word in candidates:
            if _COMMAND_WORD.fullmatch(word) and word not in names:
                names.append(word)
        if len(names) >= MAX_SUBCOMMANDS:
            break
    return names
