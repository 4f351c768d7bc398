"""Shell scripts: the command line at the cursor, Γ from the tools' state, diagnostics, hover.

The hole is the (logical) line under the cursor from its first word; its
grammar (grammars/shell/command.ebnf) knows each tool's argument positions
(``roles``) and draws their candidates from Γ (``gamma``): the repository's
refs, the Makefile's targets, package.json's scripts, the options and
subcommands the tools list themselves. Inside the single-quoted program of a
``jq`` command the hole is a jq hole (languages/jq), with the file named after
the program as its input.

Nothing is ever run from the workspace; the only processes started are the
configured tools' own ``--help`` (languages/shell/tool_help.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gdg_lsp.boundary import Boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import Analyzer, Coverage, Finding, Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.jq import inputs as jq_inputs
from gdg_lsp.languages.jq.analyzer import (
    SAMPLES,
    Program,
    filter_binding,
    filter_findings,
    filter_hole,
    input_prompt,
)
from gdg_lsp.languages.shell import arguments, members, open_tools
from gdg_lsp.languages.shell.commands import PREFIXES, Command, Offsets, command_at, commands, parse
from gdg_lsp.languages.shell.embedded import EmbeddedProgram, jq_program
from gdg_lsp.languages.shell.gamma import SOURCES, Place
from gdg_lsp.languages.shell.line import in_heredoc, last_command, logical_line, replay, split_words
from gdg_lsp.languages.shell.names import plain
from gdg_lsp.languages.shell.roles import ROLE_TOOLS, SORT_LABEL, kind_is_known, names_of_kind
from gdg_lsp.languages.suggest import closest
from gdg_lsp.settings import DEFAULT_SHELL_TOOLS, limits_of
from gdg_lsp.words import comment_text

COMPOUND_WORDS = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                            "function", "select"})
"""Words of compound statements: never a command name in the grammar."""
PROMPT_SHARE = 0.3
"""Share of the prompt budget (``gdg.contextTokens``, about 3 characters a token) the tools' names may take."""
KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
                      "in", "function", "select", "time", "sudo", "command", "exec", "nohup", "env"})


