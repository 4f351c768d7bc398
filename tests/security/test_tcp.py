"""Attacks over TCP: listening where anyone can connect, a second client taking over a session,
one client's disconnect ending the server for everyone, connecting without the token, a server
started without one, and a client choosing the program the server runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from tests.lsp.tcp_client import NO_MODEL, TOKEN, TcpClient, free_port, start_server, stop

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
    assert "warning: listening on 0.0.0.0" in err and "unencrypted" in err


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


def test_a_token_is_required_from_every_client(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple\n")
    os.chmod(token_file, 0o644)
    shared = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{free_port()}",
                             "--tcp-token-file", str(token_file)], capture_output=True, text=True, timeout=60)
    assert shared.returncode == 2 and "chmod 600" in shared.stderr  # a token others can read is no secret
    os.chmod(token_file, 0o600)
    proc, port = start_server("--tcp-token-file", str(token_file), token=None)
    try:
        for token in (None, "wrong-token-of-the-same-size"):
            stranger = TcpClient(port)
            answer = stranger.initialize(NO_MODEL, token=token)
            assert answer is not None and "authentication required" in answer["error"]["message"]
            assert stranger.closed()
        skipper = TcpClient(port)  # anything but initialize first
        answer = skipper.request(5, "textDocument/hover", HOVER)
        assert "authentication required" in answer["error"]["message"] and skipper.closed()
        friend = TcpClient(port)
        answer = friend.initialize(NO_MODEL, token="correct-horse-battery-staple")
        assert "result" in answer
        friend.notify("textDocument/didOpen", OPEN)
        assert friend.request(2, "textDocument/hover", HOVER)["result"] is not None
        shown = [m["params"]["message"] for m in friend.messages if m.get("method") == "window/showMessage"]
        assert not [m for m in shown if "gdgToken" in m]  # the token never reached the settings
        friend.close()
    finally:
        err = stop(proc)
    assert "correct-horse" not in err  # nor the log


def test_a_server_without_a_token_is_refused_unless_the_user_says_insecure(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GDG_LSP_TCP_TOKEN"}
    refused = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{free_port()}"],
                             capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 2
    assert all(way in refused.stderr for way in ("--tcp-token-file", "GDG_LSP_TCP_TOKEN", "--insecure-no-token"))
    log_file = tmp_path / "server.log"
    proc, port = start_server("--insecure-no-token", "--log-file", str(log_file), token=None)
    try:
        client = TcpClient(port)
        assert "result" in client.initialize(token=None)  # anyone gets in: the user asked for it
        client.close()
    finally:
        err = stop(proc)
    assert "warning: --insecure-no-token: any user of this machine" in err
    assert "--insecure-no-token: any user of this machine" in log_file.read_text()


def test_the_token_may_come_from_the_environment_but_only_one_way():
    proc, port = start_server(token=None, env={"GDG_LSP_TCP_TOKEN": TOKEN})
    try:
        assert "authentication required" in TcpClient(port).initialize(token=None)["error"]["message"]
        client = TcpClient(port)
        assert "result" in client.initialize()
        client.close()
    finally:
        stop(proc)
    twice = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{free_port()}",
                            "--insecure-no-token"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "GDG_LSP_TCP_TOKEN": TOKEN})
    assert twice.returncode == 2 and "a token was given as well" in twice.stderr


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give the token file to another user")
def test_a_token_file_another_user_wrote_is_refused(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("correct-horse-battery-staple\n")
    os.chmod(token_file, 0o600)
    os.chown(token_file, 12345, 12345)
    refused = subprocess.run([sys.executable, "-m", "gdg_lsp", "--tcp", f"127.0.0.1:{free_port()}",
                              "--tcp-token-file", str(token_file)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "belongs to another user" in refused.stderr


@pytest.mark.parametrize("mode", ["token", "insecure-no-token"])
def test_a_client_cannot_choose_the_program_the_server_runs(tmp_path, mode):
    """Another local user's client names its own script as gdg.python.interpreter (and its own
    gdg.shell.tools): the server, asked for members after ``json.``, must not run it."""
    marker = tmp_path / "RAN"
    script = tmp_path / "attacker" / "python"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho ran as $(id -u) > {marker}\n")
    script.chmod(0o755)
    subprocess.run([str(script)], check=True)
    assert marker.exists()  # the bait works when run
    marker.unlink()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "main.py").write_text("import json\njson.\n")
    uri = (root / "main.py").as_uri()
    flags, token = (("--insecure-no-token",), None) if mode != "token" else ((), TOKEN)
    proc, port = start_server(*flags, token=token)
    try:
        client = TcpClient(port)
        options = {**NO_MODEL, "python": {"interpreter": str(script)}, "shell": {"tools": ["python"]}}
        assert "result" in client.initialize(options, token=token, root_uri=root.as_uri())
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": "import json\njson.\n"}})
        answer = client.request(2, "textDocument/completion",
                                {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 5}})
        labels = {item["label"] for item in answer["result"]["items"]}
        assert "dumps" in labels  # members came from the server's own interpreter
        shown = [m["params"]["message"] for m in client.messages if m.get("method") == "window/showMessage"]
        said = [m for m in shown if "gdg.python.interpreter" in m]
        assert len(said) == 1 and "gdg.shell.tools" in said[0] and "--tcp-settings" in said[0]
        client.close()
    finally:
        stop(proc)
    assert not marker.exists(), marker.read_text()


def test_an_option_is_taken_only_as_spelled():
    """argparse takes any unique prefix of an option by default: ``--tcp-token=SECRET`` was read as
    ``--tcp-token-file``, the secret then treated as a path (and shown in its error)."""
    from gdg_lsp.cli import build_parser

    args, unknown = build_parser().parse_known_args(["--tcp-token=correct-horse-battery", "doctor"])
    assert args.tcp_token_file is None and unknown == ["--tcp-token=correct-horse-battery"]
    args, unknown = build_parser().parse_known_args(["complete", "f.py", "--line", "1", "--jso"])
    assert not args.json and unknown == ["--jso"]  # a subcommand's options too
    assert build_parser().parse_args(["--tcp-token-file", "t"]).tcp_token_file.name == "t"
