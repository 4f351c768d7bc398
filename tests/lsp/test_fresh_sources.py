"""Γ follows the disk at every request, through a live server in this process whose client
watches no files (no ``workspace.didChangeWatchedFiles`` capability, as Neovim on Linux) and
with the server's own watcher off (``gdg.watchFiles: off``): what a terminal, a checkout or a
generator writes is in Γ at the next request, asked at once after the write (well within
100 ms), and nothing of what it replaced is.

The attack as a user saw it: a folder with its own ``schema.sql`` was created while the
server ran and a query opened there at once; the catalog had walked the workspace before the
folder existed, the nearest-folder rule found no schema beside the query, and the union of
the other folders' databases answered: the scope arm wrote ``* FROM users WHERE …`` with
``users`` from another database, labelled guaranteed.
"""

from __future__ import annotations

import time
from pathlib import Path

from gdg_lsp.bench.inprocess import InProcessServer

OFF = {"model": "random:7", "maxTokens": 24, "maxLines": 1, "timeoutMs": 30000, "watchFiles": "off"}


async def _gamma(server: InProcessServer, uri: str, line: int, character: int) -> dict[str, list[str]]:
    """Γ at the position, by sort (``gdg/explain`` without a decode)."""
    report = (await server.request("gdg/explain", {"textDocument": {"uri": uri},
                                                   "position": {"line": line, "character": character},
                                                   "decode": False}, timeout=60))["result"]
    assert "hole" in report, report
    return report["hole"]["gamma"]


def _names(gamma: dict[str, list[str]], *sorts: str) -> set[str]:
    return {name for sort in sorts for name in gamma.get(sort, ())}


def _change(server: InProcessServer, uri: str, version: int, text: str) -> None:
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


class _Clock:
    """The time from a write on disk to the request that must see it."""

    def __init__(self) -> None:
        self.written = time.monotonic()

    def mark(self) -> None:
        self.written = time.monotonic()

    def asked(self) -> float:
        return time.monotonic() - self.written


# -- SQL ----------------------------------------------------------------------------------------------


QUERY = "SELECT * FROM "


