"""What may leave the machine: decided by the user, never by a workspace file.

Settings reach the server from the editor, and an editor may take them from a
workspace file (``.vscode/settings.json``, a project's ``.nvim.lua``). So the
settings that send code, or a secret, somewhere are held to rules a workspace
cannot loosen (docs/RELIABILITY.md, "Trust"):

- ``gdg.remote.url`` must be ``https``, unless its host is this machine
  (loopback) or the user allowed plain http to that host outside the workspace;
- ``gdg.remote.apiKeyEnv`` may only name a variable whose name starts with
  ``GDG_`` (the server reads no other secret of its environment), unless the user
  allowed that name outside the workspace.

"Outside the workspace" means the server's own command line or environment:
``--allow-api-key-env NAME`` / ``GDG_LSP_ALLOWED_KEY_ENVS=NAME,...`` and
``--allow-http-remote HOST`` / ``GDG_LSP_ALLOWED_HTTP_HOSTS=HOST,...``. The VS Code
extension declares the remote settings and the server's path and arguments
machine-scoped, so its workspace files cannot set them either.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

KEY_ENV_PREFIX = "GDG_"
ALLOWED_KEY_ENVS = "GDG_LSP_ALLOWED_KEY_ENVS"
ALLOWED_HTTP_HOSTS = "GDG_LSP_ALLOWED_HTTP_HOSTS"

_allowed_key_envs: set[str] = set()
_allowed_http_hosts: set[str] = set()


def allow_key_env(name: str) -> None:
    """The user allowed ``gdg.remote.apiKeyEnv`` to name ``name`` (``--allow-api-key-env``)."""
    _allowed_key_envs.add(name)


def allow_http_host(host: str) -> None:
    """The user allowed plain http to ``host`` (``--allow-http-remote``)."""
    _allowed_http_hosts.add(host.lower())


def _listed(variable: str) -> set[str]:
    return {item.strip() for item in os.environ.get(variable, "").split(",") if item.strip()}


def is_loopback(host: str) -> bool:
    """True for names and addresses of this machine's loopback interface only."""
    host = host.strip("[]").lower()
    if host in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_env_refusal(name: str) -> str | None:
    """Why ``gdg.remote.apiKeyEnv`` may not name ``name`` (None: it may)."""
    if not name or name.startswith(KEY_ENV_PREFIX) or name in _allowed_key_envs | _listed(ALLOWED_KEY_ENVS):
        return None
    return (f"gdg.remote.apiKeyEnv names {name}, but the server reads an API key only from variables whose "
            f"names start with {KEY_ENV_PREFIX} (a workspace setting could otherwise send any secret of the "
            f"environment to the engine). Rename the variable, or allow it outside the workspace: "
            f"gdg-lsp --allow-api-key-env {name}, or {ALLOWED_KEY_ENVS}={name}")


def url_refusal(url: str) -> str | None:
    """Why code may not be sent to ``url`` (None: it may)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "https" or (parts.scheme == "http" and (
            is_loopback(host) or host in _allowed_http_hosts | {h.lower() for h in _listed(ALLOWED_HTTP_HOSTS)})):
        return None
    if parts.scheme != "http":
        return f"gdg.remote.url {url!r} is not an http(s) URL"
    return (f"gdg.remote.url {url!r} is plain http to another machine: the code around the cursor and the API "
            f"key would cross the network unencrypted. Use https, or allow it outside the workspace: "
            f"gdg-lsp --allow-http-remote {host}, or {ALLOWED_HTTP_HOSTS}={host}")


def remote_refusal(url: str, api_key_env: str) -> str | None:
    """Why the remote engine settings may not be used, or None."""
    return url_refusal(url) or key_env_refusal(api_key_env)
