"""Which argument of which command names what: the table the grammar, the
diagnostics, hover and the bench share.

A role says, for a tool (and a subcommand, and a leading word such as ``-d``
or ``remove``), what its first positional argument names and what the later
ones name. The kinds are Γ sorts:

| kind | sorts |
|---|---|
| ref | Branch, Tag, RemoteBranch, PseudoRef |
| branch / tag / remote / worktree | Branch / Tag / Remote / Worktree |
| remote-ref | a branch of a remote (``main`` of ``origin/main``), Branch, Tag |
| target / script / recipe / task | MakeTarget / NpmScript / JustRecipe / Task |
| words:a,b | fixed words (``git remote add``) |

``None`` is an open position (any word); ``"none"`` means no further positional.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gdg_lsp.gamma import Gamma

REF_SORTS = ("Branch", "Tag", "RemoteBranch", "PseudoRef")
KIND_SORTS: dict[str, tuple[str, ...]] = {
    "ref": REF_SORTS,
    "branch": ("Branch",),
    "tag": ("Tag",),
    "remote": ("Remote",),
    "worktree": ("Worktree",),
    "target": ("MakeTarget",),
    "script": ("NpmScript",),
    "recipe": ("JustRecipe",),
    "task": ("Task",),
}
REVISION_KINDS = frozenset({"ref", "branch", "tag", "remote-ref"})
"""Kinds that take a revision suffix (``main~2``, ``HEAD^``)."""
SORT_LABEL = {
    "Branch": "branch", "Tag": "tag", "RemoteBranch": "remote branch", "PseudoRef": "ref", "Remote": "remote",
    "Worktree": "worktree", "MakeTarget": "make target", "NpmScript": "package.json script",
    "JustRecipe": "just recipe", "Task": "task", "Subcommand": "subcommand", "Option": "option",
}


@dataclass(frozen=True)
class Role:
    tool: str
    sub: str | None = None
    """The subcommand (None: the tool itself)."""
    first: str | None = None
    more: str | None = "none"
    lead: tuple[str, ...] = ()
    """Words one of which follows the subcommand (``-d``, ``remove``); their member excludes them elsewhere."""
    colon: bool = False
    """``src:dst`` refspecs after the first argument (git push: the remote, then refspecs)."""

    @property
    def label(self) -> str:
        return " ".join(p for p in (self.tool, self.sub, "|".join(self.lead)) if p)


_RUN = ("run", "run-script", "rum", "urn")
ROLES: tuple[Role, ...] = (
    Role("git", "checkout", "ref"),
    Role("git", "switch", "ref"),
    Role("git", "merge", "ref", "ref"),
    Role("git", "rebase", "ref", "ref"),
    Role("git", "cherry-pick", "ref", "ref"),
    Role("git", "branch", "branch", "branch", lead=("-d", "-D", "--delete")),
    Role("git", "branch", None, None),
    Role("git", "tag", "tag", "tag", lead=("-d", "--delete")),
    Role("git", "tag", None, None),
    Role("git", "push", "remote", "ref", colon=True),
    Role("git", "pull", "remote", "remote-ref"),
    Role("git", "fetch", "remote", "remote-ref"),
    Role("git", "remote", "remote", None,
         lead=("remove", "rm", "rename", "set-url", "get-url", "show", "prune", "set-head", "set-branches")),
    Role("git", "remote", "words:add,update", None),
    Role("git", "worktree", "worktree", None, lead=("remove", "lock", "unlock", "move", "repair")),
    Role("git", "worktree", "words:add,list,prune", None),
    Role("make", None, "target", "target"),
    *(Role("npm", run, "script") for run in _RUN),
    Role("pnpm", "run", "script"),
    Role("yarn", "run", "script"),
    Role("just", None, "recipe", None),
    Role("task", None, "task", "task"),
)
ROLE_TOOLS = tuple(dict.fromkeys(role.tool for role in ROLES))
"""Tools whose arguments have roles even when they are not in ``gdg.shell.tools``."""


def roles_of(tool: str) -> list[Role]:
    return [role for role in ROLES if role.tool == tool]


def role_for(tool: str, sub: str | None, words_after: Iterable[str]) -> Role | None:
    """The role of ``tool sub`` given the words that follow the subcommand."""
    after = list(words_after)
    candidates = [r for r in ROLES if r.tool == tool and r.sub == sub]
    for role in candidates:
        if role.lead and any(word in role.lead for word in after[:3]):
            return role
    return next((r for r in candidates if not r.lead), None)


def names_of_kind(kind: str | None, gamma: Gamma, attr: str = "word") -> list[str] | None:
    """The words a position of ``kind`` accepts, as a command line writes them (None: open).
    ``attr="text"``: the names those words are read as (a quoted word's name without its quotes),
    which is what a script's own words are compared with."""
    if kind is None or kind == "none":
        return None
    if kind.startswith("words:"):
        return kind[len("words:"):].split(",")
    if kind == "remote-ref":
        branch = "branch" if attr == "word" else "branch_text"
        remote_branches = [b.attrs.get(branch, "") for b in gamma.bindings("RemoteBranch")]
        return sorted({*filter(None, remote_branches), *_plain(gamma, ("Branch", "Tag"), attr)})
    return sorted(set(_plain(gamma, KIND_SORTS[kind], attr)))


def _plain(gamma: Gamma, sorts: tuple[str, ...], attr: str) -> list[str]:
    """The words that name bindings of ``sorts`` on a command line (attr ``word``), or the names
    they are read as (attr ``text``; a binding without it is written as it is read)."""
    return [b.attrs.get(attr, b.attrs.get("word", b.name)) for b in gamma.bindings(list(sorts))]


def kind_is_known(kind: str | None, gamma: Gamma) -> bool:
    """Whether Γ has the source of ``kind`` (a repository, a Makefile, a package.json...):
    a known source with no names still closes the position."""
    if kind is None or kind == "none" or kind.startswith("words:"):
        return kind is not None
    sources = {b.attrs.get("kind") for b in gamma.bindings("Source")}
    needed = {"ref": "git", "branch": "git", "tag": "git", "remote": "git", "worktree": "git", "remote-ref": "git",
              "target": "make", "script": "npm", "recipe": "just", "task": "task"}[kind]
    return needed in sources
