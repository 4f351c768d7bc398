"""Attack: settings a workspace can supply send code and a secret to where the workspace says.

``gdg.remote.apiKeyEnv`` could name any variable of the server's environment and
``gdg.remote.url`` could be plain http to any host: with both set, an engine
received ``Authorization: Bearer <the variable's value>`` and the document. Here a
local recorder stands in for the engine and keeps every byte it receives.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time

from gdg_lsp import consent
from gdg_lsp.service.remote import RemoteCompletionService
from gdg_lsp.settings import RemoteSettings, Settings
from tests.lsp.stdio_client import StdioClient

SECRET = "s3cret-value-of-the-victim"


class Recorder:
    """A TCP listener on loopback that keeps whatever is sent to it (and answers nothing useful)."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.connections = 0
        recorder = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                recorder.connections += 1
                self.request.settimeout(2)
                try:
                    while chunk := self.request.recv(65536):
                        recorder.received += chunk
                        if b"\r\n\r\n" in chunk:
                            self.request.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_workspace_settings_cannot_send_an_environment_secret():
    recorder = Recorder()
    client = StdioClient(env={"VICTIM_CLOUD_TOKEN": SECRET})
    try:
        client.initialize(options={"backend": "remote", "remote": {
            "url": f"http://127.0.0.1:{recorder.port}", "apiKeyEnv": "VICTIM_CLOUD_TOKEN", "fallback": "none"}})
        status = client.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] == "failed", 60)
        uri = "file:///victim/a.py"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": "import os\nsecret_code = 1\n"}})
        client.request(2, "textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                            "position": {"line": 2, "character": 0},
                                                            "context": {"triggerKind": 1}})
        time.sleep(0.5)
    finally:
        client.close()
        recorder.close()
    assert recorder.connections == 0 and not recorder.received, bytes(recorder.received[:300])
    assert "apiKeyEnv names VICTIM_CLOUD_TOKEN" in status["params"]["message"]
    shown = [m["params"]["message"] for m in client.messages if m.get("method") == "window/showMessage"]
    assert any("GDG_" in m for m in shown) and not any(SECRET in m for m in shown)


def test_plain_http_to_another_machine_is_refused_before_anything_is_sent(monkeypatch):
    """``http://gpu-box.example:8000`` is routed to the local recorder: without consent nothing
    reaches it (not even the connection); the user's own --allow-http-remote lets it through."""
    recorder = Recorder()
    real_connect = socket.create_connection

    def routed(address, *args, **kwargs):
        host, port = address
        return real_connect(("127.0.0.1", recorder.port) if host == "gpu-box.example" else address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", routed)
    monkeypatch.setenv("GDG_REMOTE_API_KEY", SECRET)
    settings = Settings(backend="remote", remote=RemoteSettings(url="http://gpu-box.example:8000", fallback="none",
                                                                connect_timeout_ms=500, timeout_ms=500, retries=0))
    statuses = []
    try:
        service = RemoteCompletionService(settings, on_status=statuses.append)
        assert not service.start()
        assert recorder.connections == 0 and not recorder.received
        assert "plain http to another machine" in statuses[-1].message
        assert not [s for s in statuses if s.notice and "will be sent" in s.notice]  # nothing was going to be

        monkeypatch.setattr(consent, "_allowed_http_hosts", {"gpu-box.example"})  # gdg-lsp --allow-http-remote
        RemoteCompletionService(settings, on_status=statuses.append).start()
        deadline = time.monotonic() + 10
        while not recorder.received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert recorder.received.startswith(b"GET /v1/models")  # the control: now it is sent
        announced = [s.notice for s in statuses if s.notice and "will be sent" in s.notice]
        assert announced and "http://gpu-box.example:8000" in announced[0]
    finally:
        recorder.close()


def test_the_first_use_of_an_engine_is_announced_before_anything_is_sent():
    recorder = Recorder()
    seen_at_connect: list[int] = []
    statuses = []

    def connector(endpoint):
        seen_at_connect.append(len(statuses))
        raise consent_error(endpoint)

    try:
        settings = Settings(backend="remote", remote=RemoteSettings(url=f"http://localhost:{recorder.port}",
                                                                    fallback="none"))
        service = RemoteCompletionService(settings, on_status=statuses.append, connector=connector)
        service.start()
        service.start()  # a second attempt in the same session is not announced again
    finally:
        recorder.close()
    announcements = [s for s in statuses if s.notice and "will be sent to the remote engine" in s.notice]
    assert len(announcements) == 1 and seen_at_connect and seen_at_connect[0] >= 1
    assert statuses.index(announcements[0]) < seen_at_connect[0]


def consent_error(endpoint):
    from gdg_lsp.backends.remote import RemoteUnavailableError

    return RemoteUnavailableError(f"test: not connecting to {endpoint.url}")
