"""Attack: ``gdg.jq.inputs`` globs that cost what the workspace picks.

A folder holding two links back to itself doubles, with each ``*/`` of the glob,
the folders a link-following glob lists: ``Path.glob`` listed 2^18 of them on every
jq completion (66-118 s per request, ``gdg-lsp bench costs --only jq-globs``). An
absolute input glob made ``Path.glob`` raise ``NotImplementedError`` on every
request, with a traceback each time. Each attack goes through a live server in
process: a completion request in a ``.jq`` file.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.bench.costs_workspace import link_farm
from gdg_lsp.bench.inprocess import InProcessServer

NO_MODEL = {"model": "/nonexistent/x.gguf", "diagnostics": False, "watchFiles": "off"}
"""The server's own watcher lists folders too, in a thread of its own: these count the walk's."""


class Listings:
    """Every folder ``os.scandir`` is asked to list (what a glob walk costs)."""

    def __init__(self, monkeypatch) -> None:
        self.folders: list[str] = []
        real_scandir = os.scandir

        def counting(path=".", *args):
            self.folders.append(os.fspath(path))
            return real_scandir(path, *args)

        monkeypatch.setattr(os, "scandir", counting)

    def take(self) -> list[str]:
        taken, self.folders = self.folders, []
        return taken


async def _completion_labels(server: InProcessServer, document: Path) -> list[str]:
    response = await server.request("textDocument/completion", {
        "textDocument": {"uri": document.as_uri()}, "position": {"line": 0, "character": 1}}, timeout=120)
    assert "error" not in response, response
    return sorted(item["label"] for item in response["result"]["items"])


def _filter(root: Path) -> Path:
    """The filter, written last; returns once the workspace has been still for
    ``stamps.RACY_S``: a folder stamped sooner after its change is racy and listed again at the
    next request by design, and these tests count the listings of a workspace nobody touches."""
    document = root / "filter.jq"
    document.write_text(".")
    time.sleep(stamps.RACY_S * 2)
    return document


async def test_a_link_farm_glob_lists_each_folder_once_and_is_walked_once_per_change(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    glob = link_farm(root, 16)  # a link-following walk lists 2^16 folders
    document = _filter(root)
    listings = Listings(monkeypatch)
    options = {**NO_MODEL, "jq": {"inputs": [{"filter": "*.jq", "input": glob}]}}
    async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        began = time.perf_counter()
        first = await _completion_labels(server, document)
        first_seconds = time.perf_counter() - began
        listed = listings.take()
        assert {".id", ".name"} <= set(first), first  # the farm's own JSON file is read
        assert len(listed) <= 64, len(listed)  # not 2^16
        assert first_seconds < 5.0, first_seconds
        # nothing changed: the next requests list nothing at all
        for _ in range(3):
            assert await _completion_labels(server, document) == first
        assert listings.take() == []
        # a change in a folder the walk looked into is seen by the next request
        (root / "farm" / "sample.json").unlink()
        (root / "farm" / "orders.json").write_text(json.dumps({"total": 3}))
        assert ".total" in await _completion_labels(server, document)


async def test_a_glob_over_too_many_folders_stops_at_the_cap_and_says_so_once(tmp_path, monkeypatch):
    """The bound is the user's gdg.limits.globFolders (a small one here; the default is
    folder_walk.MAX_FOLDERS): the walk lists no more folders, and the user hears of it once."""
    bound = 40
    root = tmp_path / "ws"
    for n in range(bound + 50):
        (root / "data" / f"d{n:05d}").mkdir(parents=True)
    (root / "data" / "d00000" / "rows.json").write_text(json.dumps({"first": 1}))
    document = _filter(root)
    listings = Listings(monkeypatch)
    options = {**NO_MODEL, "jq": {"inputs": [{"filter": "*.jq", "input": "data/**/*.json"}]},
               "limits": {"globFolders": bound}}
    async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        for _ in range(3):
            assert ".first" in await _completion_labels(server, document)
        assert len(listings.take()) <= bound
        await server.settle(0.05)
        said = [m for m in server.shown() if "gdg.jq.inputs" in m]
    assert len(said) == 1 and f"more than {bound:,} folders" in said[0] and "gdg.limits.globFolders" in said[0], said


async def test_an_absolute_glob_is_read_inside_the_workspace_and_one_problem_outside(tmp_path, caplog):
    root, outside = tmp_path / "ws", tmp_path / "elsewhere"
    (root / "samples").mkdir(parents=True)
    outside.mkdir()
    (root / "samples" / "orders.json").write_text(json.dumps({"order_id": 7}))
    (outside / "secret.json").write_text(json.dumps({"api_token": "x"}))
    document = _filter(root)
    inside = {"filter": "*.jq", "input": f"{root}/samples/*.json"}
    away = {"filter": "*.jq", "input": f"{outside}/*.json"}
    caplog.set_level(logging.WARNING)
    async with InProcessServer(initialization_options={**NO_MODEL, "jq": {"inputs": [inside]}},
                               root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        assert ".order_id" in await _completion_labels(server, document)
    async with InProcessServer(initialization_options={**NO_MODEL, "jq": {"inputs": [away]}},
                               root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        for _ in range(3):
            assert ".api_token" not in await _completion_labels(server, document)
        await server.settle(0.05)
        said = [m for m in server.shown() if "gdg.jq.inputs" in m]
    assert len(said) == 1 and "outside the workspace folders" in said[0], said
    failures = [r for r in caplog.records if r.exc_info or "NotImplementedError" in r.getMessage()]
    assert failures == [], [r.getMessage() for r in failures]


async def test_a_glob_never_lists_a_folder_outside_the_workspace(tmp_path, monkeypatch):
    root, outside = tmp_path / "ws", tmp_path / "elsewhere"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "keys.json").write_text(json.dumps({"api_token": "x"}))
    (root / "data").mkdir(parents=True)
    (root / "data" / "mine").mkdir()
    (root / "data" / "mine" / "rows.json").write_text(json.dumps({"row": 1}))
    (root / "data" / "out").symlink_to(outside, target_is_directory=True)
    document = _filter(root)
    listings = Listings(monkeypatch)
    options = {**NO_MODEL, "jq": {"inputs": [{"filter": "*.jq", "input": "../elsewhere/*/*.json"},
                                             {"filter": "*.jq", "input": "data/*/*.json"}]}}
    async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        labels = await _completion_labels(server, document)
    assert ".row" in labels and ".api_token" not in labels
    listed = [Path(p).resolve() for p in listings.take()]
    assert listed and all(p.is_relative_to(root.resolve()) for p in listed), listed
