"""Which part of the input each piece of a jq filter reads: a left-to-right walk
over the tokens that follows paths through ``|``, parentheses, ``select``,
``map`` and the other builtins whose argument sees the same input (or each
element of it). Where the walk cannot tell (a variable, ``reduce``, a function
of the user's), the node is unknown (None) and nothing is claimed about it.

It gives: for every field step the node it applied to (diagnostics, hover);
for the end of the text, the node a new path would read, where the last path
step began, and the brackets still open (the hole); the variables and
functions the filter declares (Γ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gdg_lsp.languages.jq.lexer import Token
from gdg_lsp.languages.jq.schema import Node

SAME_INPUT = frozenset({
    "select", "del", "path", "paths", "has", "getpath",
    "delpaths", "to_entries", "first", "last", "until", "while", "repeat", "limit", "isempty", "error",
    "contains", "inside", "startswith", "endswith", "test", "match", "capture", "split", "join", "ltrimstr",
    "rtrimstr", "sub", "gsub", "splits", "ascii", "tostream", "getpath", "env", "debug", "input_line_number",
    "add", "range", "tojson", "fromjson", "tostring", "tonumber", "flatten", "index", "rindex", "indices", "in",
    "nth", "recurse", "walk", "ltrimstr", "setpath",
})
"""Builtins whose filter arguments read the builtin's own input."""
ELEMENT_INPUT = frozenset({"map", "map_values", "any", "all", "sort_by", "group_by", "unique_by", "min_by", "max_by"})
"""Builtins whose (last) filter argument reads each element of the input (an array)."""
PASS_THROUGH = frozenset({"select", "first", "last", "limit", "recurse"})
"""Builtins whose output is (part of) their input, so a path may continue after them."""
_PATH_END = {"field", "qfield", "dot"}


@dataclass
class Step:
    token: Token
    applied_to: Node | None
    found: Node | None


@dataclass
class _Frame:
    kind: str  # root paren index collect brace call if def
    input: Node | None
    segment: Node | None
    closer: str
    function: str = ""
    term: Node | None = None
    term_is_path: bool = False
    binding: bool = False
    brace_key: bool = True


@dataclass
class Flow:
    steps: list[Step] = field(default_factory=list)
    variables: dict[str, Token] = field(default_factory=dict)
    functions: dict[str, Token] = field(default_factory=dict)
    segment: Node | None = None
    """The node a new term at the end would read."""
    term: Node | None = None
    term_is_path: bool = False
    last_step: Step | None = None
    """The last field or ``.`` step, when the text ends with it."""
    closers: list[str] = field(default_factory=list)
    """Closing brackets of the constructs still open at the end, innermost first."""


