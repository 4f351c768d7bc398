"""Reading a tool's own ``--help`` text: its subcommands and its options.

Help texts have no standard layout, so this reads the shapes the common tools use
(``tests/fixtures/help/`` holds real texts of git, make, npm, pip, docker, curl and jq,
and the tests hold every spelling they show to what is read here):

- option lines: a line that starts with ``-``; its option column ends at the first run
  of two blanks, a tab or `` : `` (curl writes ``--alt-svc <file name> Enable…`` with one
  blank: the column ends where a word is neither an option nor its value). A line
  indented to the description column of the option line above it is that option's
  description, whatever it starts with (pip's ``--ignore-installed to 'resolve' the``).
  The spellings of one option are joined by ``,``, ``|`` or ``/`` (``-q, --quiet``,
  ``-C DIR, --directory=DIR``, ``-w|--workspace``) and share its value;
- synopses: ``usage:`` and ``or:`` lines and the lines that continue them, and lines
  that start with ``[-`` (npm's option synopsis); every option in them is read, each
  alternative of ``[-a | -s | -u <key-id>]`` on its own, ``(-m | --message) <message>``
  as one option;
- values: ``--x=<v>``, ``--x=V``, ``--x <v>``, ``-x <v>``, ``-x V`` (an upper-case word),
  a lower-case type word before the column ends (docker's ``--cpus decimal``),
  ``-x<v>``: the option takes one; ``--x[=<v>]``, ``-x[<v>]`` (git's ``-n[<num>]``, make's
  ``-O[TYPE]``) and ``-x [N]`` (make's ``-j [N]``): it may take one;
- ``--[no-]x``: both ``--x`` and ``--no-x``;
- what each tool's parser accepts that its help does not spell (``CONVENTIONS``): git's
  parse-options negates every long option (``--no-ff`` of ``--ff``, ``--verify`` of
  ``--no-verify``) except its command modes (an option a synopsis writes outside brackets:
  ``or: git merge --abort``); curl and npm negate their boolean options; docker's
  boolean flags take ``=true``/``=false``;
- subcommands: indented lines after a heading that mentions "commands"
  (``Commands:``, ``Main Porcelain Commands``, ``All commands:``), as a first word per
  line or as comma-separated lists;
- a text that says it lists only some options (jq 1.6: "Some of the options include",
  "See the manpage for more options") leaves the options open (``lists_some_options``).

What is not recognised contributes nothing: a position whose set is unknown stays open
rather than being guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class OptionSpec:
    name: str
    """As written: ``--quiet``, ``-q``."""
    takes_value: bool = False
    """The next word (or ``=value``; for a short option, the rest of its word) is the option's value."""
    optional_value: bool = False
    """``--opt[=value]``, ``-o[value]``: a value may follow only after ``=`` (attached, for a
    short option; or as the next word when it is a number: make's ``-j [N]``)."""
    derived: bool = False
    """Not spelled by the help: the tool's convention derives it (git's ``--no-ff`` of ``--ff``).
    Such a spelling is known to the tool's parser as a rule, not one by one (git 2.39 refuses
    ``--no-ours``), so the grammar takes it where the user typed it and never offers it."""

    def payload(self) -> list:
        return [self.name, self.takes_value, self.optional_value, self.derived]


@dataclass(frozen=True)
class Convention:
    """What a tool's option parser accepts beyond the spellings its help writes."""

    negation: str = "listed"
    """``listed``: only what the help spells; ``long``: every long option has its ``--no-``
    form and every ``--no-x`` its ``--x`` (git's parse-options), command modes excepted;
    ``flags``: the same for long options that take no value (curl's booleans); npm's
    configuration options all take ``--no-`` (npm's nopt), so npm is ``long``."""
    boolean_value: bool = False
    """A long option without a value takes ``=true``/``=false`` (spf13/pflag: docker)."""
    subcommands_only: bool = False
    """The convention holds for the subcommands' help only (git's own options, before the
    subcommand, are read by git.c by hand: ``git --no-bare`` is refused)."""


CONVENTIONS: dict[str, Convention] = {
    "git": Convention(negation="long", subcommands_only=True),
    "curl": Convention(negation="flags"),
    "npm": Convention(negation="long"),
    "docker": Convention(boolean_value=True),
}

