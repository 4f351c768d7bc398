"""Claims: only the user lets a taught language take over another language's documents, and then the
fragment is gated on held-out code of that language as well as on its own examples."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from gdg_lsp import languages
from gdg_lsp.fragments import fileformat, gate
from gdg_lsp.grammar.fragment_engine import byte_engine
from gdg_lsp.languages import registry
from gdg_lsp.service import heldout
from gdg_lsp.service.fragment_library import FOLDER, FragmentLibrary
from gdg_lsp.settings import FragmentClaim

from tests.conftest import PYTHON_CORPUS
from tests.fragments.library_fixtures import DEMO, HELD_OUT, demo_claim, write


@pytest.fixture
def library():
    lib = FragmentLibrary()
    yield lib
    lib.close()


def test_a_workspace_files_own_claim_is_refused_on_its_line_and_a_users_is_kept(tmp_path: Path, library):
    path = write(tmp_path / "ws" / FOLDER, "load.toml", DEMO)
    (state,) = library.sync([tmp_path / "ws"], [])
    assert state.state == "failed" and state.file is None and state.definition is None
    (problem,) = state.problems
    assert "gdg.fragments.claims" in problem.message and '"contains": ["import demo"]' in problem.message
    assert path.read_text().splitlines()[problem.line - 1].startswith("claims =")
    assert languages.analyzer("python", "import demo\n").name == "python"
    library.close()

    # the same claim in a file of the user's own gdg.fragments.paths stands, and is gated on the
    # interpreter's standard library (tl.load( is written nowhere there: nothing to compare)
    mine = write(tmp_path / "mine", "load.toml", DEMO.replace("load(", "tl.load("))
    (state,) = library.sync([], [str(mine)])
    assert state.state == "active", state.problems
    assert state.claimed.passed and state.claimed.source == sysconfig.get_paths()["stdlib"]
    assert state.claimed.regions == 0 and state.claimed.lines > 50
    assert languages.analyzer("python", "import demo\n").name == "demo"


def test_the_users_grant_decides_which_documents_are_taken(tmp_path: Path, library):
    write(tmp_path / FOLDER, "load.toml", DEMO)  # the file says "import demo"
    grant = demo_claim(tmp_path / "heldout")
    (state,) = library.sync([tmp_path], [], [FragmentClaim("demo", "python", ["import kernels"], grant.corpus)])
    assert state.state == "active", state.problems
    assert languages.analyzer("python", "import kernels\n").name == "demo"
    assert languages.analyzer("python", "import demo\n").name == "python"


def test_a_grant_of_a_language_gdg_lsp_lacks_is_a_problem_on_the_file(tmp_path: Path, library):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    (state,) = library.sync([tmp_path], [], [FragmentClaim("demo", "cobol", ["IDENTIFICATION"])])
    assert state.state == "failed" and "'cobol', a language gdg-lsp does not have" in state.problems[0].message


def test_a_claiming_language_without_a_loaded_fragment_takes_no_document(tmp_path: Path, library):
    write(tmp_path / FOLDER, "load.toml", DEMO.replace('text = "load(y_ptr)"', 'text = "load(y_ptr, 1)"'))
    (state,) = library.sync([tmp_path], [], [demo_claim(tmp_path / "heldout")])
    assert state.state == "failed" and "gate failed" in state.problems[0].message
    assert languages.analyzer("python", "import demo\n").name == "python"
    assert all(spec.claims is None for spec in registry.registered())


def _fragment(template: str, trigger: str = "load("):
    """The demo fragment with ``template`` as its root rule, opened by ``trigger``."""
    text = DEMO.replace('"load(" %ptr% (" + " %off%)? (", mask=" %mask%)? ")"', template)
    return fileformat.parse(text.replace('trigger = ["load("]', f'trigger = ["{trigger}"]'))


def _judge(ff, code: heldout.Heldout) -> gate.LanguageReport:
    spec = registry.spec("demo")
    regions, lines = heldout.probes(code, spec.definition, ff.hole.triggers)
    return gate.against_language(ff.fragment, regions, lines, byte_engine(), "python", code.source, ff.hole.triggers)


def test_against_held_out_python(tmp_path: Path, library):
    write(tmp_path / FOLDER, "load.toml", DEMO)
    library.sync([tmp_path], [], [demo_claim(tmp_path / "heldout")])
    corpus = heldout.read("python", str(PYTHON_CORPUS))
    kernels = heldout.read("python", str(tmp_path / "heldout"))

    # the demo fragment describes load( as the kernels write it
    report = _judge(_fragment('"load(" %ptr% (" + " %off%)? (", mask=" %mask%)? ")"'), kernels)
    assert report.passed and report.regions == report.accepted == 1 and report.lines_accepted == 0

    # a template of literals fits none of the real code at its trigger (the print( takeover)
    literal = _fragment('"print(msg); __import__(\'os\').system(\'id\')"', trigger="print(")
    report = _judge(literal, corpus)
    assert not report.passed and report.regions >= 20 and report.accepted == 0
    assert "regions that start at its trigger" in report.why_not() and "print(" in report.why_not()

    # a fragment that lets anything follow its trigger accepts the other lines too
    report = _judge(_fragment('"load(" [^\\n]*'), corpus)
    assert not report.passed and report.lines_accepted == report.lines > 100
    assert "lets arbitrary python code through" in report.why_not()


def test_held_out_code_is_read_inside_its_folder_only(tmp_path: Path):
    folder = tmp_path / "heldout"
    write(folder, "kernels.py", HELD_OUT)
    secret = write(tmp_path / "private", "vault.py", "private_token = 1\n")
    (folder / "vault.py").symlink_to(secret)
    (folder / "linked").symlink_to(secret.parent, target_is_directory=True)
    code = heldout.read("python", str(folder))
    assert [name for name, _ in code.documents] == ["kernels.py"]
    with pytest.raises(ValueError, match="is not a folder"):
        heldout.read("python", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="claim's \"corpus\""):
        heldout.read("sql")  # gdg-lsp has no SQL of its own to judge against
