"""Attacks over TCP: listening where anyone can connect, a second client taking over a session,
one client's disconnect ending the server for everyone, and connecting without the token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from tests.lsp.tcp_client import NO_MODEL, TcpClient, free_port, start_server, stop

OPEN = {"textDocument": {"uri": "file:///victim/secret.py", "languageId": "python", "version": 1,
                         "text": "api_secret_name = 1\n"}}
HOVER = {"textDocument": {"uri": "file:///victim/secret.py"}, "position": {"line": 0, "character": 3}}


def test_an_address_beyond_loopback_needs_an_explicit_flag_and_is_warned_about():
    port = free_port()
    refused = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"0.0.0.0:{port}"],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--allow-remote-clients" in refused.stderr
    proc, port = start_server("--allow-remote-clients", host="0.0.0.0")
    try:
        client = TcpClient(port)
        assert "result" in client.initialize()
        client.close()
    finally:
        err = stop(proc)
    assert "warning: listening on 0.0.0.0" in err and "no --tcp-token-file" in err


def test_a_second_client_cannot_take_over_the_session():
    proc, port = start_server()
    try:
        victim = TcpClient(port)
        victim.initialize()
        victim.notify("textDocument/didOpen", OPEN)
        assert victim.request(2, "textDocument/hover", HOVER)["result"] is not None
        began = time.monotonic()
        intruder = TcpClient(port)
        intruder.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None, "capabilities": {}}})
        intruder.send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": HOVER})
        assert intruder.closed()
        assert time.monotonic() - began < 15
        said = [m for m in intruder.messages if m.get("method") == "window/showMessage"]
        assert said and "another client" in said[0]["params"]["message"]
        assert not [m for m in intruder.messages if "result" in m]  # nothing of the session reached it
        # the victim's session goes on, unchanged
        assert victim.request(3, "textDocument/hover", HOVER)["result"] is not None
        victim.close()
    finally:
        stop(proc)


def test_the_server_survives_a_client_that_disconnects_and_serves_the_next():
    proc, port = start_server()
    try:
        for n in range(3):
            client = TcpClient(port)
            assert "result" in client.initialize()
            client.notify("textDocument/didOpen", OPEN)
            if n == 1:
                client.sock.close()  # gone at once, answers unread: the server sees a reset
            else:
                client.sock.shutdown(socket.SHUT_WR)  # gone cleanly, without shutdown or exit
                assert client.closed()
            time.sleep(1.0)
            assert proc.poll() is None, f"the server exited after client {n} disconnected"
    finally:
        stop(proc)


def test_a_token_is_required_when_one_is_configured(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple\n")
    os.chmod(token_file, 0o644)
    shared = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{free_port()}",
                             "--tcp-token-file", str(token_file)], capture_output=True, text=True, timeout=60)
    assert shared.returncode == 2 and "chmod 600" in shared.stderr  # a token others can read is no secret
    os.chmod(token_file, 0o600)
    proc, port = start_server("--tcp-token-file", str(token_file))
    try:
        for options in (NO_MODEL, {**NO_MODEL, "gdgToken": "wrong-token-of-the-same-size"}):
            stranger = TcpClient(port)
            answer = stranger.initialize(options)
            assert answer is not None and "authentication required" in answer["error"]["message"]
            assert stranger.closed()
        skipper = TcpClient(port)  # anything but initialize first
        answer = skipper.request(5, "textDocument/hover", HOVER)
        assert "authentication required" in answer["error"]["message"] and skipper.closed()
        friend = TcpClient(port)
        answer = friend.initialize({**NO_MODEL, "gdgToken": "correct-horse-battery-staple"})
        assert "result" in answer
        friend.notify("textDocument/didOpen", OPEN)
        assert friend.request(2, "textDocument/hover", HOVER)["result"] is not None
        shown = [m["params"]["message"] for m in friend.messages if m.get("method") == "window/showMessage"]
        assert not [m for m in shown if "gdgToken" in m]  # the token never reached the settings
        friend.close()
    finally:
        err = stop(proc)
    assert "correct-horse" not in err  # nor the log