MAX_OPTIONS = 600
MAX_SUBCOMMANDS = 300
_NAME = re.compile(r"(?<![\w<>=.-])(?:--\[no-\](?P<neg>[A-Za-z0-9][\w.-]*)|(?P<name>--?[A-Za-z0-9?#:][\w.-]*))")
"""An option's name where it starts a word (``--[no-]x`` as one); ``-#``, ``-:``, ``-?`` too."""
_COLUMN_END = re.compile(r" {2,}|\t| : ")
_GAP_AHEAD = r"(?= {2,}|\t| : |\s*$)"
_ALIAS = re.compile(r"\s*[,|/]\s*")
_SYNOPSIS_ALIAS = re.compile(r"[|,]")
"""Within a synopsis only an unspaced ``|`` joins spellings (npm's ``-w|--workspace``); git's
``[-a | -s]`` are alternatives."""
_VALUE_EQ = re.compile(r"\[=[^\]]*\]|=(<[^>]*>|[^\s,|\[\]()]+)")
_VALUE_ATTACHED = re.compile(r"\[(?:<[^>]*>|[A-Za-z][\w-]*)\]|<[^>]*>")
_VALUE_SEPARATE = re.compile(r" (?:<[^>]*>(?:=<[^>]*>)?|\[(?:<[^>]*>|[A-Z][\w-]*)\](?=$|[,|\s])|\[[^\s\]]*\][^\s,|]+"
                             r"|[A-Z][A-Z0-9_-]*(?=$|[,|]| {2,}|\t| : )"
                             r"|[a-z][\w.-]*(?: [a-z][\w.-]*)?" + _GAP_AHEAD + ")")
_SYNOPSIS_VALUE_END = re.compile(r"\]|\)|\||\s+\||\s+\.\.\.|\s+\[-|\s*$")
"""What follows a ``<value>`` that belongs to the option before it in a synopsis
(``[-C <path>]``, ``[--omit <x> [--omit <x> ...]]``); ``--add <name> <newurl>`` is a flag and two operands."""
_SYNOPSIS_START = re.compile(r"(?i)\s*(usage\s*:|or\s*:)")
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_SOME_OPTIONS = re.compile(r"(?i)\bsome of the options\b|\bman ?page for more options\b|\bnot all options\b")


@dataclass
class _Spelling:
    name: str
    value: int = 0
    """0 none, 1 optional, 2 required."""
    mode: bool = False
    """Written outside brackets in a synopsis (``or: git merge --abort``): a command mode."""


def _value(text: str, at: int, short: bool, synopsis: bool) -> tuple[int, int]:
    """The value written right after an option name ending at ``at``: (0/1/2, where it ends)."""
    if (found := _VALUE_EQ.match(text, at)) is not None:
        return (1 if found.group().startswith("[") else 2), found.end()
    if short and (found := _VALUE_ATTACHED.match(text, at)) is not None:
        return (1 if found.group().startswith("[") else 2), found.end()
    found = _VALUE_SEPARATE.match(text, at)
    if found is None:
        return 0, at
    word = found.group()[1:]
    if synopsis:
        # in a synopsis only `<value>` counts, and only where it closes the option's group
        if not word.startswith("<") or not _SYNOPSIS_VALUE_END.match(text, found.end()):
            return 0, at
        return 2, found.end()
    if re.fullmatch(r"\[[^\]]*\]", word):
        return (1, found.end()) if short else (0, at)  # make's `-j [N]`; a long `--x [<y>]` is an operand
    return 2, found.end()


def _groups(text: str, synopsis: bool) -> Iterator[list[_Spelling]]:
    """The options of one line (an option line's column, or a synopsis), each as the group of
    its spellings."""
    depth = 0
    position = 0
    group: list[_Spelling] = []
    paren_group: list[_Spelling] | None = None
    while position < len(text):
        found = _NAME.search(text, position)
        if found is None:
            break
        if synopsis:
            between = text[position:found.start()]
            depth += between.count("[") - between.count("]")
            if "(" in between:
                paren_group = []
        elif group and not _ALIAS.fullmatch(text[position:found.start()]):
            break  # an option line's column ends where a word is neither an option nor its value
        if synopsis and group and not _SYNOPSIS_ALIAS.fullmatch(text[position:found.start()]):
            yield group
            group = []
        name = found.group("name")
        names = [f"--{found.group('neg')}", f"--no-{found.group('neg')}"] if found.group("neg") else [name]
        names = [n.rstrip(".-") for n in names]
        if len(names[0]) < 2 or names[0] == "--" or len(names[0]) > 48:
            position = found.end()
            continue
        short = len(names[0]) == 2 and not names[0].startswith("--")
        value, position = _value(text, found.end(), short, synopsis)
        spellings = [_Spelling(n, value, synopsis and depth <= 0) for n in names]
        group.extend(spellings)
        if paren_group is not None:
            paren_group.extend(spellings)
        if synopsis and paren_group is not None and text.startswith(")", position):
            # `(-m | --message) <message>`: the value after the parentheses is every spelling's
            value, end = _value(text, position + 1, False, True)
            for spelling in paren_group:
                spelling.value = max(spelling.value, value)
            paren_group = None
            position = end if value else position + 1
    if group:
        yield group


