"""`gdg-lsp induce` reads its corpus folder only: a link in it to a file elsewhere is not followed.

The attack: a corpus folder (someone else's repository) holds `notes.py`, a link to a Python
file outside it whose names are private. Followed, that file's regions became positives, its
names went into the fragment's pin rung (`among`) and examples, and its name into the
provenance of the file `induce` writes."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.service import induction

INSIDE = """import json


def save(data, path):
    text = json.dumps(data)
    with open(path, "w") as out:
        out.write(text)


def show(record, width):
    return json.dumps(record, indent=width)


def dump_all(items, sort):
    for item in items:
        print(json.dumps(item, sort_keys=sort))
"""
OUTSIDE = """import json


def leak(private_account_token, private_vault_key):
    return json.dumps(private_account_token, indent=private_vault_key)
"""


def test_induce_never_follows_a_link_out_of_its_corpus(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "store.py").write_text(INSIDE)
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "vault.py").write_text(OUTSIDE)
    (corpus / "notes.py").symlink_to(outside / "vault.py")
    (corpus / "linked").symlink_to(outside, target_is_directory=True)

    assert [p.name for p in induction.corpus_files([corpus], "python")] == ["store.py"]
    output = tmp_path / "out" / "dumps.toml"
    result = induction.run_induce([corpus], "python", "call:json.dumps(", output)
    assert result.report.passed, result.lines()
    written = output.read_text()
    assert "private_account_token" not in written and "private_vault_key" not in written
    assert "vault" not in written and "notes.py" not in written
    assert {site.file for site in result.induction.sites} == {str(corpus / "store.py")}


def test_a_link_inside_the_corpus_to_a_file_inside_it_is_read(tmp_path: Path):
    corpus = tmp_path / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "store.py").write_text(INSIDE)
    (corpus / "alias.py").symlink_to(corpus / "src" / "store.py")
    assert sorted(p.name for p in induction.corpus_files([corpus], "python")) == ["alias.py", "store.py"]
    regions = induction.collect(induction.corpus_files([corpus], "python"), "python", "call:json.dumps(")
    assert len(regions.sites) == 6  # both names of the one file are read (3 regions each)
