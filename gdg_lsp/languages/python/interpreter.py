"""Where the user's code runs: the Python interpreter whose installed modules form the
member surfaces (``gdg.python.interpreter``), and its module search path.

Which interpreter:

- the setting ``gdg.python.interpreter`` when given (a path to a ``python`` executable
  or to a virtual environment folder);
- else the workspace's ``.venv`` or ``venv`` folder when one exists;
- else the server's own interpreter.

Its search path is learnt without running any code of the user's: the interpreter is
asked once, with ``-I -S`` (isolated: no environment variables, no user site, no
current folder on the path; no ``site``: no ``.pth`` file runs), in a temporary folder
outside the workspace, with a minimal environment and a timeout, for its ``sys.path``
(its standard library) and the two folders ``site`` would have added (``sysconfig``'s
``purelib``/``platlib``). An executable whose real path lies inside a workspace folder
is never run (a cloned repository can ship a script named ``python``): its
environment is read statically, as it is whenever asking fails -- ``pyvenv.cfg`` and
the ``lib/pythonX.Y/site-packages`` layout. Path lines of ``.pth`` files in the
site folders are added as ``site`` would add them; their ``import`` lines are never
run. The server's own interpreter needs no question: its ``sys.path`` is at hand.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp.boundary import Boundary, real
from gdg_lsp.caches import BoundedCache

QUERY_TIMEOUT_S = 5.0
"""How long the interpreter may take to print its search path (a cold start from a
network file system can take a second or two)."""

QUERY = ("import sys, json, sysconfig; print(json.dumps({'path': sys.path, 'version': list(sys.version_info[:2]),"
         " 'prefix': sys.prefix, 'site': [sysconfig.get_path('purelib'), sysconfig.get_path('platlib')]}))")
"""What the interpreter is asked (run with -I -S: only its standard library is imported)."""

VENV_FOLDERS = (".venv", "venv")


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
    """Why the interpreter was not asked or did not answer (then ``how`` is ``static``)."""
    stdlib: tuple[Path, ...] = field(default=())
    """The standard library's folders (a module found there is versioned by the interpreter)."""

    @property
    def key(self) -> tuple[str, tuple[int, int], tuple[Path, ...]]:
        return self.executable, self.version, self.paths


def own() -> SearchPath:
    """The server's own interpreter: its running ``sys.path``."""
    stdlib = tuple(Path(p) for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")} if p)
    site = tuple(Path(p) for p in dict.fromkeys((sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))) if p)
    paths = tuple(Path(p) for p in sys.path if p and os.path.isdir(p))
    return SearchPath(sys.executable, sys.version_info[:2], paths, site, "own", None, stdlib)


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


_VERSION_DIR = re.compile(r"python(\d+)\.(\d+)t?$")


def _static(executable: Path, problem: str | None) -> SearchPath:
    """The search path read from disk: the environment folder (``pyvenv.cfg``'s parent,
    or the executable's ``bin/``'s parent), its ``lib/pythonX.Y`` and site-packages, and
    for a virtual environment the base installation's standard library (``home``)."""
    prefix = executable.parent.parent
    config: dict[str, str] = {}
    cfg = prefix / "pyvenv.cfg"
    if cfg.is_file():
        for line in cfg.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            config[key.strip().lower()] = value.strip()
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
                             prefix / "Lib" / "site-packages") if d.is_dir())
    bases = [prefix]
    if home := config.get("home"):
        bases.append(Path(home).parent)  # home is the base interpreter's bin folder
    stdlib = tuple(dict.fromkeys(d for base in bases for d in (base / "lib" / tag, base / "lib" / tag / "lib-dynload")
                                 if d.is_dir() and not d.is_relative_to(prefix / "lib" / tag / "site-packages")))
    return SearchPath(str(executable), version, (*stdlib, *site, *_pth_paths(site)), site, "static", problem, stdlib)


def _pth_paths(site: Sequence[Path]) -> list[Path]:
    """The folders the ``.pth`` files of ``site`` name (their ``import`` lines are not run)."""
    found: list[Path] = []
    for folder in site:
        try:
            names = sorted(n for n in os.listdir(folder) if n.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            try:
                lines = (folder / name).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith("#") or line.startswith(("import ", "import\t")):
                    continue
                target = (folder / line) if not os.path.isabs(line) else Path(line)
                if target.is_dir():
                    found.append(target)
    return found


def _from_answer(executable: Path, answer: dict) -> SearchPath:
    """The search path from the interpreter's answer. Without ``site`` a virtual
    environment's interpreter reports its base installation's site folder (``site``
    is what switches to the environment): the environment's own comes from its layout."""
    site = tuple(dict.fromkeys(Path(p) for p in answer.get("site", []) if isinstance(p, str) and os.path.isdir(p)))
    stdlib = tuple(Path(p) for p in answer["path"] if isinstance(p, str) and p and os.path.isdir(p))
    version = answer.get("version") or list(sys.version_info[:2])
    if (executable.parent.parent / "pyvenv.cfg").is_file():
        venv = _static(executable, None)
        cfg = (executable.parent.parent / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").lower()
        system = re.search(r"include-system-site-packages\s*=\s*true", cfg) is not None
        site = (*venv.site, *(site if system else ()))
    paths = tuple(dict.fromkeys((*stdlib, *site, *_pth_paths(site))))
    return SearchPath(str(executable), (int(version[0]), int(version[1])), paths, site, "asked", None, stdlib)


def search_path_for(executable: Path, workspace: Sequence[Path]) -> SearchPath:
    """The search path of ``executable``: asked (-I -S) unless its real path is inside the
    workspace or asking fails, then read statically."""
    if not executable.exists():
        return _static(executable, f"{executable} does not exist")
    if Boundary.of(workspace).allows(executable):
        return _static(executable, f"{executable} is a file of the workspace ({real(executable)}): not run")
    try:
        return _from_answer(executable, _ask(executable))
    except (OSError, subprocess.SubprocessError, RuntimeError, ValueError, KeyError, IndexError) as err:
        return _static(executable, f"asking {executable} for its search path failed ({err})")


_CACHE: BoundedCache[tuple, SearchPath] = BoundedCache("python.interpreters", 8)
_LOCK = threading.Lock()


def resolve(setting: str | None, roots: Sequence[Path]) -> SearchPath:
    """The search path for the ``gdg.python.interpreter`` setting and workspace ``roots``
    (asked once per setting and workspace, then kept)."""
    roots = tuple(Path(r) for r in roots)
    key = (setting or "", roots)
    with _LOCK:  # two threads must not both start the interpreter
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
        if setting:
            found = search_path_for(_executable(setting), roots)
        elif (venv := workspace_venv(roots)) is not None:
            found = search_path_for(_executable(str(venv)), roots)
        else:
            found = own()
        return _CACHE.put(key, found)


def forget() -> None:
    """Drop every kept search path (the setting or the workspace changed)."""
    _CACHE.clear()
