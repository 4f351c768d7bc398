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

The disk cache decides what runs later (each subcommand it lists may be asked for
its help), so it is trusted only as the server's own: its folder is created 0700
and checked on every use (``private_folder``: a real folder of this user's that
nobody else may write; every link on the way to it this user's or root's, and no
folder above it that others may write unless it is sticky); a folder that fails
gets no disk cache (said once). An entry is read without following a link or
blocking, and only its words are taken from it, each checked by the rules a freshly
parsed one passes (``names.subcommand`` / ``names.option``); the path, version and
the commands shown are the server's own. An entry that fails any of it is ignored
and rebuilt by asking the tool again. The only executable ever started is the one
``resolve`` found on the filtered PATH.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from gdg_lsp.boundary import Boundary, Refused, read_bounded, real
from gdg_lsp.caches import BoundedCache
from gdg_lsp.languages.shell import names
from gdg_lsp.languages.shell.help_text import OptionSpec, lists_some_options, parse_options, parse_subcommands
from gdg_lsp.private_folder import NotPrivate, private_folder, remove_entry, why_not_private

log = logging.getLogger(__name__)

TIMEOUT_S = 2.0
MAX_OUTPUT = 512 * 1024
VERSION_RECHECK_S = 300.0
RESOLVE_TTL_S = 5.0
"""How long a tool's resolution on PATH (and its mtime) is trusted before it is looked up again."""
CACHE_FORMAT = 2
"""2: options carry ``derived`` and a surface ``options_open`` (entries of 1 were read by an older
parser: ``--no-ff`` was missing from git's, so they are asked again)."""
MAX_ENTRY_BYTES = 4 * 1024 * 1024
"""A cache entry larger than this is no tool's help (MAX_OUTPUT per text, a few texts)."""


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
    options_open: bool = False
    """The text lists only some of the tool's options (jq 1.6: "Some of the options include"), or
    none beside its subcommands (``npm --help``): its options are not known."""

    def payload(self) -> dict:
        return {"tool": self.tool, "path": self.path, "version": self.version, "source": self.source,
                "subcommands": list(self.subcommands), "options": [o.payload() for o in self.options],
                "options_open": self.options_open}


def _entry_words(data: object) -> tuple[tuple[str, ...], tuple[OptionSpec, ...], bool]:
    """The subcommands and options a cache entry's surface holds, each checked by the rule a
    freshly parsed word passes, and whether its options are open; ValueError when any is not such
    a word (the entry is rebuilt)."""
    if not isinstance(data, dict) or not isinstance(data.get("subcommands"), list) \
            or not isinstance(data.get("options"), list):
        raise ValueError("not a surface")
    subcommands = tuple(data["subcommands"])
    options = []
    for item in data["options"]:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                and all(isinstance(flag, bool) for flag in item[1:])):
            raise ValueError(f"not an option: {item!r}"[:200])
        options.append(OptionSpec(item[0], item[1], item[2], item[3]))
    for word in subcommands:
        if not isinstance(word, str) or (why := names.subcommand(word)) is not None:
            raise ValueError(f"subcommand {word!r}: {why or 'not a string'}"[:200])
    for option in options:
        if (why := names.option(option.name)) is not None:
            raise ValueError(f"option {option.name!r}: {why}"[:200])
    if not isinstance(data.get("options_open", False), bool):
        raise ValueError("options_open is not a boolean")
    return subcommands, tuple(options), data.get("options_open", False)


def _said_words(tool: str, source: str, subcommands: Iterable[str],
                options: Iterable[OptionSpec]) -> tuple[tuple[str, ...], tuple[OptionSpec, ...]]:
    """What a tool said, each word checked by its rule (one that fails is left out and noted)."""
    where = f"`{source}`"
    return (tuple(s for s in subcommands if names.admit(s, names.subcommand, where)),
            tuple(o for o in options if names.admit(o.name, names.option, where)))


def cache_folder() -> Path:
    """``$GDG_LSP_CACHE_DIR/tool-help`` or the per-user cache folder (created 0700 on first use)."""
    explicit = os.environ.get("GDG_LSP_CACHE_DIR")
    root = Path(explicit) if explicit else Path(platformdirs.user_cache_dir("gdg-lsp", appauthor=False))
    return root / "tool-help"


