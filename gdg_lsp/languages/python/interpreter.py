"""Where the user's code runs: the Python interpreter whose installed modules form the
member surfaces (``gdg.python.interpreter``), and its module search path.

Which interpreter:

- the setting ``gdg.python.interpreter`` when given (a path to a ``python`` executable
  or to a virtual environment folder; a user-only setting, see ``settings.USER_ONLY``);
- else the workspace's ``.venv`` or ``venv`` folder when one exists;
- else the server's own interpreter.

Its search path is learnt without running any code of the user's: the interpreter is
asked once, with ``-I -S`` (isolated: no environment variables, no user site, no
current folder on the path; no ``site``: no ``.pth`` file runs), in a temporary folder
outside the workspace, with a minimal environment and a timeout, for its ``sys.path``
(its standard library) and the two folders ``site`` would have added (``sysconfig``'s
``purelib``/``platlib``). The server's own interpreter needs no question: its
``sys.path`` is at hand.

**What a workspace decides.** A virtual environment of the workspace is read, never
run: not its ``bin/python`` (a cloned repository can ship a script named ``python``),
and not the trusted interpreter it links to either, since that interpreter reads the
environment's ``pyvenv.cfg`` at its start and takes its standard library from the
``home`` named there (a planted ``encodings`` package ran under ``-I -S``). The same
holds for a configured interpreter whose executable, or whose ``pyvenv.cfg``, lies in
a workspace folder. Read from disk (``pyvenv.cfg``, the ``lib/pythonX.Y/site-packages``
layout, the path lines of ``.pth`` files; their ``import`` lines never run), such an
environment never widens what the server reads: its site folders and the folders its
``.pth`` lines name count only inside the workspace folders, and the standard library of
its ``home`` only where it is the server's own (else the server's own standard library
stands in when the versions match, and typeshed's stubs always do). An environment the
user configured outside the workspace is the user's: its ``home`` and ``.pth`` lines
are followed.

Every file is read through ``boundary.read_bounded`` (regular files only, without
blocking, within a size limit): a FIFO named ``pyvenv.cfg`` or ``x.pth`` is refused,
not waited on. Nothing is read or asked while the process-wide table is locked: the
first thread to need a search path finds it, the others wait for that one answer.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp.boundary import Boundary, Refused, read_bounded, real
from gdg_lsp.caches import BoundedCache

log = logging.getLogger(__name__)

QUERY_TIMEOUT_S = 5.0
"""How long the interpreter may take to print its search path (a cold start from a
network file system can take a second or two)."""

QUERY = ("import sys, json, sysconfig; print(json.dumps({'path': sys.path, 'version': list(sys.version_info[:2]),"
         " 'prefix': sys.prefix, 'site': [sysconfig.get_path('purelib'), sysconfig.get_path('platlib')]}))")
"""What the interpreter is asked (run with -I -S: only its standard library is imported)."""

VENV_FOLDERS = (".venv", "venv")
MAX_CONFIG_BYTES = 64 * 1024
"""A ``pyvenv.cfg`` is a few lines; a larger one is not read."""
MAX_PTH_BYTES = 256 * 1024
MAX_PTH_FILES = 256
"""``.pth`` files read per site folder (an editable install writes one or two)."""


@dataclass(frozen=True)
class SearchPath:
    """An interpreter's module search path, as gdg-lsp reads it."""

    executable: str
    version: tuple[int, int]
    paths: tuple[Path, ...]
    """Folders searched for top-level modules, in order (standard library first, then site folders)."""
    site: tuple[Path, ...]
    """Its site-packages folders (where installed distributions keep their dist-info)."""
    how: str
    """``own`` (the server's interpreter), ``asked`` (-I -S), or ``static`` (read from disk)."""
    problem: str | None = None
    """Why the interpreter was not asked or did not answer (then ``how`` is ``static``), and
    what of a workspace environment was not followed."""
    stdlib: tuple[Path, ...] = field(default=())
    """The standard library's folders (a module found there is versioned by the interpreter)."""

    @property
    def key(self) -> tuple[str, tuple[int, int], tuple[Path, ...]]:
        return self.executable, self.version, self.paths


def own() -> SearchPath:
    """The server's own interpreter: its running ``sys.path``."""
    stdlib = _own_stdlib()
    site = tuple(Path(p) for p in dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))) if p)
    paths = tuple(Path(p) for p in sys.path if p and os.path.isdir(p))
    return SearchPath(sys.executable, sys.version_info[:2], paths, site, "own", None, stdlib)


