"""The No-Ghost guarantee for shell command lines, as a property: random
repository refs, remotes, make targets, npm scripts and tool options in Γ, a
random-weight model sampling under the gamma grammar of a hole at an empty
line; every ref, remote, target, script and option the line names (read back
with ``shlex`` by the bench's oracle, not by the analyzer) is in Γ."""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import members
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.bench import references, simple_commands

NAME = st.from_regex(r"[a-z][a-z0-9]{0,4}(/[a-z]{1,3})?", fullmatch=True)
WORD = st.from_regex(r"[a-z][a-z0-9]{0,4}", fullmatch=True)
OPTION = st.from_regex(r"--[a-z]{2,5}", fullmatch=True)
TOOLS = ["git", "make", "npm", "fake"]


def _gamma(branches, remotes, targets, scripts, options) -> Gamma:
    layer = [Binding(f"source:{k}", "Source", {"kind": k, "path": k}) for k in ("git", "make", "npm")]
    layer += [Binding(f"refs/heads/{b}", "Branch", {"word": b}) for b in branches]
    layer += [Binding(f"remote.{r}", "Remote", {"word": r}) for r in remotes]
    layer += [Binding(f"make:{t}", "MakeTarget", {"word": t}) for t in targets]
    layer += [Binding(f"npm:{s}", "NpmScript", {"word": s}) for s in scripts]
    layer += [Binding("source:tool:fake", "Source", {"kind": "tool:fake"}), Binding("fake run", "Subcommand",
                                                                                    {"word": "run", "tool": "fake"})]
    layer += [Binding(f"fake {o}", "Option", {"word": o, "tool": "fake", "sub": "", "value": "none"}) for o in options]
    return Gamma(layer)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(branches=st.lists(NAME, min_size=1, max_size=4, unique=True), remotes=st.lists(WORD, min_size=1, max_size=2, unique=True),
       targets=st.lists(WORD, min_size=1, max_size=4, unique=True), scripts=st.lists(WORD, min_size=1, max_size=3, unique=True),
       options=st.lists(OPTION, min_size=1, max_size=3, unique=True), seed=st.integers(0, 10_000),
       start=st.sampled_from(["", "git ", "git checkout ", "git push ", "make ", "npm run ", "fake "]))
def test_command_lines_name_only_what_exists(branches, remotes, targets, scripts, options, seed, start, tiny_vocab, tiny_engine):
    gamma = _gamma(branches, remotes, targets, scripts, options)
    tools = TOOLS + ["pnpm", "yarn", "just", "task"]
    context = {"members": members.members(gamma, tools), "open_members": members.open_members(tools),
               "reserved_names": tools}
    hole = Hole("shell", "command", "Command", 0, len(start), len(start), start, "", gamma, MappingProxyType(context))
    backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
    executor = Executor(ShellAnalyzer(), Decoder(backend), tiny_engine)
    execution = executor.run(hole, Prompt(tiny_vocab.encode("#!/bin/sh\n" + start).ids, replay=start), "scope",
                             max_tokens=40, max_lines=1, temperature=1.0, seed=seed)
    assert all(trace.rung == "gamma" for trace in execution.statements)
    line = start + execution.text
    if not execution.text.strip():
        return
    known = {"ref": set(branches), "branch": set(branches), "remote": set(remotes), "target": set(targets),
             "script": set(scripts)}
    for kind, word in references(line):
        if kind in known:
            assert word in known[kind], (kind, word, line)
    try:
        words = simple_commands(line)[0]
    except ValueError:
        return  # cut by the budget inside a quote: no whole word to judge past it
    if words[:1] == ["fake"]:
        # fake's own options come before its subcommand (whose options it never described: open)
        flags = []
        for word in words[1:]:
            if not word.startswith("-") or word == "--":
                break  # its subcommand, an operand, or the end of its options
            flags.append(word.split("=")[0])
        assert {f for f in flags if f.startswith("--")} <= set(options), (flags, line)

