"""Shell holes and their oracle: real scripts, checked with the real tools.

Holes: in the corpus scripts (``corpus/shell/<owner>/<repo>/``, see its
SOURCES.md), each command whose argument names a ref, a remote, a make target
or an npm script, cut at that argument: the document keeps every other line,
the hole's line keeps what precedes the argument. The script is placed in a
throwaway repository made for its project (in the process's own scratch folder,
``cases.scratch_folder``): a real git repository whose branches and tags are the
project's default branch plus every ref its scripts name, whose remotes are those
its scripts push to, beside a copy of the project's Makefile and package.json.

Oracle (shares nothing with the analyzer): the filled line is split with
``shlex``; the arguments of ``git checkout|switch|merge|rebase|cherry-pick``
must pass ``git rev-parse --verify``, a remote of ``git push|pull|fetch``
``git remote get-url``, a ``make`` target ``make -n -f Makefile <target>``
(GNU make: "No rule to make target" is a ghost), an ``npm run`` script must
be a key of package.json's ``scripts`` (read with ``json``), and an option
must appear in ``<tool> <sub> -h`` (git) or ``<tool> --help``. Every word it
cannot place is not judged. ``bash -n`` says whether the line parses.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.cases import HoleCase, OracleResult, scratch_folder

LANGUAGE = "shell"
HERE_CORPUS = Path(__file__).resolve().parents[3] / "corpus"
DEFAULT_BRANCH_NAMES = ("main",)
_REF_SUBS = ("checkout", "switch", "merge", "rebase", "cherry-pick")
_REMOTE_SUBS = ("push", "pull", "fetch")
_RUN = ("run", "run-script")
_LITERAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:+-]*\Z")
TIMEOUT_S = 10
_OPERATOR_CHARS = frozenset("();<>|&")


def corpus_root(corpus: Path) -> Path:
    """``<corpus>/shell`` if it exists, else this checkout's own corpus/shell."""
    for candidate in (Path(corpus) / "shell", Path(corpus), HERE_CORPUS / "shell"):
        if candidate.is_dir() and any(candidate.rglob("*.sh")):
            return candidate
    raise FileNotFoundError(f"no shell corpus under {corpus} or {HERE_CORPUS / 'shell'}")


def projects(root: Path) -> list[Path]:
    """Project folders: those holding a licence file."""
    return sorted({p.parent for p in root.rglob("LICENSE*")})


# -- the oracle's own reading of a line (shlex; independent of the analyzer) -------


def _positionals(words: list[str]) -> list[str]:
    return [w for w in words if not w.startswith("-")]


