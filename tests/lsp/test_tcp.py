"""gdg-lsp --tcp HOST:PORT serves the same protocol over a socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_message(sock_file) -> dict:
    length = 0
    while True:
        line = sock_file.readline()
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b""):
            break
    return json.loads(sock_file.read(length))


def test_tcp_server_answers_initialize():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=60)
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP server did not start"
                time.sleep(0.2)
        with sock, sock.makefile("rb") as reader:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None, "capabilities": {},
                                          "initializationOptions": {"gdg": {"model": "/nonexistent"}}}}).encode()
            sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            message = _read_message(reader)
            while "id" not in message:
                message = _read_message(reader)
            assert message["id"] == 1 and "inlineCompletionProvider" in message["result"]["capabilities"]
    finally:
        proc.kill()
        proc.wait()


def test_bad_tcp_address_is_a_clear_error():
    result = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", "nonsense"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "HOST:PORT" in result.stderr
