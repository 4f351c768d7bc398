"""Which names a shell source reads from the workspace may become words of Γ, and how each is written.

A cloned repository writes the names the shell sources read: refs and remotes in
``.git``, targets in a Makefile, scripts in package.json, recipes, tasks, and (through
the tool-help cache) what a tool said about itself. Γ puts those words in the grammar,
in completion items and in the prompt, so each source passes every name through its
rule here before it becomes a binding (``admit``); one that fails is left out and
noted once in ``words.REJECTIONS`` with the file it came from and why.

The rules (each starts with ``words.control_free``: no control character anywhere):

| rule | names | beyond control characters |
|---|---|---|
| ``ref`` | branches, tags, remote branches, remotes | git's ``check-ref-format``; no leading ``-`` |
| ``alias`` | ``[alias]`` keys of the config | a git config key: a letter, then letters, digits, ``-`` |
| ``path`` | worktree folders | no leading ``-`` (it would be read as an option) |
| ``script`` | make targets, npm scripts, just recipes, tasks | no leading ``-`` (the runner would read an option) |
| ``subcommand`` / ``option`` | what a tool lists in its ``--help`` | the shapes ``help_text`` parses |

A name that passes is written on a command line as the shell reads it back as that
one name (``shell_word``), decided per character:

- plain: letters and digits (any script) and ``_ - . / : @ % + , =``; no shell reads
  them specially inside a word, so the name is written as it is (``build:prod``);
- anything else (a blank, ``$ ` \\ ' " ; | & ( ) < > * ? [ ] { } ! # ~ ^``, other
  symbols): the whole name in single quotes, where nothing is expanded, and a ``'``
  in it as ``'\\''`` (``'lint; rm -rf ~'``).

A quoted word stands alone in the grammar (no revision suffix, no quotes around it),
and is never proposed as a quick fix (``plain``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gdg_lsp import words

Rule = Callable[[str], "str | None"]

_REF_FORBIDDEN = re.compile(r"[ ~^:?*\[\\]")
_ALIAS = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*\Z")
_OPTION = re.compile(r"-[A-Za-z0-9?#:]\Z|--?[A-Za-z0-9][A-Za-z0-9_.-]{0,45}\Z")
"""``-x`` (curl's ``-#`` and ``-:`` too), ``--name`` with dots (curl's ``--http1.1``)."""
_PLAIN = re.compile(r"[\w.,/:@%+=-]+\Z")
"""Characters no shell reads specially inside a word (``\\w``: letters and digits of any script, ``_``)."""


def ref(name: str) -> str | None:
    """Why ``name`` (``main``, ``feature/login``, ``origin/main``, ``origin``) is no ref git would
    make: git's ``check-ref-format`` rules on each slash-separated component, plus no leading ``-``."""
    if (why := words.control_free(name)) is not None:
        return why
    if name.startswith("-"):
        return "it starts with '-' (a command would read it as an option)"
    if (bad := _REF_FORBIDDEN.search(name)) is not None:
        return f"git refuses {bad.group()!r} in a ref name"
    if ".." in name or "@{" in name or name == "@":
        return "git refuses '..', '@{' and '@' in a ref name"
    if name.startswith("/") or name.endswith(("/", ".")) or "//" in name:
        return "git refuses a ref name that starts or ends with '/', ends with '.' or holds '//'"
    for component in name.split("/"):
        if component.startswith(".") or component.endswith(".lock"):
            return "git refuses a ref component that starts with '.' or ends with '.lock'"
    return None


def _shaped(pattern: re.Pattern[str], shape: str) -> Rule:
    def rule(name: str) -> str | None:
        if (why := words.control_free(name)) is not None:
            return why
        return None if pattern.match(name) else f"it is not {shape}"

    return rule


alias = _shaped(_ALIAS, "a git config key (a letter, then letters, digits, '-')")
subcommand = _shaped(_SUBCOMMAND, "a subcommand word (lower-case letters, digits, '-')")
option = _shaped(_OPTION, "an option word (-x, --name)")


def path(name: str) -> str | None:
    if (why := words.control_free(name)) is not None:
        return why
    return "it starts with '-' (a command would read it as an option)" if name.startswith("-") else None


script = path
"""Targets, scripts, recipes, tasks: any text their runner accepts, but never an option's shape."""


def admit(name: str, rule: Rule, source: str) -> bool:
    """Whether ``name`` may become a word of Γ; one that may not is noted (once) as read from ``source``."""
    why = rule(name)
    if why is None:
        return True
    words.REJECTIONS.note(words.Rejected(source, name, why))
    return False


def plain(name: str) -> bool:
    """Whether the shell reads ``name`` back as itself when it is written as it is."""
    return bool(_PLAIN.match(name))


def shell_word(name: str) -> str:
    """``name`` written so that the shell reads exactly it, as one word (see the module's table)."""
    return name if plain(name) else "'" + name.replace("'", "'\\''") + "'"
