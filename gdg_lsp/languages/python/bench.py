"""Python holes and their oracle.

Holes: simple statements (one line, not a block header) at statement starts
inside functions of the corpus modules. The document keeps every other line;
the hole's line keeps only its indentation, with the cursor after it.
Mid-line holes (``--holes midline``): the same statements ending with a call,
its arguments removed, the cursor between ``(`` and ``)``. Holes inside a line
(``--holes inside``): an expression of such a statement removed, the rest of the
line (more than closers) after the cursor.

Oracle (independent of the server's Γ): the file with the suggestion put back
must compile, and pyflakes must report no undefined name on that line. A
suggestion that does not parse is cut back token by token to its longest
parseable prefix, so that names in unparseable output are still judged.

Attribute ghosts (reported beside, in ``details``): on the filled line, an attribute of
a standard-library module the file imports, or of ``self`` in a method, that does not
exist. Modules are judged by importing them in a separate checker process
(``attribute_checker.py``, which shares no code with the server's surfaces); ``self``
by reading the class's source in the file with ``ast`` (class body, ``self.x = ...`` in
its methods, bases in the file, standard-library bases through the checker). What
cannot be judged (a third-party module, a base from elsewhere, ``__getattr__``) is not
counted either way.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import random
import re
import subprocess
import sys
import tokenize
import warnings
from pathlib import Path
from typing import Any

from gdg_lsp import python_ast
from gdg_lsp.languages.cases import HoleCase, OracleResult

LANGUAGE = "python"


def corpus_files(corpus: Path) -> list[Path]:
    folder = corpus / "python" / "Lib" if (corpus / "python" / "Lib").is_dir() else corpus
    return sorted(folder.rglob("*.py"))


def _candidates(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    tree = python_ast.parse(text)
    lines = text.split("\n")
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for stmt in ast.walk(fn):
            if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body") or stmt.lineno != stmt.end_lineno:
                continue
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstrings
            line = lines[stmt.lineno - 1]
            # the statement's own text (one line; ast offsets count UTF-8 bytes).
            # Not ast.get_source_segment: it splits the whole file on every call.
            segment = line.encode("utf-8")[stmt.col_offset : stmt.end_col_offset].decode("utf-8", "replace")
            if line.strip() != segment or ";" in line:
                continue
            out.append((stmt.lineno, line))
    return sorted(set(out))


def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    rng = random.Random(seed)
    files = corpus_files(corpus)
    pools = {path: _candidates(path) for path in files}
    cases: list[HoleCase] = []
    order = [path for path in files if pools[path]]
    rng.shuffle(order)
    while len(cases) < n and any(pools[p] for p in order):
        for path in order:  # round-robin over files, so no single module dominates
            if len(cases) >= n or not pools[path]:
                continue
            lineno, line = pools[path].pop(rng.randrange(len(pools[path])))
            text_lines = path.read_text(encoding="utf-8").split("\n")
            indent = line[: len(line) - len(line.lstrip())]
            text_lines[lineno - 1] = indent
            text = "\n".join(text_lines)
            cursor = sum(len(l) + 1 for l in text_lines[: lineno - 1]) + len(indent)
            cases.append(HoleCase(
                case_id=f"{path.name}:{lineno}", language=LANGUAGE, uri=path.resolve().as_uri(), text=text,
                cursor=cursor, expected=line.strip(), meta={"file": str(path), "line": lineno, "indent": indent},
            ))
    return cases


def _call_hole(line: str) -> int | None:
    """Where the arguments of the call that ends the statement start (just after its
    ``(``), or None: the line must end with that call's ``)`` and pass it arguments."""
    try:
        stmt = python_ast.parse(line.strip()).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    end = len(line.strip())
    calls = [n for n in ast.walk(stmt) if isinstance(n, ast.Call) and n.end_lineno == 1 and n.end_col_offset == end
             and (n.args or n.keywords)]
    if not calls:
        return None
    call = min(calls, key=lambda n: n.col_offset)  # the outermost
    paren = line.strip().find("(", call.func.end_col_offset)
    if paren < 0 or paren + 1 >= end - 1:
        return None
    return len(line) - len(line.lstrip()) + paren + 1


def cut_midline_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Mid-line holes: the arguments of the call that ends a one-line statement are removed,
    the cursor is after its ``(`` and the ``)`` follows (what an editor's auto-closed
    bracket leaves). ``expected`` is the original line from the cursor on."""

    def arguments(line: str, rng: random.Random) -> tuple[int, int] | None:
        at = _call_hole(line)
        return None if at is None else (at, len(line) - 1)

    return _cut_in_lines(corpus, n, seed, arguments, "mid")


_CLOSERS = frozenset(" \t)]}:,")


def _inner_span(line: str, rng: random.Random) -> tuple[int, int] | None:
    """An expression inside a one-line statement with code after it on the line (not only
    closers): a name, a call, an operand, a subscript..., one chosen at random."""
    stripped = line.strip()
    if "f'" in stripped or 'f"' in stripped:  # f-string fields' offsets are not the text's
        return None
    try:
        stmt = python_ast.parse(stripped).body[0]
    except (SyntaxError, IndexError, ValueError):
        return None
    indent = len(line) - len(line.lstrip())
    spans = sorted({(node.col_offset, node.end_col_offset) for node in ast.walk(stmt)
                    if isinstance(node, ast.expr) and node.lineno == node.end_lineno == 1
                    and 0 < node.col_offset and 1 <= node.end_col_offset - node.col_offset <= 40
                    and not set(stripped[node.end_col_offset:]) <= _CLOSERS})
    if not spans:
        return None
    at, to = spans[rng.randrange(len(spans))]
    return indent + at, indent + to


def cut_inside_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Holes inside a line (``--holes inside``): an expression of a one-line statement removed,
    the cursor where it was and the rest of the line after it (more than closers: an operator,
    further arguments, a comparison, ``:`` and a body...). ``expected`` is the original line from
    the cursor on."""
    return _cut_in_lines(corpus, n, seed, _inner_span, "in")


def _cut_in_lines(corpus: Path, n: int, seed: int, where: Any, tag: str) -> list[HoleCase]:
    """Holes cut from one-line statements by ``where(line, rng)`` -> (start, end) of the text
    removed, or None; round-robin over files, as for line holes."""
    rng = random.Random(seed)
    files = corpus_files(corpus)
    pools = {path: [(no, line.rstrip()) for no, line in _candidates(path)
                    if line.isascii() and where(line.rstrip(), random.Random(0)) is not None] for path in files}
    cases: list[HoleCase] = []
    order = [path for path in files if pools[path]]
    rng.shuffle(order)
    while len(cases) < n and any(pools[p] for p in order):
        for path in order:
            if len(cases) >= n or not pools[path]:
                continue
            lineno, line = pools[path].pop(rng.randrange(len(pools[path])))
            at, to = where(line, rng)
            text_lines = path.read_text(encoding="utf-8").split("\n")
            text_lines[lineno - 1] = line[:at] + line[to:]
            text = "\n".join(text_lines)
            cursor = sum(len(l) + 1 for l in text_lines[: lineno - 1]) + at
            indent = line[: len(line) - len(line.lstrip())]
            cases.append(HoleCase(
                case_id=f"{path.name}:{lineno}:{tag}", language=LANGUAGE, uri=path.resolve().as_uri(), text=text,
                cursor=cursor, expected=line[at:],
                meta={"file": str(path), "line": lineno, "indent": indent, "midline": True, "rest": line[to:]},
            ))
    return cases


def continuation_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the continuation lines of multi-line simple statements: a line
    after the statement's first, inside its open brackets, holding code (not a docstring's
    text, not a comment, not only closers)."""
    try:
        tree = python_ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    lines = text.split("\n")
    out = []
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body") or stmt.end_lineno == stmt.lineno:
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        strings = [(n.lineno, n.end_lineno) for n in ast.walk(stmt)
                   if isinstance(n, (ast.Constant, ast.JoinedStr)) and n.end_lineno > n.lineno]
        for number in range(stmt.lineno + 1, stmt.end_lineno + 1):
            line = lines[number - 1]
            code = line.strip()
            if not code or code.startswith("#") or not line.isascii() or not code.strip(")]},"):
                continue
            if any(first < number <= last for first, last in strings):
                continue  # inside a multi-line string: text, not code
            out.append((number, line))
    return sorted(set(out))


def cut_line_holes(path: Path, chosen: list[tuple[int, str]], language: str, rng: random.Random, n: int,
                   suffix: str = "", meta: dict | None = None) -> list[HoleCase]:
    """Up to ``n`` holes from ``chosen`` lines of ``path``: each line emptied to its indentation,
    the cursor after it (``suffix`` names the hole kind in the case id)."""
    text_lines = path.read_text(encoding="utf-8").split("\n")
    pool = list(chosen)
    cases = []
    while pool and len(cases) < n:
        lineno, line = pool.pop(rng.randrange(len(pool)))
        indent = line[: len(line) - len(line.lstrip())]
        cut = text_lines[: lineno - 1] + [indent] + text_lines[lineno:]
        cursor = sum(len(l) + 1 for l in text_lines[: lineno - 1]) + len(indent)
        cases.append(HoleCase(
            case_id=f"{path.name}:{lineno}{suffix}", language=language, uri=path.resolve().as_uri(),
            text="\n".join(cut), cursor=cursor, expected=line.strip(),
            meta={"file": str(path), "line": lineno, "indent": indent, "continuation": bool(suffix), **(meta or {})},
        ))
    return cases


def cut_continuation_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Continuation-line holes: one line inside the brackets of a statement written over
    several lines is emptied, the cursor after its indentation (the lines around it kept)."""
    return continuation_holes(corpus_files(corpus), LANGUAGE, n, seed)


