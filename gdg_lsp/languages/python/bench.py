"""Python holes and their oracle.

Holes: simple statements (one line, not a block header) at statement starts
inside functions of the corpus modules. The document keeps every other line;
the hole's line keeps only its indentation, with the cursor after it.

Oracle (independent of the server's Γ): the file with the suggestion put back
must compile, and pyflakes must report no undefined name on that line. A
suggestion that does not parse is cut back token by token to its longest
parseable prefix, so that names in unparseable output are still judged.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize
import warnings
from pathlib import Path

from gdg_lsp.languages.cases import HoleCase, OracleResult

LANGUAGE = "python"


def corpus_files(corpus: Path) -> list[Path]:
    folder = corpus / "python" / "Lib" if (corpus / "python" / "Lib").is_dir() else corpus
    return sorted(folder.rglob("*.py"))


def _candidates(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
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
    return OracleResult(
        parsed=parsed,
        ghosts=ghosts,
        passed=parsed and not ghosts,
        details={"judged": judged},
    )
