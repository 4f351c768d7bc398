"""The targets a Makefile defines, read with tree-sitter-make (make is never run).

Running ``make -pn`` would expand ``$(shell ...)`` and so run the Makefile's
code; reading it does not. A target is a word of a rule's target list that is
neither a pattern (``%.o``), a special target (``.PHONY``, ``.DEFAULT``), nor
made of variables (``$(OUT)``: its name is only known after expansion).
``include`` / ``-include`` / ``sinclude`` directives with literal file names
are followed, relative to the including file, within the boundary, eight deep
at most; the stamp of each file read (or looked for: an include not there yet) is
noted before its read, so what was read is kept only while they hold. Every file is read through the boundary (``Boundary.read_noted``: a FIFO
named by an ``include`` is refused, never waited on), and every target passes
``names.script`` before it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tree_sitter
import tree_sitter_make

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.base import ThreadParser
from gdg_lsp.languages.shell import names

LANGUAGE = tree_sitter.Language(tree_sitter_make.language())
parse = ThreadParser(LANGUAGE)

MAKEFILE_NAMES = ("GNUmakefile", "makefile", "Makefile")
MAX_DEPTH = 8
MAX_FILES = 32
MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class Target:
    name: str
    file: str
    line: int


def find_makefile(folder: Path, boundary: Boundary) -> Path | None:
    """The Makefile ``make`` would read in ``folder`` (GNU make's order)."""
    for name in MAKEFILE_NAMES:
        candidate = folder / name
        if candidate.is_file() and boundary.allows(candidate):
            return candidate
    return None


def read_targets(makefile: Path, boundary: Boundary, witness: stamps.Witness | None = None) -> list[Target]:
    """Targets of ``makefile`` and of the files it includes, in order of appearance
    (``witness`` gets the stamp of every file read or looked for)."""
    targets: dict[str, Target] = {}
    seen: set[Path] = set()
    _read(makefile, boundary, targets, seen, 0, witness if witness is not None else stamps.Witness())
    return list(targets.values())


def _read(path: Path, boundary: Boundary, targets: dict[str, Target], seen: set[Path], depth: int,
          witness: stamps.Witness) -> None:
    resolved = path.resolve()
    if depth > MAX_DEPTH or resolved in seen or len(seen) >= MAX_FILES or not boundary.allows(path):
        return
    seen.add(resolved)
    witness.note(path)
    source = boundary.read_noted(path, MAX_BYTES)
    if source is None:
        return
    for node in _directives(parse(source).root_node):
        if node.type == "rule":
            listed = node.child_by_field_name("targets") or next((c for c in node.children if c.type == "targets"), None)
            if listed is None:
                continue
            for word in listed.children:
                name = word.text.decode("utf-8", "replace")
                if word.type == "word" and _is_target(name) and name not in targets \
                        and names.admit(name, names.script, str(path)):
                    targets.setdefault(name, Target(name, str(path), word.start_point[0]))
        elif node.type == "include_directive":
            files = node.child_by_field_name("filenames")
            for word in (files.children if files is not None else ()):
                name = word.text.decode("utf-8", "replace")
                if word.type == "word" and "$" not in name and "%" not in name and "*" not in name:
                    _read(path.parent / name, boundary, targets, seen, depth + 1, witness)


def _directives(root):
    """Rules and include directives, also those inside conditionals (ifeq/ifdef blocks)."""
    stack = list(reversed(root.children))
    while stack:
        node = stack.pop()
        if node.type in ("rule", "include_directive"):
            yield node
            # tree-sitter-make reads an ifeq block that follows a recipe as part of that recipe
            stack.extend(reversed([c for r in node.children if r.type == "recipe" for c in r.children
                                   if c.type == "conditional"]))
        elif node.type not in ("recipe", "variable_assignment", "define_directive", "comment"):
            stack.extend(reversed(node.children))


def _is_target(name: str) -> bool:
    return bool(name) and not name.startswith(".") and "%" not in name and "$" not in name and "(" not in name
