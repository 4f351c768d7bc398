"""jq: the hole at the cursor, Γ there (the field paths of the input), diagnostics, hover.

A filter is read by a small lexer (``lexer``) and walked left to right
(``flow``) to learn which node of the input each part reads. Γ is one Field
binding per path of the input (``schema``, from the JSON ``inputs`` names),
plus the variables and functions the filter declares and ``$ENV``/``$__loc__``.

The hole starts at the last path step before the cursor (``.items[].na``:
at ``.na``, whose node is ``.items[]``), or at the cursor. The same code
serves ``.jq`` files and programs inside ``jq '...'`` in shell scripts
(``filter_hole``; the shell analyzer hands the quoted region over).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.documents import Snapshot, uri_to_path
from gdg_lsp.gamma import Binding, Frame, Gamma, Origin
from gdg_lsp.languages.base import Analyzer, Finding, Hole, NoHole, Receiver, WorkspaceContext, run_start
from gdg_lsp.languages.jq import inputs as jq_inputs
from gdg_lsp.languages.jq.flow import Flow, walk
from gdg_lsp.languages.jq.lexer import significant, tokenize
from gdg_lsp.languages.jq.schema import Node, Sample, is_ident, read_samples
from gdg_lsp.languages.suggest import closest
from gdg_lsp.words import comment_text, control_free

MAX_MEMBERS = 48
MAX_PATHS = 150
MAX_PATH_STEPS = 3
MAX_OPEN_STEPS = 6
"""Steps an open path (the base rung) may take at most."""
NO_INPUT = "no input JSON known for this filter: add `# gdg: input=…`"
"""Why a filter's field positions are open (``notGuaranteedBecause`` in ``gdg/suggestion``, the diagnostic)."""
MAX_INPUT_CHOICES = 20
"""JSON files of the folder offered as the input (code actions)."""
BUILTIN_VARIABLES = ("$ENV", "$__loc__")
_CLOSERS = frozenset(")]}")
_STEP = re.compile(r'\.(?:"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_]*)|\[\]')


@dataclass(frozen=True)
class Program:
    """Where a filter lies in its document, and what it reads."""

    text: str
    """The whole document."""
    start: int
    end: int
    """The filter is ``text[start:end]`` (a whole .jq file, or a quoted shell argument)."""
    sample: Sample | None
    embedded: bool = False
    variables: tuple[str, ...] = ()
    """Variables the command line binds (``--arg name value``)."""


class Samples:
    """Input shapes, cached on the files' paths and stamps (``gdg_lsp.stamps``, taken before the
    read and compared at every request: a file rewritten within the file system's time step, or
    renamed over the old one, is read again)."""

    def __init__(self) -> None:
        self._cache: BoundedCache[tuple, Sample | None] = BoundedCache("jq.samples", 8)

    def read(self, paths: Sequence[Path], boundary: Boundary | None = None) -> Sample | None:
        """The inputs' shape, read through ``boundary`` (``read_samples``: the workspace's, from
        a caller that knows it; without one, that of the files' own folders)."""
        if not paths:
            return None
        key = (tuple((str(path), stamps.of(path)) for path in paths), boundary.folders if boundary is not None else None)
        hit = self._cache.get(key)
        if hit is not None or key in self._cache:
            return hit
        return self._cache.put(key, read_samples(list(paths), boundary))


SAMPLES = Samples()


def _relative_paths(node_path: str, fields: Sequence[str]) -> list[str]:
    """Paths below ``node_path`` (from Γ's Field names), relative to it, at most
    ``MAX_PATH_STEPS`` steps deep."""
    found = []
    for full in fields:
        if node_path == ".":
            rest = full
        elif full.startswith(node_path) and full != node_path:
            rest = full[len(node_path):]
            if not rest.startswith((".", "[")):
                continue
            if rest.startswith("["):
                rest = "." + rest
        else:
            continue
        if rest in (".", "") or len(_STEP.findall(rest)) > MAX_PATH_STEPS:
            continue
        found.append(rest)
        if len(found) >= MAX_PATHS:
            break
    return found


def members(gamma: Gamma, top: str | None) -> list[dict[str, Any]]:
    """One member per node that has fields below it (from Γ's Field bindings); the
    member of ``top`` (a node path; None: any) answers %top%."""
    fields = [b for b in gamma.bindings("Field")]
    names = [b.name for b in fields]
    nodes = ["."] + [b.name for b in fields if b.attrs.get("container")]
    found = []
    for path in nodes[:MAX_MEMBERS]:
        paths = _relative_paths(path, names)
        keys = sorted(b.attrs["key"] for b in fields if b.attrs.get("parent") == path and b.attrs.get("ident"))
        if not paths and path != top:
            continue
        found.append({"node": path, "top": [""] if top is None or top == path else [], "paths": paths, "keys": keys})
    if top is not None and not any(m["top"] for m in found):
        for member in found:  # the node is unknown to Γ (sampled away): any node
            member["top"] = [""]
    return found


