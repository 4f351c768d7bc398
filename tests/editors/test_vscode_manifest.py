"""The VS Code extension's settings mirror the server's `gdg` settings.

The extension sends every server key with its effective value, so the
defaults declared in editors/vscode/package.json must be the server's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gdg_lsp.settings import CONSTRAINTS, GRAMMAR_ENGINES, REMOTE_DIALECTS, Settings, from_json, to_json

MANIFEST = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "package.json"
EXTENSION_SETTINGS = MANIFEST.parent / "src" / "settings.ts"
CLIENT_ONLY = ("server.", "trace.")


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


CONSENT = ("gdg.server.path", "gdg.server.args", "gdg.backend", "gdg.remote.url", "gdg.remote.apiKeyEnv",
           "gdg.p4.includePaths", "gdg.fragments.paths",
           "gdg.fragments.trustedFolders", "gdg.fragments.claims", "gdg.sql.connections", "gdg.sql.sources")
"""What decides which program runs, whether and where code and a secret leave the machine (a
database server's DSN may name a client certificate and key to present), and
which folders outside the workspace may be read (gdg_lsp/boundary.py allows the include paths), and
whether a workspace's own fragment files may decide what is suggested (trust, claims)."""


def test_what_sends_code_away_or_runs_a_program_is_never_taken_from_a_workspace():
    """VS Code reads machine- and application-scoped settings from user (or remote machine)
    settings only: a folder's .vscode/settings.json cannot set them, trusted or not."""
    props = _properties()
    for key in CONSENT:
        assert props[key].get("scope") in ("machine", "application"), key


def test_a_workspace_cannot_trust_its_own_fragment_files():
    """A cloned repository's .vscode/settings.json naming itself in gdg.fragments.trustedFolders (or
    granting its language a claim of Python documents) is not read: VS Code takes machine-scoped
    settings from the user's settings only, and the server hears only what the extension sends."""
    props = _properties()
    for key in ("gdg.fragments.trustedFolders", "gdg.fragments.claims"):
        assert props[key]["scope"] == "machine", key
        assert props[key]["default"] == []


def test_untrusted_workspaces_do_not_start_the_server():
    capabilities = json.loads(MANIFEST.read_text())["capabilities"]
    untrusted = capabilities["untrustedWorkspaces"]
    # the server may be the workspace's own .venv/bin/gdg-lsp: nothing of an untrusted folder runs
    assert untrusted["supported"] is False and untrusted["description"]


def test_the_extension_readme_links_nothing_outside_the_extension():
    # vsce refuses to package a README whose relative links leave the extension's folder
    # (they would be broken on the Marketplace): CI's `npm run package` failed on one
    readme = (MANIFEST.parent / "README.md").read_text(encoding="utf-8")
    outside = re.findall(r"\]\((\.\./[^)]*)\)", readme)
    assert not outside, outside
