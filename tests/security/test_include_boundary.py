"""Attack: a workspace file names a file outside the workspace, and its names leak into
completion and hover (``#include "../outside/…"``, an absolute include, a symlink
pointing out, a star import climbing out of the workspace); or it names a huge
file that the server would read and analyse for minutes.

Each test opens the hostile file in a live server (in this process) whose
workspace folder is ``ws``: the outside names must never be offered, and the
line that named the file gets a diagnostic saying why it was not read. A file
inside the workspace is read as before (the control).
"""

from __future__ import annotations

import os
from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.languages.p4.workspace import MAX_INCLUDE_BYTES
from gdg_lsp.languages.python.imports import MAX_SOURCE_BYTES

OPTIONS = {"model": "/nonexistent/gdg-test-model.gguf"}
SECRET_P4 = "header secret_t { bit<8> leaked_field; }\nconst bit<8> LEAKED_CONSTANT = 1;\n"
INSIDE_P4 = "const bit<8> INSIDE_CONSTANT = 2;\n"


def _p4_program(includes: list[str]) -> str:
    lines = [f'#include "{target}"' for target in includes]
    return "\n".join(lines) + "\ncontrol C() {\n    apply {\n        \n    }\n}\n"


def _layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "defs.p4").write_text(SECRET_P4)
    (workspace / "inside.p4").write_text(INSIDE_P4)
    return workspace, outside


async def _labels_and_diagnostics(server: InProcessServer, uri: str, text: str, language: str, line: int,
                                  character: int) -> tuple[set[str], list[dict]]:
    server.open(uri, text, language)
    answer = await server.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                              "position": {"line": line, "character": character}}, 60)
    labels = {item["label"] for item in answer["result"]["items"]}
    published = await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                      and m["params"]["uri"] == uri, 60)
    return labels, published["params"]["diagnostics"]


def _not_read(diagnostics: list[dict], line: int) -> list[str]:
    return [d["message"] for d in diagnostics if d.get("code") in ("include-not-read", "import-not-read")
            and d["range"]["start"]["line"] == line]


async def test_p4_includes_outside_the_workspace_are_not_read(tmp_path):
    workspace, outside = _layout(tmp_path)
    os.symlink(outside / "defs.p4", workspace / "linked.p4")
    os.symlink(outside, workspace / "linked_folder")
    targets = ["inside.p4", "../outside/defs.p4", str(outside / "defs.p4"), "linked.p4", "linked_folder/defs.p4"]
    text = _p4_program(targets)
    async with InProcessServer(initialization_options=OPTIONS, root_uri=workspace.as_uri()) as server:
        labels, diagnostics = await _labels_and_diagnostics(server, (workspace / "main.p4").as_uri(), text, "p4",
                                                            len(targets) + 2, 8)
    assert "INSIDE_CONSTANT" in labels  # the control: a file of the workspace is read
    assert not {"LEAKED_CONSTANT", "secret_t"} & labels
    assert not _not_read(diagnostics, 0)
    for line in range(1, len(targets)):
        messages = _not_read(diagnostics, line)
        assert messages and "outside the workspace" in messages[0], (targets[line], diagnostics)


async def test_a_configured_include_folder_outside_the_workspace_is_read(tmp_path):
    workspace, outside = _layout(tmp_path)
    options = {**OPTIONS, "p4": {"includePaths": [str(outside)]}}
    async with InProcessServer(initialization_options=options, root_uri=workspace.as_uri()) as server:
        labels, diagnostics = await _labels_and_diagnostics(server, (workspace / "main.p4").as_uri(),
                                                            _p4_program(["defs.p4"]), "p4", 3, 8)
    assert "LEAKED_CONSTANT" in labels and not _not_read(diagnostics, 0)


async def test_a_p4_include_over_the_size_limit_is_not_read(tmp_path):
    workspace, _ = _layout(tmp_path)
    with open(workspace / "huge.p4", "wb") as huge:  # sparse: the size is what counts
        huge.truncate(8 << 20)
    async with InProcessServer(initialization_options=OPTIONS, root_uri=workspace.as_uri()) as server:
        labels, diagnostics = await _labels_and_diagnostics(server, (workspace / "main.p4").as_uri(),
                                                            _p4_program(["huge.p4", "inside.p4"]), "p4", 4, 8)
    assert "INSIDE_CONSTANT" in labels
    messages = _not_read(diagnostics, 0)
    assert messages and f"over the limit of {MAX_INCLUDE_BYTES / 2**20:.1f} MiB" in messages[0]