def _gamma(program: Program, flow: Flow, cursor: int) -> Gamma:
    sample = program.sample
    layer: list[Binding] = []
    if sample is not None:
        origin_file = sample.files[0]
        layer.append(Binding("source:input", "Source", {"files": ", ".join(sample.files), "note": sample.note,
                                                       "completion": False},
                             Origin(Path(origin_file).as_uri(), 0, 0, sample.note)))
        for parent, node in _with_parents(sample.root):
            key = node.key if node.key is not None else "[]"
            layer.append(Binding(node.path, "Field", {
                "key": key, "parent": parent.path, "type": node.type_text(), "ident": is_ident(key),
                "container": bool(node.keys) or node.elements is not None,
            }, Origin(Path(origin_file).as_uri(), 0, 0, f"{Path(origin_file).name}: {node.path} ({node.type_text()})")))
    for name in (*BUILTIN_VARIABLES, *program.variables):
        layer.append(Binding(name, "Variable", {"builtin": name in BUILTIN_VARIABLES}))
    frame = Frame("filter")
    for name, tok in {**flow.variables, **flow.functions}.items():
        if tok.start < cursor:
            sort = "Variable" if name.startswith("$") else "Function"
            frame.declare(Binding(name, sort, {}, Origin(None, program.text.count("\n", 0, tok.start),
                                                         tok.start - program.text.rfind("\n", 0, tok.start) - 1)))
    return Gamma(layer, [frame])


def _with_parents(root: Node) -> Iterator[tuple[Node, Node]]:
    """(parent, node) for every node below ``root``, in ``Node.walk`` order."""
    for child in (*root.keys.values(), *([root.elements] if root.elements is not None else [])):
        yield root, child
        yield from _with_parents(child)


def filter_hole(program: Program, cursor: int, indent: str = "") -> Hole | NoHole:
    """The hole at ``cursor`` inside ``program`` (offsets are the document's)."""
    text = program.text
    tokens = tokenize(text, program.start, cursor)
    for tok in tokens:
        if tok.kind == "comment" and tok.end >= cursor:
            return NoHole("inside a comment")
        if tok.kind == "string" and (not tok.closed and tok.end >= cursor):
            return NoHole("inside a string")
    line_end = text.find("\n", cursor)
    line_end = program.end if line_end < 0 or line_end > program.end else line_end
    rest = text[cursor:line_end]
    replace_end = cursor
    if program.embedded:
        after = text[cursor:min(len(text), program.end + 1)]
        if after.strip() and not (after.strip() == "'" and after.rstrip().endswith("'")):
            return NoHole("text follows the cursor in this filter")
        if program.end < len(text) and text[program.end] == "'" and not text[cursor:program.end].strip():
            replace_end = program.end + 1  # the grammar writes the closing quote again
    elif rest.strip():
        return NoHole("text follows the cursor on this line")
    sig = significant(tokens)
    root = program.sample.root if program.sample is not None else None
    flow = walk(sig, root)
    last = sig[-1] if sig else None
    if flow.last_step is not None and last is not None and last.end == cursor:
        step = flow.last_step
        region, node, mode = step.token.start, step.applied_to, "term"
    elif last is not None and last.end == cursor and (last.kind in ("field", "qfield", "dot", "string", "number", "variable", "ident", "format")
                                                   or last.text in (")", "]", "}", "?")):
        if last.kind in ("ident", "variable", "format") or (last.kind == "string" and not last.closed):
            return NoHole("the cursor is inside a name")
        region, node, mode = cursor, (flow.term if flow.term_is_path else None), "cont"
    else:
        region, node, mode = cursor, flow.segment, "term"
    gamma = _gamma(program, flow, cursor)
    top = node.path if node is not None else None
    closers = [c for c in flow.closers if c in _CLOSERS]
    steps = open_steps(program, region)
    context = {
        **{f"open_{k}": [""] if steps >= k else [] for k in range(2, MAX_OPEN_STEPS + 1)},
        "mode_term": [""] if mode == "term" else [],
        "mode_cont": [""] if mode == "cont" else [],
        "end_newline": [] if program.embedded else [""],
        "end_quote": [""] if program.embedded else [],
        "closers": ["".join(closers[: i + 1]) for i in range(len(closers))],
        "members": members(gamma, top),
        "open_members": [{"top": [""]}],
        "input": program.sample.note if program.sample is not None else "no input known (gdg.jq.inputs, "
                                                                         "# gdg: input=..., or a .json of the same name)",
        "node": top or "unknown",
    }
    if program.sample is None:
        context["open_reason"] = NO_INPUT + (" (or name the file after the program)" if program.embedded else "")
    return Hole(language="jq", fragment="filter", sort="Filter", region_start=region, cursor=cursor,
                replace_end=replace_end, typed=text[region:cursor], indent=indent, gamma=gamma,
                context=MappingProxyType(context), region_path=("filter", top or "?"))


