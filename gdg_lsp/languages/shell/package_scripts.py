"""Named scripts of a project: ``package.json`` scripts, ``justfile`` recipes, ``Taskfile`` tasks.

All three are read as data (JSON, a line scan, YAML's safe loader); nothing in
them is run. The nearest file walking up from the script's folder to the
workspace folder is the one the runner would use. Each file is read through the
boundary (``Boundary.read_text_noted``: a FIFO is refused, never waited on), each name
passes ``names.script`` before it is kept, and at most ``gdg.limits.scripts`` names are
kept per file (the first one past the bound is noted); finding the names' lines
is one pass over the file, whatever their number.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp import words
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.shell import names

MAX_BYTES = 1024 * 1024
MAX_SCRIPTS = 5000
"""Names kept per file (a real package.json has tens): the default of ``gdg.limits.scripts``."""
JUSTFILE_NAMES = ("justfile", "Justfile", ".justfile")
TASKFILE_NAMES = ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml")
_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:[ \t]+[^:\n]*)?:(?!=)", re.MULTILINE)
_ALIAS = re.compile(r"^alias[ \t]+([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:=", re.MULTILINE)
_JUST_KEYWORDS = frozenset({"set", "export", "import", "mod", "alias"})
_JSON_STRING = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"([ \t\r\n]*:)?', re.DOTALL)
"""A JSON string, matched whole (so nothing inside one is read as a key); group 2: it is a key."""
_YAML_KEY = re.compile(r"^[ \t]+([^\s:#][^:\n]*?)[ \t]*:", re.MULTILINE)


class Lines:
    """Line numbers of offsets in ``text`` asked in increasing order, counted in one pass
    (``text.count`` from 0 for each of 40,000 names is quadratic in the file)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offset = 0
        self._line = 0

    def at(self, offset: int) -> int:
        if offset < self._offset:  # out of order: count again from the start
            self._offset, self._line = 0, 0
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


@dataclass(frozen=True)
class Script:
    name: str
    runner: str
    """npm | just | task"""
    file: str
    line: int
    command: str = ""


def nearest(start: Path, names: tuple[str, ...], boundary: Boundary) -> Path | None:
    """The first of ``names`` found in ``start`` or a parent folder inside the boundary. Whatever
    stands under the name (a FIFO too) is the one the runner would use: it is returned so that the
    read refuses it and says why, rather than a farther file being taken in silence."""
    current = start if start.is_dir() else start.parent
    while boundary.allows(current):
        for name in names:
            candidate = current / name
            if os.path.lexists(candidate) and not candidate.is_dir() and boundary.allows(candidate):
                return candidate
        if current.parent == current:
            break
        current = current.parent
    return None


class _Kept:
    """The names of one file that pass ``names.script``, at most ``limit`` of them."""

    def __init__(self, path: Path, limit: int) -> None:
        self.source = str(path)
        self.limit = limit
        self.names: list[str] = []
        self.full = False

    def admit(self, name: object) -> bool:
        if self.full or not isinstance(name, str) or not names.admit(name, names.script, self.source):
            return False
        if len(self.names) >= self.limit:
            self.full = True
            words.REJECTIONS.note(words.Rejected(self.source, name, f"the file names more than {self.limit:,} "
                                                 "scripts (gdg.limits.scripts): this one and the rest are left out"))
            return False
        self.names.append(name)
        return True


def npm_scripts(package_json: Path, boundary: Boundary, limit: int = MAX_SCRIPTS) -> list[Script]:
    text = boundary.read_text_noted(package_json, MAX_BYTES)
    if text is None:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return []
    kept = _Kept(package_json, limit)
    commands = {}
    for name, command in scripts.items():
        if kept.admit(name):
            commands[name] = str(command)[:200]
        elif kept.full:
            break
    lines = _json_key_lines(text, set(commands))
    return [Script(name, "npm", str(package_json), lines.get(name, 0), command) for name, command in commands.items()]


def _json_key_lines(text: str, wanted: set[str]) -> dict[str, int]:
    """The line of each of ``wanted`` as a key after the ``"scripts"`` key: one pass over the
    file's strings (each is matched whole, so nothing inside a string is read as a key)."""
    found: dict[str, int] = {}
    lines = Lines(text)
    after_scripts = False
    for match in _JSON_STRING.finditer(text):
        if len(found) == len(wanted):
            break
        if match.group(2) is None:
            continue
        key = match.group(1)
        if "\\" in key:
            try:
                key = json.loads(f'"{key}"')
            except ValueError:
                continue
        if not after_scripts:
            after_scripts = key == "scripts"
        elif key in wanted and key not in found:
            found[key] = lines.at(match.start())
    return found


def just_recipes(justfile: Path, boundary: Boundary, limit: int = MAX_SCRIPTS) -> list[Script]:
    text = boundary.read_text_noted(justfile, MAX_BYTES)
    if text is None:
        return []
    found: dict[str, int] = {}
    for pattern in (_RECIPE, _ALIAS):
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in _JUST_KEYWORDS or pattern is _ALIAS:
                found.setdefault(name, match.start())
    kept = _Kept(justfile, limit)
    lines = Lines(text)
    return [Script(name, "just", str(justfile), lines.at(at))
            for name, at in sorted(found.items(), key=lambda item: item[1]) if kept.admit(name)]


def taskfile_tasks(taskfile: Path, boundary: Boundary, limit: int = MAX_SCRIPTS) -> list[Script]:
    import yaml  # only projects with a Taskfile pay for the import

    text = boundary.read_text_noted(taskfile, MAX_BYTES)
    if text is None:
        return []
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        return []
    kept = _Kept(taskfile, limit)
    wanted = [name for name in tasks if kept.admit(name)]
    lines = Lines(text)
    at: dict[str, int] = {}
    for match in _YAML_KEY.finditer(text):
        if match.group(1) in tasks and match.group(1) not in at:
            at[match.group(1)] = lines.at(match.start())
    return [Script(name, "task", str(taskfile), at.get(name, 0)) for name in wanted]
