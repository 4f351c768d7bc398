"""Temporary Python environments for the member-surface tests: a virtual-environment
layout (``pyvenv.cfg``, ``bin/python`` linked to this interpreter, ``lib/pythonX.Y/
site-packages``) with packages whose import, or whose ``.pth`` file, would write a marker
file -- so a test can prove that reading their surfaces never runs them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TAG = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def trap(marker: Path) -> str:
    """Python code that writes ``marker`` when it runs."""
    return f"import pathlib; pathlib.Path({str(marker)!r}).write_text(__name__ + ' ran')\n"


def make_env(root: Path) -> tuple[Path, Path]:
    """A virtual environment at ``root``: (its ``bin/python``, its site-packages)."""
    site = root / "lib" / TAG / "site-packages"
    site.mkdir(parents=True)
    (root / "bin").mkdir()
    python = root / "bin" / "python"
    os.symlink(os.path.realpath(sys.executable), python)
    home = Path(os.path.realpath(sys.executable)).parent
    (root / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n"
                                     f"version = {sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}\n")
    return python, site


def add_package(site: Path, name: str, version: str, body: str, marker: Path | None = None) -> Path:
    """A package ``name`` (``__init__.py`` = the trap, if a marker is given, then ``body``)
    with its ``dist-info`` naming ``version``."""
    package = site / name
    package.mkdir(exist_ok=True)
    init = package / "__init__.py"
    init.write_text((trap(marker) if marker is not None else "") + body)
    set_version(site, name, version)
    return init


def set_version(site: Path, name: str, version: str) -> None:
    for old in site.glob(f"{name}-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    dist = site / f"{name}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (dist / "top_level.txt").write_text(name + "\n")
