"""Γ for a shell script: the state of the tools it runs, as bindings.

Sources, each read by its own module and cached on what it was read from:

| sort | from |
|---|---|
| Branch, Tag, RemoteBranch, PseudoRef, Remote, Worktree | the repository holding the script (``git_state``) |
| MakeTarget | the nearest Makefile and its includes (``make_targets``) |
| NpmScript, JustRecipe, Task | the nearest package.json, justfile, Taskfile (``package_scripts``) |
| Subcommand, Option | the tools of ``gdg.shell.tools`` describing themselves (``tool_help``) |
| Source | one binding per source that was read (so a known source with no names closes its positions) |

Each is checked against the disk at every request, by stamps (``gdg_lsp.stamps``): the
files found for a folder are kept while the stamps of the folders searched hold (a new
package.json or Makefile changes its folder's), a Makefile's targets while the stamps
of it and of every file it includes (or looked for) hold, the repository while
``git_state.fresh`` says so, a script file while its own stamp holds.

Binding names are qualified so that a branch and a script of one name do not
collide (``refs/heads/main``, ``npm:build``, ``git checkout --quiet``); the
word written on a command line is the attr ``word`` and the name the shell reads
it as the attr ``text``: they differ for a name that is not a plain shell word,
which is written single-quoted (``names.shell_word``). Every name has passed its
source's rule (``names``) before it is a binding.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.gamma import Binding, Frame, Gamma, Origin
from gdg_lsp.languages.shell import git_state, make_targets, names, package_scripts
from gdg_lsp.languages.shell.roles import ROLES
from gdg_lsp.languages.shell.help_text import OptionSpec
from gdg_lsp.languages.shell.tool_help import TOOL_HELP, Surface, ToolHelp
from gdg_lsp.settings import DEFAULT_SHELL_TOOLS, LimitsSettings

_REF_SORT = {"branch": "Branch", "tag": "Tag", "remote-branch": "RemoteBranch", "pseudo": "PseudoRef",
             "remote": "Remote", "worktree": "Worktree"}
_REF_PREFIX = {"branch": "refs/heads/", "tag": "refs/tags/", "remote-branch": "refs/remotes/", "pseudo": "",
               "remote": "remote.", "worktree": "worktree:"}
_SCRIPT_SORT = {"npm": "NpmScript", "just": "JustRecipe", "task": "Task"}
MAX_USED_SUBCOMMANDS = 16
"""Subcommands of one tool a script uses whose own help is asked (the first in name order)."""


def _uri(path: str | os.PathLike[str]) -> str:
    return Path(path).absolute().as_uri()


@dataclass(frozen=True)
class Place:
    """Where a script runs, for the sources: its folder, the readable boundary and the bounds on
    what the files read there may cost (``gdg.limits``)."""

    folder: Path | None
    boundary: Boundary
    limits: LimitsSettings = LimitsSettings()


class Sources:
    """Reads and caches each source on what it was read from."""

    def __init__(self, tool_help: ToolHelp = TOOL_HELP) -> None:
        self.tool_help = tool_help
        # (git folder, boundary) -> (what was read, its key in Γ's frame cache, its bindings)
        self._git: BoundedCache[tuple, tuple[git_state.RepoState, tuple, list[Binding]]] = \
            BoundedCache("shell.git-state", 8)
        self._generations = itertools.count(1)
        self._files: BoundedCache[tuple, list[Binding]] = BoundedCache("shell.workspace-files", 16)
        # (Makefile, boundary) -> (the stamps of the files read, its key in Γ's frame cache, its bindings)
        self._makefiles: BoundedCache[tuple, tuple[stamps.Witness, tuple, list[Binding]]] = \
            BoundedCache("shell.makefiles", 8)
        self._frames: BoundedCache[tuple, Frame] = BoundedCache("shell.frames", 8)
        self._tool_bindings: BoundedCache[tuple, list[Binding]] = BoundedCache("shell.tool-bindings", 32)
        # which files a folder's sources are (found walking up): kept while the folders' stamps hold
        self._found: BoundedCache[tuple, tuple[stamps.Witness, dict[str, Path | None]]] = \
            BoundedCache("shell.discovery", 16)

    def _discover(self, place: Place) -> dict[str, Path | None]:
        """The git folder, Makefile, package.json, justfile and Taskfile a script in
        ``place`` runs with (each search walks up to the workspace folder); searched again
        when a folder on the way changed (a file came or went there)."""
        key = (place.folder, place.boundary.folders)
        hit = self._found.get(key)
        if hit is not None and hit[0].holds():
            return hit[1]
        assert place.folder is not None
        witness = _searched(place)
        found = {
            "git": git_state.find_git_dir(place.folder, place.boundary),
            "make": _nearest_makefile(place),
            "npm": package_scripts.nearest(place.folder, ("package.json",), place.boundary),
            "just": package_scripts.nearest(place.folder, package_scripts.JUSTFILE_NAMES, place.boundary),
            "task": package_scripts.nearest(place.folder, package_scripts.TASKFILE_NAMES, place.boundary),
        }
        if found["git"] is not None and (found["git"].parent / ".git").is_file():
            witness.note(found["git"].parent / ".git")  # a gitdir: file, read by the search
        self._found.put(key, (witness, found))
        return found

    # -- the repository -----------------------------------------------------------------

    def git(self, place: Place) -> tuple[tuple, list[Binding]]:
        if place.folder is None:
            return (), []
        git_dir = self._discover(place)["git"]
        if git_dir is None:
            return (), []
        watch_key = (str(git_dir), place.boundary.folders, place.limits)
        watched = self._git.get(watch_key)
        if watched is None or not git_state.fresh(watched[0]):
            # read once per change of the repository's stamps (a few stat calls per request)
            state = git_state.read_state(git_dir, place.boundary, place.limits)
            watched = self._git.put(watch_key, (state, ("git", str(git_dir), next(self._generations)),
                                                _repo_bindings(state)))
        return watched[1], watched[2]

    # -- files of the project -----------------------------------------------------------------

    def makefile(self, place: Place) -> tuple[tuple, list[Binding]]:
        if place.folder is None:
            return (), []
        makefile = self._discover(place)["make"]
        if makefile is None:
            return (), []
        watch_key = (str(makefile), place.boundary.folders)
        known = self._makefiles.get(watch_key)
        if known is None or not known[0].holds():  # the Makefile or a file it includes changed
            witness = stamps.Witness()
            found = [Binding(f"source:make:{makefile}", "Source", {"kind": "make", "path": str(makefile), "completion": False},
                             Origin(_uri(makefile), 0, 0, f"the Makefile {makefile.name}"))]
            for target in make_targets.read_targets(makefile, place.boundary, witness):
                found.append(Binding(f"make:{target.name}", "MakeTarget", _written(target.name) | {"file": target.file},
                                     Origin(_uri(target.file), target.line, 0,
                                            f"{Path(target.file).name}:{target.line + 1}")))
            known = self._makefiles.put(watch_key, (witness, ("make", str(makefile), next(self._generations)), found))
        return known[1], known[2]

    def scripts(self, place: Place) -> tuple[tuple, list[Binding]]:
        if place.folder is None:
            return (), []
        readers = (("npm", package_scripts.npm_scripts), ("just", package_scripts.just_recipes),
                   ("task", package_scripts.taskfile_tasks))
        discovered = self._discover(place)
        keys: list[tuple] = []
        found: list[Binding] = []
        for runner, read in readers:
            path = discovered[runner]
            if path is None:
                continue
            key = (runner, str(path), stamps.of(path), place.limits.scripts)

            def make(path: Path = path, runner: str = runner, read=read) -> list[Binding]:
                bindings = [Binding(f"source:{runner}:{path}", "Source", {"kind": runner, "path": str(path), "completion": False},
                                    Origin(_uri(path), 0, 0, path.name))]
                for script in read(path, place.boundary, place.limits.scripts):
                    attrs = _written(script.name) | ({"command": script.command} if script.command else {})
                    bindings.append(Binding(f"{runner}:{script.name}", _SCRIPT_SORT[runner], attrs,
                                            Origin(_uri(script.file), script.line, 0,
                                                   f"{Path(script.file).name}:{script.line + 1}")))
                return bindings

            keys.append(key)
            found.extend(self._files.get_or_make(key, make))
        return tuple(keys), found

    # -- tools describing themselves ---------------------------------------------------------------

    def tools(self, tools: Sequence[str], used: dict[str, set[str]], place: Place,
              path_env: str | None = None) -> tuple[tuple, list[Binding]]:
        """Bindings of every tool and of the subcommands that have roles or that the
        document uses (each subcommand's help is asked once, then cached)."""
        found: list[Binding] = []
        keys: list[tuple] = []
        for tool in tools:
            surface = self.tool_help.surface(tool, place.boundary, path_env)
            if surface is None:
                keys.append((tool, None))
                continue
            subs = self._wanted_subs(tool, surface, used.get(tool, set()))
            described = [s for sub in subs if (s := self.tool_help.subcommand(tool, sub, place.boundary, path_env))]
            key = (tool, id(surface), tuple(id(s) for s in described))
            keys.append(key)
            found.extend(self._tool_bindings.get_or_make(key, lambda: _surface_bindings(surface, described)))
        return tuple(keys), found

    @staticmethod
    def _wanted_subs(tool: str, surface: Surface, used: Iterable[str]) -> list[str]:
        wanted = [r.sub for r in ROLES if r.tool == tool and r.sub]
        wanted += sorted(used)[:MAX_USED_SUBCOMMANDS]
        return [s for s in dict.fromkeys(wanted) if s in surface.subcommands]

    # -- Γ ----------------------------------------------------------------------------------------

    def gamma(self, place: Place, tools: Sequence[str] = DEFAULT_SHELL_TOOLS, used: dict[str, set[str]] | None = None,
              path_env: str | None = None, extra: Iterable[Binding] = ()) -> Gamma:
        parts = [self.git(place), self.makefile(place), self.scripts(place),
                 self.tools(tools, used or {}, place, path_env)]
        extra = tuple(extra)
        key = (tuple(k for k, _ in parts), tuple(b.name for b in extra))

        def make() -> Frame:
            return Frame("tools", [b for _, bindings in parts for b in bindings] + list(extra))

        return Gamma(self._frames.get_or_make(key, make))


def _repo_bindings(state: git_state.RepoState) -> list[Binding]:
    git_dir = state.git_dir
    found = [Binding(f"source:git:{git_dir}", "Source", {"kind": "git", "path": str(git_dir), "completion": False},
                     Origin(_uri(git_dir), 0, 0, f"the repository {git_dir}"))]
    for ref in state.refs:
        if ref.kind == "alias":  # git runs it as a subcommand: a name, never run here
            found.append(Binding(f"git {ref.name}", "Subcommand", {"word": ref.name, "tool": "git", "alias": True},
                                 Origin(_uri(ref.file), ref.line, 0, f"alias {ref.name} ({_short(ref.file, git_dir)})")))
            continue
        origin = Origin(_uri(ref.file), ref.line, 0, f"{ref.kind} {ref.name} ({_short(ref.file, git_dir)})")
        attrs = _written(ref.name) | {"current": ref.current}
        if ref.kind == "remote-branch":
            branch = ref.name[len(ref.remote) + 1:]
            attrs |= {"remote": ref.remote, "branch": names.shell_word(branch), "branch_text": branch}
        found.append(Binding(_REF_PREFIX[ref.kind] + ref.name, _REF_SORT[ref.kind], attrs, origin))
    return found


def _written(name: str) -> dict[str, str]:
    """A name's attrs ``word`` (how a command line writes it: quoted when the shell would read
    it otherwise, names.shell_word) and ``text`` (the name itself: what the shell reads the word as)."""
    return {"word": names.shell_word(name), "text": name}


def _surface_bindings(surface: Surface, subs: Sequence[Surface]) -> list[Binding]:
    tool = surface.tool
    origin = Origin(None, 0, 0, f"`{surface.source}` ({surface.version or 'version unknown'})")
    found = [Binding(f"source:tool:{tool}", "Source", {"kind": f"tool:{tool}", "word": tool, "path": surface.path,
                                                       "version": surface.version, "completion": False,
                                                       "options_open": surface.options_open}, origin)]
    for sub in surface.subcommands:
        found.append(Binding(f"{tool} {sub}", "Subcommand", {"word": sub, "tool": tool}, origin))
    for option in surface.options:
        found.append(Binding(f"{tool} {option.name}", "Option", _option_attrs(option, tool, ""), origin))
    for described in subs:
        sub = described.source.split()[1]
        sub_origin = Origin(None, 0, 0, f"`{described.source}` ({described.version or 'version unknown'})")
        found.append(Binding(f"source:tool:{tool} {sub}", "Source", {"kind": f"tool:{tool} {sub}", "word": sub, "completion": False},
                             sub_origin))
        for option in described.options:
            found.append(Binding(f"{tool} {sub} {option.name}", "Option", _option_attrs(option, tool, sub), sub_origin))
    return found


def _option_attrs(option: OptionSpec, tool: str, sub: str) -> dict:
    """An option's attrs; one the tool's convention derives (``derived``: git's ``--no-ff`` where the
    help writes ``--ff``) is no completion item and enters the grammar only where it is typed."""
    value = "required" if option.takes_value else ("optional" if option.optional_value else "none")
    attrs = {"word": option.name, "tool": tool, "sub": sub, "value": value}
    return attrs | {"derived": True, "completion": False} if option.derived else attrs


def _short(file: str, git_dir: Path) -> str:
    try:
        return ".git/" + Path(file).relative_to(git_dir).as_posix()
    except ValueError:
        return file


def _searched(place: Place) -> stamps.Witness:
    """The stamps of the folders the searches for a script's files walk (from its folder up,
    inside the boundary), taken before they look: a file that comes or goes in one of them
    changes its folder's stamp."""
    witness = stamps.Witness()
    current = place.folder
    while current is not None and place.boundary.allows(current):
        witness.note(current)
        if current.parent == current:
            break
        current = current.parent
    return witness


def _nearest_makefile(place: Place) -> Path | None:
    current = place.folder
    while current is not None and place.boundary.allows(current):
        found = make_targets.find_makefile(current, place.boundary)
        if found is not None:
            return found
        if current.parent == current:
            break
        current = current.parent
    return None


SOURCES = Sources()
