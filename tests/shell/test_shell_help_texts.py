"""Options as the tools write them: the help parser against real help texts recorded from git,
make, npm, pip, docker, curl and jq (tests/fixtures/help/), and the gamma rung of a command line
that uses them (through the shell analyzer and π, with the recordings as the tool-help source).

The differential half reads each text a second, simpler way (the option column of every option
line, every option inside a synopsis's brackets) and holds the parser to it: nothing spelled is
missed, nothing parsed is invented. The tools' own parsers were asked at recording time which
negations they take (probes.json): those must not make π leave the gamma rung either."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp import fragments
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole
from gdg_lsp.languages.shell import analyzer as shell_analyzer
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.gamma import Sources
from gdg_lsp.languages.shell.help_text import OptionSpec, lists_some_options, parse_options
from tests.shell import recorded_help
from tests.shell.recorded_help import PROBES, RECORDED, TOOLS, Recorded
from tests.shell.shell_workspace import make_workspace, snapshot, workspace
from tests.shell.test_shell_tool_help import SYSTEM

SPELLING = re.compile(r"(?<![\w<>=.-])(--\[no-\][A-Za-z0-9][\w.-]*|--?[A-Za-z0-9?#:][\w.-]*)")
RECORDED_TOOLS = ["git", "make", "npm", "pip", "docker", "curl", "jq"]


def _spellings(fragment: str) -> set[str]:
    found = set()
    for token in SPELLING.findall(fragment):
        token = token.rstrip(".-")
        if token.startswith("--[no-]"):
            found |= {"--" + token[7:], "--no-" + token[7:]}
        elif len(token) > 1 and token != "--":
            found.add(token)
    return found


def _spelled(text: str) -> set[str]:
    """The option spellings a reader finds by eye: the option column of each line that starts
    with ``-`` (up to two blanks, a tab or `` : ``, or the first capitalised word after a single
    blank, curl's layout) unless it is indented as far as the description beside the option
    above it (docker's ``-1 for unlimited)``), every option inside brackets on a synopsis line."""
    found = set()
    described_at = None
    for line in text.expandtabs(8).splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("-") and (described_at is None or indent < described_at):
            if (beside := re.search(r"\S {2,}(?=\S)", line)) is not None:
                described_at = beside.end()
            column = re.split(r" {2,}| : ", stripped, maxsplit=1)[0]
            column = re.split(r" (?=[A-Z][a-z])", column, maxsplit=1)[0]  # curl: `<file> Enable alt-svc...`
            found |= _spellings(column)
        if re.match(r"(?i)\s*(usage|or)\s*:|\s*\[-", line) or (line.startswith(" ") and stripped.startswith("[")):
            found |= {s for group in re.findall(r"\[([^\]]*-[^\]]*)\]", line) for s in _spellings(group)}
    return found


def _options(recorded: Recorded) -> dict[str, OptionSpec]:
    return {o.name: o for o in parse_options(recorded.text, recorded.tool, recorded.sub is not None)}


@pytest.mark.parametrize("recorded", RECORDED, ids=lambda r: f"{r.tool} {' '.join(r.args)}")
def test_every_option_spelled_in_a_recorded_help_is_read_and_none_is_invented(recorded: Recorded):
    parsed = _options(recorded)
    missed = _spelled(recorded.text) - set(parsed)
    assert not missed, f"{recorded.tool} {' '.join(recorded.args)}: not read: {sorted(missed)}"
    anywhere = _spellings(recorded.text)
    invented = {name for name, option in parsed.items() if not option.derived} - anywhere
    assert not invented, f"read but written nowhere in the text: {sorted(invented)}"


def test_the_recordings_cover_the_tools_and_every_option_form():
    assert set(TOOLS) == set(RECORDED_TOOLS)
    merge = _options(recorded_help.texts("git", "merge")[0])
    assert merge["--ff"] == OptionSpec("--ff") and merge["--no-ff"] == OptionSpec("--no-ff", derived=True)
    assert merge["--no-verify"] == OptionSpec("--no-verify") and merge["--verify"].derived  # git's --no-x gives --x
    assert merge["-m"].takes_value and merge["--message"].takes_value  # -m, --message <message>
    assert merge["--log"].optional_value and merge["-S"].optional_value  # --log[=<n>], -S, --gpg-sign[=<key-id>]
    assert "--no-abort" not in merge  # `or: git merge --abort`: a command mode, never negated
    stash = _options(recorded_help.texts("git", "stash")[0])
    assert not stash["--keep-index"].derived and not stash["--no-keep-index"].derived  # --[no-]keep-index
    tag = _options(recorded_help.texts("git", "tag")[0])
    assert tag["-n"].optional_value and "--no-delete" not in tag  # -n[<n>]; `or: git tag -d`
    git_top = {o.name: o for o in parse_options("\n".join(r.text for r in recorded_help.texts("git", None)), "git")}
    assert git_top["-c"].takes_value and git_top["--exec-path"].optional_value  # -c <name>=<value>, --exec-path[=<path>]
    assert not any(o.derived for o in git_top.values())  # git's own options are not parse-options': --no-bare is refused
    make = _options(recorded_help.texts("make", None)[0])
    assert make["-C"].takes_value and make["--directory"].takes_value  # -C DIRECTORY, --directory=DIRECTORY
    assert make["-j"].optional_value and make["--jobs"].optional_value and make["-O"].optional_value  # -j [N], -O[TYPE]
    assert {"--file", "--makefile", "-f"} <= set(make) and not any(o.derived for o in make.values())
    npm = _options(recorded_help.texts("npm", "install")[0])
    assert npm["-w"].takes_value and npm["--workspace"].takes_value  # [-w|--workspace <workspace-name> ...]
    assert not npm["--no-save"].derived and npm["--no-audit"].name == "--no-audit" and npm["--no-dry-run"].derived
    pip = _options(recorded_help.texts("pip", "install")[0])
    assert pip["-r"].takes_value and pip["--requirement"].takes_value and not any(o.derived for o in pip.values())
    assert "--python-" not in pip and "--ignore-installed" in pip  # a description line that starts with --
    docker = _options(recorded_help.texts("docker", "run")[0])
    assert docker["--cpus"].takes_value and docker["-p"].takes_value  # --cpus decimal, -p, --publish list
    assert docker["--rm"].optional_value and docker["-d"] == OptionSpec("-d")  # --rm=false (pflag booleans)
    curl = _options(recorded_help.texts("curl", None)[0])
    assert curl["--proxy"].takes_value and curl["-x"].takes_value  # -x, --proxy [protocol://]host[:port]
    assert {"-#", "-:", "--http1.1", "--no-buffer"} <= set(curl) and curl["--no-verbose"].derived
    assert "--no-data" not in curl  # curl negates booleans only
    jq = recorded_help.texts("jq", None)[0]
    assert lists_some_options(jq.text) and "--arg" in _options(jq)  # "Some of the options include"


def test_the_negations_the_tools_accept_are_read_and_those_they_refuse_are_only_derived():
    """probes.json: what each tool's own parser said of the negations its help does not spell."""
    for tool, subs in PROBES.items():
        accepted = read = 0
        for sub, probe in subs.items():
            recorded = recorded_help.texts(tool, sub or None)
            options: dict[str, OptionSpec] = {}
            for text in recorded:
                options |= _options(text)
            accepted += len(probe["accepted"])
            read += len(set(probe["accepted"]) & set(options))
            refused_but_listed = {name for name in probe["refused"] if name in options and not options[name].derived}
            assert not refused_but_listed, (tool, sub, refused_but_listed)
        # what is left out is the negation of a command mode (git merge --no-abort) or of an
        # option only a description mentions (npm's --legacy-peer-deps)
        assert read >= 0.95 * accepted, (tool, read, accepted)


# -- through the analyzer and π -------------------------------------------------------------------


@pytest.fixture
def recorded_tools(tmp_path: Path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    stand_ins = recorded_help.stand_ins(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(stand_ins) + SYSTEM)
    monkeypatch.setattr(shell_analyzer, "SOURCES", Sources(recorded_help.tool_help(tmp_path / "cache")))
    return root


def _hole(root: Path, line: str) -> Hole:
    hole = ShellAnalyzer().hole_at(snapshot(root, line), len(line), workspace(root, RECORDED_TOOLS))
    assert isinstance(hole, Hole), hole
    return hole


def _choice(hole: Hole, byte_engine) -> fragments.Choice:
    return fragments.choose(fragments.fragment("shell", "command"), hole.gamma, hole.context, hole.typed, "scope",
                            byte_engine.get, accepts)


def test_git_merge_no_ff_stays_on_the_gamma_rung(recorded_tools: Path, byte_engine):
    for typed in ("git merge --no-ff ", "git merge --no-f", "git merge --no-ff --no-edit -m 'x' --squash --log ",
                  "git commit -am msg ", "git commit -mmsg ", "make -j4 ", "make -j 4 -C dir ", "make -Oline ",
                  "docker run --rm=false -d -p 80:80 -e A=1 --name x -v a:b ", "curl -sSL -o out ",
                  "pip install --no-deps -r req.txt ", "npm install --save-dev --no-audit ",
                  "git stash push --no-keep-index ", "jq -r --arg a v "):
        choice = _choice(_hole(recorded_tools, typed), byte_engine)
        assert choice.rung == "gamma", (typed, choice.attempts)
    hole = _hole(recorded_tools, "git merge --no-ff ")
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("shell", "command"), "gamma", hole.gamma,
                                                    hole.context))
    assert accepts(grammar, "git merge --no-ff main\n") and accepts(grammar, "git merge --no-ff --squash main\n")
    assert not accepts(grammar, "git merge --no-refski main\n") and not accepts(grammar, "git merge --no-ff mian\n")


def test_a_derived_spelling_is_taken_where_typed_and_never_offered(recorded_tools: Path, byte_engine):
    """git 2.39's parse-options would derive --no-ours, which git refuses (probes.json): it is
    no word the grammar offers, only one it takes when the user wrote it."""
    assert "--no-ours" in PROBES["git"]["checkout"]["refused"]
    hole = _hole(recorded_tools, "git checkout ")
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("shell", "command"), "gamma", hole.gamma,
                                                    hole.context))
    assert accepts(grammar, "git checkout --ours main\n") and not accepts(grammar, "git checkout --no-ours main\n")
    assert not accepts(grammar, "git checkout --no-guess main\n")  # derived, real, but not typed: not offered
    assert _choice(_hole(recorded_tools, "git checkout --no-guess "), byte_engine).rung == "gamma"


