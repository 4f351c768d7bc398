"""A bare JSON-RPC client over a gdg-lsp subprocess, for fixtures and hostile input.

pytest-lsp drives the well-behaved sessions; this one can also send bytes no
real client would (broken JSON, wrong types) and records everything it gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class StdioClient:
    def __init__(self, *args: str, env: dict[str, str] | None = None, stderr: Path | None = None) -> None:
        self._stderr = open(stderr, "wb") if stderr else subprocess.DEVNULL
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gdg_lsp", "--stdio", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env={**os.environ, **(env or {})},
        )
        self.messages: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            body = stream.read(length or 0)
            with self._cond:
                self.messages.append(json.loads(body))
                self._cond.notify_all()

    def send_raw(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode("utf-8"))

    def request(self, msg_id: Any, method: str, params: Any = None, timeout: float = 60) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params is not None else {})})
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    def wait_for(self, predicate, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no matching message from the server")
                self._cond.wait(remaining)

    def initialize(self, capabilities: dict | None = None, options: dict | None = None, root: str | None = None) -> dict:
        caps = capabilities or {"general": {"positionEncodings": ["utf-16"]}}
        result = self.request(1, "initialize", {"processId": os.getpid(), "rootUri": root, "capabilities": caps,
                                                "initializationOptions": options or {}})
        self.notify("initialized", {})
        return result

    def close(self) -> int:
        """Shut the server down politely (unless it already exited); the exit code."""
        try:
            try:
                return self.proc.wait(2)  # a session that sent exit itself
            except subprocess.TimeoutExpired:
                pass
            try:
                self.request("shutdown", "shutdown", timeout=30)
                self.notify("exit")
                return self.proc.wait(20)
            except (TimeoutError, BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                return self.proc.wait()
        finally:
            if self._stderr is not subprocess.DEVNULL:
                self._stderr.close()
