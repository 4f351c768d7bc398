"""Multi-root workspaces over stdio: folders added and removed while the server runs, and settings
per folder from ``workspace/configuration`` (server/folders.py).

Each folder is a project of its own: a document in folder A reads A's files and has A's
settings; a folder added later feeds its documents from then on, a folder removed takes its
names with it. The client here answers the server's requests as an editor does, and a folder's
answer that tries to set a user-only setting (a program to run, a bound) is ignored.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.lsp.stdio_client import StdioClient

NO_MODEL = {"model": "/nonexistent/model.gguf"}
UNKNOWN = ("sql.unknown-table", "sql.unknown-column")


class Editor:
    """A StdioClient that answers the server's requests as an editor would: ``workspace/configuration``
    from ``sections`` (the ``gdg`` section per ``scopeUri``; ``None``: the global one), the rest with null."""

    def __init__(self, sections: dict[str | None, dict[str, Any]] | None = None, state: Path | None = None) -> None:
        self.client = StdioClient(env={"GDG_LSP_STATE_DIR": str(state)} if state is not None else None)
        self.sections = sections or {}
        self.asked: list[list[dict[str, Any]]] = []
        self._answered: set[Any] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._answer, daemon=True)
        self._thread.start()

    def _answer(self) -> None:
        while not self._stop.is_set():
            try:
                ask = self.client.wait_for(lambda m: "method" in m and "id" in m and m["id"] not in self._answered, 0.2)
            except TimeoutError:
                continue
            self._answered.add(ask["id"])
            result: Any = None
            if ask["method"] == "workspace/configuration":
                items = ask["params"]["items"]
                self.asked.append(items)
                result = [self.sections.get(item.get("scopeUri"), self.sections.get(None, NO_MODEL)) for item in items]
            try:
                self.client.send({"jsonrpc": "2.0", "id": ask["id"], "result": result})
            except (BrokenPipeError, OSError):
                return

    def start(self, folders: list[Path], configuration: bool = False) -> dict:
        caps: dict[str, Any] = {"general": {"positionEncodings": ["utf-16"]},
                                "workspace": {"workspaceFolders": True, "configuration": configuration}}
        result = self.client.request(1, "initialize", {
            "processId": os.getpid(), "rootUri": folders[0].as_uri() if folders else None, "capabilities": caps,
            "workspaceFolders": [{"uri": f.as_uri(), "name": f.name} for f in folders],
            "initializationOptions": self.sections.get(None, NO_MODEL)})
        self.client.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, language: str = "sql") -> list[dict]:
        mark = len(self.client.messages)
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": language, "version": 1, "text": text}})
        return self.diagnostics(path, mark)

    def diagnostics(self, path: Path, after: int, timeout: float = 30) -> list[dict]:
        """The first diagnostics of ``path`` published after the ``after``-th message."""
        uri = path.as_uri()
        earlier = self.client.messages[:after]
        found = self.client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                     and m["params"]["uri"] == uri
                                     and not any(m is seen for seen in earlier), timeout)  # (an equal one may)
        return found["params"]["diagnostics"]

    def folders_changed(self, path: Path, added: list[Path] = (), removed: list[Path] = ()) -> list[dict]:
        """Tell the server; the diagnostics of ``path`` published next."""
        mark = len(self.client.messages)
        self.client.notify("workspace/didChangeWorkspaceFolders", {"event": {
            "added": [{"uri": f.as_uri(), "name": f.name} for f in added],
            "removed": [{"uri": f.as_uri(), "name": f.name} for f in removed]}})
        return self.diagnostics(path, mark)

    def wait_asked(self, times: int, timeout: float = 20) -> None:
        """Until the server has asked for settings ``times`` times."""
        deadline = time.monotonic() + timeout
        while len(self.asked) < times:
            assert time.monotonic() < deadline, f"the server asked for settings {len(self.asked)} times"
            time.sleep(0.02)

    def shown(self) -> list[str]:
        return [m["params"]["message"] for m in list(self.client.messages) if m.get("method") == "window/showMessage"]

    def close(self) -> int:
        try:
            return self.client.close()
        finally:
            self._stop.set()


@pytest.fixture
def editor():
    made: list[Editor] = []

    def make(sections=None, state=None) -> Editor:
        made.append(Editor(sections, state))
        return made[-1]

    yield make
    for each in made:
        assert each.close() == 0


def _unknown(diagnostics: list[dict]) -> list[str]:
    """The names the diagnostics say do not exist (a table or a column)."""
    return sorted(d["data"]["name"] for d in diagnostics if d.get("code") in UNKNOWN)


def _outside(diagnostics: list[dict]) -> bool:
    """The data source is a folder outside the workspace: nothing of it is read (no names)."""
    return any(d.get("code") == "sql.data-source" and "outside the workspace" in d["message"] for d in diagnostics)


def _tables(client: Editor, path: Path, request_id: int) -> set[str]:
    """The completion items at the end of ``SELECT * FROM `` (typed at the end of the document)."""
    uri = path.as_uri()
    answer = client.client.request(request_id, "textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": 3, "character": 14}})
    return {item["label"] for item in (answer.get("result") or {"items": []})["items"]}


def _two_databases(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders whose databases share a table name with different columns."""
    shop, billing = tmp_path / "shop", tmp_path / "billing"
    shop.mkdir()
    billing.mkdir()
    (shop / "schema.sql").write_text("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n")
    (billing / "schema.sql").write_text("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT);\n"
                                        "CREATE TABLE invoices (id INTEGER, total REAL);\n")
    return shop, billing


