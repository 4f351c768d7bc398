"""Attacks through a workspace's virtual environment (issue 27): the member surfaces of
Python come from the workspace's ``.venv``, which a cloned repository can ship.

- A FIFO named ``x.pth`` in its site-packages, or named ``pyvenv.cfg``: reading it blocked
  the reader for good, while the process-wide interpreter lock was held, so every
  analysis thread that asked for members hung behind it; one named ``METADATA`` in a
  package's dist-info hung each thread that read that package's surface.
- Its ``pyvenv.cfg`` ``home`` and its ``.pth`` lines name folders outside the workspace:
  those became readable, and their modules' names went into Γ after a dot.
- Its ``bin/python`` links to a trusted interpreter, which reads the environment's
  ``pyvenv.cfg`` at its start and takes its standard library from ``home``: a planted
  ``encodings`` package ran inside the server's question ``python -I -S``.

Each runs through the analyzer as completion after a dot does, on a thread with a timeout:
a regression fails, it never hangs the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python import interpreter
from gdg_lsp.settings import PythonSettings, Settings
from tests.python_env import TAG, add_package, make_env
from tests.unit.test_python_surfaces import hole_in

WAIT_S = 30.0


@pytest.fixture(autouse=True)
def fresh_interpreters():
    interpreter.forget()
    yield
    interpreter.forget()


@pytest.fixture
def started(monkeypatch):
    """The processes started meanwhile (their argv)."""
    found: list[list[str]] = []
    real_init = subprocess.Popen.__init__

    def popen_init(popen, args, *rest, **kwargs):
        found.append([str(a) for a in args])
        return real_init(popen, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen_init)
    return found


def _in_time(work, fifos=()):
    """``work()``'s result on a thread within WAIT_S; the FIFOs are opened for writing afterwards
    so that a reader stuck in them (the bug) is let go."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = work()
        except BaseException as err:  # reported below, in the test's thread
            outcome["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    began = time.monotonic()
    thread.start()
    thread.join(WAIT_S)
    elapsed = time.monotonic() - began
    stuck = thread.is_alive()
    for _ in range(100):  # a reader let go may open the FIFO again: until it is done
        if not thread.is_alive():
            break
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waits in it: nothing to let go
                pass
        thread.join(0.1)
    assert not stuck, f"still reading after {WAIT_S:.0f} s: a FIFO was waited on"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"], elapsed


def _workspace_venv(root: Path) -> Path:
    """``root/.venv`` (python linked to this interpreter) with a package ``goodpkg``; its site-packages."""
    root.mkdir(parents=True, exist_ok=True)
    _, site = make_env(root / ".venv")
    add_package(site, "goodpkg", "1.0", "good_name = 1\n")
    return site


MEMBERS = "import goodpkg\nimport secretpkg\nimport secretstd\n\ndef f():\n    <cursor>\n"


def _members(root: Path, setting: str = "") -> set[str]:
    ws = WorkspaceContext(roots=[root], settings=Settings(python=PythonSettings(interpreter=setting)))
    return set(hole_in(MEMBERS, ws).gamma.names("Member"))


def test_a_fifo_pth_file_in_the_workspace_venv_is_not_waited_on(tmp_path):
    root = tmp_path / "ws"
    site = _workspace_venv(root)
    fifo = site / "zz_stuck.pth"
    os.mkfifo(fifo)
    members, _ = _in_time(lambda: _members(root), [fifo])
    assert "goodpkg.good_name" in members  # the rest of the environment is read
    # and a second thread asking meanwhile is not held behind a lock either
    search, _ = _in_time(lambda: interpreter.resolve("", [root]), [fifo])
    assert search.how == "static" and site in search.site


def test_a_fifo_among_an_installed_package_s_files_is_not_waited_on(tmp_path):
    """The member surfaces read the package's METADATA (its version) and its source."""
    root = tmp_path / "ws"
    site = _workspace_venv(root)
    meta = site / "goodpkg-1.0.dist-info" / "METADATA"
    meta.unlink()
    os.mkfifo(meta)
    members, _ = _in_time(lambda: _members(root), [meta])
    assert "goodpkg.good_name" in members  # versioned by its dist-info folder's name instead


def test_a_fifo_pyvenv_cfg_is_not_waited_on(tmp_path, started):
    root = tmp_path / "ws"
    _workspace_venv(root)
    cfg = root / ".venv" / "pyvenv.cfg"
    cfg.unlink()
    os.mkfifo(cfg)
    outside = tmp_path / "env"  # the same in a configured environment outside the workspace
    python, _ = make_env(outside)
    (outside / "pyvenv.cfg").unlink()
    os.mkfifo(outside / "pyvenv.cfg")
    fifos = [cfg, outside / "pyvenv.cfg"]
    for setting in (str(root / ".venv"), str(python)):
        interpreter.forget()
        search, _ = _in_time(lambda: interpreter.resolve(setting, [root]), fifos)
        assert search.how == "static" and "not a regular file" in (search.problem or ""), search
    assert not started, started  # an interpreter started on it would block reading it (5 s, then killed)


@pytest.mark.parametrize("python_is", ["a link to a real interpreter", "a script of the workspace"])
def test_outside_folders_named_by_home_or_pth_lines_never_become_members(tmp_path, python_is):
    root = tmp_path / "ws"
    site = _workspace_venv(root)
    secrets = tmp_path / "outside"
    (secrets / "secretpkg").mkdir(parents=True)
    (secrets / "secretpkg" / "__init__.py").write_text("leaked_name = 1\n")
    home = tmp_path / "outside_home"
    (home / "bin").mkdir(parents=True)
    (home / "lib" / TAG).mkdir(parents=True)
    (home / "lib" / TAG / "secretstd.py").write_text("leaked_std = 1\n")
    cfg = root / ".venv" / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace(f"home = {Path(os.path.realpath(sys.executable)).parent}",
                                           f"home = {home / 'bin'}"))
    relative = os.path.relpath(secrets, site)
    (site / "widen.pth").write_text(f"{secrets}\n{relative}\n")
    if python_is != "a link to a real interpreter":
        python = root / ".venv" / "bin" / "python"
        python.unlink()
        python.write_text("#!/bin/sh\nexit 1\n")
        python.chmod(0o755)
    members, _ = _in_time(lambda: _members(root))
    assert "goodpkg.good_name" in members
    assert not {m for m in members if m.startswith(("secretpkg.", "secretstd."))}, sorted(members)
    search = interpreter.resolve("", [root])
    assert not [p for p in search.paths if p.is_relative_to(secrets) or p.is_relative_to(home)], search.paths
    assert "home" in (search.problem or "") and ".pth" in (search.problem or "")


