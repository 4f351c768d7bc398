"""The VS Code extension's settings mirror the server's `gdg` settings.

The extension sends every server key with its effective value, so the
defaults declared in editors/vscode/package.json must be the server's.
"""

from __future__ import annotations

import json
from pathlib import Path

from gdg_lsp.settings import CONSTRAINTS, GRAMMAR_ENGINES, REMOTE_DIALECTS, Settings, from_json, to_json

MANIFEST = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "package.json"
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
