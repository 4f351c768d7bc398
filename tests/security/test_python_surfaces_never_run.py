"""Security of member surfaces (issue 23): modules are read, never imported, and the
configured interpreter is asked for its search path once, isolated and without ``site``.

A virtual environment holds a package whose import writes a marker file and a ``.pth``
file that writes another one when ``site`` processes it. The server, configured with
that environment's interpreter, completes after ``pkg.`` (Γ from the package's surface,
a random-weight model decoding), hovers, lists completion items after the dot, publishes
diagnostics and explains: neither marker appears, the package is not in ``sys.modules``,
and the only process started is the interpreter, with ``-I -S``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import slow_random_resolver
from gdg_lsp.languages.python import interpreter
from gdg_lsp.server import create_server
from tests.python_env import add_package, make_env, trap


async def test_completing_after_a_package_name_imports_nothing_and_runs_no_pth(tmp_path, monkeypatch):
    python, site = make_env(tmp_path / "env")
    imported, pth_ran = tmp_path / "IMPORTED", tmp_path / "PTH_RAN"
    add_package(site, "evilpkg", "1.0", "def helper(x, *, loud=False):\n    return x\n\nVALUE = 1\n", imported)
    (site / "zz_evil.pth").write_text(trap(pth_ran).replace("\n", "; ").rstrip("; ") + "\n")
    control = subprocess.run([str(python), "-c", "import evilpkg"], capture_output=True, check=False)
    assert control.returncode == 0 and imported.exists() and pth_ran.exists()  # both traps work when run
    imported.unlink()
    pth_ran.unlink()

    started: list[list[str]] = []
    real_init = subprocess.Popen.__init__

    def popen_init(popen, args, *rest, **kwargs):
        started.append([str(a) for a in args])
        return real_init(popen, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", popen_init)
    interpreter.forget()
    root = tmp_path / "ws"
    root.mkdir()
    text = "import evilpkg\n\n\ndef use(a):\n    total = evilpkg.\n"
    uri = (root / "main.py").as_uri()
    (root / "main.py").write_text(text)
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0)
    options = {"maxTokens": 8, "python": {"interpreter": str(python)}}
    async with InProcessServer(server=server_obj, root_uri=root.as_uri(), initialization_options=options) as server:
        assert await server.wait_model() == "ready"
        server.open(uri, text, "python")
        after_dot = {"textDocument": {"uri": uri}, "position": {"line": 4, "character": 20}}
        items = await server.request("textDocument/completion", after_dot, timeout=60)
        labels = {item["label"] for item in items["result"]["items"]}
        assert {"helper", "VALUE"} <= labels and "helpr" not in labels
        for method in ("textDocument/hover", "textDocument/inlineCompletion"):
            answer = await server.request(method, {**after_dot, "context": {"triggerKind": 1}}, timeout=60)
            assert "result" in answer, (method, answer)
        hover = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 9}}
        assert "result" in await server.request("textDocument/hover", hover, timeout=60)
        explained = await server.request("gdg/explain", {**after_dot, "decode": True}, timeout=60)
        assert "evilpkg: module evilpkg: " in explained["result"]["text"]
        await asyncio.sleep(0.6)  # the debounced diagnostics run too
    interpreter.forget()
    assert not imported.exists(), imported.read_text()
    assert not pth_ran.exists(), pth_ran.read_text()
    assert "evilpkg" not in sys.modules
    assert started and all(args[0] == str(python) and args[1:3] == ["-I", "-S"] for args in started), started
    assert len(started) == 1  # asked once