async def test_sql_a_new_database_folder_is_its_own_source_at_once(tmp_path: Path):
    """Two databases share the table name ``users`` (with other columns); ``orders_a`` is the
    first's alone and must never appear in the second's Γ."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "schema.sql").write_text(
        "CREATE TABLE users (id INT, shop_email TEXT);\nCREATE TABLE orders_a (id INT, total INT);\n")
    first = (tmp_path / "shop" / "q.sql").as_uri()
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        server.open(first, QUERY, language_id="sql")
        gamma = await _gamma(server, first, 0, len(QUERY))
        assert {"users", "orders_a"} <= _names(gamma, "Table")  # the workspace has been walked

        clock = _Clock()
        (tmp_path / "crm").mkdir()
        (tmp_path / "crm" / "schema.sql").write_text(
            "CREATE TABLE users (id INT, crm_phone TEXT);\nCREATE TABLE invoices (id INT, amount INT);\n")
        second = (tmp_path / "crm" / "q.sql").as_uri()
        server.open(second, QUERY, language_id="sql")
        gamma = await _gamma(server, second, 0, len(QUERY))
        assert clock.asked() < 5  # asked at once (the request itself may wait for a busy thread)
        tables = _names(gamma, "Table")
        assert {"users", "invoices"} <= tables
        assert "orders_a" not in tables, tables  # another database's table: the union answered
        columns = _names(gamma, "Column")
        assert not any("shop_email" in c for c in columns), columns

        # the second database's schema changes on disk (same folder, same file, the same size)
        clock.mark()
        (tmp_path / "crm" / "schema.sql").write_text(
            "CREATE TABLE users (id INT, crm_phone TEXT);\nCREATE TABLE invoicez (id INT, amount INT);\n")
        _change(server, second, 2, QUERY + " ")
        tables = _names(await _gamma(server, second, 0, len(QUERY) + 1), "Table")
        assert "invoicez" in tables and "invoices" not in tables, tables


async def test_sql_a_nearer_schema_that_cannot_be_read_answers_empty_not_the_union(tmp_path: Path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "schema.sql").write_text("CREATE TABLE orders_a (id INT);\n")
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        probe = (tmp_path / "shop" / "q.sql").as_uri()
        server.open(probe, QUERY, language_id="sql")
        assert "orders_a" in _names(await _gamma(server, probe, 0, len(QUERY)), "Table")

        (tmp_path / "crm").mkdir()
        # a SQLite database cut short (a copy under way): SQLite's header, then nothing it can read
        (tmp_path / "crm" / "crm.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 80)
        uri = (tmp_path / "crm" / "q.sql").as_uri()
        server.open(uri, QUERY, language_id="sql")
        tables = _names(await _gamma(server, uri, 0, len(QUERY)), "Table")
        assert "orders_a" not in tables, tables
        said = await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                     and m["params"]["uri"] == uri and m["params"]["diagnostics"], 30)
        assert any("could not be read" in d["message"] for d in said["params"]["diagnostics"]), said


async def test_sql_a_sqlite_database_replaced_on_disk_is_read_again(tmp_path: Path):
    import sqlite3

    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE before_t (a INT)")
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        uri = (tmp_path / "q.sql").as_uri()
        server.open(uri, QUERY, language_id="sql")
        assert "before_t" in _names(await _gamma(server, uri, 0, len(QUERY)), "Table")
        fresh = tmp_path / "next.sqlite"
        with sqlite3.connect(fresh) as connection:
            connection.execute("CREATE TABLE after_t (a INT)")
        fresh.replace(db)  # a generator writes the new database beside it and renames it into place
        _change(server, uri, 2, QUERY + " ")
        tables = _names(await _gamma(server, uri, 0, len(QUERY) + 1), "Table")
        assert "after_t" in tables and "before_t" not in tables, tables


# -- P4 -----------------------------------------------------------------------------------------------


P4_PROGRAM = ('#include "defs.p4"\n'
              "control C(inout bit<8> x) {\n    apply {\n        x = 1;\n        \n    }\n}\n")


async def test_p4_an_included_file_changed_or_shadowed_on_disk(tmp_path: Path):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "defs.p4").write_text("const bit<8> OLD_LIMIT = 1;\n")
    (tmp_path / "src").mkdir()
    uri = (tmp_path / "src" / "main.p4").as_uri()
    line, character = 4, 8
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, P4_PROGRAM, language_id="p4")
        assert "OLD_LIMIT" in _names(await _gamma(server, uri, line, character), "Constant")

        # the included file changes in place (same size)
        (tmp_path / "include" / "defs.p4").write_text("const bit<8> NEW_LIMIT = 1;\n")
        constants = _names(await _gamma(server, uri, line, character), "Constant")
        assert "NEW_LIMIT" in constants and "OLD_LIMIT" not in constants, constants

        # a defs.p4 written beside the program comes first in the search ("…" includes)
        (tmp_path / "src" / "defs.p4").write_text("const bit<8> NEAR_LIMIT = 1;\n")
        constants = _names(await _gamma(server, uri, line, character), "Constant")
        assert "NEAR_LIMIT" in constants and "NEW_LIMIT" not in constants, constants


# -- shell: the repository, the Makefile and its includes, package.json, justfile --------------------


async def test_shell_sources_changed_on_disk_are_in_gamma_at_the_next_request(tmp_path: Path):
    from tests.shell.shell_workspace import SHA, make_workspace, write

    root = make_workspace(tmp_path / "ws")
    script = "#!/bin/sh\ngit checkout \n"
    uri = write(root / "sub" / "run.sh", script).as_uri()
    options = {**OFF, "shell": {"tools": []}}
    async with InProcessServer(dev=True, initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(uri, script, language_id="shellscript")
        version = 1

        async def gamma() -> dict[str, list[str]]:
            nonlocal version
            version += 1
            _change(server, uri, version, script)
            return await _gamma(server, uri, 1, len("git checkout "))

        before = await gamma()
        assert {"refs/heads/feature/login"} <= _names(before, "Branch")
        assert {"make:lint", "make:build"} <= _names(before, "MakeTarget")
        assert "npm:build" in _names(before, "NpmScript") and "just:deploy" in _names(before, "JustRecipe")
        assert "MERGE_HEAD" not in _names(before, "PseudoRef")

        git = root / ".git"
        (git / "refs" / "heads" / "feature" / "login").rename(git / "refs" / "heads" / "feature" / "logout")
        write(git / "MERGE_HEAD", SHA + "\n")  # a merge under way
        write(root / "mk" / "common.mk", "lunt:\n\techo l\n")  # the included file, same size
        write(root / "sub" / "package.json", '{"scripts": {"serve": "vite"}}')  # nearer than the root's
        write(root / "justfile", "set shell := [\"bash\", \"-c\"]\nalias b := deplay\ndeplay target='prod':\n"
                                 "\techo $target\n")
        after = await gamma()
        branches = _names(after, "Branch")
        assert "refs/heads/feature/logout" in branches and "refs/heads/feature/login" not in branches, branches
        assert "MERGE_HEAD" in _names(after, "PseudoRef")
        targets = _names(after, "MakeTarget")
        assert "make:lunt" in targets and "make:lint" not in targets, targets
        scripts = _names(after, "NpmScript")
        assert scripts == {"npm:serve"}, scripts
        recipes = _names(after, "JustRecipe")
        assert "just:deplay" in recipes and "just:deploy" not in recipes, recipes


# -- jq -----------------------------------------------------------------------------------------------


async def test_jq_an_input_replaced_on_disk_is_read_again(tmp_path: Path):
    """A generator (``rsync -t``, ``cp -p``) renames a new input over the old one keeping its
    modification time: the same mtime and size, another file."""
    import json
    import os

    data = tmp_path / "orders.json"
    data.write_text(json.dumps({"alpha": 1}))
    old = data.stat()
    uri = (tmp_path / "orders.jq").as_uri()
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, ".", language_id="jq")
        assert ".alpha" in _names(await _gamma(server, uri, 0, 1), "Field")
        staged = tmp_path / "orders.json.new"
        staged.write_text(json.dumps({"omega": 1}))
        os.utime(staged, ns=(old.st_atime_ns, old.st_mtime_ns))
        staged.replace(data)
        _change(server, uri, 2, ". ")
        fields = _names(await _gamma(server, uri, 0, 1), "Field")
        assert ".omega" in fields and ".alpha" not in fields, fields


# -- the server's own watcher --------------------------------------------------------------------------


def _published(uri: str, after: int, server: InProcessServer):
    return lambda m: (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                      and server.messages.index(m) >= after)


async def test_the_servers_watcher_refreshes_diagnostics_without_a_request(tmp_path: Path):
    """A client that watches nothing: with ``gdg.watchFiles: server`` (as ``auto`` is for such a
    client) a column added to schema.sql clears the query's warning with no keystroke there."""
    from gdg_lsp.server import workspace_files

    (tmp_path / "schema.sql").write_text("CREATE TABLE users (id INT, name TEXT);\n")
    uri = (tmp_path / "query.sql").as_uri()
    options = {**OFF, "watchFiles": "server"}
    async with InProcessServer(dev=True, initialization_options=options, root_uri=tmp_path.as_uri()) as server:
        watcher = None
        for _ in range(200):
            watcher = workspace_files.server_watcher(server.server)
            if watcher is not None and watcher.ready.is_set():
                break
            await server.settle(0.05)
        assert watcher is not None and watcher.ready.is_set() and tmp_path in watcher.watched
        mark = len(server.messages)
        server.open(uri, "SELECT email FROM users;\n", language_id="sql")
        first = await server.wait_for(_published(uri, mark, server), 30)
        assert [d["code"] for d in first["params"]["diagnostics"]] == ["sql.unknown-column"]

        mark = len(server.messages)
        (tmp_path / "schema.sql").write_text("CREATE TABLE users (id INT, name TEXT, email TEXT);\n")
        again = await server.wait_for(_published(uri, mark, server), 30)  # generous: the watcher, then the analysis
        assert again["params"]["diagnostics"] == []
        assert watcher.delivered >= 1


