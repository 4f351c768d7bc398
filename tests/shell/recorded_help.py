"""The recorded help texts of real tools (tests/fixtures/help/, written by its record.py) as a
tool-help source: ``ToolHelp`` asks a runner that answers from the recordings, for stand-in
executables that are never started (a tool must still be found on PATH to be asked)."""

from __future__ import annotations

import json
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp.languages.shell.tool_help import RECIPES, Recipe, ToolHelp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "help"
INDEX: list[dict] = json.loads((FIXTURES / "index.json").read_text(encoding="utf-8"))
PROBES: dict = json.loads((FIXTURES / "probes.json").read_text(encoding="utf-8"))
TOOLS: tuple[str, ...] = tuple(dict.fromkeys(entry["tool"] for entry in INDEX))


@dataclass(frozen=True)
class Recorded:
    tool: str
    sub: str | None
    args: tuple[str, ...]
    text: str
    version: str


RECORDED: tuple[Recorded, ...] = tuple(
    Recorded(e["tool"], e["sub"], tuple(e["args"]), (FIXTURES / e["file"]).read_text(encoding="utf-8"), e["version"])
    for e in INDEX)


def texts(tool: str, sub: str | None) -> list[Recorded]:
    return [r for r in RECORDED if r.tool == tool and r.sub == sub]


def subcommands(tool: str) -> list[str]:
    return [r.sub for r in RECORDED if r.tool == tool and r.sub is not None]


def runner(executable: str, args: Sequence[str], path_env: str) -> str | None:
    """What the tool said when it was recorded (None for a command never recorded: a tool
    that says nothing)."""
    tool = Path(executable).name
    if tuple(args) == RECIPES.get(tool, Recipe()).version:
        return next((r.version for r in RECORDED if r.tool == tool), None)
    return next((r.text for r in RECORDED if r.tool == tool and r.args == tuple(args)), None)


def stand_ins(folder: Path) -> Path:
    """A folder of executables named like the recorded tools (never run: ``runner`` answers)."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in TOOLS:
        path = folder / tool
        path.write_text("#!/bin/sh\nexit 99\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def tool_help(cache: Path) -> ToolHelp:
    return ToolHelp(cache, runner=runner)
