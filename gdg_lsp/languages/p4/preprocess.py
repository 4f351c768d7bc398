"""The C-style preprocessor of P4-16, for analysis: offsets never move.

``preprocess`` returns the *code text*: the source with comments, directive
lines and lines in inactive ``#if`` branches replaced by blanks (line breaks
kept), so that every offset in the code text is the same offset in the
document. It also returns the ``#define``s (object-like and function-like) and
the ``#include``s in the order they occur.

An ``#include`` is handed to a callback that may analyse the file and return
the macros it defines, which then hold for the rest of this file (that is how
``V1MODEL_VERSION`` set before ``#include <v1model.p4>`` selects its branches
and how ``V1MODEL_METER_COLOR_RED`` becomes visible after it). Macros are not
expanded in the code text: a macro name is a name like any other for Γ.

``#if`` conditions are evaluated over integers with ``defined``, ``!``, ``&&``,
``||``, comparisons and arithmetic; a condition that cannot be evaluated (a
function-like macro, a syntax error) counts as false, the usual fate of an
unknown identifier in C's preprocessor.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gdg_lsp import python_ast

_DIRECTIVE = re.compile(r"[ \t]*#[ \t]*([A-Za-z_]+)\b(.*)")
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\([^)]*\))?[ \t]*(.*)")
_INCLUDE = re.compile(r"""[ \t]*(?:<([^>\n]*)>|"([^"\n]*)")""")
_WORD = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Define:
    name: str
    value: str
    params: tuple[str, ...] | None  # None for an object-like macro
    offset: int  # of the name, in the file that defines it
    uri: str | None = None


@dataclass(frozen=True)
class Include:
    target: str
    system: bool  # <file> rather than "file"
    start: int  # the directive's span
    end: int


@dataclass
class Preprocessed:
    code: str
    defines: dict[str, Define] = field(default_factory=dict)
    """Macros in force at the end of the file (included files' macros too)."""
    own_defines: list[Define] = field(default_factory=list)
    """Macros this file itself defines, in order."""
    includes: list[Include] = field(default_factory=list)
    problems: list[tuple[int, int, str]] = field(default_factory=list)


IncludeHook = Callable[[Include, Mapping[str, Define]], Mapping[str, Define] | None]


def blank(text: str) -> str:
    """``text`` with every character but line breaks replaced by a space."""
    return re.sub(r"[^\r\n]", " ", text)