def _lines(text: str) -> Iterator[tuple[str, bool]]:
    """The lines that hold options: (the option column or the whole synopsis line, is a synopsis)."""
    in_synopsis = False
    description_column: int | None = None
    for line in text.expandtabs(8).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            in_synopsis = False
            continue
        if _SYNOPSIS_START.match(line):
            in_synopsis = True
            yield _SYNOPSIS_START.sub("", line, count=1), True
            continue
        if in_synopsis and indent > 0 and stripped[0] in "[(<" or stripped.startswith("[-"):
            in_synopsis = in_synopsis or stripped.startswith("[-")
            yield stripped, True
            continue
        in_synopsis = False
        if indent == 0 and not stripped.startswith("-"):
            description_column = None  # a heading: a new block
            continue
        if not stripped.startswith("-"):
            continue
        if description_column is not None and indent >= description_column:
            continue  # the description of the option above, which happens to start with '-'
        gap = _COLUMN_END.search(stripped)
        if gap is not None:
            description_column = indent + gap.end()
        yield (stripped[: gap.start()] if gap else stripped), False


def parse_options(text: str, tool: str | None = None, subcommand: bool = False) -> list[OptionSpec]:
    """Options listed in ``text`` (the help of ``tool``, or of one of its subcommands) and those
    the tool's convention derives from them, de-duplicated (a spelling that takes a value wins
    over one that may, over a flag)."""
    found: dict[str, int] = {}
    modes: set[str] = set()
    aliases: dict[str, tuple[str, ...]] = {}
    for line, synopsis in _lines(text):
        for group in _groups(line, synopsis):
            shared = max(s.value for s in group)
            for spelling in group:
                value = shared  # the spellings of one option share its value
                found[spelling.name] = max(found.get(spelling.name, 0), value)
                if spelling.mode:
                    modes.add(spelling.name)
                if not synopsis:
                    aliases[spelling.name] = tuple(s.name for s in group)
        if len(found) >= MAX_OPTIONS:
            break
    modes |= {alias for mode in modes for alias in aliases.get(mode, ())}
    listed = [OptionSpec(name, value == 2, value == 1) for name, value in list(found.items())[:MAX_OPTIONS]]
    convention = CONVENTIONS.get(tool or "", Convention())
    if convention.subcommands_only and not subcommand:
        convention = Convention()
    derived = _derived(listed, modes, convention)[: max(0, MAX_OPTIONS - len(listed))]
    return sorted([_with_boolean_value(o, convention) for o in listed] + derived)


def _derived(listed: list[OptionSpec], modes: set[str], convention: Convention) -> list[OptionSpec]:
    """The spellings the tool's parser accepts that its help does not write out (negations)."""
    names = {o.name for o in listed}
    found: dict[str, OptionSpec] = {}
    for option in listed:
        name = option.name
        if not name.startswith("--") or name in modes:
            continue
        flag = not option.takes_value and not option.optional_value
        if convention.negation == "long" or (convention.negation == "flags" and flag):
            other = "--" + name[5:] if name.startswith("--no-") else "--no-" + name[2:]
            if len(other) > 3 and other not in names and other not in modes:
                found[other] = OptionSpec(other, derived=True)
    return list(found.values())


def _with_boolean_value(option: OptionSpec, convention: Convention) -> OptionSpec:
    """docker's ``--rm=false``: pflag's boolean flags take ``=true``/``=false``."""
    if convention.boolean_value and option.name.startswith("--") and not option.takes_value:
        return OptionSpec(option.name, False, True)
    return option


def lists_some_options(text: str) -> bool:
    """Whether the text says its options are only some of the tool's (jq 1.6's ``--help``)."""
    return bool(_SOME_OPTIONS.search(text))


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
