"""``gdg-lsp induce`` and ``gdg-lsp gate``: corpus regions, Γ at each, the inductor and the gate.

The pieces live below (fragments/induce.py, fragments/gate.py, the engine
adapter grammar/fragment_engine.py); this module finds the regions of a hole
kind in a corpus with the language's own parser, asks the language's own
analyzer for Γ where each region starts (the Γ a user typing that region
would have), and reports.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gdg_lsp import boundary, languages
from gdg_lsp.documents import Document
from gdg_lsp.errors import GdgError
from gdg_lsp.fragments import fileformat, gate, induce
from gdg_lsp.fragments.antiunify import term_of
from gdg_lsp.fragments.fileformat import FragmentFile
from gdg_lsp.grammar.fragment_engine import FragmentEngine, byte_engine, token_engine
from gdg_lsp.languages import registry
from gdg_lsp.languages.base import Analyzer, Hole, WorkspaceContext
from gdg_lsp.languages.generic.analyzer import GenericAnalyzer
from gdg_lsp.languages.generic.definition import Definition

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 2 * 1024 * 1024


@dataclass
class Regions:
    sites: list[induce.Site] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def syntax_for(analyzer: Analyzer) -> induce.Syntax:
    """What the inductor needs about the language's trees."""
    if isinstance(analyzer, GenericAnalyzer):
        d = analyzer.definition
        return induce.Syntax(frozenset(d.identifiers), frozenset(d.not_references), tuple(d.keywords),
                             frozenset(d.atoms))
    if analyzer.name in ("python", "tilelang"):
        return induce.PYTHON_SYNTAX
    return induce.Syntax(keywords=tuple(sorted(analyzer.keywords)))


def corpus_files(corpus: Path | Sequence[Path], language: str) -> list[Path]:
    """The files under ``corpus`` (folders or files) that are documents of ``language``
    (by suffix, or claimed by content: TileLang's and Triton's Python files). Only regular
    files whose real path lies inside the folder named (a file named alone: inside its own
    folder) are read: a link out of the corpus is left out, and said."""
    roots = [corpus] if isinstance(corpus, Path) else list(corpus)
    spec = registry.spec(language)
    suffixes = set(spec.extensions)
    if spec.claims is not None:
        suffixes |= set(registry.spec(spec.claims[0]).extensions)
    out = []
    for root in roots:
        folder = root if root.is_dir() else root.parent
        candidates = sorted(root.rglob("*")) if root.is_dir() else [root]  # links to folders are not walked
        for path in candidates:
            if path.suffix.lower() not in suffixes:
                continue
            try:
                text = read_text(path, folder)
            except boundary.Refused as err:
                if not path.is_dir():
                    log.warning("%s", err)
                continue
            except UnicodeDecodeError:
                continue
            base = registry.for_path(path).name if path.suffix.lower() in registry.builtin_extensions() \
                or any(path.suffix.lower() in s.extensions for s in registry.registered()) else language
            if registry.resolve(base, text).name == language:
                out.append(path)
    return out


def read_text(path: Path, folder: Path) -> str:
    """``path``'s text when its real path is a regular file inside ``folder`` and at most
    ``MAX_FILE_BYTES``; ``boundary.Refused`` otherwise."""
    fence = boundary.Boundary.of([folder])
    if not fence.allows(path):
        raise boundary.Refused(f"{path} leads to {boundary.real(path)}, outside the corpus folder {folder} (not read)")
    return fence.read(path, MAX_FILE_BYTES).decode("utf-8")


def admitted_text(path: Path) -> str:
    """The text of a file ``corpus_files`` admitted, read where it leads (a regular file, bounded)."""
    return boundary.read_bounded(boundary.real(path), MAX_FILE_BYTES, shown=str(path)).decode("utf-8")


def parse_kind(kind: str) -> tuple[str, str]:
    node_type, _, prefix = kind.partition(":")
    if not node_type:
        raise GdgError(f"hole kind {kind!r}: expected NODE_TYPE or NODE_TYPE:PREFIX (e.g. call:tl.load()")
    return node_type, prefix