QUERY = "SELECT email FROM users;\nSELECT total FROM invoices;\nSELECT name FROM users;\nSELECT * FROM "


def test_the_server_says_it_follows_workspace_folders(editor, tmp_path: Path):
    result = editor().start([tmp_path])["result"]
    folders = result["capabilities"]["workspace"]["workspaceFolders"]
    assert folders == {"supported": True, "changeNotifications": True}


def test_a_folder_added_after_the_start_feeds_its_documents_and_takes_its_names_when_removed(editor, tmp_path):
    shop, billing = _two_databases(tmp_path)
    client = editor()
    client.start([shop])
    query = billing / "query.sql"
    # billing is no folder of the workspace yet: its schema lies outside, and is not read
    before = client.open(query, QUERY)
    assert _outside(before) and "invoices" not in _tables(client, query, 10)
    # added: its own schema feeds its documents, and shop's columns are not billing's
    added = client.folders_changed(query, added=[billing])
    assert _unknown(added) == ["name"] and not _outside(added)
    assert {"users", "invoices"} <= _tables(client, query, 11)
    # shop's documents keep shop's database (billing's tables never reach them)
    assert _unknown(client.open(shop / "q.sql", QUERY)) == ["email", "invoices"]  # (total: of no known table)
    assert "invoices" not in _tables(client, shop / "q.sql", 12)
    # removed: billing's names are gone with it
    removed = client.folders_changed(query, removed=[billing])
    assert _outside(removed) and not _unknown(removed)
    assert not {"users", "invoices"} & _tables(client, query, 13)


def test_a_folder_created_and_added_while_the_server_runs_is_read_at_once(editor, tmp_path):
    shop, _ = _two_databases(tmp_path)
    client = editor()
    client.start([shop])
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "schema.sql").write_text("CREATE TABLE parcels (id INTEGER, weight REAL);\n")
    query = fresh / "q.sql"
    text = "SELECT weight FROM parcels;\nSELECT height FROM parcels;\n\nSELECT * FROM "
    assert _outside(client.open(query, text))
    added = client.folders_changed(query, added=[fresh])
    assert _unknown(added) == ["height"] and not _outside(added)
    assert "parcels" in _tables(client, query, 10)


def test_a_removed_folder_takes_its_fragment_files_diagnostics_along(editor, tmp_path):
    shop, billing = _two_databases(tmp_path)
    fragment = billing / ".gdg" / "fragments" / "mine.toml"
    fragment.parent.mkdir(parents=True)
    fragment.write_text("# a fragment file of the folder\n")
    client = editor(state=tmp_path / "state")
    client.start([shop, billing])
    listed = client.diagnostics(fragment, 0)  # listed, not read: it waits for the user's consent
    assert [d["severity"] for d in listed] == [3] and "consent" in listed[0]["message"]
    assert client.folders_changed(fragment, removed=[billing]) == []