def _own_stdlib() -> tuple[Path, ...]:
    return tuple(Path(p) for p in dict.fromkeys((sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib"))) if p)


def _executable(setting: str) -> Path:
    """A ``python`` executable named by the setting (the path itself, or a venv folder's)."""
    path = Path(os.path.expanduser(setting))
    if path.is_dir():
        for candidate in ("bin/python3", "bin/python", "Scripts/python.exe"):
            if (path / candidate).exists():
                return path / candidate
    return path


def workspace_venv(roots: Sequence[Path]) -> Path | None:
    for root in roots:
        for name in VENV_FOLDERS:
            folder = Path(root) / name
            if (folder / "pyvenv.cfg").is_file():
                return folder
    return None


def _in_workspace(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` lies in a workspace folder, as written or where its links lead."""
    written = Path(os.path.abspath(os.path.expanduser(path)))
    return Boundary.of(roots).allows(path) or any(written.is_relative_to(os.path.abspath(root)) for root in roots)


def _ask(executable: Path) -> dict:
    """The interpreter's answer to QUERY, run isolated, without site, outside the workspace."""
    env = {"PATH": os.defpath, "LC_ALL": "C.UTF-8"}
    with tempfile.TemporaryDirectory(prefix="gdg-interp-") as cwd:
        done = subprocess.run([str(executable), "-I", "-S", "-c", QUERY], cwd=cwd, env=env, capture_output=True,
                              timeout=QUERY_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"exited with {done.returncode}: {tail[0][:200]}")
    answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    if not isinstance(answer, dict) or not isinstance(answer.get("path"), list):
        raise RuntimeError("the answer is not a search path")
    return answer


def _read_config(prefix: Path, confine: Boundary | None = None) -> tuple[dict[str, str], str | None]:
    """The keys of ``prefix/pyvenv.cfg`` (lower-case), and why it was not read if it was not."""
    cfg = prefix / "pyvenv.cfg"
    if not os.path.lexists(cfg):
        return {}, None
    try:
        if confine is not None:
            text = confine.read(cfg, MAX_CONFIG_BYTES).decode("utf-8", "replace")
        else:
            text = read_bounded(real(cfg), MAX_CONFIG_BYTES, shown=str(cfg)).decode("utf-8", "replace")
    except Refused as err:
        return {}, str(err)
    config = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        config[key.strip().lower()] = value.strip()
    return config, None


_VERSION_DIR = re.compile(r"python(\d+)\.(\d+)t?$")


def _static(executable: Path, problem: str | None, confine: Boundary | None = None) -> SearchPath:
    """The search path read from disk: the environment folder (``pyvenv.cfg``'s parent,
    or the executable's ``bin/``'s parent), its ``lib/pythonX.Y`` and site-packages, and
    for a virtual environment the base installation's standard library (``home``).

    ``confine`` (a workspace's environment): only folders inside it count, and ``home``'s
    standard library only where it is the server's own."""
    prefix = executable.parent.parent
    config, unread = _read_config(prefix, confine)
    notes = [n for n in (problem, unread) if n]
    version: tuple[int, int] | None = None
    if m := re.match(r"(\d+)\.(\d+)", config.get("version_info", config.get("version", ""))):
        version = (int(m.group(1)), int(m.group(2)))
    lib_dirs = sorted((d for d in (prefix / "lib").glob("python3*") if _VERSION_DIR.search(d.name)), reverse=True) \
        if (prefix / "lib").is_dir() else []
    if version is None and lib_dirs:
        m = _VERSION_DIR.search(lib_dirs[0].name)
        version = (int(m.group(1)), int(m.group(2)))
    version = version or sys.version_info[:2]
    tag = f"python{version[0]}.{version[1]}"
    site = tuple(d for d in (prefix / "lib" / tag / "site-packages", prefix / "lib64" / tag / "site-packages",
                             prefix / "Lib" / "site-packages") if d.is_dir() and (confine is None or confine.allows(d)))
    stdlib = _venv_stdlib(prefix, tag, config.get("home"), version, confine, notes)
    pth, dropped = _pth_paths(site, confine)
    if dropped:
        notes.append(f".pth lines naming folders outside the workspace were not followed ({', '.join(dropped[:3])}"
                     f"{', ...' if len(dropped) > 3 else ''})")
    return SearchPath(str(executable), version, (*stdlib, *site, *pth), site, "static", "; ".join(notes) or None, stdlib)


def _venv_stdlib(prefix: Path, tag: str, home: str | None, version: tuple[int, int], confine: Boundary | None,
                 notes: list[str]) -> tuple[Path, ...]:
    """The standard library folders of an environment: its own ``lib/pythonX.Y`` and its
    ``home``'s (the base interpreter's ``bin`` folder). Confined, ``home``'s count only when
    they are the server's own standard library; otherwise that stands in if the version is
    the server's."""
    def folders(base: Path) -> list[Path]:
        return [d for d in (base / "lib" / tag, base / "lib" / tag / "lib-dynload")
                if d.is_dir() and not d.is_relative_to(prefix / "lib" / tag / "site-packages")]

    found = [d for d in folders(prefix) if confine is None or confine.allows(d)]
    if home:
        based = folders(Path(home).parent)
        if confine is not None:
            served = Boundary.of(_own_stdlib())
            if outside := [d for d in based if not served.allows(d) and not confine.allows(d)]:
                notes.append(f"pyvenv.cfg's home {home} is not this server's interpreter: its standard library "
                             f"({outside[0]}) is not read")
                based = [d for d in based if d not in outside]
                if not based and version == sys.version_info[:2]:
                    based = list(_own_stdlib())
        found += based
    return tuple(dict.fromkeys(found))


def _pth_paths(site: Sequence[Path], confine: Boundary | None = None) -> tuple[list[Path], list[str]]:
    """The folders the ``.pth`` files of ``site`` name (their ``import`` lines are not run),
    and, confined, the lines naming folders outside that were left out."""
    found: list[Path] = []
    dropped: list[str] = []
    for folder in site:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))[:MAX_PTH_FILES]
        except OSError:
            continue
        for name in names:
            try:
                text = read_bounded(folder / name, MAX_PTH_BYTES).decode("utf-8", "replace")
            except Refused as err:
                log.info("%s", err)
                continue
            for line in text.splitlines():
                line = line.strip()
                if not line or line.startswith("#") or line.startswith(("import ", "import\t")):
                    continue
                target = (folder / line) if not os.path.isabs(line) else Path(line)
                if not target.is_dir():
                    continue
                if confine is not None and not confine.allows(target):
                    dropped.append(line)
                    continue
                found.append(target)
    return found, dropped


def _from_answer(executable: Path, answer: dict) -> SearchPath:
    """The search path from the interpreter's answer. Without ``site`` a virtual
    environment's interpreter reports its base installation's site folder (``site``
    is what switches to the environment): the environment's own comes from its layout."""
    site = tuple(dict.fromkeys(Path(p) for p in answer.get("site", []) if isinstance(p, str) and os.path.isdir(p)))
    stdlib = tuple(Path(p) for p in answer["path"] if isinstance(p, str) and p and os.path.isdir(p))
    version = answer.get("version") or list(sys.version_info[:2])
    config, _ = _read_config(executable.parent.parent)
    if config:
        venv = _static(executable, None)
        system = config.get("include-system-site-packages", "").lower() == "true"
        site = (*venv.site, *(site if system else ()))
    paths = tuple(dict.fromkeys((*stdlib, *site, *_pth_paths(site)[0])))
    return SearchPath(str(executable), (int(version[0]), int(version[1])), paths, site, "asked", None, stdlib)


def search_path_for(executable: Path, workspace: Sequence[Path]) -> SearchPath:
    """The search path of ``executable``: asked (-I -S) unless it or its environment's
    ``pyvenv.cfg`` lies in the workspace (then read statically, confined to the workspace),
    or asking fails (read statically)."""
    if _in_workspace(executable, workspace) or _in_workspace(executable.parent.parent / "pyvenv.cfg", workspace):
        return _static(executable, f"{executable} is part of the workspace ({real(executable)}): not run",
                       Boundary.of(workspace))
    if not executable.exists():
        return _static(executable, f"{executable} does not exist")
    cfg = executable.parent.parent / "pyvenv.cfg"
    if os.path.lexists(cfg) and not cfg.is_file():  # the interpreter would block reading a FIFO at its start
        return _static(executable, f"{cfg} is not a regular file: {executable} is not run")
    try:
        return _from_answer(executable, _ask(executable))
    except (OSError, subprocess.SubprocessError, RuntimeError, ValueError, KeyError, IndexError) as err:
        return _static(executable, f"asking {executable} for its search path failed ({err})")


def _find(setting: str, roots: tuple[Path, ...]) -> SearchPath:
    if setting:
        return search_path_for(_executable(setting), roots)
    if (venv := workspace_venv(roots)) is not None:
        # the workspace's own environment: never run, and confined to the workspace
        # wherever its links lead (the folder itself may be a link out of it)
        executable = _executable(str(venv))
        return _static(executable, f"the workspace's environment {venv} is read, not run", Boundary.of(roots))
    return own()


_CACHE: BoundedCache[tuple, SearchPath] = BoundedCache("python.interpreters", 8)
_LOCK = threading.Lock()
"""Guards ``_CACHE`` and ``_FINDING`` only: no file is read and nothing runs while it is held."""
_FINDING: dict[tuple, Future] = {}
"""Search paths being found, by key: a second thread waits for the first one's answer."""
WAIT_S = QUERY_TIMEOUT_S + 5.0
"""How long a thread waits for another's answer (the question's timeout, and the bounded reads)."""


def resolve(setting: str | None, roots: Sequence[Path]) -> SearchPath:
    """The search path for the ``gdg.python.interpreter`` setting and workspace ``roots``
    (asked once per setting and workspace, then kept)."""
    roots = tuple(Path(r) for r in roots)
    key = (setting or "", roots)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        finding = _FINDING.get(key)
        mine = finding is None
        if mine:
            finding = _FINDING[key] = Future()
    if not mine:  # another thread asks: two must not both start the interpreter
        try:
            return finding.result(WAIT_S)
        except Exception as err:  # it failed or is stuck: this request does without
            log.warning("the search path of %s is not known yet (%s): the server's own is used meanwhile",
                        setting or "the workspace", err or type(err).__name__)
            return own()
    try:
        found = _find(setting or "", roots)
    except BaseException as err:
        with _LOCK:
            _FINDING.pop(key, None)
        finding.set_exception(err)
        raise
    with _LOCK:
        _CACHE.put(key, found)
        _FINDING.pop(key, None)
    finding.set_result(found)
    return found


def forget() -> None:
    """Drop every kept search path (the setting or the workspace changed)."""
    _CACHE.clear()
