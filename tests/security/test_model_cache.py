"""Attack: another local user plants a converted model where gdg-lsp caches its conversions.

The server converts a GGUF file once and later loads the converted folder from the cache
(``$GDG_LSP_CACHE_DIR/models/<name>-<digest>``) as its own weights: whoever can write there
chooses the weights every suggestion is decoded with. Here the entry is planted (1) in a
cache folder other users may write, (2) as a folder others may write inside a private
cache, and (3) as a link out of it. The planted entry is a broken model (loading it fails
loudly), so a load that used it cannot pass; each time the entry must be ignored and the
GGUF converted again -- the conversion stands in for the real one (a tiny random model,
seconds instead of half a minute) -- and only a conversion of this user's own is loaded
without converting.
"""

from __future__ import annotations

import os
import shutil

import pytest

from gdg_lsp.backends import models
from gdg_lsp.private_folder import why_not_private

PLANTED = '{"planted": "by another user"}'


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from gdg_lsp.bench.random_model import default_tokenizer_dir, write_random_model

    return write_random_model(tmp_path_factory.mktemp("tiny") / "model", "tiny", default_tokenizer_dir())


@pytest.fixture
def conversions(tiny_model, monkeypatch):
    """Where each conversion went (the stand-in copies the tiny model there)."""
    targets = []

    def convert(spec, target, progress):
        targets.append(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tiny_model, target)

    monkeypatch.setattr(models, "_convert_gguf", convert)
    return targets


def _plant(folder, mode=0o777):
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(PLANTED)
    (folder / "tokenizer.json").write_text(PLANTED)
    os.chmod(folder, mode)


def _load(spec):
    return models.load(spec, device="cpu", engine="lean")


def test_a_converted_model_planted_in_a_cache_others_may_write_is_not_loaded(tmp_path, monkeypatch, conversions):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(cache))
    spec = models.resolve("default")
    entry = models.converted_dir(spec)
    _plant(entry)
    for folder in (cache, entry.parent):
        os.chmod(folder, 0o777)
    backend = _load(spec)
    assert backend.vocab.size > 0
    assert len(conversions) == 1 and not conversions[0].is_relative_to(cache)  # converted elsewhere...
    assert (entry / "config.json").read_text() == PLANTED  # ...and nothing of the planted entry was used
    assert models.cached_conversion(spec) is None


def test_an_entry_others_may_write_or_a_link_in_a_private_cache_is_converted_again(tmp_path, monkeypatch, conversions):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(cache))
    spec = models.resolve("default")
    entry = models.converted_dir(spec)
    _plant(entry)  # the folder is private (it is created 0700 below), the entry is not
    os.chmod(cache, 0o700)
    os.chmod(entry.parent, 0o700)
    _load(spec)
    assert conversions == [entry]  # rebuilt in its place...
    assert why_not_private(entry) is None and "planted" not in (entry / "config.json").read_text()
    _load(spec)
    assert conversions == [entry]  # ...and that conversion, this user's own, is loaded as it is

    elsewhere = tmp_path / "elsewhere"
    _plant(elsewhere, 0o700)
    shutil.rmtree(entry)
    os.symlink(elsewhere, entry)
    _load(spec)
    assert conversions == [entry, entry] and not entry.is_symlink()
    assert (elsewhere / "config.json").read_text() == PLANTED  # the link was removed, not followed


def test_the_cache_folders_are_created_private(tmp_path, monkeypatch, conversions):
    cache = tmp_path / "fresh" / "gdg-lsp"
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(cache))
    spec = models.resolve("default")
    _load(spec)
    for folder in (cache, cache / "models"):
        assert os.stat(folder).st_mode & 0o777 == 0o700, folder
