"""Attack: another local user plants a pickle where gdg-lsp keeps (or kept) a cache.

The P4 parser used to keep Lark's tables as a pickle at a fixed name in the
shared temp folder (``gdg-lsp-p4-lark-<hash>.cache``); Lark unpickles such a
file before checking it, so whoever wrote it first ran code inside the server
of every user on the machine. Here a pickle whose loading creates a marker
file is planted at that old path and in the per-user cache folders, then a
real server parses and completes P4: the marker must not appear.
"""

from __future__ import annotations

import builtins
import hashlib
import os
import pickle
from pathlib import Path

from gdg_lsp.languages.p4.grammar import GRAMMAR
from tests.lsp.stdio_client import StdioClient

P4 = """#include <core.p4>
header h_t { bit<8> f; }
struct headers_t { h_t h; }
control C(inout headers_t hdr) {
    apply {
        hdr.h.f = 1;
        
    }
}
"""


class _Opens:
    """Unpickling this object calls ``open(marker, "w")``: the file appears if anything loads it."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (builtins.open, (str(self.marker), "w"))


def _plant(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Lark's cache format: a line with a digest, then pickles (it unpickles the first before comparing)
    path.write_bytes(b"0" * 64 + b"\n" + pickle.dumps(_Opens(marker)) + pickle.dumps(_Opens(marker)))
    os.chmod(path, 0o666)


def test_a_planted_parser_cache_is_never_loaded(tmp_path):
    shared_tmp, user_cache, xdg = tmp_path / "tmp", tmp_path / "gdg-cache", tmp_path / "xdg"
    marker = tmp_path / "pwned"
    name = f"gdg-lsp-p4-lark-{hashlib.sha256(GRAMMAR.encode()).hexdigest()[:16]}.cache"
    for folder in (shared_tmp, user_cache, xdg / "gdg-lsp"):
        _plant(folder / name, marker)
        _plant(folder / "p4-lark.cache", marker)
    # the planted bait itself works: loading it creates the marker
    with open(shared_tmp / name, "rb") as bait:
        bait.readline()
        pickle.load(bait).close()
    assert marker.exists()
    marker.unlink()

    workspace = tmp_path / "ws"
    workspace.mkdir()
    uri = (workspace / "main.p4").as_uri()
    env = {"TMPDIR": str(shared_tmp), "GDG_LSP_CACHE_DIR": str(user_cache), "XDG_CACHE_HOME": str(xdg)}
    client = StdioClient(env=env)
    try:
        client.initialize(options={"model": "/nonexistent/model.gguf", "diagnostics": False},
                          root=workspace.as_uri())
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "p4", "version": 1, "text": P4}})
        answer = client.request(2, "textDocument/completion",
                                {"textDocument": {"uri": uri}, "position": {"line": 6, "character": 8}}, timeout=120)
        labels = {item["label"] for item in answer["result"]["items"]}
        assert "hdr" in labels  # the P4 parser ran
    finally:
        client.close()
    assert not marker.exists(), "a planted pickle was loaded"