def _words(line: str) -> list[str]:
    """The line's words as the shell splits them: quotes removed, a comment (from a word that
    begins with ``#``) dropped, and the control and redirection operators (``;``, ``&&``, ``|``,
    ``>``, ``2>&1``…) words of their own even when written against a word (``main;make``)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex ends a word at any '#'; the shell only starts a comment with one
    words = []
    for word in lexer:
        if word.startswith("#"):
            break
        words.append(word)
    return words


def _commands(words: list[str]) -> list[list[str]]:
    """The simple commands of a line's words, without the redirections' operators and files."""
    commands: list[list[str]] = [[]]
    skip = False
    for word in words:
        if skip:  # the file (or descriptor) of a redirection
            skip = False
        elif set(word) <= _OPERATOR_CHARS and set(word) & set("<>"):
            skip = True
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # 2>…: the descriptor it redirects, not an argument
        elif set(word) <= _OPERATOR_CHARS:
            commands.append([])  # ; && || | & ( ) ;;
        else:
            commands[-1].append(word)
    return commands


def simple_commands(line: str) -> list[list[str]]:
    """The words of each simple command on ``line``, as the shell reads them (operators end a
    word, redirections and their files are left out); ValueError if a quote is not closed."""
    return _commands(_words(line))


def references(line: str) -> list[tuple[str, str]]:
    """``(kind, word)`` for each literal argument of a known position on ``line``."""
    try:
        commands = simple_commands(line)
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    for command in commands:
        while command and command[0] in ("sudo", "command", "exec"):
            command = command[1:]
        if len(command) < 2:
            continue
        tool, rest = command[0], command[1:]
        if tool == "git":
            sub_index = next((i for i, w in enumerate(rest) if not w.startswith("-")), None)
            if sub_index is None:
                continue
            sub, args = rest[sub_index], rest[sub_index + 1:]
            found += [("option:git " + sub, w.split("=", 1)[0]) for w in args if w.startswith("--") and w != "--"]
            args = args[: args.index("--")] if "--" in args else args
            plain = [a for i, a in enumerate(args) if not a.startswith("-")
                     and not (i and args[i - 1] in ("-b", "-B", "-c", "-C", "--orphan", "-m", "--message"))]
            if sub in _REF_SUBS:
                found += [("ref", w) for w in plain]
            elif sub in _REMOTE_SUBS and plain:
                found.append(("remote", plain[0]))
                if sub == "push":
                    found += [("ref", w.lstrip("+").split(":", 1)[0]) for w in plain[1:] if not w.startswith(":")]
            elif sub == "branch" and any(a in ("-d", "-D", "--delete") for a in args):
                found += [("branch", w) for w in plain]
        elif tool == "make":
            found += [("target", w) for w in _positionals(rest) if "=" not in w]
        elif tool in ("npm", "pnpm", "yarn") and rest[0] in _RUN and len(rest) > 1:
            scripts = _positionals(rest[1:])
            if scripts:
                found.append(("script", scripts[0]))
    return [(k, w) for k, w in found if _LITERAL.match(w)]


# -- throwaway repositories ----------------------------------------------------------


def _git(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(folder), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "bench@invalid", "LANG": "C"}
    return subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


def throwaway(project: Path, scripts: list[Path], root: Path) -> Path:
    """A repository for ``project``: its Makefile and package.json, its scripts, and
    the refs and remotes its scripts name (made once per process, reused).

    The repositories live in the process's own scratch folder (``scratch_folder``): git
    reads a repository's config and runs its hooks, so a repository planted in the shared
    temporary folder must never be the one the oracle runs git in, and one left stale by a
    run that was cut off must not be trusted either."""
    name = project.relative_to(root).as_posix().replace("/", "__")
    wanted = _wanted_refs(scripts)
    key = (name, json.dumps(wanted, sort_keys=True))
    if key in _MADE:
        return _MADE[key]
    folder = scratch_folder(f"shell/{name}")
    for extra in ("Makefile", "package.json"):
        if (project / extra).is_file():
            shutil.copy(project / extra, folder / extra)
    for script in scripts:
        target = folder / script.relative_to(project)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(script, target)
    _made(folder, "init", "-q", "-b", DEFAULT_BRANCH_NAMES[0])
    _made(folder, "commit", "-q", "--allow-empty", "-m", "bench")
    for ref in wanted["branches"]:
        if ref != DEFAULT_BRANCH_NAMES[0]:
            _made(folder, "branch", ref)
    for tag in wanted["tags"]:
        _made(folder, "tag", tag)
    for remote in wanted["remotes"]:
        _made(folder, "remote", "add", remote, f"https://example.invalid/{remote}.git")
        _made(folder, "update-ref", f"refs/remotes/{remote}/{DEFAULT_BRANCH_NAMES[0]}", "HEAD")
    _MADE[key] = folder
    return folder


_MADE: dict[tuple[str, str], Path] = {}


def _made(folder: Path, *args: str) -> None:
    """One git step of making a throwaway repository; a failed one stops the bench (a
    repository without a ref or remote its scripts name would turn gold answers into ghosts)."""
    done = _git(folder, *args)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {folder}: {done.stderr.strip()}")


def _wanted_refs(scripts: list[Path]) -> dict[str, list[str]]:
    branches, tags, remotes = set(DEFAULT_BRANCH_NAMES), set(), set()
    for script in scripts:
        for line in script.read_text(encoding="utf-8", errors="replace").splitlines():
            for kind, word in references(line):
                if kind in ("ref", "branch"):
                    (tags if re.match(r"v?\d+(\.\d+)+\Z", word) else branches).add(word)
                elif kind == "remote":
                    remotes.add(word)
    branches -= {"HEAD", "FETCH_HEAD", "ORIG_HEAD"}
    return {"branches": sorted(branches), "tags": sorted(tags), "remotes": sorted(remotes)}


# -- holes ------------------------------------------------------------------------------


def _holes_in(script: Path, repo: Path, project: Path, name: str, inside: bool = False) -> list[HoleCase]:
    """A hole per line naming a ref, remote, target or script: the line emptied from that word
    on; ``inside``: that word alone removed where more of the line follows it."""
    text = script.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    relative = script.relative_to(project)
    placed = repo / relative
    cases = []
    for number, line in enumerate(lines):
        refs = references(line)
        if not refs or line.rstrip().endswith("\\"):
            continue
        kind, word = refs[0]
        if kind.startswith("option"):
            continue
        at = _word_start(line, word)
        if at is None:
            continue
        prefix = "\n".join(lines[:number]) + ("\n" if number else "") + line[:at]
        meta = {"repo": str(repo), "kind": kind, "line_prefix": line[:at], "gold": word,
                "workspace_roots": [str(repo)]}
        kept = ""
        if inside:
            end = at + len(word) + (1 if line[at:at + 1] in "'\"" else 0) * 2
            kept = line[end:]
            if not kept.strip():
                continue
            meta.update(midline=True, rest=kept)
        rest = "\n".join(lines[number + 1:])
        document = prefix + kept + ("\n" + rest if rest else "")
        cases.append(HoleCase(
            case_id=f"shell-{name}/{relative.as_posix()}:{number + 1}{':in' if inside else ''}",
            language=LANGUAGE, uri=placed.as_uri(), text=document, cursor=len(prefix),
            expected=line[at:].strip() if not inside else line[at:].rstrip(), meta=meta,
        ))
    return cases


def _word_start(line: str, word: str) -> int | None:
    for match in re.finditer(re.escape(word), line):
        before = line[match.start() - 1] if match.start() else " "
        after = line[match.end()] if match.end() < len(line) else " "
        if before in " \t'\"+" and after in " \t'\";|&:~^)":
            return match.start() - (1 if before in "'\"" else 0)
    return None


def cut_inside_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Holes inside a command line (``--holes inside``): the ref, remote, target or script word
    removed, the rest of the line kept after the cursor."""
    return cut_holes(corpus, n, seed, inside=True)


