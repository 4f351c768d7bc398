"""Tools describing themselves: parsed help texts, the sandbox they run in, the disk cache.

The tools here are small scripts written by the test in a folder outside the
workspace (real processes, so the sandbox is tested for real)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.shell.help_text import OptionSpec, parse_options, parse_subcommands
from gdg_lsp.languages.shell.tool_help import ToolHelp

SYSTEM = f"{os.pathsep}/usr/bin{os.pathsep}/bin"

HELP = """usage: fake [-C <path>] [--verbose | -v] <command>

Commands:
  build      Build things
  deploy     Deploy them

Options:
  -q, --quiet           say less
  -o FILE, --output=FILE  where
  --color[=WHEN]        colour
"""


def fake_tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def describing_tool(folder: Path, name: str = "fake", version: str = "fake 1.0", log: Path | None = None) -> Path:
    record = f'echo "$@ | $PWD | HOME=${{HOME:-unset}} | $(cat 2>&1 | head -c 20)" >> {log}\n' if log else ""
    return fake_tool(folder, name, record + f"""case "$1" in
  --version) echo "{version}" ;;
  --help) cat <<'EOF'
{HELP}EOF
  ;;
  build) printf '  --release   optimised\\n  -j N        jobs\\n' ;;
esac
""")


def test_options_and_subcommands_are_read_from_common_help_layouts():
    assert parse_options(HELP) == sorted([
        OptionSpec("-C", True), OptionSpec("--verbose"), OptionSpec("-v"), OptionSpec("-q"), OptionSpec("--quiet"),
        OptionSpec("-o", True), OptionSpec("--output", True), OptionSpec("--color", False, True)])
    assert parse_subcommands(HELP) == ["build", "deploy"]
    assert parse_subcommands("All commands:\n\n    access, adduser, audit,\n    run, test\n") == \
        ["access", "adduser", "audit", "run", "test"]
    assert parse_options("nothing here\n  that looks like an option\n") == []


def test_a_tool_is_asked_once_then_read_from_the_json_cache(tmp_path: Path, monkeypatch):
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    describing_tool(bin_dir, log=log)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    boundary = Boundary.of([workspace])
    cache = tmp_path / "cache"
    first = ToolHelp(cache)
    surface = first.surface("fake", boundary, str(bin_dir) + SYSTEM)
    assert surface.subcommands == ("build", "deploy") and surface.version == "fake 1.0"
    build = first.subcommand("fake", "build", boundary, str(bin_dir) + SYSTEM)
    assert build.options == (OptionSpec("--release"), OptionSpec("-j", True)) and build.source == "fake build --help"
    assert first.subcommand("fake", "ship", boundary, str(bin_dir) + SYSTEM) is None  # never a word it did not list
    runs = first.runs
    again = first.surface("fake", boundary, str(bin_dir) + SYSTEM)
    assert again is surface and first.runs == runs
    (entry,) = cache.glob("*.json")
    assert json.loads(entry.read_text())["top"]["subcommands"] == ["build", "deploy"]
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    second = ToolHelp(cache)  # a new process: only the version is asked again
    assert second.surface("fake", boundary, str(bin_dir) + SYSTEM).subcommands == ("build", "deploy")
    assert second.runs == 1
    calls = log.read_text().splitlines()
    assert all("HOME=unset" in call for call in calls)  # no user configuration reaches the tool
    assert all(str(workspace) not in call.split(" | ")[1] for call in calls)  # never run inside the workspace
    assert all(call.endswith("| ") for call in calls)  # stdin is closed


def test_a_new_version_is_described_again(tmp_path: Path):
    bin_dir = tmp_path / "bin"
    path = describing_tool(bin_dir)
    boundary = Boundary.of([tmp_path / "ws"])
    help_ = ToolHelp(tmp_path / "cache")
    assert help_.surface("fake", boundary, str(bin_dir) + SYSTEM).version == "fake 1.0"
    time.sleep(0.01)
    path.write_text(path.read_text().replace("fake 1.0", "fake 2.0").replace("deploy     Deploy", "ship       Ship"))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    fresh = ToolHelp(tmp_path / "cache")
    surface = fresh.surface("fake", boundary, str(bin_dir) + SYSTEM)
    assert surface.version == "fake 2.0" and surface.subcommands == ("build", "ship")


def test_a_missing_tool_a_tool_inside_the_workspace_and_a_hanging_tool_contribute_nothing(tmp_path: Path):
    workspace = tmp_path / "ws"
    inside = describing_tool(workspace / "bin")
    boundary = Boundary.of([workspace])
    help_ = ToolHelp(tmp_path / "cache")
    assert help_.surface("absent-tool", boundary, str(tmp_path / "empty")) is None
    # first on PATH, inside the workspace: refused, and the entry is dropped from the child's PATH
    assert help_.surface("fake", boundary, f"{inside.parent}{os.pathsep}{tmp_path / 'none'}" + SYSTEM) is None
    assert help_.surface("../ws/bin/fake", boundary, str(inside.parent)) is None
    fake_tool(tmp_path / "slow", "slow", "sleep 30\n")
    began = time.monotonic()
    assert help_.surface("slow", boundary, str(tmp_path / "slow")) is None
    assert time.monotonic() - began < 15  # two runs (version, help), each killed at 2 s