def test_no_option_of_the_help_is_warned_about(recorded_tools: Path):
    text = "git merge --no-ff --no-verify main\ngit commit -am msg\nmake -j4 -Oline build\ndocker run --rm=false -d x\n"
    found = ShellAnalyzer().diagnostics(snapshot(recorded_tools, text), workspace(recorded_tools, RECORDED_TOOLS))
    assert [f.message for f in found] == []
    found = ShellAnalyzer().diagnostics(snapshot(recorded_tools, "git merge --no-refski main\n"),
                                        workspace(recorded_tools, RECORDED_TOOLS))
    assert [f.code for f in found] == ["shell.unknown-option"]


def _every_option() -> list[tuple[str, str | None, OptionSpec]]:
    found = []
    for recorded in RECORDED:
        for option in parse_options(recorded.text, recorded.tool, recorded.sub is not None):
            found.append((recorded.tool, recorded.sub, option))
    return found


EVERY_OPTION = _every_option()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(picked=st.sampled_from(EVERY_OPTION), attached=st.booleans())
def test_a_line_using_any_option_of_the_help_stays_on_the_gamma_rung(picked, attached, recorded_tools, byte_engine):
    tool, sub, option = picked
    short = len(option.name) == 2
    if option.takes_value:
        written = option.name + (("v" if short else "=v") if attached else " v")
    elif option.optional_value:
        written = option.name + (("v" if short else "=v") if attached else "")
    else:
        written = option.name
    typed = " ".join(p for p in (tool, sub, written) if p) + " "
    choice = _choice(_hole(recorded_tools, typed), byte_engine)
    assert choice.rung == "gamma", (typed, choice.attempts)


