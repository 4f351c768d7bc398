"""A bare JSON-RPC client over a gdg-lsp subprocess, for fixtures, hostile input and stress runs.

pytest-lsp drives the well-behaved sessions; this one can also send bytes no
real client would (broken JSON, wrong types, broken framing) and records
everything it gets. ``gdg-lsp bench stress`` and the tests share it.
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
    """``args`` go to ``gdg-lsp --stdio``; ``prelude`` is Python run in the server
    process before it starts (tests use it to simulate a broken install)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, stderr: Path | None = None,
                 prelude: str | None = None, **popen: Any) -> None:
        self._stderr = open(stderr, "wb") if stderr else subprocess.DEVNULL
        if prelude is None:
            command = [sys.executable, "-m", "gdg_lsp", "--stdio", *args]
        else:
            start = f"import sys\nfrom gdg_lsp.cli import main\nsys.exit(main(['--stdio', *{list(args)!r}]))\n"
            command = [sys.executable, "-c", prelude + "\n" + start]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env={**os.environ, **(env or {})}, **popen,
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

    def send_stream(self, data: bytes) -> None:
        """Bytes exactly as given, framing included (or broken)."""
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode("utf-8"))

    def request(self, msg_id: Any, method: str, params: Any = None, timeout: float = 60) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params is not None else {})})
        return self.wait_for(lambda m: m.get("id") == msg_id and "method" not in m, timeout)

    def send_request(self, msg_id: Any, method: str, params: Any = None) -> None:
        """Send a request without waiting (collect the answers with ``responses``)."""
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, **({"params": params} if params is not None else {})})

    def responses(self, ids, timeout: float = 60) -> dict[Any, dict[str, Any]]:
        """The responses to ``ids`` (every one of them, or TimeoutError naming the missing ones)."""
        wanted = set(ids)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = {m["id"]: m for m in self.messages if "method" not in m and m.get("id") in wanted}
                if len(found) == len(wanted):
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.proc.poll() is not None:
                    missing = sorted(map(repr, wanted - set(found)))[:10]
                    raise TimeoutError(f"no response to {len(wanted) - len(found)} requests: {', '.join(missing)}")
                self._cond.wait(min(remaining, 1.0))

    def drain(self) -> list[dict[str, Any]]:
        """Every message received so far, forgotten here (long sessions stay fast)."""
        with self._cond:
            taken, self.messages = self.messages, []
            return taken

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
