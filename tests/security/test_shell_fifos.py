"""Attack: a workspace puts a FIFO where a shell source reads a file: ``mkfifo .git/HEAD``, a
Makefile ``include`` of a FIFO, a FIFO ``package.json`` (or justfile, Taskfile). Opening a
FIFO for reading blocks until a writer comes, so with ten shell documents open every analysis
thread was stuck for good.

Each test asks the real path (the shell analyzer's hole, Γ and diagnostics, or the source's
reader) on a thread with a deadline: the answer must come, without the FIFO's names, and the
FIFO must be noted as not read. Should a regression block, the test opens the FIFO's other
end to free the thread, and fails instead of hanging."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gdg_lsp import words
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell import package_scripts
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.tool_help import ToolHelp
from tests.shell.shell_workspace import make_workspace, snapshot, workspace, write

DEADLINE_S = 20.0


def within_deadline(fifo: Path, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or a failure if it is still running after ``DEADLINE_S`` (blocked on ``fifo``)."""
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as err:  # reported on the test's thread
            failure.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    if thread.is_alive():
        try:  # a writer at the other end ends the blocked open, so the thread can finish
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        thread.join(5)
        pytest.fail(f"the analysis blocked on the FIFO {fifo} for {DEADLINE_S:.0f} s")
    if failure:
        raise failure[0]
    return result[0]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch) -> Path:
    root = make_workspace(tmp_path / "ws")
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(ToolHelp(tmp_path / "cache")))
    return root


def _noted(path: Path) -> list[words.Rejected]:
    return [r for r in words.REJECTIONS.all() if r.source == str(path)]


def _analyse(root: Path, text: str) -> Hole:
    analyzer, context = ShellAnalyzer(), workspace(root, [])
    snap = snapshot(root, text)
    analyzer.diagnostics(snap, context)
    hole = analyzer.hole_at(snap, len(text), context)
    assert isinstance(hole, Hole), hole
    return hole


def test_a_fifo_at_git_head_never_blocks_the_analysis(ws: Path):
    head = ws / ".git" / "HEAD"
    head.unlink()
    os.mkfifo(head)
    hole = within_deadline(head, lambda: _analyse(ws, "git checkout "))
    # the rest of the repository is read as before; only HEAD's current branch is unknown
    assert "refs/heads/main" in hole.gamma and not [b for b in hole.gamma.bindings("Branch") if b.attrs["current"]]
    assert _noted(head) and "not a regular file" in _noted(head)[0].why


def test_a_makefile_include_of_a_fifo_never_blocks_the_analysis(ws: Path):
    fifo = ws / "mk" / "pipe.mk"
    os.mkfifo(fifo)
    write(ws / "Makefile", "include mk/pipe.mk\ninclude mk/common.mk\nbuild:\n\techo b\n")
    hole = within_deadline(fifo, lambda: _analyse(ws, "make "))
    assert [b.attrs["word"] for b in hole.gamma.bindings("MakeTarget")] == ["build", "lint"]
    assert _noted(fifo)


@pytest.mark.parametrize("reader, name", [(package_scripts.npm_scripts, "package.json"),
                                          (package_scripts.just_recipes, "justfile"),
                                          (package_scripts.taskfile_tasks, "Taskfile.yml")])
def test_a_fifo_script_file_never_blocks_its_reader(tmp_path: Path, reader, name: str):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    assert within_deadline(fifo, lambda: reader(fifo, Boundary.of([tmp_path]))) == []
    assert _noted(fifo)


def test_a_package_json_turned_into_a_fifo_after_it_was_found_never_blocks(ws: Path):
    """The file is found as a regular file, then replaced by a FIFO before it is read (a race an
    attacker controls, e.g. a checkout in progress): the read refuses it."""
    _analyse(ws, "npm run ")  # the package.json is found (and its discovery trusted for a while)
    package = ws / "package.json"
    text = package.read_text()
    package.unlink()
    os.mkfifo(package)
    os.utime(package, ns=(1, 1))  # a stamp of its own, so the file is read again
    hole = within_deadline(package, lambda: _analyse(ws, "npm run "))
    assert not hole.gamma.bindings("NpmScript")
    assert json.loads(text)["scripts"] and _noted(package)