def cut_holes(corpus: Path, n: int, seed: int, inside: bool = False) -> list[HoleCase]:
    root = corpus_root(Path(corpus))
    cases: list[HoleCase] = []
    for project in projects(root):
        scripts = sorted(project.rglob("*.sh"))
        if not scripts:
            continue
        repo = throwaway(project, scripts, root)
        for script in scripts:
            cases.extend(_holes_in(script, repo, project, project.relative_to(root).as_posix(), inside))
    rng = random.Random(seed)
    rng.shuffle(cases)
    return sorted(cases[:n] if n else cases, key=lambda c: c.case_id)


# -- the oracle ---------------------------------------------------------------------------


def _exists(kind: str, word: str, repo: Path) -> bool:
    if kind in ("ref", "branch"):
        ref = f"refs/heads/{word}" if kind == "branch" else word
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode == 0
    if kind == "remote":
        return _git(repo, "remote", "get-url", word).returncode == 0
    if kind == "target":
        done = subprocess.run(["make", "-n", "-f", "Makefile", word], cwd=repo, capture_output=True, text=True,
                              timeout=TIMEOUT_S, env={"PATH": os.environ.get("PATH", os.defpath), "LANG": "C"})
        return "No rule to make target" not in done.stderr
    if kind == "script":
        try:
            scripts = json.loads((repo / "package.json").read_text(encoding="utf-8")).get("scripts") or {}
        except (OSError, ValueError):
            return False
        return word in scripts
    if kind.startswith("option:"):
        tool, sub = kind[len("option:"):].split(" ", 1)
        listed = _git(repo, sub, "-h").stdout + _git(repo, sub, "-h").stderr
        return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", listed) is not None
    return True


def check(case: HoleCase, suggestion: str) -> OracleResult:
    repo = Path(case.meta["repo"])
    line = case.meta["line_prefix"] + suggestion.split("\n", 1)[0]
    syntax = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True, timeout=TIMEOUT_S)
    parsed = syntax.returncode == 0
    judged = references(line)
    ghosts = [word for kind, word in judged if not _exists(kind, word, repo)]
    details: dict[str, Any] = {"line": line, "judged": [f"{k}:{w}" for k, w in judged]}
    if not parsed:
        details["syntax"] = syntax.stderr.strip()[-200:]
    return OracleResult(parsed=parsed, ghosts=ghosts, passed=parsed and not ghosts and bool(suggestion.strip()),
                        details=details)


def workspace_for(case: HoleCase, args: Any = None) -> WorkspaceContext:
    return WorkspaceContext([Path(root) for root in case.meta["workspace_roots"]])