def walk(tokens: list[Token], root: Node | None) -> Flow:
    """Follow ``tokens`` (significant ones) from the input ``root``."""
    flow = Flow()
    stack = [_Frame("root", root, root, "")]
    previous: Token | None = None
    for index, tok in enumerate(tokens):
        frame = stack[-1]
        nxt = tokens[index + 1] if index + 1 < len(tokens) else None
        attached = previous is not None and previous.end == tok.start and (
            previous.kind != "op" or previous.text in ("]", "?", ")"))
        continues = attached and (previous.kind in _PATH_END or previous.text in ("]", "?", ")"))
        if tok.kind in ("field", "qfield"):
            # `.a.b` continues a path; `$x.b` and `f.b` read something unknown; `| .b` the segment
            base = frame.term if (continues and frame.term_is_path) else (None if attached else frame.segment)
            if frame.kind == "brace" and frame.brace_key:
                base = frame.segment
            found = None
            if base is not None and base.is_object and tok.key is not None:
                found = base.child(tok.key)
            step = Step(tok, base, found)
            flow.steps.append(step)
            flow.last_step = step
            frame.term, frame.term_is_path = found, found is not None
        elif tok.kind == "dot":
            base = frame.term if (continues and frame.term_is_path) else (None if attached else frame.segment)
            step = Step(tok, base, base)
            flow.last_step = step
            frame.term, frame.term_is_path = base, base is not None
        elif tok.kind == "recurse":
            frame.term, frame.term_is_path = None, False
        elif tok.text == "[":
            if continues and previous is not None and (previous.kind in _PATH_END or previous.text in ("]", "?")):
                stack.append(_Frame("index", frame.term if frame.term_is_path else None, frame.segment, "]"))
            else:
                stack.append(_Frame("collect", frame.segment, frame.segment, "]"))
        elif tok.text == "(":
            function = previous.text if previous is not None and previous.kind == "ident" else ""
            if previous is not None and previous.kind == "variable":
                node = None  # reduce/foreach ... as $x (init; update): reads the accumulator
            elif function in ELEMENT_INPUT:
                node = frame.segment.elements if frame.segment is not None else None
            elif function in SAME_INPUT or not function:
                node = frame.segment
            else:
                node = None  # the user's function, or a builtin whose argument reads something else
            kind = "call" if function else "paren"
            stack.append(_Frame(kind, node, node, ")", function))
        elif tok.text == "{":
            stack.append(_Frame("brace", frame.segment, frame.segment, "}"))
        elif tok.text in (")", "]", "}") and len(stack) > 1 and stack[-1].closer == tok.text:
            inner = stack.pop()
            outer = stack[-1]
            if inner.kind == "index":
                base = inner.input
                outer.term = base.elements if base is not None else None
                outer.term_is_path = outer.term is not None
            elif inner.kind == "paren":
                outer.term, outer.term_is_path = inner.term, inner.term_is_path
            elif inner.kind == "call" and inner.function in PASS_THROUGH:
                outer.term, outer.term_is_path = outer.segment, outer.segment is not None
            else:
                outer.term, outer.term_is_path = None, False
        elif tok.text == "|":
            if frame.binding:
                frame.binding = False  # `E as $x | body`: body reads E's input
            else:
                frame.segment = frame.term if frame.term_is_path else None
            frame.term, frame.term_is_path = None, False
        elif tok.text == ";" and frame.kind == "def":
            stack.pop()
        elif tok.text in (",", ";", ":") or tok.kind == "op":
            if frame.kind == "brace":
                frame.brace_key = tok.text == ","
            frame.term, frame.term_is_path = None, False
        elif tok.kind == "keyword":
            _keyword(tok, stack, flow, nxt)
        elif tok.kind == "variable":
            if previous is not None and previous.text == "as":
                flow.variables.setdefault(tok.text, tok)
            frame.term, frame.term_is_path = None, False
        elif tok.kind == "ident":
            if previous is not None and previous.text == "def":
                flow.functions.setdefault(tok.text, tok)
            elif frame.kind == "brace" and frame.brace_key and nxt is not None and nxt.text in (",", "}"):
                # {name} is {name: .name}: a field of the input
                base = frame.segment
                found = base.child(tok.text) if base is not None and base.is_object else None
                flow.steps.append(Step(Token("field", "." + tok.text, tok.start, tok.end), base, found))
            frame.term, frame.term_is_path = None, False
        else:
            frame.term, frame.term_is_path = None, False
        previous = tok
    top = stack[-1]
    flow.segment, flow.term, flow.term_is_path = top.segment, top.term, top.term_is_path
    if not (previous is not None and previous.kind in _PATH_END and flow.last_step is not None
            and flow.last_step.token.end == previous.end):
        flow.last_step = None
    flow.closers = [f.closer for f in reversed(stack) if f.closer]
    return flow


def _keyword(tok: Token, stack: list[_Frame], flow: Flow, nxt: Token | None) -> None:
    frame = stack[-1]
    word = tok.text
    if word == "if":
        stack.append(_Frame("if", frame.segment, frame.segment, "end"))
    elif word in ("then", "elif", "else"):
        frame.segment = frame.input
    elif word == "end" and frame.kind == "if" and len(stack) > 1:
        stack.pop()
        stack[-1].term, stack[-1].term_is_path = None, False
        return
    elif word == "as":
        frame.binding = True
    elif word == "def":
        stack.append(_Frame("def", None, None, ";"))
    elif word in ("reduce", "foreach"):
        frame.binding = True
    frame.term, frame.term_is_path = None, False
