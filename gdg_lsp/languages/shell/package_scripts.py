"""Named scripts of a project: ``package.json`` scripts, ``justfile`` recipes, ``Taskfile`` tasks.

All three are read as data (JSON, a line scan, YAML's safe loader); nothing in
them is run. The nearest file walking up from the script's folder to the
workspace folder is the one the runner would use.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp.boundary import Boundary

MAX_BYTES = 1024 * 1024
JUSTFILE_NAMES = ("justfile", "Justfile", ".justfile")
TASKFILE_NAMES = ("Taskfile.yml", "Taskfile.yaml", "taskfile.yml", "taskfile.yaml")
_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:[ \t]+[^:\n]*)?:(?!=)", re.MULTILINE)
_ALIAS = re.compile(r"^alias[ \t]+([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:=", re.MULTILINE)
_JUST_KEYWORDS = frozenset({"set", "export", "import", "mod", "alias"})


@dataclass(frozen=True)
class Script:
    name: str
    runner: str
    """npm | just | task"""
    file: str
    line: int
    command: str = ""


def nearest(start: Path, names: tuple[str, ...], boundary: Boundary) -> Path | None:
    """The first of ``names`` found in ``start`` or a parent folder inside the boundary."""
    current = start if start.is_dir() else start.parent
    while boundary.allows(current):
        for name in names:
            candidate = current / name
            if candidate.is_file() and boundary.allows(candidate):
                return candidate
        if current.parent == current:
            break
        current = current.parent
    return None


def _text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def npm_scripts(package_json: Path) -> list[Script]:
    text = _text(package_json)
    if text is None:
        return []
    try:
        data = json.loads(text)
    except ValueError:
        return []
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return []
    found = []
    for name, command in scripts.items():
        if isinstance(name, str) and name:
            at = text.find(json.dumps(name))
            line = text.count("\n", 0, at) if at >= 0 else 0
            found.append(Script(name, "npm", str(package_json), line, str(command)[:200]))
    return found


def just_recipes(justfile: Path) -> list[Script]:
    text = _text(justfile)
    if text is None:
        return []
    found: dict[str, Script] = {}
    for pattern in (_RECIPE, _ALIAS):
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in _JUST_KEYWORDS or pattern is _ALIAS:
                found.setdefault(name, Script(name, "just", str(justfile), text.count("\n", 0, match.start())))
    return list(found.values())


def taskfile_tasks(taskfile: Path) -> list[Script]:
    import yaml  # only projects with a Taskfile pay for the import

    text = _text(taskfile)
    if text is None:
        return []
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return []
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict):
        return []
    found = []
    for name in tasks:
        if isinstance(name, str) and name:
            match = re.search(rf"^[ \t]+{re.escape(name)}[ \t]*:", text, re.MULTILINE)
            found.append(Script(name, "task", str(taskfile), text.count("\n", 0, match.start()) if match else 0))
    return found
