"""The house's plan holds: no import runs from a lower layer to a higher one (docs/ARCHITECTURE.md).

Every ``import gdg_lsp...`` in the package is read (function-level ones included:
an import deferred for speed is still a dependency), and each room may only
reach the rooms below it. The server and the CLI reach models only through the
service; languages know nothing of models, grammars engines or decoding.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gdg_lsp"

ROOMS = ("languages", "fragments", "grammar", "backends", "decoding", "service", "server", "bench")
TOP_LEVEL = ("executor", "explain", "cli", "doctor", "__main__")

BELOW = {
    "base": set(),
    "fragments": {"base"},
    "languages": {"base"},
    "grammar": {"base", "fragments"},
    "backends": {"base"},
    "decoding": {"base", "fragments", "grammar", "backends"},
    "executor": {"base", "fragments", "grammar", "decoding", "languages"},
    "service": {"base", "fragments", "grammar", "backends", "decoding", "languages", "executor"},
    "explain": {"base", "fragments", "grammar", "languages", "service"},
    "server": {"base", "languages", "service", "explain"},
    "doctor": {"base", "fragments", "languages", "service", "explain"},
    "bench": {"base", "fragments", "grammar", "backends", "decoding", "languages", "executor", "service",
              "explain", "server"},
    "cli": {"base", "languages", "service", "explain", "server", "bench", "doctor"},
    "__main__": {"cli"},
}
"""What each room may import (besides itself). ``base`` is every module at the top of the
package that is not a room of its own: documents, gamma, settings, errors, vocab, caches..."""


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and (parts[1] in ROOMS or parts[1] in TOP_LEVEL):
        return parts[1]
    return "base"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gdg_lsp"):
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("gdg_lsp")]
    return found


def violations(module: str, source: str) -> list[str]:
    here = room(module)
    return [f"{module} ({here}) imports {target} ({room(target)})" for target in imports(source)
            if room(target) != here and room(target) not in BELOW[here]]


def test_no_import_runs_up_the_layers():
    wrong = [v for path in sorted(PACKAGE.rglob("*.py"))
             for v in violations(module_name(path), path.read_text(encoding="utf-8"))]
    assert not wrong, "\n".join(wrong)


def test_every_room_is_known():
    assert set(BELOW) == {"base", *ROOMS, *TOP_LEVEL}
    for path in PACKAGE.iterdir():
        if path.is_dir() and (path / "__init__.py").exists():
            assert path.name in ROOMS, f"gdg_lsp/{path.name}/ is a room the layer table does not place"


def test_every_package_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {module_name(init) for init in PACKAGE.rglob("__init__.py")}
    assert on_disk <= listed, f"packages missing from pyproject.toml: {sorted(on_disk - listed)}"


def test_the_rule_catches_upward_imports_even_inside_functions():
    deferred = "def f():\n    from gdg_lsp.service import build\n    return build\n"
    assert violations("gdg_lsp.languages.sql.analyzer", deferred)
    assert violations("gdg_lsp.server.worker", "import gdg_lsp.backends.models\n")
    assert violations("gdg_lsp.gamma", "from gdg_lsp import languages\n")  # base reaches nothing
    assert not violations("gdg_lsp.server.worker", "from gdg_lsp.service import build\n")
