"""Subcommands and options of the tools named in ``gdg.shell.tools``, from the tools themselves.

A tool describes itself (``git help -a``, ``docker --help``, ``git checkout -h``);
that text is read once per tool version and kept on disk as JSON in the per-user
cache folder (never pickle: the cache is data). What runs, and how:

- only a tool named in the user's settings, found on ``PATH`` with
  ``shutil.which`` after every ``PATH`` entry inside a workspace folder (and
  every relative entry) is removed, and refused if the resolved binary still
  lies inside a workspace folder: nothing from the workspace is ever run;
- with fixed arguments (``--help``, ``--version``, a subcommand the tool itself
  listed followed by ``--help``), no shell, ``stdin`` closed, a minimal
  environment (``PATH`` as filtered, ``LANG=C``; no ``HOME``, so no user
  configuration or aliases are read), in a fresh temporary folder outside the
  workspace, with a 2 s timeout after which its whole process group is killed.

A tool that is missing, refused, or says nothing usable contributes nothing:
its positions stay open. The cache key is the tool's real path, its version
string and its mtime; the version is asked again at most every
``VERSION_RECHECK_S`` seconds, so an upgrade in place is noticed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from gdg_lsp.boundary import Boundary, real
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.shell.help_text import OptionSpec, parse_options, parse_subcommands

log = logging.getLogger(__name__)

TIMEOUT_S = 2.0
MAX_OUTPUT = 512 * 1024
VERSION_RECHECK_S = 300.0
RESOLVE_TTL_S = 5.0
"""How long a tool's resolution on PATH (and its mtime) is trusted before it is looked up again."""
CACHE_FORMAT = 1


@dataclass(frozen=True)
class Recipe:
    """How a tool is asked to describe itself."""

    top: tuple[tuple[str, ...], ...] = (("--help",),)
    """Argument lists whose outputs, together, list the subcommands and global options."""
    sub: tuple[str, ...] | None = ("{sub}", "--help")
    """Arguments that describe one subcommand (``{sub}`` is replaced; only a subcommand
    the tool itself listed is ever asked)."""
    version: tuple[str, ...] = ("--version",)


RECIPES: dict[str, Recipe] = {
    # `git --help` opens the manual page; -h prints the synopsis, `help -a` every command
    "git": Recipe(top=(("-h",), ("help", "-a")), sub=("{sub}", "-h")),
    "curl": Recipe(top=(("--help", "all"),)),
    "ffmpeg": Recipe(top=(("-h",),), version=("-version",)),
}
PARTIAL_HELP: dict[str, frozenset[str]] = {
    # `git log -h` lists log's own options, not the diff and revision options it also takes
    "git": frozenset({"log", "show", "diff", "rev-parse", "rev-list", "format-patch", "whatchanged", "shortlog",
                      "range-diff", "difftool", "describe", "cherry"}),
}
"""Subcommands whose self-description lists only some of their options: their
options are not known (open in the grammar, never warned about)."""


@dataclass(frozen=True)
class Surface:
    """What a tool (or one of its subcommands) says it accepts."""

    tool: str
    path: str
    version: str
    source: str
    """The command that said it, for hover and explain: ``git help -a``."""
    subcommands: tuple[str, ...] = ()
    options: tuple[OptionSpec, ...] = ()

    def payload(self) -> dict:
        return {"tool": self.tool, "path": self.path, "version": self.version, "source": self.source,
                "subcommands": list(self.subcommands), "options": [o.payload() for o in self.options]}

    @classmethod
    def from_payload(cls, data: dict) -> Surface:
        return cls(str(data["tool"]), str(data["path"]), str(data["version"]), str(data["source"]),
                   tuple(str(s) for s in data["subcommands"]),
                   tuple(OptionSpec.from_payload(o) for o in data["options"]))


def cache_folder() -> Path:
    """``$GDG_LSP_CACHE_DIR/tool-help`` or the per-user cache folder, created 0700."""
    explicit = os.environ.get("GDG_LSP_CACHE_DIR")
    root = Path(explicit) if explicit else Path(platformdirs.user_cache_dir("gdg-lsp", appauthor=False))
    return root / "tool-help"