def _above_problem(folder: Path) -> str | None:
    """Why a folder above ``folder`` lets someone else replace it: a link on the way that is
    another user's, or a folder above its real place owned by another user, or writable by
    group or others without the sticky bit (None: nobody but this user and root can)."""
    if not hasattr(os, "geteuid"):
        return None
    user = os.geteuid()
    absolute = Path(os.path.abspath(folder))
    try:
        for above in absolute.parents:
            info = os.lstat(above)
            if stat.S_ISLNK(info.st_mode) and info.st_uid not in (user, 0):
                return f"{above}, on the way to {folder}, is a link of user {info.st_uid}"
        for above in Path(os.path.realpath(absolute)).parents:
            info = os.stat(above)
            if info.st_uid not in (user, 0):
                return f"{above}, above {folder}, belongs to user {info.st_uid}"
            if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
                return f"{above}, above {folder}, may be written by others and is not sticky"
    except OSError as err:
        return f"a folder above {folder} cannot be checked ({err.strerror or err})"
    return None


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
        self._said: set[str] = set()

    @property
    def folder(self) -> Path | None:
        """The disk cache's folder, created 0700 and checked on every use; None when it is not
        this user's alone (no disk cache: what the tools say is kept in memory only)."""
        if self._folder is None:
            self._folder = cache_folder()
        try:
            private_folder(self._folder)
            why = _above_problem(self._folder)
        except NotPrivate as err:
            why = str(err)
        if why is None:
            return self._folder
        if why not in self._said:
            self._said.add(why)
            log.warning("the tool-help cache is not used: %s", why)
        return None

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
                or sub in PARTIAL_HELP.get(tool, ()) or names.subcommand(sub) is not None):
            return None  # only a word the tool listed, and only one shaped like a subcommand, is ever run
        if sub in known.subs:
            return known.subs[sub]
        with self._lock:
            if sub not in known.subs:
                args = tuple(sub if a == "{sub}" else a for a in recipe.sub)
                text = self._run(known.path, args, boundary, path_env)
                surface = None
                source = f"{tool} {' '.join(args)}"
                if text is not None and not lists_some_options(text):  # else its options stay open
                    _, options = _said_words(tool, source, (), parse_options(text, tool, subcommand=True))
                    if options:
                        surface = Surface(tool, known.path, known.version, source, (), options)
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
        source = _top_source(tool, recipe)
        subcommands, options = _said_words(tool, source, parse_subcommands(text), parse_options(text, tool))
        if not subcommands and not options:
            return None
        return Surface(tool, path, version, source, subcommands, options,
                       options_open=lists_some_options(text) or not options)

    # -- the disk cache --------------------------------------------------------------------

    @staticmethod
    def _entry_name(path: str) -> str:
        return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()[:32] + ".json"

    def _load(self, tool: str, path: str, mtime_ns: int, version: str) -> _Known | None:
        """What the cache says of the binary, or None (absent, or not to be trusted: asked again)."""
        folder = self.folder
        if folder is None:
            return None
        entry = folder / self._entry_name(path)
        if not os.path.lexists(entry):
            return None
        try:
            if (why := why_not_private(entry)) is not None:
                raise ValueError(why)
            data = json.loads(read_bounded(entry, MAX_ENTRY_BYTES))
            if (not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("path") != path
                    or data.get("mtime_ns") != mtime_ns or data.get("version") != version or data.get("tool") != tool):
                return None  # another binary or version: asked again
            recipe = RECIPES.get(tool, Recipe())
            top = None
            if data.get("top"):
                subcommands, options, options_open = _entry_words(data["top"])
                top = Surface(tool, path, version, _top_source(tool, recipe), subcommands, options, options_open)
            subs: dict[str, Surface | None] = {}
            for sub, described in dict(data.get("subs") or {}).items():
                if top is None or sub not in top.subcommands or recipe.sub is None:
                    raise ValueError(f"subcommand {sub!r} is not one the tool listed"[:200])
                if described:
                    args = " ".join(sub if a == "{sub}" else a for a in recipe.sub)
                    subs[sub] = Surface(tool, path, version, f"{tool} {args}", (), _entry_words(described)[1])
                else:
                    subs[sub] = None
            return _Known(tool, path, mtime_ns, version, time.monotonic(), top, subs)
        except (Refused, ValueError, KeyError, TypeError, AttributeError) as err:
            log.info("the tool-help cache entry %s is not used (asked again): %s", entry, err)
            return None

    def _store(self, known: _Known) -> None:
        """Write what is known of the binary (a tool that said nothing is kept too:
        it is not asked again until its version or mtime changes)."""
        folder = self.folder
        if folder is None:
            return
        data = {"format": CACHE_FORMAT, "tool": known.tool, "path": known.path, "mtime_ns": known.mtime_ns,
                "version": known.version, "top": known.top.payload() if known.top else None,
                "subs": {k: (v.payload() if v else None) for k, v in known.subs.items()}}
        target = folder / self._entry_name(known.path)
        try:
            if why_not_private(target) is not None:
                remove_entry(target)  # a link or a folder planted at the entry's name: never written through
            fd, temp = tempfile.mkstemp(dir=folder, prefix=".tool-help-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle)
            os.replace(temp, target)
        except OSError as err:
            log.info("cannot write the tool-help cache %s: %s", target, err)


def _top_source(tool: str, recipe: Recipe) -> str:
    """The commands whose outputs list a tool's subcommands and options (for hover and explain)."""
    return " / ".join(f"{tool} {' '.join(args)}" for args in recipe.top)


TOOL_HELP = ToolHelp()
"""The process's one store (the analyzer and the perf bench share it)."""
