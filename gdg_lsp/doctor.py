"""``gdg-lsp doctor``: check the installation and say how to fix what is missing."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import sys
import tempfile

from gdg_lsp import __version__, languages
from gdg_lsp.private_folder import NotPrivate, private_folder


def _line(ok: bool | None, what: str, detail: str = "") -> bool:
    mark = {True: "ok  ", False: "FAIL", None: "warn"}[ok]
    print(f"[{mark}] {what}" + (f": {detail}" if detail else ""))
    return ok is not False


def _package(name: str, module: str | None = None) -> bool:
    try:
        version = importlib.metadata.version(name)
        importlib.import_module(module or name.replace("-", "_"))
    except Exception as err:
        return _line(False, name, f"{err} (reinstall: pip install gdg-lsp)")
    return _line(True, name, version)


def run_doctor() -> int:
    ok = _line(True, "gdg-lsp", f"{__version__} on Python {platform.python_version()} ({sys.executable})")
    if sys.version_info < (3, 11):
        ok &= _line(False, "python", "gdg-lsp needs Python 3.11 or newer")
    for dist, module in [("torch", None), ("transformers", None), ("xgrammar", None), ("llguidance", None), ("pygls", None),
                         ("lsprotocol", None), ("tree-sitter", "tree_sitter"), ("tree-sitter-python", "tree_sitter_python"),
                         ("gguf", None), ("cattrs", None), ("numpy", None)]:
        ok &= _package(dist, module)

    import torch

    _line(True, "device", "cuda available" if torch.cuda.is_available() else f"cpu ({os.cpu_count()} cores)")

    from gdg_lsp import service
    from gdg_lsp.errors import ModelUnavailableError

    try:
        info = service.model_info("default")
        _line(True, "default model", info.description)
        if info.ready:
            _line(True, "converted weights", str(info.converted))
        else:
            _line(None, "converted weights", "not yet (the first start converts them, ~30 s; or run `gdg-lsp model prepare`)")
    except ModelUnavailableError as err:
        ok &= _line(False, "default model", str(err))
    for row in service.model_presets():
        if row.is_default:
            continue
        steps = "; ".join(f"{ms:.1f} ms per step ({where})" for where, ms in sorted(row.steps.items()))
        fim = ("prefix only" if not row.preset.fim else
               "fill-in-the-middle" + (f" ({row.preset.fim_where})" if row.preset.fim_where != "always" else ""))
        detail = f"{row.state} ({fim}, {row.preset.licence}{'; ' + steps if steps else ''})"
        # a preset nobody asked for is not a failure: say how to get it
        _line(True if row.state == "ready" else None, f"model preset {row.preset.name}",
              detail + (f"; next: `{row.next_step}`" if row.next_step else ""))

    root = service.cache_root()
    try:
        private_folder(root)
        with tempfile.NamedTemporaryFile(dir=root):
            pass
        _line(True, "cache folder", str(root))
    except NotPrivate as err:
        ok &= _line(False, "cache folder", f"{err}: its conversions are not used; set GDG_LSP_CACHE_DIR to a folder of your own")
    except OSError as err:
        ok &= _line(False, "cache folder", f"{root} is not writable ({err}); set GDG_LSP_CACHE_DIR")

    for language in languages.supported():
        try:
            analyzer = languages.analyzer(language)
            from gdg_lsp import fragments

            count = len(fragments.load_fragments(analyzer.grammar_dir))
            _line(True, f"language {language}", f"{count} fragment(s)")
        except Exception as err:
            ok &= _line(False, f"language {language}", str(err))

    from gdg_lsp.explain import accepts_text, byte_grammars, grammar_engine_names

    default = byte_grammars("auto").name
    for name in grammar_engine_names():
        try:
            if not accepts_text(byte_grammars(name), 'root ::= "ok"', "ok"):
                raise RuntimeError("a grammar of one string does not accept that string")
            chosen = ("the default (gdg.grammarEngine auto picks it: measured faster, and equivalent"
                      " on the differential test; docs/PERFORMANCE.md)"
                      if name == default else "available")
            _line(True, f"grammar engine {name}", f"compiles and matches; {chosen}")
        except Exception as err:
            ok &= _line(False, f"grammar engine {name}", str(err))
    print("\nall good" if ok else "\nsome checks failed: see the fixes above")
    return 0 if ok else 1
