"""Simple commands of a shell script, from tree-sitter-bash: the command's name
and its arguments, each with its static value when it has one.

A word's static value is its text with the quoting removed (``"main"``,
``'main'``, ``ma\\in`` are all ``main``); a word with an expansion in it
(``$x``, ``"$y"``, ``$(...)``) has none: it names a run-time value, which is
never checked against Γ. Offsets are code points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tree_sitter
import tree_sitter_bash

from gdg_lsp.languages.base import ThreadParser

LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
parse = ThreadParser(LANGUAGE)
"""Parse source bytes (incrementally from ``old_tree`` when given)."""

PREFIXES = frozenset({"sudo", "command", "exec", "nohup", "env", "time", "builtin"})
"""Words that run the next word as the command."""
_DYNAMIC = frozenset({"simple_expansion", "expansion", "command_substitution", "process_substitution",
                      "arithmetic_expansion", "brace_expression"})


@dataclass(frozen=True)
class Word:
    text: str | None
    """The static value, or None when the word has an expansion."""
    start: int
    end: int
    value_start: int
    value_end: int
    """Where the value lies inside the quotes (the range a quick fix rewrites)."""
    node_type: str


@dataclass(frozen=True)
class Command:
    name: Word
    args: tuple[Word, ...]
    start: int
    end: int


class Offsets:
    """Byte offsets of a tree to code-point offsets of its text."""

    def __init__(self, text: str) -> None:
        encoded = text.encode("utf-8", "surrogatepass")
        self._ascii = len(encoded) == len(text)
        self._encoded = encoded

    def __call__(self, byte: int) -> int:
        if self._ascii:
            return byte
        return len(self._encoded[:byte].decode("utf-8", "surrogatepass"))

    def byte(self, text: str, offset: int) -> int:
        return offset if self._ascii else len(text[:offset].encode("utf-8", "surrogatepass"))


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def static_value(node, source: bytes) -> str | None:
    """The node's value with quoting removed, or None if it has an expansion."""
    kind = node.type
    if kind in _DYNAMIC:
        return None
    text = node.text.decode("utf-8", "surrogatepass") if node.text is not None else ""
    if kind in ("word", "number"):
        return _unescape(text) if not any(c.type in _DYNAMIC for c in node.children) else None
    if kind == "raw_string":
        return text[1:-1] if len(text) >= 2 and text.endswith("'") else None
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type != "string_content":
                return None
            parts.append(_unescape(child.text.decode("utf-8", "surrogatepass")))
        return "".join(parts)
    if kind == "concatenation":
        parts = [static_value(child, source) for child in node.children]
        return None if any(p is None for p in parts) else "".join(parts)  # type: ignore[arg-type]
    return None


def _word(node, source: bytes, at: Offsets) -> Word:
    start, end = at(node.start_byte), at(node.end_byte)
    value_start, value_end = start, end
    if node.type in ("raw_string", "string") and end - start >= 2:
        value_start, value_end = start + 1, end - 1
    return Word(static_value(node, source), start, end, value_start, value_end, node.type)


def commands(tree, text: str) -> list[Command]:
    """Every simple command in the script (also inside $(...), pipelines, if bodies)."""
    source = text.encode("utf-8", "surrogatepass")
    at = Offsets(text)
    found: list[Command] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "command":
            found.append(_command(node, source, at))
        if node.type in ("heredoc_body", "comment"):
            continue
        stack.extend(reversed(node.children))
    found.sort(key=lambda c: c.start)
    return found


def _command(node, source: bytes, at: Offsets) -> Command:
    name_node = node.child_by_field_name("name")
    args = [_word(child, source, at) for child in node.children_by_field_name("argument")]
    name = _word(name_node.children[0] if name_node is not None and name_node.children else node, source, at)
    # `sudo git ...`, `env X=1 make ...`: the command is the next plain word
    while name.text in PREFIXES and args and args[0].text is not None and not args[0].text.startswith("-"):
        if "=" in args[0].text and name.text == "env":
            args = args[1:]
            continue
        name, args = args[0], args[1:]
    return Command(name, tuple(args), at(node.start_byte), at(node.end_byte))


def command_at(found: list[Command], offset: int) -> Command | None:
    """The innermost command whose span holds ``offset``."""
    best = None
    for command in found:
        if command.start <= offset <= command.end and (best is None or command.start >= best.start):
            best = command
    return best