def safe_path(path_env: str | None, boundary: Boundary) -> str:
    """``PATH`` without relative entries and without entries inside the workspace."""
    kept = []
    for entry in (path_env if path_env is not None else os.environ.get("PATH", os.defpath)).split(os.pathsep):
        if not entry or not os.path.isabs(entry) or boundary.allows(entry):
            continue
        if entry not in kept:
            kept.append(entry)
    return os.pathsep.join(kept)


Runner = Callable[[str, Sequence[str], str], "str | None"]


def run_tool(executable: str, args: Sequence[str], path_env: str) -> str | None:
    """The tool's combined output, or None (it could not start, or ran past the timeout).

    No shell, stdin closed, minimal environment, a fresh temporary folder as the
    working directory, the whole process group killed on timeout.
    """
    with tempfile.TemporaryDirectory(prefix="gdg-tool-help-") as cwd:
        try:
            proc = subprocess.Popen(
                [executable, *args], cwd=cwd, env={"PATH": path_env, "LANG": "C", "LC_ALL": "C"},
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True,
            )
        except OSError as err:
            log.info("cannot run %s: %s", executable, err)
            return None
        try:
            out, _ = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.communicate()
            log.info("%s %s ran past %.0f s: ignored", executable, " ".join(args), TIMEOUT_S)
            return None
    return out[:MAX_OUTPUT].decode("utf-8", "replace")


@dataclass
class _Known:
    """One tool binary as known in this process."""

    tool: str
    path: str
    mtime_ns: int
    version: str
    checked: float
    top: Surface | None
    subs: dict[str, Surface | None] = field(default_factory=dict)


