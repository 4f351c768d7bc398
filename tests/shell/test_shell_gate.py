"""Grammar gate on real scripts (corpus/shell): every command line of the corpus
that names a ref, a remote, a make target or an npm script is accepted by the
gamma rung of the command fragment, in a workspace that has those names; the
same line with that name replaced by one that is not in Γ is rejected by the
same compiled grammar."""

from __future__ import annotations

import shutil
from pathlib import Path

from gdg_lsp import fragments
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.shell import bench
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.commands import parse
from gdg_lsp.settings import Settings, ShellSettings

GHOST = "zz_not_in_gamma"
TOOLS = [tool for tool in ("git", "make", "npm") if shutil.which(tool)]


def test_corpus_command_lines_pass_the_gate(byte_engine):
    cases = bench.cut_holes(bench.HERE_CORPUS, 0, 0)
    assert len(cases) >= 20
    settings = Settings(shell=ShellSettings(tools=TOOLS))
    wrong, checked = [], 0
    grammars: dict[str, object] = {}
    for case in cases:
        repo = Path(case.meta["repo"])
        line = case.meta["line_prefix"] + case.expected
        snapshot = Snapshot(case.uri, "shell", 1, "", parse(b""))
        hole = ShellAnalyzer().hole_at(snapshot, 0, WorkspaceContext([repo], settings))
        assert isinstance(hole, Hole), hole
        choice = fragments.choose(fragments.fragment("shell", "command"), hole.gamma, hole.context, "", "scope",
                                  byte_engine.get, accepts)
        assert choice.rung == "gamma", choice.explain()
        compiled = grammars.setdefault(str(repo), choice.compiled)
        body = line.strip()
        if not accepts(compiled, body + "\n"):
            wrong.append(f"rejects the corpus line: {body}")
            continue
        gold = case.meta["gold"]
        at = body.index(case.expected.strip()) if case.expected.strip() in body else body.rindex(gold)
        mutated = body[:at] + body[at:].replace(gold, GHOST, 1)
        if accepts(compiled, mutated + "\n"):
            wrong.append(f"accepts a ghost: {mutated}")
        checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked == len(cases)
