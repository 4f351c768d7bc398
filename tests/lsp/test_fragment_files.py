"""Fragment files over stdio: loaded at start (the folder trusted in the user's settings), problems shown
on the file, hot reload, used at a hole, its own text never labelled guaranteed."""

from __future__ import annotations

from pathlib import Path

from tests.fragments.library_fixtures import DEMO, demo_claim, other_fragment, write
from tests.lsp.stdio_client import StdioClient
from tests.lsp.test_workspace_schemas import _diagnostics

FOLDER = Path(".gdg") / "fragments"


def test_fragment_files_are_validated_used_and_reloaded_without_a_restart(tmp_path: Path):
    load = write(tmp_path / FOLDER, "load.toml", DEMO)
    store = write(tmp_path / FOLDER, "store.toml", other_fragment().replace('%ptr% ", "', '%ptr% ", " %nope%'))
    client = StdioClient()
    try:
        mark = len(client.messages)
        grant = demo_claim(tmp_path / "heldout")
        fragments = {"trustedFolders": [str(tmp_path)], "claims": [{"language": grant.language, "claims": grant.claims,
                                                                    "contains": grant.contains, "corpus": grant.corpus}]}
        client.initialize(None, {"gdg": {"model": "/nonexistent/model.gguf", "fragments": fragments}},
                          root=tmp_path.as_uri())
        [problem] = _diagnostics(client, store.resolve().as_uri(), mark)
        assert "nope" in problem["message"] and store.read_text().splitlines()[problem["range"]["start"]["line"]].startswith("root ::=")
        assert problem["source"] == "gdg-lsp fragments"

        # the demo fragment is used at its trigger in a document that imports demo
        uri = (tmp_path / "k.py").as_uri()
        text = "import demo\n\ndef k(x_ptr, n):\n    offs = n + 1\n    y = load(x_p\n"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        position = {"line": 4, "character": len("    y = load(x_p")}
        report = client.request(5, "gdg/explain", {"textDocument": {"uri": uri}, "position": position,
                                                   "decode": False})["result"]
        assert report["hole"]["language"] == "demo" and report["hole"]["fragment"] == "load"
        # Γ here has no `kind` attribute (the demo file declares none): ctx and pin are empty, π lands on gamma
        assert report["choice"]["rung"] == "gamma" and "x_ptr" in report["choice"]["grammar"]
        # its Γ slots are a guarantee, the words its template writes (", mask=") are the file's, not Γ's
        assert report["choice"]["fragmentText"] == {"file": str(load), "words": ["mask"]}
        assert not report["choice"]["guaranteed"]
        assert f"the fragment's own text (mask) comes from {load}" in report["text"]

        # fixing the broken file: its diagnostics clear, without a restart
        write(tmp_path / FOLDER, "store.toml", other_fragment())
        mark = len(client.messages)
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": store.as_uri(), "type": 2}]})
        assert _diagnostics(client, store.resolve().as_uri(), mark) == []

        # breaking the demo file: reported on it, and its hole is gone (the language with it)
        load.write_text(DEMO.replace("rungs = [", "rungs = [1, "))
        mark = len(client.messages)
        client.notify("textDocument/didSave", {"textDocument": {"uri": load.as_uri()}})
        [problem] = _diagnostics(client, load.resolve().as_uri(), mark)
        assert "rungs" in problem["message"]
        report = client.request(6, "gdg/explain", {"textDocument": {"uri": uri}, "position": position,
                                                   "decode": False})["result"]
        assert report["hole"] is None or report["hole"]["language"] != "demo"
    finally:
        assert client.close() == 0
