"""Where a command line's options are open, and why: a tool that did not describe itself, one
not in ``gdg.shell.tools``, a shell builtin, a help that lists only some options.

The grammar takes any option there (``t_oopen``), so a suggestion that writes one is not
guaranteed; ``open_options`` names each such option with its reason (``Analyzer.coverage``'s
open positions, which become ``notGuaranteedBecause`` in ``gdg/suggestion``), and
``unlisted_tool`` says which command name the "add it to gdg.shell.tools" action is for.
"""

from __future__ import annotations

from collections.abc import Sequence

from gdg_lsp.boundary import Boundary
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.shell import arguments
from gdg_lsp.languages.shell.commands import PREFIXES, Command
from gdg_lsp.languages.shell.tool_help import ToolHelp

BUILTINS = frozenset({
    ".", ":", "[", "[[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
    "complete", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit", "export",
    "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let", "local", "logout",
    "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift",
    "shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset", "ulimit", "umask",
    "unalias", "unset", "wait",
})
"""The shell's own commands: no program on PATH describes them."""
LISTED = "settings:gdg.shell.tools"
"""The binding of Γ (sort ``Setting``) whose attr ``tools`` is ``gdg.shell.tools`` as in force."""


def listed_binding(tools: Sequence[str]) -> Binding:
    """``gdg.shell.tools`` as a binding of Γ (its name holds the list: Γ's frames are cached by name)."""
    return Binding(f"{LISTED}={','.join(tools)}", "Setting", {"tools": tuple(tools), "completion": False})


def listed(gamma: Gamma) -> tuple[str, ...] | None:
    """``gdg.shell.tools`` as the command line's Γ holds it (None: no shell Γ)."""
    found = next((b for b in gamma.bindings("Setting") if b.name.startswith(LISTED)), None)
    return found.attrs["tools"] if found is not None else None


def why_open(tool: str, sub: str | None, gamma: Gamma) -> str | None:
    """Why the options of ``tool sub`` are not known (None: they are)."""
    if arguments.options_known(gamma, tool, sub):
        return None
    top = gamma.lookup(f"source:tool:{tool}")
    if top is not None and top.attrs.get("options_open"):
        return f"`{tool}`'s help lists only some of its options"
    if top is not None and sub:
        return f"`{tool} {sub}` did not list its options (or lists only some)"
    if tool in BUILTINS:
        return f"{tool} is a shell builtin: its options are not read"
    tools = listed(gamma)
    if tools is not None and tool not in tools:
        return f"{tool} is not in gdg.shell.tools"
    return f"{tool} did not describe itself (not on PATH, or its help said nothing)"


def open_options(found: Sequence[Command], gamma: Gamma) -> tuple[int, list[str]]:
    """The option words of ``found`` whose tool lists its options (how many), and those of the
    others, each described with the reason."""
    slotted = 0
    open_words: list[str] = []
    for command in found:
        tool = command.name.text
        if not tool:
            continue
        reading = arguments.read(command, gamma)
        for index, part in enumerate(reading.parts):
            if part.role != "option" or part.word.text is None:
                continue
            sub = reading.sub if reading.sub and index > 1 and reading.parts[1].role == "subcommand" else None
            why = why_open(tool, sub, gamma)
            if why is None:
                slotted += 1
            else:
                open_words.append(f"option {part.word.text.split('=', 1)[0]} of {tool}" + (f" {sub}" if sub else "")
                                  + f" ({why})")
    return slotted, open_words


def unlisted_tool(command: Command | None, offset: int, tools: Sequence[str], boundary: Boundary,
                  path_env: str | None = None) -> str | None:
    """The command's name, when ``offset`` is on it or on one of its options (the open positions),
    and it is a program on PATH (filtered as the tool-help runner filters it: nothing inside the
    workspace) that ``gdg.shell.tools`` does not list; looked up, never run."""
    if command is None or not command.name.text:
        return None
    words = [command.name, *(a for a in command.args if (a.text or "").startswith("-"))]
    if not any(word.start <= offset <= word.end for word in words):
        return None
    tool = command.name.text
    if tool in tools or tool in BUILTINS or tool in PREFIXES:
        return None
    return tool if ToolHelp.resolve(tool, boundary, path_env) is not None else None