def collect(files: Iterable[Path], language: str, kind: str, workspace: WorkspaceContext | None = None) -> Regions:
    """Every region of ``kind`` in ``files``, each with the Γ where it starts."""
    node_type, prefix = parse_kind(kind)
    analyzer = languages.analyzer(language)
    parser = analyzer.parser()
    if parser is None:
        raise GdgError(f"{language} is not parsed with tree-sitter: induce needs tree-sitter regions")
    syntax = syntax_for(analyzer)
    regions = Regions()
    workspace = workspace or WorkspaceContext()
    wanted = prefix.encode("utf-8")
    for path in files:
        text = admitted_text(path)
        source = text.encode("utf-8", "surrogatepass")
        tree = parser(source, None)
        if not hasattr(tree, "root_node"):
            raise GdgError(f"{language}'s parser does not give tree-sitter trees: induce needs them")
        regions.files.append(path)
        stack = [tree.root_node]
        innermost: dict[int, Any] = {}  # start byte -> the smallest matching node starting there
        while stack:
            node = stack.pop()
            if node.type == node_type and source[node.start_byte:node.end_byte].startswith(wanted):
                # `tl.load(p).to(t)` is a call starting with `tl.load(` too: the region is the inner one
                known = innermost.get(node.start_byte)
                if known is None or node.end_byte - node.start_byte < known.end_byte - known.start_byte:
                    innermost[node.start_byte] = node
            stack.extend(reversed(node.children))
        found = [innermost[k] for k in sorted(innermost)]
        for node in found:
            where = f"{path.name}:{node.start_point[0] + 1}"
            if node.has_error:
                regions.skipped.append(f"{where}: does not parse")
                continue
            term = term_of(node, source, atoms=syntax.atoms, fixed_end=node.start_byte + len(wanted))
            start = len(source[: node.start_byte].decode("utf-8", "replace"))
            end = len(source[: node.end_byte].decode("utf-8", "replace"))
            gamma = site_gamma(analyzer, text, path.resolve().as_uri(), language, start, end, workspace)
            regions.sites.append(induce.Site(where, term, gamma, str(path)))
    return regions


def site_gamma(analyzer: Analyzer, text: str, uri: str, language: str, start: int, end: int,
               workspace: WorkspaceContext) -> Any:
    """Γ where a region starts, as a user typing the region would have it: the region
    removed, the cursor where it began (the generic analyzer ignores its line anyway)."""
    if isinstance(analyzer, GenericAnalyzer):  # its holes read the declared names (not a claimed language's Γ)
        return analyzer.declared_gamma(Document(uri, language, 0, text, analyzer.parser()).snapshot(), start)
    cut = text[:start] + text[end:]
    snapshot = Document(uri, language, 0, cut, analyzer.parser()).snapshot()
    hole = analyzer.hole_at(snapshot, start, workspace)
    return hole.gamma if isinstance(hole, Hole) else analyzer.gamma_at(snapshot, start, workspace)


def positives(regions: Regions, contexts: set[tuple[str, str]], syntax: induce.Syntax,
              keep: Callable[[int], bool] = lambda i: True) -> list[gate.Positive]:
    out = []
    for index, site in enumerate(regions.sites):
        if keep(index):
            refs = induce.references(site, contexts, syntax.identifiers)
            out.append(gate.Positive(site.text, site.gamma, dict(site.context),
                                     tuple((r.start, r.end, r.name) for r in refs), site.where))
    return out


def coverage(fragment: Any, sites: Sequence[induce.Site], engine: FragmentEngine, rung: str | None = None) -> tuple[int, int]:
    """(regions the fragment accepts with their own Γ at ``rung``, regions); by default at
    its loosest guaranteed rung (gamma), where π lands when nothing tighter fits."""
    from gdg_lsp.errors import GammaEmptyError, GrammarError
    from gdg_lsp.fragments.instantiate import instantiate

    rung = rung or ([r for r in fragment.rungs if r != "base"] or ["base"])[-1]
    accepted = 0
    for site in sites:
        try:
            compiled = engine.compile(instantiate(fragment, rung, site.gamma, site.context).text)
        except (GammaEmptyError, GrammarError):
            continue
        accepted += engine.full_match(compiled, site.text)
    return accepted, len(sites)