def continuation_holes(files: list[Path], language: str, n: int, seed: int, meta: dict | None = None
                       ) -> list[HoleCase]:
    """At most one continuation hole per file, files in a shuffled order (no module dominates)."""
    rng = random.Random(seed)
    order = list(files)
    rng.shuffle(order)
    cases: list[HoleCase] = []
    for path in order:
        if len(cases) >= n:
            break
        try:
            lines = continuation_lines(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        cases += cut_line_holes(path, lines, language, rng, 1, ":cont", meta)
    return cases


def pyflakes_undefined(source: str) -> list[tuple[int, str]]:
    """(line, name) of every undefined name pyflakes reports in ``source``."""
    from pyflakes import api, reporter

    out = io.StringIO()
    api.check(source, "hole.py", reporter.Reporter(out, out))
    found = []
    for message in out.getvalue().splitlines():
        m = re.match(r"hole\.py:(\d+):\d+:? undefined name '(\w+)'", message)
        if m:
            found.append((int(m.group(1)), m.group(2)))
    return found


def _fill(case: HoleCase, line_text: str) -> str:
    if case.meta.get("midline"):  # ``line_text`` is the rest of the line from the cursor on
        line_end = case.text.find("\n", case.cursor)
        return case.text[: case.cursor] + line_text + case.text[line_end if line_end >= 0 else len(case.text):]
    indent = case.meta["indent"]
    block = ("\n" + indent + "    pass") if line_text.rstrip().endswith(":") else ""
    return case.text[: case.cursor] + line_text + block + case.text[case.cursor :]


def _parses(source: str) -> bool:
    try:
        with warnings.catch_warnings():  # the oracle judges validity, not style ('\8' escapes...)
            warnings.simplefilter("ignore")
            compile(source, "hole.py", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _longest_parseable_prefix(case: HoleCase, suggestion: str) -> str | None:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(suggestion).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    cuts = sorted({t.end[1] for t in tokens if t.end[0] == 1}, reverse=True)
    for cut in cuts:
        prefix = suggestion[:cut]
        if prefix.strip() and _parses(_fill(case, prefix)):
            return prefix
    return None


def check(case: HoleCase, suggestion: str) -> OracleResult:
    line = case.meta["line"]
    filled = _fill(case, suggestion)
    parsed = bool(suggestion.strip()) and _parses(filled)
    judged = suggestion if parsed else _longest_parseable_prefix(case, suggestion)
    ghosts = [name for at, name in pyflakes_undefined(_fill(case, judged)) if at == line] if judged else []
    attribute_ghosts, attributes_judged = attribute_ghosts_on_line(_fill(case, judged), line) if judged else ([], 0)
    return OracleResult(
        parsed=parsed,
        ghosts=ghosts,
        passed=parsed and not ghosts,
        details={"judged": judged, "attribute_ghosts": attribute_ghosts, "attributes_judged": attributes_judged},
    )


# -- the attribute oracle -------------------------------------------------------------------------

OBJECT_ATTRIBUTES = frozenset(dir(object)) | {"__dict__", "__module__", "__weakref__"}
_CHECKED: dict[tuple, bool | None] = {}
"""Answers of the checker process, by (the file's imports, the question): arms share holes."""


def _dotted(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute) and (head := _dotted(node.value)) is not None:
        return [*head, node.attr]
    return None


def _ask_checker(preload: tuple[str, ...], entries: list[list]) -> list[bool | None]:
    """The checker process's answers (cached): importing happens there, never here."""
    missing = [e for e in entries if (preload, json.dumps(e)) not in _CHECKED]
    if missing:
        script = Path(__file__).with_name("attribute_checker.py")
        try:
            done = subprocess.run([sys.executable, "-I", str(script)], input=json.dumps(
                {"preload": list(preload), "entries": missing}), capture_output=True, text=True, timeout=120, check=True)
            answers = json.loads(done.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError):
            answers = [None] * len(missing)
        for entry, answer in zip(missing, answers):
            _CHECKED[(preload, json.dumps(entry))] = answer
    return [_CHECKED[(preload, json.dumps(e))] for e in entries]


def _enclosing(tree: ast.Module, line: int) -> list[ast.AST]:
    """The function and class definitions around ``line``, outermost first."""
    chain: list[ast.AST] = []
    body: list[ast.stmt] = tree.body
    while True:
        inner = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if inner is None:
            nested = next((n for n in body if hasattr(n, "body") and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                           and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
            if nested is None:
                return chain
            body = [*getattr(nested, "body", []), *getattr(nested, "orelse", []), *getattr(nested, "finalbody", []),
                    *(s for h in getattr(nested, "handlers", []) for s in h.body)]
            continue
        chain.append(inner)
        body = inner.body


def _class_attributes(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: set[str]) -> tuple[set[str], list[ast.expr]] | None:
    """Attributes a class of the file defines (its body, ``self.x`` in its methods, its
    bases in the file), and its bases from elsewhere; None when it has ``__getattr__``."""
    names: set[str] = set()
    outside: list[ast.expr] = []
    for stmt in ast.walk(cls):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt in cls.body:
            names.add(stmt.name)
            if stmt.name in ("__getattr__", "__getattribute__"):
                return None
            args = stmt.args.posonlyargs + stmt.args.args
            if args:
                first = args[0].arg
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                            and isinstance(node.value, ast.Name) and node.value.id == first:
                        names.add(node.attr)
    for stmt in cls.body:
        if isinstance(stmt, ast.ClassDef):
            names.add(stmt.name)
        for node in ast.walk(stmt) if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) else ():
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
            inner = _class_attributes(classes[base.id], classes, seen | {base.id})
            if inner is None:
                return None
            names |= inner[0]
            outside += inner[1]
        elif not (isinstance(base, ast.Name) and base.id == "object"):
            outside.append(base)
    return names, outside


def attribute_ghosts_on_line(source: str, line: int) -> tuple[list[str], int]:
    """(attributes on ``line`` that do not exist, how many attributes were judged)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = python_ast.parse(source)
    except (SyntaxError, ValueError):
        return [], 0
    modules: dict[str, str] = {}
    from_imports: dict[str, tuple[str, str]] = {}
    preload: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                preload.append(alias.name)
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            preload.append(node.module)
            for alias in node.names:
                if alias.name != "*":
                    from_imports[alias.asname or alias.name] = (node.module, alias.name)
    around = _enclosing(tree, line)
    function = next((n for n in reversed(around) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    local: set[str] = set()
    if function is not None:
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)} | {
            n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    # self: the first parameter of a method of a class of the file
    self_name, own, outside = None, set(), []
    if len(around) >= 2 and isinstance(around[-1], (ast.FunctionDef, ast.AsyncFunctionDef)) \
            and isinstance(around[-2], ast.ClassDef):
        method = around[-1]
        args = method.args.posonlyargs + method.args.args
        decorators = {d.id for d in method.decorator_list if isinstance(d, ast.Name)}
        if args and "staticmethod" not in decorators and "classmethod" not in decorators:
            classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
            facts = _class_attributes(around[-2], classes, {around[-2].name})
            if facts is not None:
                self_name, (own, outside) = args[0].arg, facts
    questions: list[tuple[str, list]] = []  # (shown, checker entry)
    decided: list[tuple[str, bool]] = []
    seen: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.lineno == line):
            continue
        chain = _dotted(node)
        if chain is None or ".".join(chain) in seen:
            continue
        seen.add(".".join(chain))
        head = chain[0]
        if head == self_name and len(chain) == 2:
            attr = chain[1]
            if attr in own or attr in OBJECT_ATTRIBUTES:
                decided.append((".".join(chain), True))
                continue
            entries = []
            for base in outside:
                path = _dotted(base)
                if path is None:
                    entries = None
                    break
                if path[0] in modules:
                    entries.append([modules[path[0]], path[1:], attr])
                elif path[0] in from_imports:
                    module, name = from_imports[path[0]]
                    entries.append([module, [name, *path[1:]], attr])
                elif hasattr(builtins, path[0]):
                    entries.append(["builtins", path, attr])
                else:
                    entries = None
                    break
            if entries is None:
                continue  # a base from elsewhere: not judged
            if not entries:
                decided.append((".".join(chain), False))
            else:
                questions.append((".".join(chain), ["any", entries]))
        elif head in local:
            continue  # a local of that name hides the module
        elif head in modules:
            questions.append((".".join(chain), [modules[head], chain[1:]]))
        elif head in from_imports:
            module, name = from_imports[head]
            questions.append((".".join(chain), [module, [name, *chain[1:]]]))
    flat = [e for _, q in questions for e in (q[1] if q[0] == "any" else [q])]
    answers = iter(_ask_checker(tuple(sorted(set(preload))), flat)) if flat else iter(())
    for shown, question in questions:
        got = [next(answers) for _ in (question[1] if question[0] == "any" else [question])]
        if any(a is True for a in got):
            decided.append((shown, True))
        elif got and all(a is False for a in got):
            decided.append((shown, False))
    return sorted({shown for shown, exists in decided if not exists}), len(decided)