def _path_runs(text: str) -> list[tuple[int, int, int]]:
    """The paths ``text`` writes: (start, end, steps) of each run of adjacent steps
    (``.orders[].courier``: 3)."""
    runs: list[tuple[int, int, int]] = []
    for step in _STEP.finditer(text):
        if runs and runs[-1][1] == step.start():
            start, _, count = runs[-1]
            runs[-1] = (start, step.end(), count + 1)
        else:
            runs.append((step.start(), step.end(), 1))
    return runs


def open_steps(program: Program, region: int) -> int:
    """How many steps an open path of the hole may take. With the input known (π climbed
    past a field it lacks), ``MAX_OPEN_STEPS``. With none, one more than the longest path the
    filter writes, less the steps of the path the hole continues (``.orders[].courier.``: one
    more field), and at least one: a model left free repeats a field it saw
    (``.sendTo.sendTo.sendTo…``) until its budget runs out, which no filter's own paths suggest."""
    if program.sample is not None:
        return MAX_OPEN_STEPS
    runs = _path_runs(program.text[program.start:program.end])
    longest = max((steps for _, _, steps in runs), default=0)
    before = next((steps for _, end, steps in runs if program.start + end == region), 0)
    return max(1, min(MAX_OPEN_STEPS, longest + 1 - before))


def no_input_finding(program: Program) -> Finding | None:
    """Where a filter's input is unknown: an information on its first line, the code actions'
    anchor (``server/jq_input.py``: one fix per JSON file of the folder)."""
    if program.sample is not None or not program.text[program.start:program.end].strip():
        return None
    start = program.start
    line_end = program.text.find("\n", start, program.end)
    end = program.end if line_end < 0 else line_end
    return Finding(start, max(end, start), f"{NO_INPUT}: its fields are not checked (or set gdg.jq.inputs, "
                   "or put a .json of the same name beside it)", "jq.no-input", "information")


def input_choices(document: Path | None, roots: Sequence[Path]) -> list[str]:
    """The JSON files beside ``document`` that ``# gdg: input=`` may name (names relative to its
    folder, sorted; regular files inside the workspace; at most ``MAX_INPUT_CHOICES``). The folder
    is listed, no file is read."""
    if document is None:
        return []
    boundary = Boundary.of(roots)
    folder = document.parent
    if not boundary.allows(folder):
        return []
    found = []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                # a name the comment reads back whole (no blank), with no control character
                if entry.name.endswith(".json") and not entry.is_symlink() and entry.is_file() \
                        and jq_inputs.INPUT_COMMENT.fullmatch(f"# gdg: input={entry.name}") \
                        and control_free(entry.name) is None:
                    found.append(entry.name)
    except OSError:
        return []
    return sorted(found)[:MAX_INPUT_CHOICES]


def filter_findings(program: Program) -> list[Finding]:
    """Fields the filter reads that the input has no key for (where the node is known)."""
    if program.sample is None:
        return []
    flow = walk(significant(tokenize(program.text, program.start, program.end)), program.sample.root)
    findings = []
    for step in flow.steps:
        base = step.applied_to
        key = step.token.key
        if step.found is not None or base is None or key is None or not base.is_object or not base.keys:
            continue
        start = step.token.start + (2 if step.token.kind == "qfield" else 1)
        if program.text[step.token.start] != ".":  # {name}: the key itself, no dot
            start = step.token.start
        end = start + len(key)
        replacement = closest(key, list(base.keys))
        where = "the input" if base.path == "." else base.path
        message = f"{where} has no field {key!r} (in the sampled input)"
        data: dict[str, Any] = {"name": key, "candidates": sorted(base.keys)[:20]}
        if replacement is not None:
            data["replacement"] = replacement
            message += f"; did you mean {replacement}?"
        findings.append(Finding(start, end, message, "jq.unknown-field", "warning", data))
    return findings


