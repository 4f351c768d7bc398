"""Attack: a workspace chooses which programs run, through the editor (issue 27).

In Neovim the settings that choose a program, a model or folder to load, or where code
goes (the server's ``settings.USER_ONLY``) come from the user's own ``setup{}`` only:

- a ``setup{}`` written in the project's ``.nvim.lua`` (Neovim sources it with 'exrc' once
  the user trusts it) names its own interpreter, tools and server binary;
- something merges a project's values into the client's config afterwards
  (``vim.lsp.config("gdg_lsp", ...)``, as a project-local settings plugin or an
  ``lsp/gdg_lsp.lua`` on 'runtimepath' would).

A stand-in server records what it was sent (``initialize``, the answer to its
``workspace/configuration`` request, ``didChangeConfiguration``): it must hold the user's
own values only. The VS Code side is in tests/editors/test_vscode_manifest.py (every such
setting is ``machine`` scope) and editors/vscode/test/unit/discovery.test.ts (the
workspace's own ``.venv/bin/gdg-lsp`` never runs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gdg_lsp.settings import user_only_keys
from tests.editors.test_neovim import PLUGIN, _env, _nvim

RECORDER = r'''
import json, os, sys
out = sys.argv[1]
seen = []
def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b"\n") and length is not None:
            return json.loads(sys.stdin.buffer.read(length))
def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()
while (message := read()) is not None:
    seen.append(message)
    with open(out + ".part", "w") as handle:  # whole or not at all: the test may read it meanwhile
        json.dump(seen, handle)
    os.replace(out + ".part", out)
    if message.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}})
    elif message.get("method") == "initialized":
        send({"jsonrpc": "2.0", "id": "config", "method": "workspace/configuration",
              "params": {"items": [{"section": "gdg"}]}})
    elif message.get("method") == "shutdown":
        send({"jsonrpc": "2.0", "id": message["id"], "result": None})
    elif message.get("method") == "exit":
        break
'''


def _session(tmp_path: Path, lua: str) -> tuple[list[dict], str]:
    """Run ``lua`` in a headless Neovim whose cwd is a project folder; what the stand-in
    server was sent, and the notifications shown."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.py").write_text("import json\n")
    recorder, recorded, shown = tmp_path / "recorder.py", tmp_path / "recorded.json", tmp_path / "shown.json"
    recorder.write_text(RECORDER)
    script = tmp_path / "script.lua"
    script.write_text(f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    local shown = {{}}
    vim.notify = function(msg) table.insert(shown, msg) end
    RECORDER_CMD = {{ {json.dumps(sys.executable)}, {json.dumps(str(recorder))}, {json.dumps(str(recorded))} }}
    {lua}
    vim.cmd("edit main.py")
    vim.wait(20000, function()
      local ok, seen = pcall(vim.fn.readfile, {json.dumps(str(recorded))})
      return ok and #seen > 0 and seen[1]:find('"id": "config"', 1, true) ~= nil
    end, 50)
    vim.wait(200)
    vim.fn.writefile({{ vim.json.encode(shown) }}, {json.dumps(str(shown))})
    vim.cmd("qall!")
    """)
    proc = subprocess.run([_nvim(), "--headless", "--clean", "-c", f"luafile {script}"],
                          env=_env(tmp_path, GDG_PLUGIN=str(PLUGIN)), cwd=project, capture_output=True, text=True,
                          timeout=90, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert recorded.exists(), f"the server never started: {proc.stderr}"
    return json.loads(recorded.read_text()), "\n".join(json.loads(shown.read_text()))


def _sent(messages: list[dict]) -> list[dict]:
    """Every gdg section the server received: initializationOptions, the configuration answer,
    didChangeConfiguration's."""
    sections = []
    for message in messages:
        if message.get("method") == "initialize":
            sections.append(message["params"]["initializationOptions"])
        elif message.get("id") == "config" and "result" in message:
            sections.append(message["result"][0])
        elif message.get("method") == "workspace/didChangeConfiguration":
            sections.append(message["params"]["settings"]["gdg"])
    assert len(sections) == 3, messages
    return sections


def test_a_project_exrc_setup_cannot_choose_programs(tmp_path):
    marker = tmp_path / "RAN"
    evil = tmp_path / "project-bin" / "gdg-lsp"
    evil.parent.mkdir()
    evil.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    evil.chmod(0o755)
    exrc = tmp_path / "project" / ".nvim.lua"
    lua = f"""
    require("gdg_lsp").setup({{ cmd = RECORDER_CMD, settings = {{ python = {{ interpreter = "/home/me/venv" }} }} }})
    local f = assert(io.open({json.dumps(str(exrc))}, "w"))
    f:write([[require("gdg_lsp").setup({{ cmd = {{ {json.dumps(str(evil))} }}, settings = {{ maxLines = 3,
      python = {{ interpreter = "./tools/python" }}, shell = {{ tools = {{ "rm" }} }} }} }})]])
    f:close()
    dofile({json.dumps(str(exrc))})  -- as 'exrc' sources it once the user trusted it
    """
    messages, shown = _session(tmp_path, lua)
    for section in _sent(messages):
        assert section["python"] == {"interpreter": "/home/me/venv"}, section  # the user's own setup{}
        assert "shell" not in section or section["shell"] == {}, section
        assert section["maxLines"] == 3  # what a project may choose, it still chooses
    assert not marker.exists()  # its server binary did not run: the user's did
    assert ".nvim.lua (a project's exrc file) cannot set cmd, settings.python.interpreter, settings.shell.tools" in shown


def test_a_project_value_merged_into_the_client_config_never_reaches_the_server(tmp_path):
    lua = """
    require("gdg_lsp").setup({ cmd = RECORDER_CMD, settings = { model = "/models/mine.gguf" } })
    -- what a project-local settings plugin would merge in afterwards
    vim.lsp.config("gdg_lsp", {
      init_options = { python = { interpreter = "./.venv/bin/python" }, model = "./evil.gguf" },
      settings = { gdg = { python = { interpreter = "./.venv/bin/python" }, p4 = { includePaths = { "/" } },
                           model = "./evil.gguf", maxLines = 2 } },
    })
    """
    messages, shown = _session(tmp_path, lua)
    for section in _sent(messages):
        assert section.get("model") == "/models/mine.gguf", section
        assert "interpreter" not in (section.get("python") or {}), section
        assert (section.get("p4") or {}).get("includePaths") in (None, []), section
    assert "set outside setup{} (ignored)" in shown and "python.interpreter" in shown


def test_the_plugin_knows_every_user_only_setting_of_the_server(tmp_path):
    out = tmp_path / "keys.json"
    script = tmp_path / "keys.lua"
    script.write_text(f"""
    vim.opt.runtimepath:prepend(vim.env.GDG_PLUGIN)
    vim.fn.writefile({{ vim.json.encode(require("gdg_lsp.config").user_only) }}, {json.dumps(str(out))})
    vim.cmd("qall!")
    """)
    proc = subprocess.run([_nvim(), "--headless", "--clean", "-c", f"luafile {script}"],
                          env=_env(tmp_path, GDG_PLUGIN=str(PLUGIN)), cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert sorted(json.loads(out.read_text())) == sorted(user_only_keys())
