"""A ``gdg.sql.connections`` given as a string is refused once, without showing it.

The attack (a mistake is enough): ``"gdg.sql.connections": "postgresql://alice:…@db/app"``.
Before, the string was taken as a list of its characters: 40-odd "DSNs" of one
character each, every one a pop-up, the password among them letter by letter.
Now the server shows one message that names the setting and shows no value,
keeps the previous connections, and never tries to connect.
"""

from __future__ import annotations

import socket

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.settings import from_json

PASSWORD = "Sup3r:s3cr@t/pw"
DSN = f"postgresql://alice:{PASSWORD}@127.0.0.1:1/app"


def _leaks(text: str) -> list[str]:
    return [PASSWORD[i:i + 3] for i in range(len(PASSWORD) - 2) if PASSWORD[i:i + 3] in text]


async def test_a_string_for_the_connections_list_is_one_clear_message(tmp_path, monkeypatch):
    attempts: list = []
    real_connect = socket.socket.connect

    def connect(sock, address):
        if isinstance(address, tuple) and address[1] == 1:
            attempts.append(address)
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    (tmp_path / "schema.sql").write_text("CREATE TABLE t (a INT);\n")
    uri = (tmp_path / "q.sql").as_uri()
    options = {"model": "/nonexistent/m.gguf", "sql": {"connections": DSN}}
    async with InProcessServer(initialization_options=options, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, "SELECT a FROM t;\n", "sql")
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        server.notify("workspace/didChangeConfiguration", {"settings": {"gdg": {"sql": {"connections": DSN}}}})
        await server.settle(0.5)
        shown = server.shown()
    about = [m for m in shown if "gdg.sql.connections" in m]
    assert len(about) == 2 and all("must be a list of strings, got a string" in m for m in about), shown
    assert not [m for m in shown if "PostgreSQL" in m], shown  # no connection was tried, nothing to report
    assert attempts == []
    assert not [leak for m in shown for leak in _leaks(m)], shown


def test_settings_of_the_wrong_type_are_rejected_with_one_message_each():
    settings, problems = from_json({"sql": {"connections": DSN, "sources": {"files": "x"}, "prompt": 3},
                                    "diagnostics": "false", "maxTokens": "12"})
    assert settings.sql.connections == [] and settings.sql.sources == [] and settings.diagnostics is True
    assert settings.max_tokens == 48
    assert len(problems) == 5, problems
    for key in ("gdg.sql.connections", "gdg.sql.sources", "gdg.sql.prompt", "gdg.diagnostics", "gdg.maxTokens"):
        assert sum(key in p for p in problems) == 1, (key, problems)
    assert not [leak for p in problems for leak in _leaks(p)], problems
    # the previous value is never repeated for a SQL setting (it holds DSNs)
    base, _ = from_json({"sql": {"connections": [DSN]}})
    _, problems = from_json({"sql": {"connections": DSN}}, base)
    assert problems and not [leak for p in problems for leak in _leaks(p)], problems