async def _bounded_then_default(workspace: Path, limit: dict, names: tuple[str, str], text: str, language: str,
                                line: int, character: int):
    """((labels, diagnostics) with the ``gdg.limits`` entry ``limit``, the same with the default bounds):
    the second in a document of another name (the first one's analysis is not reused)."""
    found = []
    for options, name in (({**OPTIONS, "limits": limit}, names[0]), (OPTIONS, names[1])):
        async with InProcessServer(initialization_options=options, root_uri=workspace.as_uri()) as server:
            found.append(await _labels_and_diagnostics(server, (workspace / name).as_uri(), text, language, line,
                                                       character))
    return found


async def test_the_include_bound_is_the_users_setting(tmp_path):
    workspace, _ = _layout(tmp_path)
    (workspace / "big.p4").write_text("#define BIG_CONSTANT 1\n" + "// padding\n" * 800)  # 8.8 KB
    (labels, diagnostics), (default_labels, default_diagnostics) = await _bounded_then_default(
        workspace, {"includeBytes": 4096}, ("main.p4", "main.p4"), _p4_program(["big.p4", "inside.p4"]), "p4", 4, 8)
    assert "INSIDE_CONSTANT" in labels and "BIG_CONSTANT" not in labels
    messages = _not_read(diagnostics, 0)
    assert len(messages) == 1 and "over the limit of 4,096 bytes" in messages[0]
    assert "gdg.limits.includeBytes" in messages[0]
    assert "BIG_CONSTANT" in default_labels and not _not_read(default_diagnostics, 0)  # within the default bound


async def test_python_star_imports_from_outside_the_workspace_are_not_read(tmp_path):
    workspace, outside = _layout(tmp_path)
    (outside / "secretmod.py").write_text("LEAKED_PY_NAME = 1\n")
    os.symlink(outside / "secretmod.py", workspace / "linkedmod.py")
    (workspace / "pkg").mkdir()
    (workspace / "ownmod.py").write_text("OWN_NAME = 1\n")
    text = "from ownmod import *\nfrom linkedmod import *\nfrom ...outside.secretmod import *\n\n"
    async with InProcessServer(initialization_options=OPTIONS, root_uri=workspace.as_uri()) as server:
        labels, diagnostics = await _labels_and_diagnostics(server, (workspace / "pkg" / "main.py").as_uri(),
                                                            text, "python", 3, 0)
    assert "OWN_NAME" in labels
    assert "LEAKED_PY_NAME" not in labels
    assert not _not_read(diagnostics, 0)
    for line in (1, 2):
        messages = _not_read(diagnostics, line)
        assert messages and "outside the workspace" in messages[0], diagnostics


async def test_a_star_import_source_over_the_size_limit_is_not_read(tmp_path):
    workspace, _ = _layout(tmp_path)
    line = "GENERATED_NAME_{n} = {n}\n"
    body, n = [], 0
    while sum(map(len, body)) <= MAX_SOURCE_BYTES:
        body.append("".join(line.format(n=n + k) for k in range(1000)))
        n += 1000
    (workspace / "generated.py").write_text("".join(body))
    async with InProcessServer(initialization_options=OPTIONS, root_uri=workspace.as_uri()) as server:
        labels, diagnostics = await _labels_and_diagnostics(server, (workspace / "main.py").as_uri(),
                                                            "from generated import *\n\n", "python", 1, 0)
    assert "GENERATED_NAME_1" not in labels
    messages = _not_read(diagnostics, 0)
    assert messages and f"over the limit of {MAX_SOURCE_BYTES / 2**20:.1f} MiB" in messages[0]
    assert "gdg.limits.sourceBytes" in messages[0]


async def test_the_source_bound_is_the_users_setting(tmp_path):
    workspace, _ = _layout(tmp_path)
    (workspace / "generated.py").write_text("".join(f"GENERATED_NAME_{n} = {n}\n" for n in range(400)))  # 9 KB
    (labels, diagnostics), (default_labels, default_diagnostics) = await _bounded_then_default(
        workspace, {"sourceBytes": 4096}, ("main.py", "other.py"), "from generated import *\n\n", "python", 1, 0)
    assert "GENERATED_NAME_1" not in labels
    messages = _not_read(diagnostics, 0)
    assert len(messages) == 1 and "over the limit of 4,096 bytes" in messages[0]
    assert "gdg.limits.sourceBytes" in messages[0]
    assert "GENERATED_NAME_1" in default_labels and not _not_read(default_diagnostics, 0)  # within the default bound
