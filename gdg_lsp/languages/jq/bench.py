"""jq holes and their oracle: jq's own test programs, run with jq on their inputs.

Holes: the programs of jq's test suite (``corpus/jq/jqlang/jq/tests/jq.test``:
program, input, expected outputs; see corpus/jq/SOURCES.md) that read a
field of an object input, cut right after the ``.`` of the first such field
step, where a field name must come (where an invented one yields a silent
null). The document is a ``.jq`` file holding the program up to the cut, with
the input beside it as the ``.json`` of the same name (the analyzer's
same-stem rule); the expected text is the rest of the program.

Oracle (the ``jq`` package, nothing of the analyzer): the filled program must
compile (parsed) and give the test's expected outputs on the input (passed).
A ghost is a field the input has no key for: when the filled program is a
path expression, jq lists the paths it reads (``path(...)``) and each is
walked in the input; otherwise every ``.name`` the program spells must be a
key of some object of the input (jq: ``[.. | objects | keys[]]``).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from gdg_lsp.languages.cases import HoleCase, OracleResult, scratch_folder

LANGUAGE = "jq"
HERE_CORPUS = Path(__file__).resolve().parents[3] / "corpus"
_FIELD = re.compile(r'(?<![\w$.\]])\.([A-Za-z_][A-Za-z0-9_]*)')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_COMMENT = re.compile(r"#[^\n]*")


def test_file(corpus: Path) -> Path:
    for candidate in (Path(corpus) / "jq" / "jqlang" / "jq" / "tests" / "jq.test",
                      Path(corpus) / "jqlang" / "jq" / "tests" / "jq.test",
                      HERE_CORPUS / "jq" / "jqlang" / "jq" / "tests" / "jq.test"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no jq corpus under {corpus} or {HERE_CORPUS / 'jq'}")


def _run(program: str, data: Any) -> list[Any]:
    import jq  # the bench extra: the oracle's own jq

    return jq.compile(program).input_value(data).all()


def test_cases(path: Path) -> list[tuple[int, str, Any, list[Any]]]:
    """``(line, program, input, outputs)`` of the test file's passing, non-failing cases."""
    found = []
    lines = path.read_text(encoding="utf-8").split("\n")
    block: list[tuple[int, str]] = []
    for number, line in enumerate(lines + [""]):
        if line.strip() and not line.startswith("#"):
            block.append((number, line))
            continue
        if not line.strip() and block:
            if len(block) >= 2 and not block[0][1].startswith("%%"):
                try:
                    data = json.loads(block[1][1])
                    outputs = [json.loads(text) for _, text in block[2:]]
                except ValueError:
                    block = []
                    continue
                found.append((block[0][0] + 1, block[0][1], data, outputs))
            block = []
    return found


def _keys(data: Any) -> set[str]:
    found: set[str] = set()
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found.update(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return found


def _cut(program: str, data: Any) -> int | None:
    """Where the first field step whose key the input has begins."""
    keys = _keys(data)
    masked = _STRING.sub(lambda m: " " * len(m.group()), program)
    for match in _FIELD.finditer(masked):
        if match.group(1) in keys:
            return match.start()
    return None


def cut_holes(corpus: Path, n: int, seed: int) -> list[HoleCase]:
    source = test_file(Path(corpus))
    folder = scratch_folder("jq")
    cases = []
    for line, program, data, outputs in test_cases(source):
        if not isinstance(data, (dict, list)) or "\\(" in program:
            continue
        cut = _cut(program, data)
        if cut is None:
            continue
        try:
            if _run(program, data) != outputs or ghosts(program, data):
                continue  # answered differently by this jq, or testing a missing field on purpose: no fair gold
        except Exception:
            continue
        stem = folder / f"jq-test-{line:04d}"
        stem.with_suffix(".json").write_text(json.dumps(data), encoding="utf-8")
        document = program[: cut + 1]  # up to and with the field's dot
        stem.with_suffix(".jq").write_text(document + "\n", encoding="utf-8")
        cases.append(HoleCase(
            case_id=f"jq-test-{line:04d}", language=LANGUAGE, uri=stem.with_suffix(".jq").as_uri(),
            text=document, cursor=len(document), expected=program[cut + 1:],
            meta={"program": program, "input": data, "outputs": outputs, "workspace_roots": [str(folder)]},
        ))
    rng = random.Random(seed)
    rng.shuffle(cases)
    return sorted(cases[:n] if n else cases, key=lambda c: c.case_id)


def ghosts(program: str, data: Any) -> list[str]:
    """Fields ``program`` reads that ``data`` has no key for (see the module docstring)."""
    try:
        paths = _run(f"[path({program}\n)]", data)[0]  # the line break ends a comment the program ends with
    except Exception:
        paths = None
    if paths is not None:
        missing = []
        for path in paths:
            value = data
            for step in path:
                if isinstance(step, str):
                    if not isinstance(value, dict) or step not in value:
                        if isinstance(value, dict):
                            missing.append(step)
                        break
                    value = value[step]
                elif isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
                    value = value[step]
                else:
                    break
        return sorted(set(missing))
    keys = _keys(data)
    masked = _COMMENT.sub("", _STRING.sub(lambda m: " " * len(m.group()), program))
    return sorted({m.group(1) for m in _FIELD.finditer(masked) if m.group(1) not in keys})


def check(case: HoleCase, suggestion: str) -> OracleResult:
    program = case.text[: case.cursor] + suggestion.split("\n", 1)[0]
    data = case.meta["input"]
    details: dict[str, Any] = {"program": program}
    try:
        import jq

        jq.compile(program)
    except Exception as err:
        details["error"] = str(err)[:200]
        return OracleResult(parsed=False, ghosts=ghosts(program, data), passed=False, details=details)
    try:
        outputs = _run(program, data)
        details["outputs"] = outputs[:5]
        passed = outputs == case.meta["outputs"]
    except Exception as err:
        details["error"] = str(err)[:200]
        passed = False
    return OracleResult(parsed=True, ghosts=ghosts(program, data), passed=passed, details=details)


def workspace_for(case: HoleCase, args: Any = None) -> Any:
    from gdg_lsp.languages.base import WorkspaceContext

    return WorkspaceContext([Path(root) for root in case.meta["workspace_roots"]])