def filter_binding(program: Program, offset: int) -> tuple[Binding, int, int] | None:
    """The input field under ``offset`` (hover): its path, type and the file it came from."""
    if program.sample is None:
        return None
    flow = walk(significant(tokenize(program.text, program.start, program.end)), program.sample.root)
    for step in flow.steps:
        if step.token.start <= offset <= step.token.end and step.found is not None:
            node = step.found
            source = Path(program.sample.files[0])
            line = program.sample.line_of(step.token.key or "")
            binding = Binding(node.path, "Field", {"type": node.type_text(), "input": source.name},
                              Origin(source.as_uri(), line, 0, f"{source.name}: {node.path}"))
            return binding, step.token.start, step.token.end
    return None


class JqAnalyzer(Analyzer):
    name = "jq"
    grammar_dir = "jq"
    keywords = frozenset({"if", "then", "elif", "else", "end", "as", "and", "or", "not", "def", "reduce", "foreach",
                          "try", "catch", "true", "false", "null"})

    def program(self, snapshot: Snapshot, workspace: WorkspaceContext) -> Program:
        path = uri_to_path(snapshot.uri)
        files = jq_inputs.input_files(path, snapshot.text, workspace.roots, workspace.settings)
        return Program(snapshot.text, 0, len(snapshot.text), SAMPLES.read(files, Boundary.of(workspace.roots)))

    def hole_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Hole | NoHole:
        offset = max(0, min(offset, len(snapshot.text)))
        line_start = snapshot.text.rfind("\n", 0, offset) + 1
        line = snapshot.text[line_start:offset]
        return filter_hole(self.program(snapshot, workspace), offset, line[: len(line) - len(line.lstrip(" \t"))])

    def gamma_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> Gamma:
        hole = self.hole_at(snapshot, offset, workspace)
        if isinstance(hole, Hole):
            return hole.gamma
        program = self.program(snapshot, workspace)
        root = program.sample.root if program.sample else None
        return _gamma(program, walk(significant(tokenize(snapshot.text, 0, offset)), root), offset)

    def diagnostics(self, snapshot: Snapshot, workspace: WorkspaceContext) -> list[Finding]:
        program = self.program(snapshot, workspace)
        missing = no_input_finding(program)
        return [missing] if missing is not None else filter_findings(program)

    def binding_at(self, snapshot: Snapshot, offset: int, workspace: WorkspaceContext) -> tuple[Binding, int, int] | None:
        return filter_binding(self.program(snapshot, workspace), offset)

    def prompt_context(self, snapshot: Snapshot, hole: Hole, workspace: WorkspaceContext) -> str:
        return input_prompt(hole.gamma, workspace)

    def receiver_before(self, text: str, dot: int) -> Receiver | None:
        """The data path before the dot: the fields under it (``.items[]`` in ``.items[].``;
        Γ's Field bindings name their ``parent`` path that way)."""
        path = text[run_start(text, dot, '_.[]"'):dot]
        return Receiver(path, "fields") if path.startswith(".") else None

    def trim_partial(self, text: str, gamma: Gamma) -> str:
        """A suggestion cut by the budget ends after a whole field or name."""
        tokens = significant(tokenize(text))
        while tokens:
            last = tokens[-1]
            if last.kind in ("field", "qfield") and last.key is not None:
                known = {b.attrs.get("key") for b in gamma.bindings("Field")}
                if last.key in known and last.closed:
                    break
            elif last.kind in ("number", "dot") or last.text in (")", "]", "}") or (last.kind == "string" and last.closed):
                break
            tokens.pop()
        return text[: tokens[-1].end] if tokens else ""


PROMPT_SHARE = 0.3
"""Share of the prompt budget (``gdg.contextTokens``, about 3 characters a token) the input's paths may take."""


def input_prompt(gamma: Gamma, workspace: WorkspaceContext) -> str:
    """A comment naming the input's field paths (as SQL shows its schema), within budget;
    never empty, so a filter typed into an empty file still has a prompt. One line whatever
    the input's file is named (``words.comment_text``)."""
    tokens = getattr(workspace.settings, "context_tokens", 1024) or 1024
    budget = int(tokens * 3 * PROMPT_SHARE)
    source = gamma.lookup("source:input")
    first = Path(source.attrs["files"].split(", ")[0]).name if source else None
    header = f"# jq filter over {comment_text(first)}" if first is not None else "# jq filter"
    fields = [comment_text(f"{b.name} ({b.attrs.get('type')})") for b in gamma.bindings("Field")]
    shown = []
    used = len(header) + 20
    for field in fields:
        if used + len(field) + 2 > budget:
            break
        shown.append(field)
        used += len(field) + 2
    return header + (": " + ", ".join(shown) if shown else "") + "\n"


def sample_for(files: Iterable[Path]) -> Sample | None:
    return SAMPLES.read(list(files))


