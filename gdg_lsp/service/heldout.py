"""Held-out code of a language, for the gate of a fragment that claims that language's documents.

A taught language that takes over another language's documents (a claim the user granted in
``gdg.fragments.claims``) opens its holes in code of that other language. Its fragments are
then also judged against real code of it (``fragments.gate.against_language``), which comes
from the claim's ``corpus`` folder, or for Python from the standard library of the server's
own interpreter (real Python, always there, written by no workspace).

Files are read through the boundary of that folder: regular files whose real path lies
inside it, of the claimed language's suffixes, at most ``MAX_FILE_BYTES`` each and
``MAX_FILES`` in all (spread evenly over the folder's sorted files; links to folders are
not walked). From them come

- the *regions*: every place one of the fragment's triggers stands (where the hole would
  open), from the trigger to where the brackets it opened close on that line;
- the *other lines*: lines without a trigger, each written after the first trigger, as
  text the model would be let write there.

Each gets a Γ a hole there could have, from the taught language's own ``declare`` rules: a
region the names visible at its place, another line its file's top-level names. At most ``MAX_REGIONS`` and ``MAX_LINES`` are kept
(spread evenly over the files).
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp import boundary
from gdg_lsp.documents import Document
from gdg_lsp.fragments.gate import Positive
from gdg_lsp.gamma import Gamma
from gdg_lsp.languages import registry
from gdg_lsp.languages.generic.analyzer import GenericAnalyzer
from gdg_lsp.languages.generic.definition import Definition

MAX_FILES = 24
MAX_FILE_BYTES = 256 * 1024
MAX_WALKED = 5000
MAX_REGIONS = 60
MAX_LINES = 200
MAX_LINE_CHARS = 200


@dataclass(frozen=True)
class Heldout:
    language: str
    source: str
    """The folder, as messages show it."""
    documents: tuple[tuple[str, str], ...]
    """(file name, text)."""


def default_folder(language: str) -> Path | None:
    if language == "python":
        return Path(sysconfig.get_paths()["stdlib"])
    return None


def read(language: str, corpus: str = "") -> Heldout:
    """The held-out code of ``language`` in ``corpus`` (default: ``default_folder``, its top level
    only). Raises ``ValueError`` with the reason when there is none."""
    folder = Path(os.path.expanduser(corpus)) if corpus else default_folder(language)
    if folder is None:
        raise ValueError(f"there is no held-out {language} code to gate the fragments on: name a folder of it "
                         f"as the claim's \"corpus\" in gdg.fragments.claims")
    if not folder.is_dir():
        raise ValueError(f"the held-out {language} folder {folder} is not a folder")
    suffixes = set(registry.spec(language).extensions)
    fence = boundary.Boundary.of([folder])
    found: list[Path] = []
    for where, subfolders, files in os.walk(folder):  # links to folders are not followed
        subfolders[:] = sorted(subfolders) if corpus else []  # the standard library's own modules, not its tests
        found += [Path(where) / name for name in sorted(files) if Path(name).suffix.lower() in suffixes]
        if len(found) >= MAX_WALKED:
            break
    step = max(1, len(found) // MAX_FILES)
    documents = []
    for path in found[::step][:MAX_FILES]:
        try:
            documents.append((path.name, fence.read(path, MAX_FILE_BYTES).decode("utf-8")))
        except (boundary.Refused, UnicodeDecodeError):
            continue
    if not documents:
        raise ValueError(f"no {language} file could be read in {folder}")
    return Heldout(language, str(folder), tuple(documents))


def probes(heldout: Heldout, definition: Definition,
           triggers: Sequence[str]) -> tuple[list[Positive], list[Positive]]:
    """(regions at ``triggers``, other lines after the first trigger), each with the Γ the taught
    language's declarations give where it starts."""
    analyzer = GenericAnalyzer(definition)
    regions: list[tuple[str, int, str]] = []
    lines: list[tuple[str, int, str]] = []
    snapshots = {}
    for name, text in heldout.documents:
        snapshots[name] = Document(f"file:///heldout/{name}", heldout.language, 0, text, None).snapshot()
        offset = 0
        for number, line in enumerate(text.split("\n"), 1):
            code = line.split("#", 1)[0] if heldout.language == "python" else line
            starts = [(at, t) for t in triggers if (at := code.find(t)) >= 0]
            if starts:
                at, trigger = min(starts)
                if (region := _region(line[at:], trigger)) is not None:
                    regions.append((name, offset + at, region))
            elif triggers and code.strip() and len(code.strip()) <= MAX_LINE_CHARS:
                lines.append((name, offset + len(line) - len(line.lstrip()), triggers[0] + code.strip()))
            offset += len(line) + 1

    top_level: dict[str, Gamma] = {}

    def positives(found: list[tuple[str, int, str]], most: int, where_it_is: bool) -> list[Positive]:
        step = max(1, len(found) // most)
        out = []
        for name, at, probe in found[::step][:most]:
            snapshot = snapshots[name]
            if where_it_is:
                gamma = analyzer.declared_gamma(snapshot, at)
            elif (gamma := top_level.get(name)) is None:
                gamma = top_level[name] = analyzer.declared_gamma(snapshot, len(snapshot.text))
            out.append(Positive(probe, gamma, where=f"{name}:{snapshot.text.count(chr(10), 0, at) + 1}"))
        return out

    # a region is judged with the Γ at its place (it must fit there); another line with its file's
    # top-level Γ: one grammar per file to compile, not one per line
    return positives(regions, MAX_REGIONS, True), positives(lines, MAX_LINES, False)


def _region(text: str, trigger: str) -> str | None:
    """``text`` from the trigger to where the brackets the trigger opened close (None: not on this line)."""
    opened = sum(trigger.count(c) for c in "([{") - sum(trigger.count(c) for c in ")]}")
    if opened <= 0:
        return text.rstrip() or None
    depth = opened
    for index in range(len(trigger), len(text)):
        depth += text[index] in "([{"
        depth -= text[index] in ")]}"
        if depth == 0:
            return text[: index + 1]
    return None
