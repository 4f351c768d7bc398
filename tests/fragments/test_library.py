"""Fragment files in a workspace: validated by the gate when loaded, used, hot-reloaded one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from gdg_lsp import fragments, languages
from gdg_lsp.documents import Document
from gdg_lsp.fragments import store
from gdg_lsp.languages import registry
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.service.fragment_library import FOLDER, FragmentLibrary

from tests.fragments.library_fixtures import DEMO, demo_claim, other_fragment, write


@pytest.fixture
def library():
    lib = FragmentLibrary()
    yield lib
    lib.close()
    assert "demo" not in registry.names()


@pytest.fixture
def claims(tmp_path: Path):
    """The user grants `demo` its claim of Python documents (a workspace file cannot claim them)."""
    return [demo_claim(tmp_path / "heldout")]


def _by_name(states):
    return {s.path.name: s for s in states}


def test_a_dropped_file_is_gated_registered_and_used(tmp_path: Path, library, claims):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    states = _by_name(library.sync([tmp_path], [], claims))
    assert states["load.toml"].state == "active", states["load.toml"].problems
    assert states["load.toml"].report.passed
    assert "demo" in registry.names()
    assert "load" in fragments.available("demo")

    text = "import demo\n\ndef k(x_ptr, n):\n    offs = n + 1\n    y = load(x_p"
    doc = Document("file:///w/k.py", "python", 0, text, None)
    analyzer = languages.analyzer("python", text)
    assert analyzer.name == "demo"
    hole = analyzer.hole_at(doc.snapshot(), len(text), WorkspaceContext())
    assert isinstance(hole, Hole) and hole.fragment == "load" and hole.typed == "load(x_p"
    assert {"x_ptr", "n", "offs"} <= set(hole.gamma.visible())
    # a Python file that does not import demo stays Python
    assert languages.analyzer("python", "import os\n").name == "python"


def test_a_broken_file_is_reported_where_it_is_and_never_breaks_the_others(tmp_path: Path, library, claims):
    folder = tmp_path / FOLDER
    write(folder, "load.toml", DEMO)
    write(folder, "store.toml", other_fragment())
    write(folder, "broken.toml", 'language = "demo"\nname = "x"\ntemplate = """\nroot ::= "a" %nope%\n"""\n')
    write(folder, "notoml.toml", 'language = "demo"\nname = [1,\n')
    states = _by_name(library.sync([tmp_path], [], claims))
    assert states["load.toml"].state == states["store.toml"].state == "active"
    assert states["broken.toml"].state == "failed"
    (problem,) = states["broken.toml"].problems
    assert "nope" in problem.message and problem.line == 4
    (problem,) = states["notoml.toml"].problems
    assert "not valid TOML" in problem.message and problem.line == 2 and problem.column > 0
    assert set(fragments.available("demo")) == {"load", "store"}


def test_a_fragment_that_fails_its_gate_is_never_installed(tmp_path: Path, library, claims):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    leaky = other_fragment().replace('gamma = { sort = ["Variable"] }', "gamma = { identifier = {} }")
    write(tmp_path / FOLDER, "store.toml", leaky)
    states = _by_name(library.sync([tmp_path], [], claims))
    assert states["store.toml"].state == "failed"
    assert "gate failed" in states["store.toml"].problems[0].message
    assert "store" not in fragments.available("demo")


def test_a_change_reloads_that_file_alone(tmp_path: Path, library, claims):
    folder = tmp_path / FOLDER
    write(folder, "load.toml", DEMO)
    store_file = write(folder, "store.toml", other_fragment())
    library.sync([tmp_path], [], claims)
    load_before = fragments.fragment("demo", "load")
    generation = store.USER.generation

    write(folder, "store.toml", other_fragment().replace('"store(" %ptr% ", " %val% ")"',
                                                         '"store(" %ptr% ", " %val% (", mask=" %val%)? ")"'))
    changed = library.reload(store_file)
    assert [s.path.name for s in changed] == ["store.toml"] and changed[0].state == "active"
    assert "mask=" in str(fragments.fragment("demo", "store").rules)
    assert fragments.fragment("demo", "load") is load_before  # the other file was not read again
    assert store.USER.generation > generation

    write(folder, "store.toml", "not = [toml")
    (state,) = library.reload(store_file)
    assert state.state == "failed" and "store" not in fragments.available("demo")
    assert "load" in fragments.available("demo")

    store_file.unlink()
    (state,) = library.reload(store_file)
    assert state.state == "gone"


def test_a_path_outside_the_library_is_ignored(tmp_path: Path, library, claims):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    library.sync([tmp_path], [], claims)
    elsewhere = write(tmp_path / "other", "x.toml", other_fragment())
    assert library.reload(elsewhere) == []


def test_user_paths_from_settings_are_read_too(tmp_path: Path, library, claims):
    mine = write(tmp_path / "mine", "load.toml", DEMO)
    states = _by_name(library.sync([tmp_path / "ws"], [str(mine.parent)], claims))
    assert states["load.toml"].scope == "user" and states["load.toml"].state == "active"


def test_a_file_for_a_built_in_language_is_refused_with_the_way_to_do_it(tmp_path: Path, library):
    write(tmp_path / FOLDER, "py.toml", other_fragment().replace('language = "demo"', 'language = "python"'))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "failed" and "built-in language" in state.problems[0].message
    assert "claims" in state.problems[0].message


def test_a_taught_language_gets_bench_cases_and_a_gamma_free_oracle(tmp_path: Path, library, claims):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    library.sync([tmp_path], [], claims)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "k.py").write_text("import demo\n\ndef k(x_ptr, n):\n    offs = n + 1\n    m = offs < n\n"
                                 "    y = load(x_ptr + offs, mask=m)\n    # load(never)\n")
    (corpus / "plain.py").write_text("def f(a):\n    return load(a)\n")  # does not import demo: not a demo file
    assert "demo" in languages.benchmarked()
    plugin = languages.bench_plugin("demo")
    [case] = plugin.cut_holes(corpus, 10, 0)
    assert case.language == "demo" and case.expected == "x_ptr + offs, mask=m)"
    assert case.text[case.cursor - len("load("):case.cursor + 1] == "load(\n"
    assert plugin.check(case, case.expected).passed
    ghost = plugin.check(case, "x_ptr + offz, mask=m)")
    assert ghost.parsed and ghost.ghosts == ["offz"] and not ghost.passed
    assert not plugin.check(case, "x_ptr +").parsed


def test_a_file_can_add_a_language_by_grammar_and_file_suffix(tmp_path: Path, library):
    table = '\n[new_language]\ntree_sitter = "tree-sitter-python"\nextensions = [".demo"]\nscopes = ["function_definition"]\n' \
            '[[new_language.declare]]\nquery = "(parameters (identifier) @name)"\nsort = "Parameter"\n' \
            '[[new_language.declare]]\nquery = "(assignment left: (identifier) @name)"\nsort = "Variable"\n'
    from tests.fragments.library_fixtures import LANGUAGE

    write(tmp_path / FOLDER, "load.toml", DEMO.replace(LANGUAGE, table))
    (state,) = library.sync([tmp_path], [])
    assert state.state == "active", state.problems
    assert registry.for_path("kernel.demo").name == "demo"
    text = "def k(x_ptr, n):\n    offs = n\n    load(x"
    analyzer = languages.analyzer("demo")
    hole = analyzer.hole_at(Document("file:///k.demo", "demo", 0, text, None).snapshot(), len(text), WorkspaceContext())
    assert isinstance(hole, Hole) and hole.fragment == "load"
    assert {b.name: b.sort for b in hole.gamma.visible().values()} == {"x_ptr": "Parameter", "n": "Parameter",
                                                                       "offs": "Variable"}


def test_the_listing_of_a_workspace_folder_stops_at_the_file_cap(tmp_path: Path, monkeypatch):
    """A workspace decides how many files its .gdg/fragments/ holds: the listing stops at the cap
    (it was listed and sorted whole before the cap was applied)."""
    from gdg_lsp.service import fragment_library

    folder = tmp_path / FOLDER
    folder.mkdir(parents=True)
    for n in range(40):
        (folder / f"f{n:02}.toml").write_text("")
    monkeypatch.setattr(fragment_library, "MAX_FILES", 5)
    taken = []
    listing = Path.rglob

    def counted(self, pattern):
        for path in listing(self, pattern):
            taken.append(path)
            yield path

    monkeypatch.setattr(Path, "rglob", counted)
    found = fragment_library.workspace_files(tmp_path)
    assert len(found) == 5 and found == sorted(found)
    assert len(taken) == 5
