"""Cost cases of a shell script's sources: a repository with 100,000 refs, and a package.json
with 40,000 scripts (the issue measured 1.3-2.2 s per keystroke and 29 s for the first
completion).

- ``shell-refs``: 100,000 loose refs (in 100 folders of ``refs/heads``), 20,000 each in a
  folder of its own (far past ``git_state.MAX_REF_FOLDERS``), then 100,000 lines of
  ``packed-refs``. The first analysis reads them; then ``git checkout feature/main`` is typed
  key by key, the analysis of the hole at each key is timed (what completion, inline
  completion and work ahead each do first; the last key after a pause, when the walked
  folders are compared again), and a completion request through the server after each key.
- ``shell-scripts``: a package.json with 40,000 scripts; the first completion after
  ``npm run `` through the server, then keys typed with a completion after each (most of
  that is the server writing up to 2,000 items), and the analysis per key.

The repositories and files are written into the scratch folder; nothing is run.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.bench.costs import Figure, case
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import NO_MODEL
from gdg_lsp.languages.shell.git_state import REFS_RECHECK_S
from gdg_lsp.latency import percentile

KEYSTROKE_TARGET_MS = 10.0
FIRST_COMPLETION_TARGET_MS = 1000.0
SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
OPTIONS = {**NO_MODEL, "diagnostics": False, "shell": {"tools": []}}


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


def loose_refs(root: Path, count: int, folders: int = 100) -> Path:
    """A repository whose ``count`` branches are loose ref files, in ``folders`` folders."""
    git = root / ".git"
    (git / "refs" / "tags").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    for folder in range(folders):
        (git / "refs" / "heads" / f"team-{folder}").mkdir(parents=True)
    (git / "refs" / "heads" / "main").write_text(SHA + "\n")
    for n in range(count):
        (git / "refs" / "heads" / f"team-{n % folders}" / f"branch-{n}").write_text(SHA + "\n")
    return root


def packed_refs(root: Path, count: int) -> Path:
    """A repository whose ``count`` branches are lines of ``packed-refs``."""
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "refs" / "heads" / "main").write_text(SHA + "\n")
    lines = "".join(f"{SHA} refs/heads/team-{n % 100}/branch-{n}\n" for n in range(count))
    (git / "packed-refs").write_text("# pack-refs with: peeled fully-peeled sorted\n" + lines)
    return root


def many_scripts(root: Path, count: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({"name": "x", "scripts": {f"s{n}": "t" for n in range(count)}},
                                                  indent=1))
    return root


def analysis_per_key(root: Path, line: str, typed_from: int, pause_before_last: float = 0.0) -> tuple[float, list[float]]:
    """The first analysis of a hole at the end of ``line[:typed_from]``, then one per key typed
    after it (ms): ``ShellAnalyzer.hole_at``, Γ from the sources included. ``pause_before_last``:
    seconds waited before the last key (the repository's folders are compared again after a pause)."""
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
    from gdg_lsp.languages.shell.commands import parse
    from gdg_lsp.settings import Settings, ShellSettings

    analyzer = ShellAnalyzer()
    context = WorkspaceContext([root], Settings(shell=ShellSettings(tools=[])))
    uri = (root / "run.sh").as_uri()
    times = []
    for end in range(typed_from, len(line) + 1):
        text = line[:end]
        snapshot = Snapshot(uri, "shell", end, text, parse(text.encode()))
        if end == len(line) and pause_before_last:
            time.sleep(pause_before_last)
        began = time.perf_counter()
        analyzer.hole_at(snapshot, len(text), context)
        times.append(_ms(began))
    return times[0], times[1:]


async def _completions(root: Path, line: str, typed_from: int) -> list[float]:
    """Completion requests through the server: at ``line[:typed_from]`` (the first), then after
    each key typed (ms)."""
    uri = (root / "run.sh").as_uri()
    async with InProcessServer(initialization_options=OPTIONS, root_uri=root.as_uri()) as server:
        server.open(uri, line[:typed_from], "shellscript")
        times = []
        for end in range(typed_from, len(line) + 1):
            if end > typed_from:
                server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": end}, "contentChanges": [
                    {"range": {"start": {"line": 0, "character": end - 1}, "end": {"line": 0, "character": end - 1}},
                     "text": line[end - 1]}]})
            began = time.perf_counter()
            response = await server.request("textDocument/completion", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": end}}, timeout=600)
            if "error" in response:
                raise RuntimeError(f"shell completion failed: {response['error']}")
            times.append(_ms(began))
        return times


def _keystroke_figures(name: str, what: str, first: float, keys: list[float], served: list[float]) -> list[Figure]:
    return [Figure(name, f"{what}: first analysis (reads them)", first, "ms"),
            Figure(name, f"{what}: analysis per key after it, p50", percentile(keys[:-1], 0.5), "ms", KEYSTROKE_TARGET_MS),
            Figure(name, f"{what}: analysis per key after it, max", max(keys[:-1]), "ms", KEYSTROKE_TARGET_MS),
            Figure(name, f"{what}: the key after a {REFS_RECHECK_S:g} s pause (folders compared)", keys[-1], "ms",
                   KEYSTROKE_TARGET_MS),
            Figure(name, f"{what}: completion through the server, first", served[0], "ms"),
            Figure(name, f"{what}: completion per key after it, p50", percentile(served[1:], 0.5), "ms")]


@case("shell-refs")
def shell_refs(scratch: Path, quick: bool) -> list[Figure]:
    count = 10_000 if quick else 100_000
    spread = 2_000 if quick else 20_000
    line = "git checkout feature/main"
    figures = []
    layouts = ((f"{count:,} loose refs", lambda root: loose_refs(root, count)),
               (f"{spread:,} loose refs, a folder each", lambda root: loose_refs(root, spread, folders=spread)),
               (f"{count:,} packed refs", lambda root: packed_refs(root, count)))
    for number, (what, build) in enumerate(layouts):
        root = build(scratch / str(number))
        time.sleep(stamps.RACY_S)  # stamps taken within the file system's time step are not trusted (read again)
        first, keys = analysis_per_key(root, line, len("git checkout "), pause_before_last=REFS_RECHECK_S)
        served = asyncio.run(_completions(root, line, len("git checkout ")))
        figures += _keystroke_figures("shell-refs", what, first, keys, served)
    return figures


@case("shell-scripts")
def shell_scripts(scratch: Path, quick: bool) -> list[Figure]:
    count = 4_000 if quick else 40_000
    root = many_scripts(scratch / "ws", count)
    served = asyncio.run(_completions(root, "npm run s123", len("npm run ")))
    _, keys = analysis_per_key(root, "npm run s123", len("npm run "))
    what = f"{count:,} package.json scripts"
    return [Figure("shell-scripts", f"{what}: first completion", served[0], "ms", FIRST_COMPLETION_TARGET_MS),
            Figure("shell-scripts", f"{what}: completion per key after it, p50", percentile(served[1:], 0.5), "ms"),
            Figure("shell-scripts", f"{what}: analysis per key, p50", percentile(keys, 0.5), "ms", KEYSTROKE_TARGET_MS)]
