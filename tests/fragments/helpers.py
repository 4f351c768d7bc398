"""Small fixtures for the fragment tests: Python regions as terms, Γ by hand."""

from __future__ import annotations

from gdg_lsp.fragments.antiunify import Term, term_of
from gdg_lsp.fragments.induce import PYTHON_SYNTAX, Site
from gdg_lsp.gamma import Binding, Gamma


def python_call(text: str, prefix: str = "") -> Term:
    """The term of the first ``call`` node in ``text`` (its ``prefix`` bytes fixed)."""
    import tree_sitter
    import tree_sitter_python

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))
    source = text.encode()
    tree = parser.parse(source)
    stack = [tree.root_node]
    while stack:
        node = stack.pop(0)
        if node.type == "call":
            return term_of(node, source, atoms=PYTHON_SYNTAX.atoms, fixed_end=node.start_byte + len(prefix))
        stack.extend(node.children)
    raise AssertionError(f"no call in {text!r}")


def gamma(**names: str | tuple[str, dict]) -> Gamma:
    """Γ from ``name=sort`` or ``name=(sort, attrs)``."""
    bindings = []
    for name, spec in names.items():
        sort, attrs = (spec, {}) if isinstance(spec, str) else spec
        bindings.append(Binding(name, sort, attrs))
    return Gamma(bindings)


def site(text: str, g: Gamma, prefix: str = "", file: str = "a.py") -> Site:
    return Site(f"{file}:{text}", python_call(text, prefix), g, file)
