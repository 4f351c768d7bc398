"""A SQL file's data source over LSP: gdg/sqlSource, the "choose" code actions, and the switch they make."""

from __future__ import annotations

from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.server.sql_source import KIND


def _repo(root: Path) -> None:
    for name, ddl in (("billing", "CREATE TABLE invoices (id INT, amount REAL);"),
                      ("auth", "CREATE TABLE users (id INT, email TEXT);")):
        (root / name).mkdir(parents=True)
        (root / name / "schema.sql").write_text(ddl + "\n")


def _apply(text: str, edit: dict) -> str:
    lines = text.split("\n")
    start, end = edit["range"]["start"], edit["range"]["end"]
    offset = lambda p: sum(len(line) + 1 for line in lines[: p["line"]]) + p["character"]  # noqa: E731
    return text[: offset(start)] + edit["newText"] + text[offset(end):]


async def _labels(server: InProcessServer, uri: str, line: int, character: int) -> set[str]:
    answer = await server.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
    return {item["label"] for item in answer["result"]["items"]}


async def test_choose_a_data_source_and_the_file_switches_to_it(tmp_path):
    _repo(tmp_path)
    uri = (tmp_path / "billing" / "q.sql").as_uri()
    text = "SELECT * FROM "
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, text, "sql")
        source = (await server.request("gdg/sqlSource", {"textDocument": {"uri": uri}}))["result"]
        assert source["label"] == "folder billing" and source["rule"] == "folder" and source["tables"] == 1
        assert "invoices" in await _labels(server, uri, 0, len(text))
        # without `only` the source actions are not listed (they would crowd every menu)
        plain = await server.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}})
        assert not plain["result"]
        answer = await server.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["source"]}})
        actions = {a["title"]: a for a in answer["result"]}
        assert set(actions) == {"Choose the SQL data source for this file: folder billing",
                                "Choose the SQL data source for this file: folder auth"}
        action = actions["Choose the SQL data source for this file: folder auth"]
        assert action["kind"] == KIND
        [change] = action["edit"]["documentChanges"]
        [edit] = change["edits"]
        new_text = _apply(text, edit)
        assert new_text == "-- gdg: schema=../auth\nSELECT * FROM "
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                                  "contentChanges": [{"text": new_text}]})
        labels = await _labels(server, uri, 1, len(text))
        assert "users" in labels and "invoices" not in labels
        source = (await server.request("gdg/sqlSource", {"textDocument": {"uri": uri}}))["result"]
        assert source["rule"] == "comment" and source["label"] == "schema auth/schema.sql"
        # choosing again replaces the line rather than adding one
        answer = await server.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": [KIND]}})
        back = next(a for a in answer["result"] if a["title"].endswith("folder billing"))
        assert _apply(new_text, back["edit"]["documentChanges"][0]["edits"][0]) == "-- gdg: schema=.\nSELECT * FROM "


async def test_the_no_source_diagnostic_comes_with_quick_fixes(tmp_path):
    _repo(tmp_path)
    uri = (tmp_path / "scratch.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, "SELECT 1;\n", "sql")
        published = await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                          and m["params"]["uri"] == uri)
        [diagnostic] = published["params"]["diagnostics"]
        assert diagnostic["code"] == "sql.data-source" and diagnostic["severity"] == 3  # information
        answer = await server.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": diagnostic["range"],
            "context": {"diagnostics": [diagnostic], "only": ["quickfix"]}})
        titles = sorted(a["title"] for a in answer["result"])
        assert titles == ["Use the SQL data source folder auth", "Use the SQL data source folder billing"]
        assert all(a["kind"] == "quickfix" and a["diagnostics"] == [diagnostic] for a in answer["result"])


async def test_the_source_is_resolved_off_the_event_loop_and_bad_params_answer_none(tmp_path, monkeypatch):
    # resolving may read schema files or introspect a database: it must not stall other requests
    import threading

    from gdg_lsp.server import sql_source

    _repo(tmp_path)
    uri = (tmp_path / "billing" / "q.sql").as_uri()
    threads = []
    real = sql_source.describe
    monkeypatch.setattr(sql_source, "describe", lambda ls, snap: threads.append(threading.current_thread()) or real(ls, snap))
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf"}, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, "SELECT * FROM ", "sql")
        source = (await server.request("gdg/sqlSource", {"textDocument": {"uri": uri}}))["result"]
        assert source["label"] == "folder billing"
        assert threads and threads[0] is not threading.main_thread()
        for bad in ({}, {"textDocument": None}, {"textDocument": {"uri": 7}}, {"textDocument": {"uri": "file:///nowhere.sql"}}):
            assert (await server.request("gdg/sqlSource", bad))["result"] is None
        assert (await server.request("gdg/sqlSource", {"textDocument": {"uri": uri}}))["result"]["tables"] == 1