def strip_comments(source: str) -> str:
    """Comments replaced by blanks (line breaks kept); strings left alone."""
    out: list[str] = []
    i, n = 0, len(source)
    last = 0
    while i < n:
        ch = source[i]
        if ch == '"':
            j = i + 1
            while j < n and source[j] not in '"\n':
                j += 2 if source[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "/" and i + 1 < n and source[i + 1] in "/*":
            if source[i + 1] == "/":
                end = source.find("\n", i)
                end = n if end < 0 else end
            else:
                end = source.find("*/", i + 2)
                end = n if end < 0 else end + 2
            out.append(source[last:i])
            out.append(blank(source[i:end]))
            i = last = end
            continue
        i += 1
    out.append(source[last:])
    return "".join(out)


def preprocess(
    source: str,
    defines: Mapping[str, Define] | None = None,
    on_include: IncludeHook | None = None,
    uri: str | None = None,
) -> Preprocessed:
    text = strip_comments(source)
    macros: dict[str, Define] = dict(defines or {})
    result = Preprocessed("", macros)
    out: list[str] = []
    # a stack of (this branch active, some branch of this #if taken, parent active)
    stack: list[tuple[bool, bool, bool]] = []
    active = True
    pos = 0
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        line = lines[index]
        start = pos
        # a directive continues over lines that end with a backslash
        logical = line
        while logical.rstrip("\r\n").endswith("\\") and index + 1 < len(lines):
            index += 1
            logical = logical.rstrip("\r\n")[:-1] + " " + lines[index]
            line += lines[index]
        pos += len(line)
        index += 1
        match = _DIRECTIVE.match(logical)
        if match is None:
            out.append(line if active else blank(line))
            continue
        out.append(blank(line))
        word, rest = match.group(1), match.group(2).strip()
        if word in ("if", "ifdef", "ifndef"):
            if word == "if":
                cond = _evaluate(rest, macros)
            else:
                name = rest.split()[0] if rest.split() else ""
                cond = (name in macros) == (word == "ifdef")
            stack.append((active and cond, cond, active))
            active = active and cond
        elif word == "elif":
            if not stack:
                result.problems.append((start, pos, "#elif without #if"))
                continue
            _, taken, parent = stack[-1]
            cond = not taken and _evaluate(rest, macros)
            stack[-1] = (parent and cond, taken or cond, parent)
            active = parent and cond
        elif word == "else":
            if not stack:
                result.problems.append((start, pos, "#else without #if"))
                continue
            _, taken, parent = stack[-1]
            stack[-1] = (parent and not taken, True, parent)
            active = parent and not taken
        elif word == "endif":
            if not stack:
                result.problems.append((start, pos, "#endif without #if"))
                continue
            active = stack.pop()[2]
        elif not active:
            continue
        elif word == "define":
            m = _DEFINE.match(rest)
            if m is None:
                result.problems.append((start, pos, "#define without a name"))
                continue
            params = None
            if m.group(2) is not None:
                params = tuple(p.strip() for p in m.group(2)[1:-1].split(",") if p.strip())
            name_at = start + line.find(m.group(1))
            define = Define(m.group(1), m.group(3).strip(), params, name_at, uri)
            macros[define.name] = define
            result.own_defines.append(define)
        elif word == "undef":
            for name in rest.split()[:1]:
                macros.pop(name, None)
        elif word == "include":
            m = _INCLUDE.match(rest)
            if m is None:
                result.problems.append((start, pos, "#include needs <file> or \"file\""))
                continue
            include = Include(m.group(1) or m.group(2) or "", m.group(1) is not None, start, start + len(line.rstrip("\r\n")))
            result.includes.append(include)
            if on_include is not None:
                exported = on_include(include, dict(macros))
                if exported:
                    macros.update(exported)
        # #error, #warning, #pragma, #line: nothing for Γ
    for _ in stack:
        result.problems.append((len(source), len(source), "#if without #endif"))
    result.code = "".join(out)
    result.defines = macros
    return result


# -- #if expressions ---------------------------------------------------------------

_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: lambda a, b: int(a / b) if b else 0, ast.Mod: lambda a, b: a % b if b else 0,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_INT = re.compile(r"^(?:0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)[uUlL]*$")


def _macro_number(name: str, macros: Mapping[str, Define], depth: int = 0) -> int:
    define = macros.get(name)
    if define is None or define.params is not None or depth > 8:
        return 0
    value = define.value.strip()
    if not value:
        return 0
    if _INT.match(value):
        return int(value.rstrip("uUlL"), 0) if not re.match(r"^0[0-7]+", value) else int(value.rstrip("uUlL"), 8)
    if _WORD.fullmatch(value):
        return _macro_number(value, macros, depth + 1)
    return _evaluate_int(value, macros, depth + 1)


def _evaluate(expression: str, macros: Mapping[str, Define]) -> bool:
    return bool(_evaluate_int(expression, macros, 0))


def _evaluate_int(expression: str, macros: Mapping[str, Define], depth: int) -> int:
    text = re.sub(r"\bdefined\s*\(\s*([A-Za-z_]\w*)\s*\)", lambda m: "1" if m.group(1) in macros else "0", expression)
    text = re.sub(r"\bdefined\s+([A-Za-z_]\w*)", lambda m: "1" if m.group(1) in macros else "0", text)
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", text)
    text = re.sub(r"\b0([0-7]+)\b", r"0o\1", text)
    text = text.replace("&&", " and ").replace("||", " or ").replace("/", "//")
    text = re.sub(r"!(?!=)", " not ", text)
    text = re.sub(r"\b[A-Za-z_]\w*", lambda m: m.group() if m.group() in ("and", "or", "not")
                  else str(_macro_number(m.group(), macros, depth)), text)
    try:
        tree = python_ast.parse(text.strip() or "0", mode="eval")
        return int(_eval_node(tree.body))
    except (SyntaxError, ValueError, TypeError, ZeroDivisionError, RecursionError):
        return 0


def _eval_node(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.BoolOp):
        values = [_eval_node(v) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.UnaryOp):
        value = _eval_node(node.operand)
        if isinstance(node.op, ast.Not):
            return int(not value)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.Invert):
            return ~value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return int(_BINARY[type(node.op)](_eval_node(node.left), _eval_node(node.right)))
    if isinstance(node, ast.Compare):
        left = _eval_node(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval_node(right_node)
            if type(op) not in _COMPARE or not _COMPARE[type(op)](left, right):
                return 0
            left = right
        return 1
    if isinstance(node, ast.IfExp):
        return _eval_node(node.body) if _eval_node(node.test) else _eval_node(node.orelse)
    raise ValueError(f"unsupported preprocessor expression {ast.dump(node)}")
