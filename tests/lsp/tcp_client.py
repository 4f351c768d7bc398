"""A bare LSP client over TCP and a ``gdg-lsp --tcp`` subprocess, for the TCP tests."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NO_MODEL = {"model": "/nonexistent/gdg-test-model.gguf"}
TOKEN = "gdg-test-token-of-the-tcp-tests"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_files(folder: Path, token: str | None = TOKEN, settings: dict[str, Any] | None = NO_MODEL) -> list[str]:
    """The flags of a test server: its token in a file of its own (mode 0600) and its own
    settings (``--tcp-settings``: the model no client can choose), in ``folder``; None leaves one out."""
    flags = []
    if token is not None:
        token_file = folder / "token"
        token_file.write_text(token + "\n")
        os.chmod(token_file, 0o600)
        flags += ["--tcp-token-file", str(token_file)]
    if settings is not None:
        (folder / "settings.json").write_text(json.dumps(settings))
        flags += ["--tcp-settings", str(folder / "settings.json")]
    return flags


def start_server(*args: str, port: int | None = None, host: str = "127.0.0.1", token: str | None = TOKEN,
                 settings: dict[str, Any] | None = NO_MODEL, env: dict[str, str] | None = None
                 ) -> tuple[subprocess.Popen, int]:
    """``gdg-lsp --tcp`` with ``args``, and with ``server_files(token, settings)``."""
    port = port or free_port()
    folder = Path(tempfile.mkdtemp(prefix="gdg-tcp-test-"))
    proc = subprocess.Popen([sys.executable, "-m", "gdg_lsp", "--tcp", f"{host}:{port}", *args,
                             *server_files(folder, token, settings)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    proc.gdg_files = folder  # type: ignore[attr-defined]  (removed by stop)
    return proc, port


class TcpClient:
    def __init__(self, port: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.reader = self.sock.makefile("rb")
        self.messages: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def read(self) -> dict[str, Any] | None:
        """The next message, or None when the server closed the connection."""
        length = None
        while True:
            line = self.reader.readline()
            if not line:
                return None
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line in (b"\r\n", b"\n") and length is not None:
                break
        message = json.loads(self.reader.read(length))
        self.messages.append(message)
        return message

    def request(self, msg_id: Any, method: str, params: Any = None) -> dict[str, Any] | None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params is not None else {})})
        while (message := self.read()) is not None:
            if message.get("id") == msg_id and "method" not in message:
                return message
        return None

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def initialize(self, options: dict[str, Any] | None = None, token: str | None = TOKEN,
                   root_uri: str | None = None) -> dict[str, Any] | None:
        """``initialize`` with ``options`` (default NO_MODEL) and the token (None: without one)."""
        options = {**(options if options is not None else NO_MODEL), **({"gdgToken": token} if token else {})}
        answer = self.request(1, "initialize", {"processId": None, "rootUri": root_uri, "capabilities": {},
                                                "initializationOptions": options})
        if answer is not None and "result" in answer:
            self.notify("initialized", {})
        return answer

    def closed(self, timeout: float = 30) -> bool:
        """True when the server closes the connection within ``timeout`` (messages before are read)."""
        self.sock.settimeout(timeout)
        try:
            while self.read() is not None:
                pass
        except (TimeoutError, socket.timeout):
            return False
        except ConnectionResetError:  # closed with bytes of ours unread: closed all the same
            return True
        return True

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def stop(proc: subprocess.Popen) -> str:
    """Stop the server; its stderr."""
    proc.kill()
    _, err = proc.communicate(timeout=30)
    shutil.rmtree(getattr(proc, "gdg_files", ""), ignore_errors=True)
    return err or ""