# -- where options are open ---------------------------------------------------------------------


def test_options_whose_tool_said_nothing_are_open_positions_with_the_reason(recorded_tools: Path):
    analyzer, context = ShellAnalyzer(), workspace(recorded_tools, ["git", "jq"])

    def open_of(line: str) -> list[str]:
        hole = analyzer.hole_at(snapshot(recorded_tools, line + " "), len(line) + 1, context)
        coverage = analyzer.coverage(line, hole.gamma)
        return coverage.open if coverage is not None else []

    assert open_of("git merge --no-ff main") == [] and open_of("git commit -am msg") == []
    assert open_of("cargo build --release") == ["option --release of cargo (cargo is not in gdg.shell.tools)"]
    assert open_of("set -eu") == ["option -eu of set (set is a shell builtin: its options are not read)"]
    assert open_of("jq -r .x data.json") == ["option -r of jq (`jq`'s help lists only some of its options)"]
    [partial] = open_of("git log --oneline")  # `git log -h` lists only some of log's options
    assert partial.startswith("option --oneline of git log (")
    assert open_of("make -j4 build") == ["option -j4 of make (make is not in gdg.shell.tools)"]


def test_a_suggestion_after_an_option_of_an_unlisted_tool_is_not_guaranteed(recorded_tools: Path, tiny_vocab,
                                                                            tiny_engine):
    from gdg_lsp.backends.models import random_backend
    from gdg_lsp.decoding.engine import Decoder
    from gdg_lsp.executor import Executor, Prompt

    typed = "cargo build --release "
    hole = ShellAnalyzer().hole_at(snapshot(recorded_tools, typed), len(typed), workspace(recorded_tools, ["git"]))
    executor = Executor(ShellAnalyzer(), Decoder(random_backend(tiny_vocab, seed=4, hidden=16, layers=1)), tiny_engine)
    execution = executor.run(hole, Prompt(tiny_vocab.encode(typed).ids, replay=typed), "scope", max_tokens=12,
                             max_lines=1, temperature=1.0, seed=4)
    assert execution.rung == "gamma"
    assert "option --release of cargo (cargo is not in gdg.shell.tools)" in execution.open_positions


