"""Over stdio, as an editor sees it: a Python read of ``self.pelor_items`` (the class has
``pelnor_items``), a keyword a known function does not take, and a P4 name declared
nowhere each get a warning whose quick fix writes the closest name that exists."""

from __future__ import annotations

from pathlib import Path

from tests.lsp.stdio_client import StdioClient
from tests.lsp.test_workspace_schemas import _diagnostics

PYTHON = """\
class Basket:
    def __init__(self, items):
        self.pelnor_items = list(items)

    def add(self, item):
        self.pelor_items.append(item)


def join(items, sep=", "):
    return sep.join(items)


join([], sepp="-")
"""

P4 = """\
header h_t {
    bit<8> ttl;
}

struct headers {
    h_t h;
}

control C(inout headers hdr) {
    action drop() { }
    apply {
        hdr.h.tttl = 1;
        dropp();
    }
}
"""


def _fix(client: StdioClient, uri: str, diagnostic: dict, request_id: int) -> str:
    params = {"textDocument": {"uri": uri}, "range": diagnostic["range"], "context": {"diagnostics": [diagnostic]}}
    [action] = client.request(request_id, "textDocument/codeAction", params)["result"]
    assert action["kind"] == "quickfix" and action["isPreferred"]
    [edit] = action["edit"]["documentChanges"][0]["edits"]
    assert edit["range"] == diagnostic["range"]
    return edit["newText"]


def test_member_keyword_and_p4_warnings_carry_the_closest_name_as_a_quick_fix(tmp_path: Path):
    client = StdioClient()
    try:
        client.initialize(None, {"gdg": {"model": "/nonexistent/model.gguf"}}, root=tmp_path.as_uri())
        uri = (tmp_path / "basket.py").as_uri()
        mark = len(client.messages)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": PYTHON}})
        found = [d for d in _diagnostics(client, uri, mark) if d["code"] in ("unknown-member", "unknown-keyword")]
        assert [(d["code"], d["data"]["name"], d["severity"]) for d in found] == [
            ("unknown-member", "pelor_items", 2), ("unknown-keyword", "sepp", 2)]
        assert [_fix(client, uri, d, 10 + i) for i, d in enumerate(found)] == ["pelnor_items", "sep"]

        uri = (tmp_path / "prog.p4").as_uri()
        mark = len(client.messages)
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "p4", "version": 1,
                                                                "text": P4}})
        found = _diagnostics(client, uri, mark)
        assert sorted(d["data"]["name"] for d in found) == ["dropp", "tttl"]
        assert sorted(_fix(client, uri, d, 20 + i) for i, d in enumerate(found)) == ["drop", "ttl"]
    finally:
        assert client.close() == 0
