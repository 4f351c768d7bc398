"""Fragments: grammar templates with slots at reference positions, τ_Γ and π.

- ``model``: Fragment, SlotSpec, Family, the rungs;
- ``manifest``: loading ``grammars/<language>/`` (manifest, templates, fragment files);
- ``fileformat``: fragment files (one fragment per TOML file, template inline);
- ``store``: fragments from users' files that passed their gate;
- ``antiunify``, ``induce``: building a fragment from a corpus's sibling regions;
- ``gate``: positives accepted, mined ghosts rejected, through an injected engine;
- ``instantiate``: τ_Γ, a fragment + Γ + rung → grammar text (``render_alternation``);
- ``policy``: π, the tightest rung that fits the hole (``choose``);
- ``ebnf``: the template syntax tree.

The names below are the package's interface; callers write ``fragments.choose``.
"""

from gdg_lsp.fragments.instantiate import Instantiated, instantiate, render_alternation
from gdg_lsp.fragments.manifest import available, fragment, load_fragments
from gdg_lsp.fragments.model import CONSTRAINTS, RUNGS, Family, Fragment, SlotSpec
from gdg_lsp.fragments.policy import Attempt, Choice, choose, rungs_for

__all__ = [
    "CONSTRAINTS", "RUNGS", "Attempt", "Choice", "Family", "Fragment", "Instantiated", "SlotSpec",
    "available", "choose", "fragment", "instantiate", "load_fragments", "render_alternation", "rungs_for",
]