def test_the_action_is_for_a_program_on_path_that_the_setting_does_not_list(recorded_tools: Path, monkeypatch):
    analyzer, context = ShellAnalyzer(), workspace(recorded_tools, ["git"])
    text = "docker ps\ngit status\necho x\nnot-a-program-anywhere -v\n"
    snap = snapshot(recorded_tools, text)
    assert analyzer.unlisted_tool(snap, 1, context) == "docker"  # a recorded tool on PATH, not listed
    assert analyzer.unlisted_tool(snap, text.index("ps") + 1, context) is None  # on its operand: not its open part
    assert analyzer.unlisted_tool(snapshot(recorded_tools, "docker run -d x"), 12, context) == "docker"
    assert analyzer.unlisted_tool(snap, text.index("git") + 1, context) is None
    assert analyzer.unlisted_tool(snap, text.index("echo") + 1, context) is None
    assert analyzer.unlisted_tool(snap, text.index("not-a") + 1, context) is None
    inside = recorded_tools / "bin"  # a program inside the workspace is never offered (nor run)
    inside.mkdir()
    (inside / "planted").write_text("#!/bin/sh\n")
    (inside / "planted").chmod(0o755)
    monkeypatch.setenv("PATH", f"{inside}:{os.environ['PATH']}")
    assert analyzer.unlisted_tool(snapshot(recorded_tools, "planted -x\n"), 1, context) is None
