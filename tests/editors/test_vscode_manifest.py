"""The VS Code extension's settings mirror the server's `gdg` settings.

The extension sends every server key with its effective value, so the
defaults declared in editors/vscode/package.json must be the server's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gdg_lsp.settings import CONSTRAINTS, GRAMMAR_ENGINES, REMOTE_DIALECTS, Settings, from_json, to_json, user_only_keys

MANIFEST = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "package.json"
EXTENSION_SETTINGS = MANIFEST.parent / "src" / "settings.ts"
CLIENT_ONLY = ("server.", "trace.", "editor.")


def _flatten(obj: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _properties() -> dict:
    return json.loads(MANIFEST.read_text())["contributes"]["configuration"]["properties"]


def test_every_server_setting_is_contributed_with_the_server_default():
    declared = {key.removeprefix("gdg."): spec for key, spec in _properties().items()}
    server = {k: v for k, v in declared.items() if not k.startswith(CLIENT_ONLY)}
    expected = _flatten(to_json(Settings()))
    assert sorted(server) == sorted(expected)
    for key, default in expected.items():
        assert server[key]["default"] == default, key


def test_the_extension_sends_every_server_setting_it_declares():
    # SERVER_KEYS in settings.ts is what the extension forwards; a key declared
    # in package.json but missing there is shown to users and silently ignored.
    source = EXTENSION_SETTINGS.read_text()
    block = re.search(r"SERVER_KEYS = \[(.*?)\] as const", source, re.S)
    assert block, "SERVER_KEYS not found in settings.ts"
    sent = sorted(re.findall(r'"([^"]+)"', block.group(1)))
    declared = sorted(k.removeprefix("gdg.") for k in _properties() if not k.removeprefix("gdg.").startswith(CLIENT_ONLY))
    assert sent == declared


def test_the_server_accepts_what_the_extension_sends_by_default():
    nested: dict = {}
    for key, spec in _properties().items():
        key = key.removeprefix("gdg.")
        if key.startswith(CLIENT_ONLY):
            continue
        *head, last = key.split(".")
        target = nested
        for part in head:
            target = target.setdefault(part, {})
        target[last] = spec["default"]
    settings, problems = from_json({"gdg": nested})
    assert problems == []
    assert settings == Settings()


def test_enums_match_the_server():
    props = _properties()
    assert tuple(props["gdg.constraint"]["enum"]) == CONSTRAINTS
    assert tuple(props["gdg.grammarEngine"]["enum"]) == GRAMMAR_ENGINES
    assert tuple(props["gdg.remote.dialect"]["enum"]) == REMOTE_DIALECTS


CLIENT_PROGRAM = ("gdg.server.path", "gdg.server.args")
"""The extension's own settings that choose the program it starts."""


def test_every_setting_that_chooses_a_program_or_a_path_is_machine_scoped():
    """What decides which program runs, which model or folder outside the workspace is loaded,
    and whether and where code and a secret leave the machine (a database server's DSN may name
    a client certificate and key to present) is the user's alone: ``settings.USER_ONLY`` marks it
    in the server, and VS Code reads ``machine``-scoped settings from user (or remote machine)
    settings only, never from a folder's .vscode/settings.json, trusted or not. Not
    ``machine-overridable`` (a folder may override those) nor ``window``/``resource``."""
    props = _properties()
    user_only = [f"gdg.{key}" for key in user_only_keys()]
    assert {"gdg.python.interpreter", "gdg.shell.tools", "gdg.model", "gdg.p4.includePaths",
            "gdg.fragments.paths"} <= set(user_only)  # the list is the server's, and holds these
    wrong = {key: props[key].get("scope", "window") for key in (*CLIENT_PROGRAM, *user_only)
             if props[key].get("scope") != "machine"}
    assert not wrong, wrong


def test_untrusted_workspaces_do_not_start_the_server():
    capabilities = json.loads(MANIFEST.read_text())["capabilities"]
    untrusted = capabilities["untrustedWorkspaces"]
    # the server reads the workspace's files (and runs its installed tools' --help): not for an untrusted folder
    assert untrusted["supported"] is False and untrusted["description"]


def test_the_extension_readme_links_nothing_outside_the_extension():
    # vsce refuses to package a README whose relative links leave the extension's folder
    # (they would be broken on the Marketplace): CI's `npm run package` failed on one
    readme = (MANIFEST.parent / "README.md").read_text(encoding="utf-8")
    outside = re.findall(r"\]\((\.\./[^)]*)\)", readme)
    assert not outside, outside


def test_a_folder_may_set_only_what_the_server_resolves_per_folder():
    """``resource`` scope lets a folder's .vscode/settings.json set a key, and the server asks for it
    with the folder's scopeUri (server/folders.py): never a user-only setting, nor one the server
    has once for every folder (the model and its slots)."""
    from gdg_lsp.server.folders import SERVER_WIDE

    props = _properties()
    per_folder = {key.removeprefix("gdg.") for key, spec in props.items() if spec.get("scope") == "resource"}
    assert {"constraint", "jq.inputs", "python.memberWarnings", "diagnostics"} <= per_folder
    assert not per_folder & set(user_only_keys())
    server_wide = {"".join(part.title() if i else part for i, part in enumerate(name.split("_"))) for name in SERVER_WIDE}
    assert not {key.split(".")[0] for key in per_folder} & server_wide