def test_the_workspace_venv_interpreter_never_starts_with_its_planted_standard_library(tmp_path, started):
    root = tmp_path / "ws"
    _workspace_venv(root)
    marker = tmp_path / "RAN"
    planted = root / "stdlib"  # a standard library of the repository's own: only encodings matters
    (planted / "bin").mkdir(parents=True)
    (planted / "lib" / TAG / "encodings").mkdir(parents=True)
    (planted / "lib" / TAG / "os.py").write_text("")
    (planted / "lib" / TAG / "encodings" / "__init__.py").write_text(
        f"import posix\nposix.close(posix.open({str(marker)!r}, posix.O_WRONLY | posix.O_CREAT, 0o600))\n")
    cfg = root / ".venv" / "pyvenv.cfg"
    cfg.write_text(f"home = {planted / 'bin'}\nversion = {sys.version_info[0]}.{sys.version_info[1]}.0\n")
    python = root / ".venv" / "bin" / "python"
    subprocess.run([str(python), "-I", "-S", "-c", "pass"], capture_output=True, timeout=30)
    assert marker.exists()  # the bait works: the real interpreter, started there, runs it
    marker.unlink()
    started.clear()
    for setting in ("", str(root / ".venv"), str(python)):
        interpreter.forget()
        _in_time(lambda: _members(root, setting))
    assert not started, started
    assert not marker.exists()


def test_a_user_configured_environment_outside_the_workspace_is_still_asked_and_followed(tmp_path, started):
    """What the user chose is the user's: its .pth lines lead anywhere, and it is asked once."""
    root = tmp_path / "ws"
    root.mkdir()
    python, site = make_env(tmp_path / "env")
    extra = tmp_path / "extra"
    (extra / "secretpkg").mkdir(parents=True)
    (extra / "secretpkg" / "__init__.py").write_text("leaked_name = 1\n")
    (site / "extra.pth").write_text(f"{extra}\n")
    imported = tmp_path / "IMPORTED"
    add_package(site, "goodpkg", "1.0", "good_name = 1\n", imported)
    members, _ = _in_time(lambda: _members(root, str(python)))
    assert {"goodpkg.good_name", "secretpkg.leaked_name"} <= members
    assert len(started) == 1 and started[0][1:3] == ["-I", "-S"] and not imported.exists()