PYTHON = "import json\n\njson.dumpz({})\nundefined_x\n"


def _codes(diagnostics: list[dict]) -> list[str]:
    return sorted(d["code"] for d in diagnostics)


def test_each_folder_has_its_own_settings_from_workspace_configuration(editor, tmp_path):
    quiet, strict = tmp_path / "quiet", tmp_path / "strict"
    quiet.mkdir()
    strict.mkdir()
    sections = {None: NO_MODEL, quiet.as_uri(): {**NO_MODEL, "python": {"memberWarnings": False}},
                strict.as_uri(): {**NO_MODEL, "python": {"memberWarnings": True}}}
    client = editor(sections)
    client.start([quiet, strict], configuration=True)
    client.wait_asked(1)
    assert {item.get("scopeUri") for item in client.asked[0]} == {quiet.as_uri(), strict.as_uri()}
    assert all(item["section"] == "gdg" for item in client.asked[0])
    assert _codes(client.open(strict / "a.py", PYTHON, "python")) == ["undefined-name", "unknown-member"]
    assert _codes(client.open(quiet / "a.py", PYTHON, "python")) == ["undefined-name"]
    # the folder's settings change: asked again at didChangeConfiguration, and the documents rechecked
    client.sections[quiet.as_uri()] = {**NO_MODEL, "python": {"memberWarnings": True}}
    mark = len(client.client.messages)
    client.client.notify("workspace/didChangeConfiguration", {"settings": None})
    assert _codes(client.diagnostics(quiet / "a.py", mark)) == ["undefined-name", "unknown-member"]


def test_a_folder_added_later_is_asked_for_its_settings(editor, tmp_path):
    first, later = tmp_path / "first", tmp_path / "later"
    first.mkdir()
    later.mkdir()
    sections = {None: NO_MODEL, later.as_uri(): {**NO_MODEL, "python": {"memberWarnings": False}}}
    client = editor(sections)
    client.start([first], configuration=True)
    document = later / "a.py"
    assert _codes(client.open(document, PYTHON, "python")) == ["undefined-name", "unknown-member"]
    assert _codes(client.folders_changed(document, added=[later])) == ["undefined-name"]
    assert [item["scopeUri"] for item in client.asked[-1]] == [later.as_uri()]


def test_a_folders_answer_never_sets_a_user_only_setting(editor, tmp_path):
    """Attack: the settings a folder answers come from the folder (.vscode/settings.json, an
    exrc): one that names a program to run or raises a bound on what workspace data may cost is
    ignored, said once, and the program never runs."""
    folder, outside = tmp_path / "repo", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    marker = outside / "ran"
    program = outside / "python"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexec python3 \"$@\"\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    long_text = PYTHON + "#" * 3000 + "\n"
    sections = {None: {**NO_MODEL, "limits": {"analysedChars": 2000}},
                folder.as_uri(): {**NO_MODEL, "python": {"interpreter": str(program)},
                                  "limits": {"analysedChars": 256_000_000}}}
    client = editor(sections)
    client.start([folder], configuration=True)
    client.open(folder / "small.py", PYTHON, "python")
    answer = client.client.request(5, "textDocument/completion", {
        "textDocument": {"uri": (folder / "small.py").as_uri()}, "position": {"line": 2, "character": 5}})
    assert "result" in answer
    mark = len(client.client.messages)
    client.client.notify("textDocument/didOpen", {"textDocument": {
        "uri": (folder / "long.py").as_uri(), "languageId": "python", "version": 1, "text": long_text}})
    earlier = client.client.messages[:mark]
    client.client.wait_for(lambda m: m.get("method") == "window/showMessage" and "is not analysed" in
                           m["params"]["message"] and not any(m is seen for seen in earlier), 30)
    assert not marker.exists(), "the folder's interpreter was run"
    ignored = [m for m in client.shown() if "ignored: a folder's settings cannot choose" in m]
    assert len(ignored) == 1, client.shown()
    assert "gdg.python.interpreter" in ignored[0] and "gdg.limits.analysedChars" in ignored[0]
    assert "folder repo" in ignored[0]
