"""Context from other files (Python): stubs of the definitions of names imported from the
workspace and used near the cursor, within their budget, read only inside the workspace."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.documents import Document
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python import definitions
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service import prompt as prompts
from gdg_lsp.settings import Settings

HELPERS = '''import os


def scale(values, factor=2):
    """Multiply every value by factor.

    More words."""
    return [v * factor for v in values]


class Box:
    """A box of things."""

    def __init__(self, size):
        self.size = size

    def fits(self, other) -> bool:
        return other.size <= self.size


LIMIT = 10
'''

MAIN = '''from os import path
from pkg.helpers import scale, Box, LIMIT, missing


def run(xs):
    box = Box(3)
    ys = scale(xs)
    '''


def _workspace(tmp_path: Path) -> tuple[Document, WorkspaceContext]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    main = tmp_path / "main.py"
    main.write_text(MAIN)
    return Document(main.as_uri(), "python", 1, MAIN, parse), WorkspaceContext(roots=[tmp_path], settings=Settings())


def _context(doc: Document, workspace: WorkspaceContext) -> str:
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), len(MAIN), workspace)
    return analyzer.prompt_context(doc.snapshot(), hole, workspace)


def test_the_definitions_of_imported_names_used_near_the_cursor_are_stubbed(tmp_path):
    doc, workspace = _workspace(tmp_path)
    assert _context(doc, workspace) == (
        "# pkg.helpers.Box (helpers.py):\n"
        "class Box:\n"
        '    """A box of things."""\n'
        "    def __init__(self, size):\n"
        "        ...\n"
        "    def fits(self, other) -> bool:\n"
        "        ...\n"
        "# pkg.helpers.scale (helpers.py):\n"
        "def scale(values, factor=2):\n"
        '    """Multiply every value by factor."""\n'
        "    ...\n"
        "\n")
    # LIMIT is imported but not used near the cursor; `missing` has no definition; os.path is not the user's
    off = WorkspaceContext(roots=workspace.roots, settings=Settings(definitions=False))
    assert _context(doc, off) == ""


def test_the_prompt_starts_with_them_and_stays_the_same_while_typing(tmp_path, smol_vocab):
    doc, workspace = _workspace(tmp_path)
    analyzer = PythonAnalyzer()
    texts = []
    for typed in ("", "z", "z = ", "z = LIMIT"):  # LIMIT, imported, is used nowhere else: its stub stays out
        text = MAIN + typed
        d = Document(doc.uri, "python", 1, text, parse)
        hole = analyzer.hole_at(d.snapshot(), len(text), workspace)
        prompt, _ = prompts.build(smol_vocab, None, d.snapshot(), hole, analyzer, Settings(), workspace)
        texts.append(smol_vocab.decode(prompt.ids))
    assert all(t.startswith("# pkg.helpers.Box (helpers.py):\nclass Box:") for t in texts)
    stable = texts[0][: texts[0].index("def run")]
    assert all(t.startswith(stable) for t in texts)  # the KV cache keeps the context's tokens


def test_chunks_are_read_once_per_file_version(tmp_path):
    doc, workspace = _workspace(tmp_path)
    _context(doc, workspace)
    hits = definitions._CHUNKS.stats.hits
    _context(doc, workspace)
    assert definitions._CHUNKS.stats.hits >= hits + 2
    helpers = tmp_path / "pkg" / "helpers.py"
    helpers.write_text(HELPERS.replace("factor=2", "factor=3"))
    import os

    os.utime(helpers, ns=(1, 10**18))  # a new modification time: a new chunk
    assert "factor=3" in _context(doc, workspace)


def test_the_budget_keeps_whole_chunks(tmp_path):
    doc, workspace = _workspace(tmp_path)
    imported = [("Box", "pkg.helpers", "Box"), ("scale", "pkg.helpers", "scale")]
    full = definitions.context(imported, {"Box", "scale"}, tmp_path / "main.py", [tmp_path], 10_000)
    first = full[: full.index("# pkg.helpers.scale")]
    cut = definitions.context(imported, {"Box", "scale"}, tmp_path / "main.py", [tmp_path], len(first) + 5)
    assert cut == first + "\n"
    assert definitions.context(imported, {"Box"}, tmp_path / "main.py", [tmp_path], 3) == ""


def test_a_relative_import_that_leaves_the_workspace_is_not_read(tmp_path):
    """Attack: a document in the workspace imports from a module above it (``from ..secret``);
    the module exists, but outside the workspace folders: nothing of it reaches the prompt."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text('def token():\n    """TOKEN=hunter2"""\n')
    project = outside / "project"
    (project / "pkg").mkdir(parents=True)
    main = project / "pkg" / "main.py"
    text = "from ...secret import token\n\n\ndef run():\n    t = token()\n    "
    main.write_text(text)
    doc = Document(main.as_uri(), "python", 1, text, parse)
    workspace = WorkspaceContext(roots=[project], settings=Settings())
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), len(text), workspace)
    assert analyzer.prompt_context(doc.snapshot(), hole, workspace) == ""
    # inside the workspace the same import is read (the test above is not vacuous)
    inside = WorkspaceContext(roots=[outside], settings=Settings())
    assert "hunter2" in analyzer.prompt_context(doc.snapshot(), analyzer.hole_at(doc.snapshot(), len(text), inside), inside)


def test_names_near_leave_the_hole_lines_out():
    text = "import os\na = 1\nb = 2\nc = (x +\n     y\nd = 3\n"
    region = text.index("c = ")
    cursor = text.index("     y") + 6
    assert definitions.names_near(text, region, cursor) == {"a", "b", "d"}