async def test_the_watcher_is_off_when_set_off(tmp_path: Path):
    from gdg_lsp.server import workspace_files

    (tmp_path / "schema.sql").write_text("CREATE TABLE users (id INT, name TEXT);\n")
    uri = (tmp_path / "query.sql").as_uri()
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        mark = len(server.messages)
        server.open(uri, "SELECT email FROM users;\n", language_id="sql")
        await server.wait_for(_published(uri, mark, server), 30)
        assert workspace_files.server_watcher(server.server) is None
        mark = len(server.messages)
        (tmp_path / "schema.sql").write_text("CREATE TABLE users (id INT, name TEXT, email TEXT);\n")
        await server.settle(2.0)
        assert not any(_published(uri, mark, server)(m) for m in server.messages[mark:])
        # and the next request reads the file all the same
        _change(server, uri, 2, "SELECT email FROM users; \n")
        fixed = await server.wait_for(_published(uri, mark, server), 30)
        assert fixed["params"]["diagnostics"] == []


# -- Python: star imports, a module's members, a new module --------------------------------------------


PY_DOC = "from helpers import *\nimport helpers\n\nhelpers.\n"


async def test_python_modules_changed_on_disk_are_in_gamma_at_the_next_request(tmp_path: Path):
    """Asked again with the document's text unchanged: what was kept for it holds only while the
    modules it read do."""
    (tmp_path / "helpers.py").write_text("def old_name():\n    pass\n")
    uri = (tmp_path / "main.py").as_uri()
    async with InProcessServer(dev=True, initialization_options=OFF, root_uri=tmp_path.as_uri()) as server:
        server.open(uri, PY_DOC, language_id="python")
        gamma = await _gamma(server, uri, 3, len("helpers."))
        assert "old_name" in _names(gamma, "Import")  # the star import's names
        assert "helpers.old_name" in _names(gamma, "Member")  # the module's members

        (tmp_path / "helpers.py").write_text("def new_name():\n    pass\n")  # the same size
        gamma = await _gamma(server, uri, 3, len("helpers."))
        imported, members = _names(gamma, "Import"), _names(gamma, "Member")
        assert "new_name" in imported and "old_name" not in imported, imported
        assert "helpers.new_name" in members and "helpers.old_name" not in members, members

        # a package written beside the module comes first on the import path (helpers/__init__.py)
        (tmp_path / "helpers").mkdir()
        (tmp_path / "helpers" / "__init__.py").write_text("def from_package():\n    pass\n")
        (tmp_path / "helpers.py").unlink()
        gamma = await _gamma(server, uri, 3, len("helpers."))  # the document unchanged
        imported, members = _names(gamma, "Import"), _names(gamma, "Member")
        assert "from_package" in imported and "new_name" not in imported, imported
        assert "helpers.from_package" in members and "helpers.new_name" not in members, members
