"""End to end on a surface gdg-lsp does not know: Triton kernels (corpus/triton, attorch).

`induce` builds the tl.load and tl.store fragments from the induce/ files under the
gate's targets; the server's library loads the written files from a workspace's
.gdg/fragments/ (the user granting triton its claim of Python files); completions at every tl.load( / tl.store( of the held-out files,
decoded by random-weight models under the scope constraint, name nothing outside Γ."""

from __future__ import annotations

import keyword
import re
import tomllib
from pathlib import Path

import pytest

from gdg_lsp.documents import Document
from gdg_lsp.languages import registry
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.service import induction
from gdg_lsp.service.fragment_library import FOLDER, FragmentLibrary
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import FragmentClaim, from_json

TRITON = Path(__file__).resolve().parents[2] / "corpus" / "triton"
KINDS = {"load": "call:tl.load(", "store": "call:tl.store("}


@pytest.fixture(scope="module")
def induced(tmp_path_factory):
    """The two induced fragment files, written into a workspace's .gdg/fragments/."""
    workspace = tmp_path_factory.mktemp("ws")
    table = tomllib.loads((TRITON / "triton-language.toml").read_text())["new_language"]
    induction.register_definition(table, "triton", "triton-language.toml")
    results = {}
    try:
        for name, kind in KINDS.items():
            results[name] = induction.run_induce(
                [TRITON / "induce"], "triton", kind, workspace / FOLDER / f"{name}.toml",
                heldout=[TRITON / "heldout"], language_table=table)
    finally:
        registry.unregister("triton")
    return workspace, results


def test_induce_meets_the_gates_targets_and_writes_the_files(induced):
    workspace, results = induced
    for name, result in results.items():
        report = result.report
        assert report.passed, result.lines()
        assert report.accepted == report.positives >= 30  # 100% of the corpus positives
        assert report.rejection_rate >= 0.99 and report.negatives > 300
        assert set(report.by_kind) == {"other-scope", "near-miss", "wrong-sort"}
        accepted, total = result.coverage
        assert accepted / total >= 0.9, (name, result.coverage)
        assert result.written == workspace / FOLDER / f"{name}.toml"
        assert result.heldout is not None and result.heldout[1] > 0


def test_gate_command_rechecks_an_induced_file_on_its_own_examples(induced):
    workspace, _ = induced
    from gdg_lsp.fragments import fileformat

    ff = fileformat.parse((workspace / FOLDER / "store.toml").read_text())
    assert ff.examples and ff.language_table is not None
    result = induction.run_gate(ff)
    assert result.report.passed and result.report.negatives > 0


def _holes(text: str, trigger: str):
    return [m.end() for m in re.finditer(re.escape(trigger), text)]


REFERENCE = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)(?![\w'\"])(?!\s*=[^=])")


def test_completions_on_held_out_files_name_nothing_outside_gamma(induced, tiny_vocab):
    from gdg_lsp.backends.models import random_backend

    workspace, _ = induced
    library = FragmentLibrary()
    try:
        # the user lets triton take over Python files that import it (a workspace file cannot claim them);
        # its fragments are gated on the interpreter's own standard library too
        grant = FragmentClaim("triton", "python", ["import triton"])
        states = library.sync([workspace], [], [grant])
        assert {s.path.name: s.state for s in states} == {"load.toml": "active", "store.toml": "active"}
        config, _ = from_json({"constraint": "scope", "maxLines": 1, "maxTokens": 120, "timeoutMs": 60000})
        services = [CompletionService(random_backend(tiny_vocab, seed=seed), WorkspaceContext()) for seed in range(3)]
        holes = ghosts = finished = 0
        for path in sorted((TRITON / "heldout").glob("*.py")):
            text = path.read_text()
            for trigger in ("tl.load(", "tl.store("):
                for cursor in _holes(text, trigger):
                    line_end = text.find("\n", cursor)  # the user has typed the trigger, the line ends there
                    doc = Document(path.as_uri(), "python", 0, text[:cursor] + text[line_end:], None)
                    service = services[holes % len(services)]
                    suggestion = service.complete(doc.snapshot(), cursor, config)
                    assert isinstance(suggestion.hole, Hole) and suggestion.hole.language == "triton"
                    holes += 1
                    known = set(suggestion.hole.gamma.visible()) | set(keyword.kwlist)
                    written = trigger + suggestion.text
                    finished += suggestion.text.endswith(")")
                    for m in REFERENCE.finditer(written[len(trigger):]):
                        if m.group(1) not in known:
                            ghosts += 1
                            print("ghost", path.name, m.group(1), written)
        assert holes >= 30
        assert ghosts == 0
        # the mask has no dead end: a random model finishes most calls within the budget
        assert finished >= holes // 2, (finished, holes)
    finally:
        library.close()
