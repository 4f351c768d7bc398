"""TileLang holes and their independent checker.

Holes are cut at the tile-operation lines of real kernels (``T.copy``,
``T.gemm``, ``T.fill``, ``T.clear``, reductions, atomics, allocations,
element-wise stores, loops): the line's text is removed (its indentation
kept) and the cursor put at its start; the original text is the expected
answer.

The checker shares nothing with the server's Γ: it runs pyflakes over the
filled document and counts the undefined names it reports on the suggestion's
lines, and checks every ``T.<member>`` of the suggestion against the API name
list shipped with the corpus (``T_API_NAMES.wheel-<version>.txt``).
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from pathlib import Path

from gdg_lsp.languages.cases import HoleCase, OracleResult

LANGUAGE = "tilelang"
API_VERSION = "0.1.15"

# What a line is, by its text (the gate and the benchmark share this).
CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("copy", re.compile(r"T\.copy\(")),
    ("gemm", re.compile(r"T\.gemm\(")),
    ("fill", re.compile(r"T\.fill\(")),
    ("clear", re.compile(r"T\.clear\(")),
    ("reduce", re.compile(r"T\.reduce_[a-z]+\(")),
    ("atomic", re.compile(r"T\.atomic_(add|max|min|addx2|addx4)\(")),
    ("alloc", re.compile(r"[A-Za-z_]\w*\s*=\s*T\.alloc_\w+\(")),
    ("loop", re.compile(r"for .+ in (T\.\w+|range)\(.*\):")),
    ("launch", re.compile(r"with T\.Kernel\(.*\)( as .+)?:")),
    ("elementwise", re.compile(r"[A-Za-z_]\w*\[[^\]]*\]\s*([-+*/]?=)(?!=)")),
)


def category(line: str) -> str | None:
    stripped = line.strip()
    for name, pattern in CATEGORIES:
        if pattern.match(stripped):
            return name
    return None


def complete_line(line: str) -> bool:
    """A one-line statement (brackets balanced, no continuation, no comment)."""
    stripped = line.strip()
    if not stripped or "#" in stripped or stripped.endswith("\\"):
        return False
    depth = 0
    for ch in stripped:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def kernel_lines(text: str) -> list[tuple[int, str, str]]:
    """(line index, line, category) of the categorised one-line statements inside
    ``with T.Kernel(...)`` blocks (by indentation), and of the launch lines themselves."""
    out = []
    launch_indent: int | None = None
    for index, line in enumerate(text.split("\n")):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip(" "))
        if stripped and launch_indent is not None and indent <= launch_indent and not stripped.startswith(")"):
            launch_indent = None
        kind = category(line)
        if stripped.startswith("with T.Kernel("):
            launch_indent = indent
        if kind is None or not complete_line(line):
            continue
        if kind == "launch" or (launch_indent is not None and indent > launch_indent):
            out.append((index, line, kind))
    return out


def corpus_files(corpus: Path) -> list[Path]:
    root = corpus / "tilelang" if (corpus / "tilelang").is_dir() else corpus
    return sorted(root.rglob("*.py"))


def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """``n`` holes spread over the files and categories (deterministic for ``seed``)."""
    rng = random.Random(seed)
    candidates: list[HoleCase] = []
    for path in corpus_files(corpus):
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        for index, line, kind in kernel_lines(text):
            indent = line[: len(line) - len(line.lstrip(" "))]
            cut = lines[:index] + [indent] + lines[index + 1 :]
            cursor = sum(len(x) + 1 for x in lines[:index]) + len(indent)
            rel = path.relative_to(corpus_files_root(corpus))
            candidates.append(HoleCase(
                case_id=f"{rel}:{index + 1}", language=LANGUAGE, uri=path.resolve().as_uri(),
                text="\n".join(cut), cursor=cursor, expected=line.strip(),
                meta={"category": kind, "line": index + 1, "file": str(rel), "corpus": str(corpus)},
            ))
    # round-robin over categories so that T.copy (the most frequent) does not crowd out the rest
    by_kind: dict[str, list[HoleCase]] = {}
    for case in candidates:
        by_kind.setdefault(case.meta["category"], []).append(case)
    for cases in by_kind.values():
        rng.shuffle(cases)
    picked: list[HoleCase] = []
    kinds = sorted(by_kind)
    while len(picked) < n and any(by_kind.values()):
        for kind in kinds:
            if by_kind[kind] and len(picked) < n:
                picked.append(by_kind[kind].pop())
    return picked


def cut_continuation_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Continuation-line holes (a line inside the brackets of a statement written over several
    lines, emptied), cut as for Python from the kernels' files."""
    from gdg_lsp.languages.python.bench import continuation_holes

    return continuation_holes(corpus_files(corpus), LANGUAGE, n, seed, {"corpus": str(corpus)})


def corpus_files_root(corpus: Path) -> Path:
    return corpus / "tilelang" if (corpus / "tilelang").is_dir() else corpus


@lru_cache(maxsize=4)
def api_names(corpus: str, version: str = API_VERSION) -> frozenset[str]:
    path = corpus_files_root(Path(corpus)) / f"T_API_NAMES.wheel-{version}.txt"
    return frozenset(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _pyflakes_undefined(source: str) -> list[tuple[int, str]]:
    import pyflakes.api
    import pyflakes.messages
    import pyflakes.reporter

    class Collect(pyflakes.reporter.Reporter):
        def __init__(self) -> None:
            self.messages: list = []
            self.syntax = False

        def unexpectedError(self, filename, message) -> None:
            self.syntax = True

        def syntaxError(self, filename, msg, lineno, offset, text) -> None:
            self.syntax = True

        def flake(self, message) -> None:
            self.messages.append(message)

    reporter = Collect()
    pyflakes.api.check(source, "hole.py", reporter)
    if reporter.syntax:
        raise SyntaxError("the filled document does not parse")
    return [(m.lineno, m.message_args[0]) for m in reporter.messages
            if isinstance(m, pyflakes.messages.UndefinedName)]


def check(case: HoleCase, suggestion: str) -> OracleResult:
    body = ""
    if suggestion.rstrip().endswith(":"):  # a block header: give it a body so the file parses
        indent = case.text[case.text.rfind("\n", 0, case.cursor) + 1 : case.cursor]
        body = "\n" + indent + "    pass"
    filled = case.text[: case.cursor] + suggestion + body + case.text[case.cursor :]
    first = case.text.count("\n", 0, case.cursor) + 1
    last = first + suggestion.count("\n")
    details: dict = {"exact": suggestion.strip() == case.expected.strip(), "lines": (first, last)}
    try:
        undefined = [name for line, name in _pyflakes_undefined(filled) if first <= line <= last]
        parsed = True
    except SyntaxError:
        undefined, parsed = [], False
    names = api_names(case.meta["corpus"])
    unknown = sorted({m for m in re.findall(r"(?<![\w.])T\s*\.\s*([A-Za-z_]\w*)", suggestion) if m not in names})
    ghosts = sorted(set(undefined)) + [f"T.{m}" for m in unknown]
    details.update(undefined=sorted(set(undefined)), unknown_members=unknown)
    return OracleResult(parsed=parsed, ghosts=ghosts, passed=parsed and not ghosts, details=details)
