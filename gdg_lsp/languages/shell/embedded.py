"""jq programs inside shell scripts: ``jq -r '.items[] | .name' data.json``.

The program is jq's first positional argument (after its options; two words
follow ``--arg``/``--argjson``/``--slurpfile``/``--rawfile``, one follows
``--indent``/``-L``; with ``-f`` the program comes from a file and there is
none on the line). It is handed to the jq analyzer as a region of the shell
document, with the JSON files named after it as the input and the
``--arg``/``--argjson`` names as variables. Only single-quoted programs are
taken: inside double quotes ``$`` and backslashes belong to the shell.
"""

from __future__ import annotations

from dataclasses import dataclass

from gdg_lsp.languages.shell.line import LineWord

TWO_VALUES = frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile"})
ONE_VALUE = frozenset({"--indent", "-L", "--seq-sep"})
PROGRAM_FROM_FILE = frozenset({"-f", "--from-file"})
VARIABLE_OPTIONS = frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile"})


@dataclass(frozen=True)
class EmbeddedProgram:
    start: int
    """Offset of the program's first character (after the opening quote)."""
    end: int
    """Offset of its closing quote (or of the end of the line when it is not closed yet)."""
    closed: bool
    files: tuple[str, ...]
    """Static words after the program: the input files."""
    variables: tuple[str, ...]
    """``$name`` for each ``--arg name value`` and the like."""


def jq_program(words: list[LineWord]) -> EmbeddedProgram | None:
    """The program of a ``jq`` command given its words (the first is ``jq``)."""
    if not words or words[0].raw != "jq":
        return None
    i = 1
    variables: list[str] = []
    while i < len(words):
        raw = words[i].raw
        if raw in PROGRAM_FROM_FILE:
            return None
        if raw in TWO_VALUES:
            if raw in VARIABLE_OPTIONS and i + 1 < len(words):
                variables.append("$" + words[i + 1].raw.strip("'\""))
            i += 3
            continue
        if raw in ONE_VALUE:
            i += 2
            continue
        if raw.startswith("-") and raw != "-":
            i += 1
            continue
        break
    if i >= len(words) or not words[i].raw.startswith("'"):
        return None
    program = words[i]
    closed = program.open_quote is None and len(program.raw) >= 2 and program.raw.endswith("'")
    end = program.end - 1 if closed else program.end
    files = tuple(w.raw for w in words[i + 1:] if not w.operator and not w.raw.startswith(("-", "$", "<", ">"))
                  and "'" not in w.raw and '"' not in w.raw)
    return EmbeddedProgram(program.start + 1, end, closed, files, tuple(variables))
