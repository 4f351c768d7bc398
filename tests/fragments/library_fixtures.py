"""Fragment files for the library and security tests (a language of their own, `demo`)."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.settings import FragmentClaim

from tests.fragments.test_gate import FRAGMENT

LANGUAGE = '''
[new_language]
syntax = "python"
claims = { language = "python", contains = ["import demo"] }
'''

DEMO = FRAGMENT.replace('trigger = ["load("]', 'trigger = ["load("]') + LANGUAGE


HELD_OUT = """def k(x_ptr, n):
    offs = n + 1
    m = offs < n
    y = load(x_ptr + offs, mask=m)
    return y
"""
"""Python where `load(` is written as the demo fragment writes it."""


def demo_claim(folder: Path) -> FragmentClaim:
    """The user's grant that lets `demo` take over Python files that import demo (a workspace file's
    own `claims` is refused), gated on the held-out Python written into ``folder``."""
    write(folder, "kernels.py", HELD_OUT)
    return FragmentClaim("demo", "python", ["import demo"], str(folder))


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def other_fragment(name: str = "store", call: str = "store") -> str:
    """A second fragment of `demo` (no [new_language]: the first file defines it)."""
    return f'''
language = "demo"
name = "{name}"
rungs = ["gamma", "base"]
template = \'\'\'
root ::= "{call}(" %ptr% ", " %val% ")"
\'\'\'
[hole]
kind = "call:{call}("
trigger = ["{call}("]
[slots.ptr]
gamma = {{ sort = ["Parameter"] }}
base = {{ identifier = {{}} }}
[slots.val]
gamma = {{ sort = ["Variable"] }}
base = {{ identifier = {{}} }}
[[examples]]
text = "{call}(out, acc)"
gamma = {{ out = {{ sort = "Parameter" }}, acc = {{ sort = "Variable" }}, i = {{ sort = "Loop" }} }}
'''