class ShellAnalyzer(Analyzer):
    name = "shell"
    grammar_dir = "shell"
    fragment = "command"
    keywords = KEYWORDS

    def __init__(self) -> None:
        self._commands: BoundedCache[tuple[str, int], list[Command]] = BoundedCache("shell.commands", 16)
        # the grammar's members depend on Γ's tool layer alone: computed once per layer
        self._contexts: BoundedCache[tuple, dict[str, Any]] = BoundedCache("shell.hole-contexts", 8)
        self._derived: BoundedCache[Any, frozenset[str]] = BoundedCache("shell.derived-options", 8)

    def parser(self) -> Callable[[bytes, Any], Any]:
        return parse

    # -- where the script runs, and Γ there ----------------------------------------------

    @staticmethod
    def _place(snapshot: Snapshot, workspace: WorkspaceContext) -> Place:
        boundary = Boundary.of(workspace.roots)
        path = uri_to_path(snapshot.uri)
        folder = path.parent if path is not None and boundary.allows(path.parent) else None
        if folder is None and workspace.roots:
            folder = Path(workspace.roots[0])
        return Place(folder, boundary, limits_of(workspace.settings))

    @staticmethod
    def tools(workspace: WorkspaceContext) -> list[str]:
        configured = getattr(getattr(workspace.settings, "shell", None), "tools", None)
        return list(DEFAULT_SHELL_TOOLS if configured is None else configured)

    def _commands_of(self, snapshot: Snapshot) -> list[Command]:
        key = (snapshot.uri, hash(snapshot.text))

        def make() -> list[Command]:
            tree = snapshot.tree if snapshot.tree is not None else parse(snapshot.text.encode("utf-8", "surrogatepass"))
            return commands(tree, snapshot.text)

        return self._commands.get_or_make(key, make)

    def _used(self, found: Sequence[Command], tools: Sequence[str]) -> dict[str, set[str]]:
        """Subcommands the script uses, per tool (their options are asked for)."""
        used: dict[str, set[str]] = {}
        for command in found:
            tool = command.name.text
            if tool in tools:
                sub = next((a.text for a in command.args if a.text and not a.text.startswith("-")), None)
                if sub:
                    used.setdefault(tool, set()).add(sub)
        return used

    def gamma_for(self, snapshot: Snapshot, workspace: WorkspaceContext) -> Gamma:
        tools = self.tools(workspace)
        return SOURCES.gamma(self._place(snapshot, workspace), tools, self._used(self._commands_of(snapshot), tools),
                             extra=[open_tools.listed_binding(tools)])

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        hole = self.hole_at(snapshot, offset, workspace)
        return hole.gamma if isinstance(hole, Hole) else self.gamma_for(snapshot, workspace)

    # -- the hole ------------------------------------------------------------------------------

    def _inside(self, snapshot: Snapshot, offset: int) -> str | None:
        tree = snapshot.tree if snapshot.tree is not None else parse(snapshot.text.encode("utf-8", "surrogatepass"))
        at = Offsets(snapshot.text)
        b = at.byte(snapshot.text, offset)
        node = tree.root_node.descendant_for_byte_range(max(0, b - 1), max(0, b - 1))
        while node is not None:
            if node.type == "comment" and node.start_byte < b:
                return "inside a comment"
            if node.type in ("heredoc_body", "heredoc_content") and node.start_byte < b:
                return "inside a here-document"
            node = node.parent
        return None

    def embedded_program(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Program | None:
        """The jq program whose text holds ``offset``, as a jq Program of this document."""
        text = snapshot.text
        start, end = logical_line(text, offset)
        words = split_words(text[start:end], start)
        # the command holding the cursor: the words from the last operator before it
        before = [w for w in words if w.start < offset]
        opened = last_command(before)
        if not opened:
            return None
        index = words.index(opened[0])
        command_words = []
        for word in words[index:]:
            if word.operator and word.start >= offset:
                break
            command_words.append(word)
        found = jq_program(command_words)
        if found is None or not found.start <= offset <= found.end:
            return None
        return self._program(snapshot, workspace, found, end if not found.closed else found.end)

    def _program(self, snapshot: Snapshot, workspace: WorkspaceContext, found: EmbeddedProgram, end: int) -> Program:
        path = uri_to_path(snapshot.uri)
        named = found.files[0] if found.files else None
        files = jq_inputs.input_files(path, snapshot.text, workspace.roots, workspace.settings, named)
        samples = SAMPLES.read(files, Boundary.of(workspace.roots))  # judged as a jq file's input is
        return Program(snapshot.text, found.start, end, samples, embedded=True, variables=found.variables)

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        text = snapshot.text
        offset = max(0, min(offset, len(text)))
        start, end = logical_line(text, offset)
        raw_line = text[start:offset]
        indent = raw_line[: len(raw_line) - len(raw_line.lstrip(" \t"))]
        program = self.embedded_program(snapshot, offset, workspace)
        if program is not None:
            return filter_hole(program, offset, indent)
        if (why := self._inside(snapshot, offset)) is not None:
            return NoHole(why)
        if in_heredoc(text, start):
            return NoHole("inside a here-document")
        words = split_words(text[start:offset], start)
        if words and words[-1].open_quote and words[-1].end >= offset and "\n" in text[words[-1].start:offset]:
            return NoHole("inside a string that spans lines")
        rest = text[offset:end]
        mid_line = bool(rest.strip())
        if mid_line and ("\n" in rest or rest.rstrip().endswith("\\")):
            return NoHole("text follows the cursor on the lines below (a continued command)")
        if mid_line and not rest[:1].isspace() or mid_line and not text[offset - 1 : offset].isspace():
            return NoHole("the cursor is inside a word")
        region = start + len(text[start:offset]) - len(text[start:offset].lstrip(" \t\\\n"))
        region = min(region, offset)
        gamma = self.gamma_for(snapshot, workspace)
        tools = tuple(dict.fromkeys([*self.tools(workspace), *ROLE_TOOLS]))
        typed = replay(text[region:offset])
        derived_words = self._derived.get_or_make(gamma.global_layer, lambda: members.derived_words(gamma))
        derived = members.typed_derived(typed, derived_words)  # git's --no-ff where the help writes --ff
        context = self._contexts.get_or_make((gamma.global_layer, tools, derived),
                                             lambda: self._context(gamma, tools, derived))
        return Hole(language="shell", fragment=self.fragment, sort="Command", region_start=region, cursor=offset,
                    replace_end=offset, typed=typed, indent=indent, gamma=gamma,
                    context=MappingProxyType(context), region_path=("command",),
                    suffix=rest.rstrip("\r") if mid_line else "")

    def middle_fits(self, hole: Hole, middle: str) -> bool:
        """The command line with ``middle`` at the cursor and the rest of the line after it parses
        (tree-sitter-bash, no error): the grammar saw the middle's words, the suffix's words are the
        user's own, and a middle never runs into the suffix's first word (the engine keeps a blank
        between them)."""
        if not hole.suffix or hole.language != "shell":
            return False
        line = hole.typed + middle + hole.suffix
        return not parse(line.encode("utf-8", "surrogatepass")).root_node.has_error

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        """What the script's tools know, as a comment (SQL shows its schema the same way):
        the repository's branches and remotes, the Makefile's targets, the scripts."""
        if hole.language == "jq":
            return input_prompt(hole.gamma, workspace)  # a jq program in the script: its input's paths
        budget = int((getattr(workspace.settings, "context_tokens", 1024) or 1024) * 3 * PROMPT_SHARE)
        lines = []
        for label, sorts in (("git branches", ("Branch",)), ("git tags", ("Tag",)), ("git remotes", ("Remote",)),
                             ("make targets", ("MakeTarget",)), ("npm scripts", ("NpmScript",)),
                             ("just recipes", ("JustRecipe",)), ("tasks", ("Task",))):
            written = [str(b.attrs.get("word", b.name)) for b in hole.gamma.bindings(list(sorts))]
            if written:  # the names come from workspace files: the comment must stay one line
                lines.append(f"# {label}: {comment_text(', '.join(written[:40]))}")
        text = "\n".join(lines)[:budget]
        return (text[: text.rfind("\n") + 1] if len(text) == budget else text + "\n") if lines else "# shell\n"

    @staticmethod
    def _context(gamma: Gamma, tools: Sequence[str], derived: frozenset[str] = frozenset()) -> dict[str, Any]:
        return {
            "members": members.members(gamma, tools, derived),
            "open_members": members.open_members(tools),
            "reserved_names": sorted({*tools, *PREFIXES, *COMPOUND_WORDS}),
            "sources": sorted(b.attrs.get("path", b.name) for b in gamma.bindings("Source")
                              if not str(b.attrs.get("kind", "")).startswith("tool:")),
        }

    def replay_text(self, raw: str) -> str:
        return replay(raw)

    def coverage(self, statement: str, gamma: Gamma) -> Coverage | None:
        """The options a line writes where its tool's options are not known (a tool not in
        gdg.shell.tools, one that did not describe itself, a builtin, a partial help): open,
        each with the reason; the grammar took any option word there."""
        if open_tools.listed(gamma) is None:
            return None  # a jq program's Γ (a jq hole inside the script): not a command line
        found = commands(parse(statement.encode("utf-8", "surrogatepass")), statement)
        slotted, open_words = open_tools.open_options(found, gamma)
        return Coverage(slotted=slotted, open=open_words) if slotted or open_words else None

    def unlisted_tool(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> str | None:
        """The program the command at ``offset`` runs when ``gdg.shell.tools`` does not list it and
        ``offset`` is on its name or an option (the "add it to gdg.shell.tools" action); looked up
        on PATH, never run."""
        command = command_at(self._commands_of(snapshot), offset)
        return open_tools.unlisted_tool(command, offset, self.tools(workspace), Boundary.of(workspace.roots))

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        """A line cut by the budget ends after a whole word that names something (or is not a reference)."""
        words = split_words(text)
        if words and (words[-1].open_quote or not text.endswith(words[-1].raw)):
            return text[: words[-1].start].rstrip(" \t") if words[-1].open_quote else text
        if not words:
            return text
        word = words[-1].raw
        known = {b.attrs.get("word") for b in gamma.bindings()}
        if word in known or word.startswith("$") or word in self.keywords or len(words) == 1:
            return text
        return text[: words[-1].start].rstrip(" \t")

    # -- diagnostics ------------------------------------------------------------------------------

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        found = self._commands_of(snapshot)
        if not found:
            return []
        gamma = self.gamma_for(snapshot, workspace)
        place = self._place(snapshot, workspace)
        findings: list[Finding] = []
        for command in found:
            tool = command.name.text
            if not tool:
                continue
            if tool == "jq":
                findings.extend(self._jq_findings(snapshot, command, workspace))
                continue
            if tool not in self.tools(workspace) and tool not in ROLE_TOOLS:
                continue
            reading = arguments.read(command, gamma)
            for part in reading.parts:
                finding = self._check(reading, part, gamma, place)
                if finding is not None:
                    findings.append(finding)
        return findings

    def _jq_findings(self, snapshot: Snapshot, command: Command, workspace: WorkspaceContext) -> list[Finding]:
        found = jq_program(split_words(snapshot.text[command.start:command.end], command.start))
        if found is None or not found.closed:
            return []
        return filter_findings(self._program(snapshot, workspace, found, found.end))

    def _check(self, reading: arguments.Reading, part: arguments.Part, gamma: Gamma, place: Place) -> Finding | None:
        word = part.word
        text = word.text
        if text is None:
            return None
        tool = reading.tool
        if part.role == "subcommand" and f"source:tool:{tool}" in gamma:
            known = [b.attrs["word"] for b in gamma.bindings("Subcommand", tool=tool)]
            if text not in known:
                return _finding(word, text, f"{tool} has no subcommand {text!r} (as `{tool}` lists them)",
                                "shell.unknown-subcommand", known)
        if part.role == "option" and part.option:
            sub = reading.sub if reading.sub and any(p is part for p in reading.parts[2:]) else ""
            if not arguments.options_known(gamma, tool, reading.sub if sub else None):
                return None
            listed = {b.attrs["word"]: b for b in gamma.bindings("Option", tool=tool, sub=sub)}
            if part.option in listed and (part.option == text.split("=", 1)[0] or _bundled(text, listed)):
                return None
            if _bundled(text, listed):
                return None
            name = text.split("=", 1)[0]
            shown = f"{tool} {reading.sub}" if sub else tool
            finding = _finding(word, name, f"`{shown}` lists no option {name}", "shell.unknown-option", sorted(listed))
            return finding
        if part.role == "positional" and part.kind not in (None, "none") and kind_is_known(part.kind, gamma):
            name = arguments.ref_word(text, part.kind)
            if arguments.skip_check(name, part.kind):
                return None
            names = names_of_kind(part.kind, gamma, "text") or []
            if name in names:
                return None
            if reading.sub in ("checkout", "switch") and place.folder is not None and (place.folder / text).exists():
                return None  # `git checkout file`: a path, not a ref
            label = _kind_label(part.kind)
            # a name that must be quoted is never a quick fix's replacement: the fix writes it
            # into the word as it stands (inside "...", a $(...) in it would run)
            return _finding(word, name, f"no {label} {name!r} ({_where(part.kind, gamma)})",
                            f"shell.unknown-{part.kind.split(':')[0]}", [n for n in names if plain(n)])
        return None

    # -- hover -------------------------------------------------------------------------------------

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> tuple[Binding, int, int] | None:
        program = self.embedded_program(snapshot, offset, workspace)
        if program is not None:
            return filter_binding(program, offset)
        command = command_at(self._commands_of(snapshot), offset)
        if command is None:
            return None
        gamma = self.gamma_for(snapshot, workspace)
        reading = arguments.read(command, gamma)
        part = next((p for p in reading.parts if p.word.start <= offset <= p.word.end), None)
        if part is None or part.word.text is None:
            return None
        binding = _binding_for(reading, part, gamma)
        return (binding, part.word.start, part.word.end) if binding is not None else None


def _binding_for(reading: arguments.Reading, part: arguments.Part, gamma: Gamma) -> Binding | None:
    tool, text = reading.tool, part.word.text or ""
    if part.role == "tool":
        return gamma.lookup(f"source:tool:{tool}") or next(
            (b for b in gamma.bindings("Source") if b.attrs.get("kind") == {"make": "make", "npm": "npm",
                                                                            "just": "just", "task": "task",
                                                                            "git": "git"}.get(tool)), None)
    if part.role == "subcommand":
        return gamma.lookup(f"{tool} {text}")
    if part.role == "option" and part.option:
        return gamma.lookup(f"{tool} {reading.sub} {part.option}") or gamma.lookup(f"{tool} {part.option}")
    if part.role == "positional":
        name = arguments.ref_word(text, part.kind)
        for sort in arguments.sorts_of(part.kind):
            for binding in gamma.bindings(sort):
                if binding.attrs.get("text", binding.attrs.get("word")) == name or binding.attrs.get("branch_text") == name:
                    return binding
    return None


def _bundled(text: str, listed: dict[str, Binding]) -> bool:
    """``-abc`` is ``-a -b -c`` when each is a listed short option; after one that
    takes a value, or may, the rest of the word is that value (``-mmessage``, make's ``-j4``)."""
    if text.startswith("--") or len(text) < 3:
        return False
    for letter in text[1:]:
        binding = listed.get(f"-{letter}")
        if binding is None:
            return False
        if binding.attrs.get("value") in ("required", "optional"):
            return True
    return True


def _kind_label(kind: str) -> str:
    if kind == "ref":
        return "branch, tag or ref"
    if kind == "remote-ref":
        return "branch of a remote"
    if kind.startswith("words:"):
        return "subcommand"
    return SORT_LABEL.get(arguments.sorts_of(kind)[0], kind) if arguments.sorts_of(kind) else kind


def _where(kind: str, gamma: Gamma) -> str:
    source_kind = {"target": "make", "script": "npm", "recipe": "just", "task": "task"}.get(kind, "git")
    source = next((b for b in gamma.bindings("Source") if b.attrs.get("kind") == source_kind), None)
    if source is None:
        return "not known"
    return f"in {os.path.basename(str(source.attrs.get('path', '')).rstrip('/')) or source.name}"


def _finding(word, name: str, message: str, code: str, candidates: Sequence[str]) -> Finding:
    replacement = closest(name, candidates)
    data: dict[str, Any] = {"name": name, "candidates": sorted(set(candidates))[:20]}
    if replacement is not None:
        data["replacement"] = replacement
        message += f"; did you mean {replacement}?"
    start = word.value_start
    at = (word.text or "").find(name)
    if at > 0 and word.node_type == "word":
        start += at
    return Finding(start, start + len(name), message, code, "warning", data)