def default_tokens() -> FragmentEngine | None:
    """The default model's vocabulary (for free_bits), or None when it is not installed."""
    try:
        from transformers import AutoTokenizer

        from gdg_lsp.backends import models
        from gdg_lsp.vocab import HFVocabulary

        spec = models.resolve("default")
        converted = models.cached_conversion(spec)
        models._offline()
        if converted is not None and (converted / "tokenizer.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
        return token_engine(HFVocabulary(tokenizer))
    except Exception as err:  # no default model installed: free_bits are skipped, and said so
        log.warning("free_bits skipped: the default model's tokenizer is not available (%s)", err)
        return None


def digest(files: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.name.encode())
        h.update(admitted_text(path).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]


@dataclass
class InduceResult:
    induction: induce.Induction
    report: gate.GateReport
    coverage: tuple[int, int]
    heldout: tuple[int, int] | None
    written: Path | None
    skipped: list[str]

    def lines(self) -> list[str]:
        ind = self.induction
        accepted, total = self.coverage
        lines = [f"regions: {len(ind.sites)} in {len({s.file for s in ind.sites})} files, "
                 f"{len(ind.clusters)} skeleton(s), {len(ind.file.fragment.slots)} reference slot(s)",
                 f"coverage: {accepted}/{total} regions of this kind accepted at gamma "
                 f"({accepted / total:.1%})" if total else "coverage: no regions"]
        if self.heldout is not None:
            h_acc, h_total = self.heldout
            lines.append(f"held-out coverage: {h_acc}/{h_total}" + (f" ({h_acc / h_total:.1%})" if h_total else ""))
        if ind.unresolved:
            lines.append(f"unresolved (a name at a reference position that Γ lacks): {len(ind.unresolved)} region(s), e.g. "
                         + "; ".join(f"{ind.sites[i].where} {names}" for i, names in list(ind.unresolved.items())[:3]))
        lines += [f"skipped: {s}" for s in self.skipped[:5]]
        lines += self.report.lines()
        lines.append(f"wrote {self.written}" if self.written else "not written: the gate did not pass")
        return lines


def run_induce(corpus: Sequence[Path], language: str, kind: str, output: Path | None, *, name: str | None = None,
               triggers: Sequence[str] = (), heldout: Sequence[Path] = (), exclude: Sequence[str] = (),
               proposer: induce.Proposer | None = None, tokens: FragmentEngine | None = None,
               min_rejection: float = 0.99, language_table: Any = None, command: str = "",
               workspace: WorkspaceContext | None = None) -> InduceResult:
    files = [f for f in corpus_files(list(corpus), language) if not any(fnmatch.fnmatch(f.name, g) for g in exclude)]
    if not files:
        raise GdgError(f"no {language} files under {', '.join(map(str, corpus))}")
    regions = collect(files, language, kind, workspace)
    if not regions.sites:
        raise GdgError(f"no region of kind {kind!r} in {len(files)} {language} files")
    analyzer = languages.analyzer(language)
    syntax = syntax_for(analyzer)
    node_type, prefix = parse_kind(kind)
    triggers = tuple(triggers) or ((prefix,) if prefix else ())
    fragment_name = name or (prefix.rstrip("(").split(".")[-1] if prefix else node_type)
    fragment_name = "".join(c if c.isalnum() or c in "_-" else "_" for c in fragment_name) or "fragment"
    options = induce.Options(language, fragment_name, kind, triggers, anchor=fragment_name.title().replace("_", ""),
                             description=f"induced from {len(regions.sites)} `{kind}` regions",
                             language_table=language_table)
    ind = induce.induce(regions.sites, syntax, options, proposer)
    resolved = set(ind.positives)
    gate_positives = positives(regions, ind.reference_contexts, syntax, keep=lambda i: i in resolved)
    engine = byte_engine()
    report = gate.run(ind.file.fragment, gate_positives, engine, keywords=syntax.keywords,
                      min_rejection=min_rejection, free_bits_engine=tokens)
    cover = coverage(ind.file.fragment, regions.sites, engine)
    held = None
    if heldout:
        held_files = corpus_files(list(heldout), language)
        held_regions = collect(held_files, language, kind, workspace)
        held = coverage(ind.file.fragment, held_regions.sites, engine)
    provenance = {
        "source": "induced",
        "command": command,
        "corpus": {"files": [f.name for f in files], "sha256": digest(files), "regions": len(regions.sites)},
        "proposer": type(proposer).__name__ if proposer else "StructuralProposer",
        "coverage": f"{cover[0]}/{cover[1]}",
        **({"heldout_coverage": f"{held[0]}/{held[1]}"} if held else {}),
        "unresolved": len(ind.unresolved),
        "gate": report.summary(),
    }
    ind.file = FragmentFile(ind.file.fragment, ind.file.template, ind.file.hole, ind.file.examples,
                            ind.file.language_table, provenance)
    written = None
    if report.passed and output is not None:
        header = (f"Induced by `gdg-lsp induce` from {len(files)} {language} files ({kind}).\n"
                  "Format, gate and ladder: docs/fragments.md. Edit freely; `gdg-lsp gate` re-checks it.")
        text = fileformat.dumps(ind.file, header)
        fileformat.parse(text, str(output))  # what is written must read back
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        written = output
    return InduceResult(ind, report, cover, held, written, regions.skipped)


@dataclass
class GateResult:
    report: gate.GateReport
    coverage: tuple[int, int] | None

    def lines(self) -> list[str]:
        lines = self.report.lines()
        if self.coverage is not None:
            accepted, total = self.coverage
            lines.append(f"coverage: {accepted}/{total} corpus regions accepted at gamma"
                         + (f" ({accepted / total:.1%})" if total else ""))
        return lines


def run_gate(ff: FragmentFile, corpus: Sequence[Path] = (), *, tokens: FragmentEngine | None = None,
             min_rejection: float = 0.99, workspace: WorkspaceContext | None = None) -> GateResult:
    """The gate on a fragment file: its examples, and the regions of its hole kind in ``corpus``."""
    pos = [gate.example_positive(e, ff.hole.triggers, f"example {i + 1}") for i, e in enumerate(ff.examples)]
    keywords: Sequence[str] = ()
    cover = None
    if corpus:
        if not ff.hole.kind:
            raise GdgError("the file has no [hole] kind: the corpus regions it should accept are unknown")
        files = corpus_files(list(corpus), ff.language)
        regions = collect(files, ff.language, ff.hole.kind, workspace)
        syntax = syntax_for(languages.analyzer(ff.language))
        keywords = syntax.keywords
        contexts = induce.reference_contexts(regions.sites, syntax)
        unresolved = {i for i, s in enumerate(regions.sites)
                      if any(r.binding is None for r in induce.references(s, contexts, syntax.identifiers))}
        pos += positives(regions, contexts, syntax, keep=lambda i: i not in unresolved)
        cover = coverage(ff.fragment, regions.sites, byte_engine())
    report = gate.run(ff.fragment, pos, byte_engine(), keywords=keywords, min_rejection=min_rejection,
                      free_bits_engine=tokens)
    return GateResult(report, cover)


def definition_of(language: str) -> Definition | None:
    spec = registry.spec(language)
    return spec.definition if isinstance(spec.definition, Definition) else None


class ModelProposer:
    """Ask a local model which merges of clusters are one construct (``--proposer``).

    For each candidate the model reads the two clusters' example regions and a
    question; the score is its probability of " yes" against " no". The model
    only ranks proposals: whatever it merges still has to pass the gate."""

    QUESTION = ("Two code regions from one project:\nA: {a}\nB: {b}\n"
                "Are A and B the same construct, differing only in the names and values they use? Answer yes or no.\n"
                "Answer:")

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        vocab = backend.vocab
        self._yes = vocab.encode(" yes").ids[0]
        self._no = vocab.encode(" no").ids[0]

    @classmethod
    def load(cls, model: str, device: str = "cpu") -> ModelProposer:
        from gdg_lsp.backends import models

        return cls(models.load(models.resolve(model), device))

    def score(self, candidates: Sequence[induce.Candidate]) -> list[float]:
        import math

        out = []
        for candidate in candidates:
            prompt = self.QUESTION.format(a=candidate.a[:400], b=candidate.b[:400])
            logits = self.backend.prefill(self.backend.vocab.encode(prompt).ids)
            yes, no = float(logits[self._yes]), float(logits[self._no])
            top = max(yes, no)
            out.append(math.exp(yes - top) / (math.exp(yes - top) + math.exp(no - top)))
        return out


def proposer_for(value: str) -> induce.Proposer | None:
    """``structural`` (the default), ``default`` (the default model) or a model's path."""
    if value in ("", "structural"):
        return None
    return ModelProposer.load(value)


def register_definition(table: Any, language: str, origin: str) -> Definition:
    """Register a language from a ``[new_language]`` table for this process (the induce and
    gate commands, when the language is not known yet)."""
    from gdg_lsp.fragments.manifest import builtin_languages
    from gdg_lsp.languages.generic import definition as definitions
    from gdg_lsp.service.fragment_library import language_spec

    definition = definitions.from_table(table, language, origin, registry.builtin_names() | set(builtin_languages()),
                                        registry.builtin_extensions())
    registry.register(language_spec(definition))
    return definition


def read_fragment_file(path: Path, fragment_paths: Sequence[Path] = (), need_language: bool = False) -> FragmentFile:
    """A fragment file for ``gdg-lsp gate``, its language made known for this process: from its
    own ``[new_language]`` table, or from the fragment files ``fragment_paths`` (folders or files)."""
    from gdg_lsp.service.fragment_library import FragmentLibrary

    try:
        ff = fileformat.parse(path.read_text(encoding="utf-8"), str(path))
    except OSError as err:
        raise GdgError(f"cannot read {path}: {err}") from err
    if fragment_paths:
        FragmentLibrary().sync([], list(fragment_paths))  # languages the file's language may come from
    if ff.language not in registry.names() and ff.language_table is not None:
        register_definition(fileformat.thaw(ff.language_table), ff.language, str(path))
    if need_language and ff.language not in registry.names():
        raise GdgError(f"unknown language {ff.language!r}: the file has no [new_language] table and no "
                       "--fragments file defines it")
    return ff