class ToolHelp:
    """The self-descriptions of tools, kept in memory and on disk."""

    def __init__(self, folder: Path | None = None, runner: Runner = run_tool) -> None:
        self._folder = folder
        self._runner = runner
        self._lock = threading.Lock()
        self._known: BoundedCache[tuple[str, int, int], _Known] = BoundedCache("shell.tool-help", 64)
        # (tool, PATH, workspace folders) -> (what is known, when to look on PATH again)
        self._recent: BoundedCache[tuple, tuple[_Known | None, float]] = BoundedCache("shell.tool-resolution", 64)
        self.runs = 0
        """How many processes were started (tests and the perf bench read it)."""

    @property
    def folder(self) -> Path:
        if self._folder is None:
            self._folder = cache_folder()
        if not self._folder.is_dir():
            self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)  # only its owner reads what tools said
        return self._folder

    # -- finding the tool -------------------------------------------------------------

    @staticmethod
    def resolve(tool: str, boundary: Boundary, path_env: str | None = None) -> str | None:
        """The tool's real path on the filtered PATH, or None (missing, or inside the workspace)."""
        if not tool or os.sep in tool or (os.altsep and os.altsep in tool):
            return None  # a name, never a path: a path could point into the workspace
        found = shutil.which(tool, path=safe_path(path_env, boundary))
        if found is None:
            return None
        resolved = real(found)
        if boundary.allows(resolved):
            log.warning("refusing %s: it resolves to %s, inside the workspace", tool, resolved)
            return None
        return str(resolved)

    # -- asking it -----------------------------------------------------------------------

    def surface(self, tool: str, boundary: Boundary, path_env: str | None = None) -> Surface | None:
        """Subcommands and global options of ``tool`` (None when it contributes nothing)."""
        known = self._entry(tool, boundary, path_env)
        return known.top if known is not None else None

    def subcommand(self, tool: str, sub: str, boundary: Boundary, path_env: str | None = None) -> Surface | None:
        """Options of ``tool sub``; only for a subcommand the tool itself listed."""
        known = self._entry(tool, boundary, path_env)
        recipe = RECIPES.get(tool, Recipe())
        if (known is None or known.top is None or recipe.sub is None or sub not in known.top.subcommands
                or sub in PARTIAL_HELP.get(tool, ())):
            return None
        if sub in known.subs:
            return known.subs[sub]
        with self._lock:
            if sub not in known.subs:
                args = tuple(sub if a == "{sub}" else a for a in recipe.sub)
                text = self._run(known.path, args, boundary, path_env)
                surface = None
                if text is not None:
                    options = parse_options(text)
                    if options:
                        surface = Surface(tool, known.path, known.version, f"{tool} {' '.join(args)}", (),
                                          tuple(options))
                known.subs[sub] = surface
                self._store(known)
        return known.subs[sub]

    def _run(self, executable: str, args: Sequence[str], boundary: Boundary, path_env: str | None) -> str | None:
        self.runs += 1
        return self._runner(executable, args, safe_path(path_env, boundary))

    def _entry(self, tool: str, boundary: Boundary, path_env: str | None) -> _Known | None:
        key = (tool, path_env, boundary.folders)
        recent = self._recent.get(key)
        now = time.monotonic()
        if recent is not None and now < recent[1]:
            return recent[0]
        known = self._lookup(tool, boundary, path_env)
        self._recent.put(key, (known, now + RESOLVE_TTL_S))
        return known

    def _lookup(self, tool: str, boundary: Boundary, path_env: str | None) -> _Known | None:
        path = self.resolve(tool, boundary, path_env)
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (path, stat.st_mtime_ns, stat.st_size)
        known = self._known.get(key)
        now = time.monotonic()
        if known is not None and now - known.checked < VERSION_RECHECK_S:
            return known
        with self._lock:
            known = self._known.get(key)
            if known is not None and now - known.checked < VERSION_RECHECK_S:
                return known
            recipe = RECIPES.get(tool, Recipe())
            said = self._run(path, recipe.version, boundary, path_env)
            if said is None:
                # it did not answer in time (a loaded machine) or could not start: nothing now,
                # asked again after RESOLVE_TTL_S; the disk cache is left as it was
                return known
            version = said.strip().splitlines()
            version_text = version[0][:200] if version else ""
            if known is not None and known.version == version_text:
                known.checked = now
                return known
            known = self._load(tool, path, stat.st_mtime_ns, version_text)
            if known is None:
                top = self._describe(tool, path, version_text, recipe, boundary, path_env)
                known = _Known(tool, path, stat.st_mtime_ns, version_text, now, top)
                self._store(known)
            known.checked = now
            return self._known.put(key, known)

    def _describe(self, tool: str, path: str, version: str, recipe: Recipe, boundary: Boundary,
                  path_env: str | None) -> Surface | None:
        texts = [t for args in recipe.top if (t := self._run(path, args, boundary, path_env))]
        if not texts:
            return None
        text = "\n".join(texts)
        subcommands = tuple(parse_subcommands(text))
        options = tuple(parse_options(text))
        if not subcommands and not options:
            return None
        source = " / ".join(f"{tool} {' '.join(args)}" for args in recipe.top)
        return Surface(tool, path, version, source, subcommands, options)

    # -- the disk cache --------------------------------------------------------------------

    def _file(self, path: str) -> Path:
        return self.folder / (hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".json")

    def _load(self, tool: str, path: str, mtime_ns: int, version: str) -> _Known | None:
        try:
            data = json.loads(self._file(path).read_text(encoding="utf-8"))
            if (data.get("format") != CACHE_FORMAT or data.get("path") != path or data.get("mtime_ns") != mtime_ns
                    or data.get("version") != version or data.get("tool") != tool):
                return None
            top = Surface.from_payload(data["top"]) if data.get("top") else None
            subs = {str(k): (Surface.from_payload(v) if v else None) for k, v in data.get("subs", {}).items()}
            return _Known(tool, path, mtime_ns, version, time.monotonic(), top, subs)
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None  # absent or unreadable: ask the tool again

    def _store(self, known: _Known) -> None:
        """Write what is known of the binary (a tool that said nothing is kept too:
        it is not asked again until its version or mtime changes)."""
        data = {"format": CACHE_FORMAT, "tool": known.tool, "path": known.path, "mtime_ns": known.mtime_ns,
                "version": known.version, "top": known.top.payload() if known.top else None,
                "subs": {k: (v.payload() if v else None) for k, v in known.subs.items()}}
        target = self._file(known.path)
        try:
            fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".tool-help-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(temp, target)
        except OSError as err:
            log.info("cannot write the tool-help cache %s: %s", target, err)


TOOL_HELP = ToolHelp()
"""The process's one store (the analyzer and the perf bench share it)."""
