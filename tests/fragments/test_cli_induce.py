"""`gdg-lsp induce` writes a fragment only when the gate passes; `gdg-lsp gate` re-checks one."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdg_lsp.cli import main
from gdg_lsp.fragments import fileformat
from gdg_lsp.languages import registry

from tests.fragments.library_fixtures import LANGUAGE

KERNELS = {
    "a.py": "import demo\n\ndef k(x_ptr, n):\n    offs = n + 1\n    m = offs < n\n    y = load(x_ptr + offs, mask=m)\n",
    "b.py": "import demo\n\ndef k(in_ptr, size):\n    idx = size * 2\n    keep = idx < size\n    v = load(in_ptr + idx, mask=keep)\n    w = load(in_ptr)\n",
    "c.py": "import demo\n\ndef g(src_ptr, count):\n    pos = count\n    z = load(src_ptr + pos)\n",
}


@pytest.fixture
def corpus(tmp_path: Path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in KERNELS.items():
        (folder / name).write_text(text)
    language = tmp_path / "demo-language.toml"
    language.write_text(LANGUAGE)
    yield folder, language
    registry.unregister("demo")


def _induce(corpus, out, *extra):
    folder, language = corpus
    return main(["induce", str(folder), "--lang", "demo", "--hole", "call:load(", "-o", str(out),
                 "--language-file", str(language), "--tokenizer", "none", *extra])


def test_induce_writes_a_file_that_reads_back_and_gate_passes_it(corpus, tmp_path, capsys):
    out = tmp_path / "frags" / "load.toml"
    assert _induce(corpus, out) == 0
    printed = capsys.readouterr().out
    assert "gate PASSED" in printed and "coverage: 4/4" in printed and f"wrote {out}" in printed
    ff = fileformat.parse(out.read_text())
    assert ff.language == "demo" and ff.hole.triggers == ("load(",) and ff.language_table is not None
    assert ff.provenance["source"] == "induced" and ff.provenance["gate"]["passed"] is True
    assert main(["gate", str(out), "--corpus", str(corpus[0])]) == 0


def test_induce_writes_nothing_when_the_gate_fails(corpus, tmp_path, capsys):
    out = tmp_path / "load.toml"
    assert _induce(corpus, out, "--min-rejection", "1.01") == 1  # no fragment can reject more than all
    assert "not written: the gate did not pass" in capsys.readouterr().out
    assert not out.exists()


def test_gate_fails_a_hand_edited_fragment_that_lets_ghosts_through(corpus, tmp_path, capsys):
    out = tmp_path / "load.toml"
    assert _induce(corpus, out) == 0
    text = out.read_text()
    # every rung of every slot reads an open identifier instead of Γ
    loose = "\n".join("gamma = { identifier = {} }" if line.startswith("gamma = { sort") else line
                      for line in text.splitlines() if not line.startswith(("ctx = {", "pin = {")))
    out.write_text(loose)
    capsys.readouterr()
    assert main(["gate", str(out), "--json"]) == 1
    assert '"passed": false' in capsys.readouterr().out


def test_the_model_proposer_scores_a_merge_by_yes_against_no(smol_vocab):
    import math

    import torch

    from gdg_lsp.fragments.induce import Candidate
    from gdg_lsp.service.induction import ModelProposer

    class Backend:
        vocab = smol_vocab

        def __init__(self):
            self.prompts = []

        def prefill(self, ids):
            self.prompts.append(smol_vocab.decode(ids))
            logits = torch.zeros(smol_vocab.size)
            logits[smol_vocab.encode(" yes").ids[0]] = 2.0
            return logits

    backend = Backend()
    (score,) = ModelProposer(backend).score([Candidate("load(a)", "load(b, mask=m)", 0.4)])
    assert score == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert "load(a)" in backend.prompts[0] and "load(b, mask=m)" in backend.prompts[0]
