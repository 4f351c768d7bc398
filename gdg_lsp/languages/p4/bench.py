"""P4-16 benchmark holes and an independent name checker.

``cut_holes`` removes one statement line from a program of the corpus (a
statement in an action, apply block, function or parser state that names at
least one thing) and puts the cursor where it started. ``check`` scans the
suggestion for identifiers and reports those that are neither keywords, nor
built-in members, nor declared anywhere in the filled document or its
includes. The declared names come from this module's own textual scan of
declarations (headers, structs, fields, parameters, locals, actions, tables,
states, enum members, errors, match kinds, externs and their methods,
macros), not from the analyzer's Γ, so a bug in Γ cannot hide a ghost.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from pathlib import Path

import attrs

from gdg_lsp.languages.cases import HoleCase, OracleResult
from gdg_lsp.settings import P4Settings, Settings

LANGUAGE = "p4"

KEYWORDS = frozenset({
    "abstract", "action", "actions", "apply", "bit", "bool", "const", "control", "default", "else",
    "entries", "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in", "inout",
    "int", "key", "list", "match_kind", "out", "package", "parser", "priority", "return", "select",
    "state", "string", "struct", "switch", "table", "this", "transition", "true", "tuple", "type",
    "typedef", "value_set", "varbit", "void",
})
BUILTIN_NAMES = frozenset({
    # parser states every parser has, header and stack operations, a table's apply result
    "accept", "reject", "isValid", "setValid", "setInvalid", "push_front", "pop_front", "next", "last",
    "lastIndex", "nextIndex", "size", "hit", "miss", "action_run", "minSizeInBits", "minSizeInBytes",
    "maxSizeInBits", "maxSizeInBytes",
    # table properties
    "default_action", "counters", "meters", "implementation", "support_timeout",
})

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_NUMBER = re.compile(r"\b(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*)\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)", re.MULTILINE)
_TYPE = r"(?:(?:bit|int|varbit)\s*<[^<>;]*>|[A-Za-z_]\w*(?:\s*<[^;{}()]*?>)?)(?:\s*\[[^\]]*\])?"
_NAMED_DECL = re.compile(
    r"\b(?:header|header_union|struct|control|parser|package|action|table|state|extern)\s+"
    r"(?:[A-Za-z_]\w*\s*(?:<[^<>]*>\s*)?\s+(?=[A-Za-z_]\w*\s*[<(]))?([A-Za-z_]\w*)"
)
_ENUM = re.compile(r"\benum\s+(?:(?:bit|int)\s*<[^>]*>\s*|[A-Za-z_]\w*\s+(?=[A-Za-z_]\w*\s*\{))?([A-Za-z_]\w*)\s*\{([^}]*)\}")
_LIST = re.compile(r"\b(?:error|match_kind)\s*\{([^}]*)\}")
_TYPEDEF = re.compile(rf"\b(?:typedef|type)\s+{_TYPE}\s+([A-Za-z_]\w*)\s*;")
_TYPED_NAME = re.compile(rf"(?<![.\w])({_TYPE})\s+([A-Za-z_]\w*)\s*(?=[;,)=])")
_INSTANCE = re.compile(r"\)\s*([A-Za-z_]\w*)\s*;")
_FUNCTION = re.compile(rf"(?<![.\w])({_TYPE})\s+([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*\(")
_TYPE_WORDS = frozenset({"bit", "int", "varbit", "bool", "error", "string", "void"})
_TYPE_PARAMS = re.compile(r"\b[A-Za-z_]\w*\s*<\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*>\s*[({]")
_STATEMENT_LINE = re.compile(r"^([ \t]+)(\S.*;)[ \t]*$")
_OPERAND = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?![\w(])")
"""A name or a path an inside hole removes (a callee keeps its name: ``f(`` is not cut)."""
_CLOSERS = re.compile(r"[\s)\];,}]*")


def _code(text: str) -> str:
    return _STRING.sub('""', _COMMENT.sub(" ", text))


def declared_names(text: str) -> set[str]:
    """Names that ``text`` declares, by a textual scan of declaration forms."""
    code = _code(text)
    names: set[str] = set(_DEFINE.findall(code))
    code = re.sub(r"^\s*#[^\n]*", " ", code, flags=re.MULTILINE)
    code = re.sub(r"@\w+(\s*\((?:[^()]|\([^()]*\))*\))?", " ", code)
    names.update(_NAMED_DECL.findall(code))
    for name, body in _ENUM.findall(code):
        names.add(name)
        names.update(m.group(0) for m in re.finditer(r"(?<![=\w])[A-Za-z_]\w*", re.sub(r"=[^,]*", "", body)))
    for body in _LIST.findall(code):
        names.update(_IDENT.findall(body))
    names.update(_TYPEDEF.findall(code))
    for regex in (_TYPED_NAME, _FUNCTION):
        for type_text, name in regex.findall(code):
            word = _IDENT.match(type_text.strip())
            # `return x;`, `transition s;`, `exit;` are not declarations of x, s
            if word and (word.group() not in KEYWORDS or word.group() in _TYPE_WORDS):
                names.add(name)
    names.update(_INSTANCE.findall(code))
    for group in _TYPE_PARAMS.findall(code):
        names.update(p.strip() for p in group.split(","))
    # constructors of externs are named after the extern (already declared)
    return {n for n in names if n not in KEYWORDS}


def identifiers(snippet: str) -> list[str]:
    """Identifiers a suggestion uses (numbers, strings, comments and annotations removed)."""
    code = _code(snippet)
    code = re.sub(r"@\w+(\s*\((?:[^()]|\([^()]*\))*\))?", " ", code)
    code = _NUMBER.sub(" ", code)
    return _IDENT.findall(code)


def _includes(text: str, folder: Path | None, include_paths: Iterable[str], seen: set[Path]) -> str:
    out = []
    for name in _INCLUDE.findall(text):
        for base in [*( [folder] if folder else []), *(Path(p) for p in include_paths)]:
            candidate = (base / name)
            if candidate.is_file():
                resolved = candidate.resolve()
                if resolved in seen:
                    break
                seen.add(resolved)
                included = resolved.read_text(encoding="utf-8", errors="replace")
                out.append(included)
                out.append(_includes(included, resolved.parent, include_paths, seen))
                break
    return "\n".join(out)


def _p4_folder(corpus: Path) -> Path:
    return corpus / "p4" if (corpus / "p4").is_dir() else corpus


def _statement_lines(text: str, kinds: frozenset[str] | None = None) -> list[tuple[int, int, str, str]]:
    """(line start, cursor, indentation, statement) of one-line statements in blocks of ``kinds``
    (default: bodies)."""
    # (choosing where to cut uses the server's block reader; judging a suggestion does not)
    from gdg_lsp.languages.p4.blocks import STATEMENT_BLOCKS, BlockScanner
    from gdg_lsp.languages.p4.preprocess import preprocess

    kinds = STATEMENT_BLOCKS if kinds is None else kinds
    code = preprocess(text).code
    scanner = BlockScanner(code)
    out = []
    pos = 0
    for line in text.splitlines(keepends=True):
        m = _STATEMENT_LINE.match(line.rstrip("\n"))
        if m and code[pos : pos + len(line)].strip() == line.strip():
            blocks = scanner.context(pos + len(m.group(1)))
            inner = blocks.innermost
            stmt = m.group(2)
            if (inner is not None and inner.kind in kinds and stmt.count("(") == stmt.count(")")
                    and any(w not in KEYWORDS for w in identifiers(stmt))):
                out.append((pos, pos + len(m.group(1)), m.group(1), stmt))
        pos += len(line)
    return out


def cut_holes(corpus: Path, n: int, seed: int, kinds: frozenset[str] | None = None,
              inside: bool = False) -> list[HoleCase]:
    """Statement lines emptied from where the statement starts; ``inside``: one operand of the
    statement (a name or a path with more than closers after it) removed instead, the rest of
    the line kept after the cursor."""
    folder = _p4_folder(Path(corpus))
    files = sorted(p for p in folder.rglob("*.p4") if "include" not in p.relative_to(folder).parts)
    include = folder / "include"
    rng = random.Random(seed)
    per_file: list[list[HoleCase]] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        cases = []
        for line_start, cursor, indent, stmt in _statement_lines(text, kinds):
            line_no = text.count("\n", 0, line_start) + 1
            line_end = text.find("\n", cursor)
            line_end = len(text) if line_end < 0 else line_end
            meta = {"file": str(path), "line": line_no, "include_paths": [str(include)] if include.is_dir() else []}
            cut = (cursor, line_end)
            if inside:
                spans = [m.span() for m in _OPERAND.finditer(stmt) if m.group() not in KEYWORDS
                         and not _CLOSERS.fullmatch(stmt[m.end():])]
                if not spans:
                    continue
                at, to = spans[rng.randrange(len(spans))]
                cut = (cursor + at, cursor + to)
                meta.update(midline=True, rest=stmt[to:])
            cases.append(HoleCase(
                case_id=f"{path.relative_to(folder)}:{line_no}{':in' if inside else ''}", language=LANGUAGE,
                uri=path.resolve().as_uri(), text=text[: cut[0]] + text[cut[1] :], cursor=cut[0],
                expected=text[cut[0] : line_end].rstrip() if inside else stmt, meta=meta,
            ))
        rng.shuffle(cases)
        if cases:
            per_file.append(cases)
    rng.shuffle(per_file)
    chosen: list[HoleCase] = []
    while len(chosen) < n and any(per_file):
        for cases in per_file:
            if cases and len(chosen) < n:
                chosen.append(cases.pop())
    return chosen


def cut_inside_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Holes inside a statement (``--holes inside``): an operand removed, the rest of the line kept."""
    return cut_holes(corpus, n, seed, inside=True)


def cut_continuation_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    """Holes inside a list of a table: a key element's line (``hdr.ipv4.dstAddr : lpm;``)
    emptied, the cursor where it started, the other elements and the closing brace kept."""
    return cut_holes(corpus, n, seed, frozenset({"key"}))


def settings_for(case: HoleCase, settings: Settings) -> Settings:
    """The corpus keeps core.p4 and v1model.p4 in ``p4/include``: the runner's
    requests search it as a user's ``gdg.p4.includePaths`` would make them."""
    return attrs.evolve(settings, p4=P4Settings(include_paths=list(case.meta["include_paths"])))


def check(case: HoleCase, suggestion: str) -> OracleResult:
    """``suggestion``: the line from the cursor on once the item is accepted (for a mid-line hole,
    the middle and the rest of the line the runner applied it before)."""
    after = case.text[case.cursor :]
    if case.meta.get("midline"):
        after = after[len(case.meta["rest"]) :]
    filled = case.text[: case.cursor] + suggestion + after
    folder = Path(case.meta["file"]).parent if case.meta.get("file") else None
    library = _includes(filled, folder, case.meta.get("include_paths", ()), set())
    declared = declared_names(filled) | declared_names(library)
    ghosts = [w for w in identifiers(suggestion) if w not in KEYWORDS and w not in BUILTIN_NAMES and w not in declared]
    line = suggestion.strip()
    if case.meta.get("midline"):  # the whole line: its brackets opened before the cursor count
        line = filled[filled.rfind("\n", 0, case.cursor) + 1 :].split("\n", 1)[0].strip()
    balanced = line.count("(") == line.count(")") and line.count("[") == line.count("]")
    parsed = bool(line) and balanced and line.endswith((";", "{"))
    return OracleResult(parsed=parsed, ghosts=ghosts, passed=parsed and not ghosts,
                        details={"declared": len(declared)})
