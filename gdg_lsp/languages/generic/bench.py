"""Bench cases for a language taught by fragment files (``gdg-lsp bench quality --fragments``).

Holes: every place a fragment's trigger opens in the corpus (``tl.load(`` in a
Triton kernel), on one line, the rest of the region removed; the expected text is
what the file had from the cursor to the region's closing bracket.

Oracle, independent of Γ: the filled document must parse with the language's
tree-sitter grammar; a *ghost* is a name the suggestion references (not after a
dot, not a keyword argument's name, not a keyword or builtin) that occurs nowhere
else in the document, and, for Python-syntax languages, any name pyflakes
reports undefined on the hole's line.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import tree_sitter

from gdg_lsp.languages import registry
from gdg_lsp.languages.cases import HoleCase, OracleResult
from gdg_lsp.languages.generic.definition import Definition, load_grammar

_NAME = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"])")


def plugin_for(definition: Definition) -> GenericBench:
    return GenericBench(definition)


def _region_end(text: str, start: int) -> int | None:
    """The offset after the bracket that closes the one open at ``start`` (same line), else None."""
    depth = 0
    for index in range(start, len(text)):
        ch = text[index]
        if ch == "\n":
            return None
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return index + 1
    return None


class GenericBench:
    def __init__(self, definition: Definition) -> None:
        self.definition = definition
        self._parser = tree_sitter.Parser(load_grammar(definition.tree_sitter))

    def corpus_files(self, corpus: Path) -> list[Path]:
        d = self.definition
        suffixes = set(d.extensions)
        if d.claims is not None:
            suffixes |= set(registry.spec(d.claims[0]).extensions)
        out = []
        for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix.lower() in suffixes):
            text = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix.lower() in d.extensions or (d.claims and any(m in text for m in d.claims[1])):
                out.append(path)
        return out

    def cut_holes(self, corpus: Path, n: int, seed: int) -> list[HoleCase]:
        """Up to ``n`` holes, round-robin over the triggers (deterministic for ``seed``)."""
        by_trigger: dict[str, list[HoleCase]] = {}
        for path in self.corpus_files(corpus):
            text = path.read_text(encoding="utf-8")
            for trigger in self.definition.triggers:
                for m in re.finditer(re.escape(trigger.text), text):
                    if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "_."):
                        continue  # part of a longer name
                    cursor = m.end()
                    end = _region_end(text, cursor)
                    line = text.count("\n", 0, cursor) + 1
                    if end is None or text[text.rfind("\n", 0, m.start()) + 1:m.start()].lstrip().startswith("#"):
                        continue
                    rel = path.relative_to(corpus)
                    by_trigger.setdefault(trigger.text, []).append(HoleCase(
                        case_id=f"{rel}:{line}:{m.start() - text.rfind(chr(10), 0, m.start())}",
                        language=self.definition.name, uri=path.resolve().as_uri(),
                        text=text[:cursor] + text[end:], cursor=cursor, expected=text[cursor:end],
                        meta={"category": trigger.fragment, "line": line, "file": str(rel)}))
        rng = random.Random(seed)
        for cases in by_trigger.values():
            rng.shuffle(cases)
        picked: list[HoleCase] = []
        while len(picked) < n and any(by_trigger.values()):
            for key in sorted(by_trigger):
                if by_trigger[key] and len(picked) < n:
                    picked.append(by_trigger[key].pop())
        return picked

    def check(self, case: HoleCase, suggestion: str) -> OracleResult:
        filled = case.text[:case.cursor] + suggestion + case.text[case.cursor:]
        parsed = bool(suggestion.strip()) and not self._parser.parse(filled.encode("utf-8")).root_node.has_error
        d = self.definition
        known = set(d.keywords) | set(d.builtins)
        elsewhere = set(re.findall(r"[A-Za-z_]\w*", case.text))
        unseen = {m.group(1) for m in _NAME.finditer(suggestion)
                  if not re.match(r"\s*=(?!=)", suggestion[m.end():])  # a keyword argument's name
                  and m.group(1) not in known and m.group(1) not in elsewhere}
        undefined: list[str] = []
        if parsed and d.tree_sitter == "tree-sitter-python":
            from gdg_lsp.languages.python.bench import pyflakes_undefined

            first = case.text.count("\n", 0, case.cursor) + 1
            last = first + suggestion.count("\n")
            written = {m.group(1) for m in _NAME.finditer(suggestion)}  # not the trigger's own names
            undefined = [name for line, name in pyflakes_undefined(filled) if first <= line <= last and name in written]
        ghosts = sorted(unseen | set(undefined))
        return OracleResult(parsed=parsed, ghosts=ghosts, passed=parsed and not ghosts,
                            details={"exact": suggestion.strip() == case.expected.strip(), "undefined": undefined,
                                     "unseen": sorted(unseen)})
