"""A fragment file in a workspace is data: planting one cannot run code or read outside the boundary.

Each test performs the attack: a grammar module planted where Python would import
it from, a link out of the workspace, a regular-expression query, a grammar name
that is a path. The library must refuse each with a located problem and keep
serving the other files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gdg_lsp.languages import registry
from gdg_lsp.service.fragment_library import FOLDER, FragmentLibrary

from tests.fragments.library_fixtures import DEMO, LANGUAGE, other_fragment, write


@pytest.fixture
def library():
    lib = FragmentLibrary()
    yield lib
    lib.close()


def _language(table: str) -> str:
    return DEMO.replace(LANGUAGE, table)


def test_a_planted_grammar_module_is_never_imported(tmp_path: Path, library, monkeypatch):
    """A workspace ships `tree_sitter_ruby/__init__.py` and a file naming tree-sitter-ruby; with the
    workspace first on the import path (a server started in it), the module would run on import."""
    marker = tmp_path / "ran"
    planted = tmp_path / "tree_sitter_ruby"
    planted.mkdir()
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('pwned')\n"
                                         "def language():\n    raise SystemExit\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("tree_sitter_ruby", None)
    write(tmp_path / FOLDER, "load.toml", _language('\n[new_language]\ntree_sitter = "tree-sitter-ruby"\n'
                                                   'extensions = [".demo"]\n'))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed"
    assert "outside the environment's site-packages" in state.problems[0].message
    assert state.problems[0].line > 0
    assert not marker.exists() and "tree_sitter_ruby" not in sys.modules


@pytest.mark.parametrize("name", ["../../evil", "/tmp/evil.so", "os", "tree_sitter_python.__init__"])
def test_a_grammar_is_a_key_into_gdg_lsps_own_table_never_a_path_or_module(tmp_path: Path, library, name):
    write(tmp_path / FOLDER, "load.toml", _language(f'\n[new_language]\ntree_sitter = "{name}"\n'))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed" and "is not one gdg-lsp loads" in state.problems[0].message
    assert "demo" not in registry.names()


def test_a_link_out_of_the_workspace_is_not_read(tmp_path: Path, library):
    outside = tmp_path / "outside"
    secret = write(outside, "secret.toml", DEMO)
    workspace = tmp_path / "ws"
    (workspace / FOLDER).mkdir(parents=True)
    (workspace / FOLDER / "load.toml").symlink_to(secret)
    (workspace / FOLDER / "linked").symlink_to(outside, target_is_directory=True)
    write(workspace / FOLDER, "store.toml", other_fragment())
    states = {str(s.path.relative_to(workspace / FOLDER)): s for s in library.sync([workspace], [])}
    assert states["load.toml"].state == "failed" and states["load.toml"].file is None
    assert "outside the workspace" in states["load.toml"].problems[0].message
    # a linked folder is not walked into (and were it, its files would be refused like the link above)
    assert not any(name.startswith("linked") and s.file is not None for name, s in states.items())
    assert "demo" not in registry.names()  # nothing of the outside file was used


def test_a_regular_expression_query_is_refused(tmp_path: Path, library):
    table = ('\n[new_language]\nsyntax = "python"\nclaims = { language = "python", contains = ["import demo"] }\n'
             '[[new_language.declare]]\nquery = \'((identifier) @name (#match? @name "^(a+)+$"))\'\nsort = "Variable"\n')
    write(tmp_path / FOLDER, "load.toml", _language(table))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed" and "#match?" in state.problems[0].message


def test_a_file_cannot_take_a_built_in_languages_name_or_suffix(tmp_path: Path, library):
    write(tmp_path / FOLDER, "load.toml", _language('\n[new_language]\nsyntax = "python"\nextensions = [".py"]\n'))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed" and "built-in language" in state.problems[0].message
    assert registry.for_path("x.py").name == "python"


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path, library):
    write(tmp_path / FOLDER, "big.toml", DEMO + "#" * (300 * 1024))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed" and state.file is None
