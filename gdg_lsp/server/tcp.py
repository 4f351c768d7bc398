"""``gdg-lsp --tcp HOST:PORT``: the language server on a socket, one client at a time.

- **Where it listens**: a loopback address (``127.0.0.1``, ``::1``, ``localhost``)
  unless ``--allow-remote-clients`` is given; then it prints a warning, since
  whoever reaches the port can read the workspace's names and, with a remote
  backend configured, use it. ``check_address`` decides.
- **One client at a time**: a second connection while one is served waits up to
  ``BUSY_GRACE_SECONDS`` (a reconnecting editor may be quicker than the end of its
  old connection), then gets a ``window/showMessage`` saying the server is busy and
  is closed; the first is not disturbed.
- **Each client its own session**: every connection gets a fresh server
  (documents, settings, model); when the client disconnects, sends ``exit``, or
  breaks the stream, its session ends and the next client is served. The process
  runs until it is stopped (Ctrl-C, SIGTERM).
- **Token, always**: a client's first message must be ``initialize`` with
  ``initializationOptions.gdgToken`` equal to the server's token; the token is removed
  before the server sees the options. Anything else (another method first, a wrong
  token, nothing within ``FIRST_MESSAGE_SECONDS``) is answered with an error, if it was
  a request, and the connection is closed after a pause; nothing of it reaches the
  server. Comparisons take constant time. The token is the first line of
  ``--tcp-token-file FILE`` (a regular file of this user's, mode 0600 or stricter) or
  the environment variable ``GDG_LSP_TCP_TOKEN`` (removed from the environment once
  read, so no program the server starts inherits it); never a command-line argument,
  which every local user can read in the process list. Without one ``--tcp`` is
  refused, unless ``--insecure-no-token`` is given: then any local user may connect,
  and every start says so (stderr and the log).
- **What a client cannot choose**: the settings only the user chooses (``settings.USER_ONLY``:
  ``gdg.python.interpreter``, ``gdg.shell.tools``, ``gdg.model``, ``gdg.fragments.paths``,
  ``gdg.p4.includePaths``, ``gdg.sql.*`` sources, ``gdg.backend``, ``gdg.remote.url``
  and ``apiKeyEnv``) come only from the server's own ``--tcp-settings FILE`` (or their
  defaults), token or not: a token travels in the clear, and whoever holds it should
  read names, not run programs as the server's user. A client's values for them are
  ignored with one warning naming them. Its other settings apply over the file's.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import stat
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

from gdg_lsp.boundary import Refused, read_bounded
from gdg_lsp.consent import is_loopback
from gdg_lsp.errors import GdgError
from gdg_lsp.server import transport
from gdg_lsp.settings import Settings

log = logging.getLogger(__name__)

FIRST_MESSAGE_SECONDS = 10.0
"""How long a connection may stay silent before its first message (a silent one would hold the only slot)."""
BUSY_GRACE_SECONDS = 2.0
"""A client connecting while one is served waits this long for it to finish (a reconnect can
arrive before the old connection's end is noticed) before it is refused."""
REFUSAL_PAUSE_SECONDS = 0.5
"""Pause before closing a connection whose token was wrong (guessing costs time)."""
TOKEN_OPTION = "gdgToken"


def check_address(host: str, allow_remote: bool) -> str | None:
    """Why ``host`` may not be listened on (None: it may); a warning is printed by ``serve``."""
    if is_loopback(host) or allow_remote:
        return None
    return (f"--tcp {host}: gdg-lsp listens on loopback addresses only (127.0.0.1, ::1, localhost); "
            f"anyone who reaches {host} could use this server. Pass --allow-remote-clients to listen there "
            f"anyway")


TOKEN_ENV = "GDG_LSP_TCP_TOKEN"
MAX_TOKEN_FILE_BYTES = 4096
NO_TOKEN = (f"--tcp needs a token, so that only you can use this server: put one (16 characters or more) in a "
            f"file only you can read and pass --tcp-token-file FILE, or set {TOKEN_ENV}; clients send it as "
            f"initializationOptions.{TOKEN_OPTION}. --insecure-no-token serves without one (any local user "
            f"could connect)")


def read_token(path: Path) -> str:
    """The first line of the token file; refused when it is not this user's own regular file,
    others may read or write it, or the token is short."""
    try:
        info = os.lstat(path)
        if os.name == "posix" and info.st_uid != os.getuid():
            raise GdgError(f"the token file {path} belongs to another user (id {info.st_uid}): whoever wrote it "
                           f"knows the token")
        if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise GdgError(f"the token file {path} may be read by others (mode {stat.filemode(info.st_mode)}); "
                           f"chmod 600 it")
        data = read_bounded(path, MAX_TOKEN_FILE_BYTES)
        token = data.decode("utf-8").splitlines()[0].strip() if data.strip() else ""
    except (OSError, Refused, UnicodeDecodeError) as err:
        raise GdgError(f"cannot read the token file {path}: {err}") from err
    return _checked(token, f"the token in {path}")


def _checked(token: str, where: str) -> str:
    if len(token) < 16:
        raise GdgError(f"{where} is empty or shorter than 16 characters")
    return token


def token_for(token_file: Path | None, environ: MutableMapping[str, str], insecure: bool) -> str | None:
    """The token clients must send: from the file or the environment (taken out of it);
    None only with ``insecure``. GdgError when there is none, or two."""
    from_env = environ.pop(TOKEN_ENV, None)
    if token_file is not None and from_env is not None:
        raise GdgError(f"the token is given twice (--tcp-token-file and {TOKEN_ENV}): give it one way")
    if insecure and (token_file is not None or from_env is not None):
        raise GdgError("--insecure-no-token goes without a token; a token was given as well")
    if token_file is not None:
        return read_token(token_file)
    if from_env is not None:
        return _checked(from_env.strip(), f"the token in {TOKEN_ENV}")
    if insecure:
        return None
    raise GdgError(NO_TOKEN)


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class TcpServer:
    """Accepts connections on ``host:port``; each client is served by ``make_server()``'s server."""

    def __init__(self, make_server: Callable[[], Any], host: str, port: int, token: str | None,
                 own_settings: Settings | None = None) -> None:
        self._make_server = make_server
        self.host = host
        self.port = port
        self._token = token
        self._own_settings = own_settings or Settings()
        self._busy = False
        self._free: asyncio.Event | None = None
        self.served = 0
        self.refused = 0
        self.listening: asyncio.Future | None = None
        """Resolves to the bound (host, port) once listening (port 0 picks a free one)."""

    async def run(self) -> None:
        self.listening = asyncio.get_running_loop().create_future()
        listener = await asyncio.start_server(self._connection, self.host, self.port)
        bound = listener.sockets[0].getsockname()
        self.listening.set_result(bound[:2])
        log.info("serving LSP on %s, one client at a time", ", ".join(str(s.getsockname()[:2]) for s in listener.sockets))
        async with listener:
            await listener.serve_forever()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if self._busy:
            await self._wait_free()
        if self._busy:
            self.refused += 1
            log.warning("refused a second client %s: one client at a time", peer)
            writer.write(_frame({"jsonrpc": "2.0", "method": "window/showMessage", "params": {
                "type": 1, "message": "gdg-lsp: this server is serving another client (one client at a time); "
                                      "try again when it has disconnected"}}))
            await _close(writer)
            return
        self._busy = True
        try:
            await self._serve(reader, writer, peer)
        except Exception:  # one client's failure must not end the server
            log.exception("the session with %s failed", peer)
        finally:
            await _close(writer)
            self._busy = False
            if self._free is not None:
                self._free.set()
            log.info("client %s disconnected; waiting for the next one", peer)

    async def _wait_free(self) -> None:
        self._free = self._free if self._free is not None and not self._free.is_set() else asyncio.Event()
        try:
            await asyncio.wait_for(self._free.wait(), BUSY_GRACE_SECONDS)
        except asyncio.TimeoutError:
            pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Any) -> None:
        frames = transport.FrameReader(lambda: reader.read(transport.CHUNK))
        first = None
        if self._token is not None:
            first = await self._authenticated_first(frames, writer, peer)
            if first is None:
                return
        server = self._make_server()
        server.session.own_settings = self._own_settings
        self.served += 1
        log.info("serving client %s", peer)
        ended = asyncio.Event()
        server.protocol.set_writer(writer)
        server.protocol.on_exit = lambda code: ended.set()  # this client is done; the process goes on
        serving = asyncio.ensure_future(server.serve_frames(frames, first))
        waiting = asyncio.ensure_future(ended.wait())
        try:
            await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (serving, waiting):
                task.cancel()
            server.end_session()

    async def _authenticated_first(self, frames: transport.FrameReader, writer: asyncio.StreamWriter,
                                   peer: Any) -> bytes | None:
        """The first message, with its token removed, when it is an ``initialize`` carrying the token."""
        try:
            frame = await asyncio.wait_for(frames.next(), FIRST_MESSAGE_SECONDS)
        except asyncio.TimeoutError:
            frame = None
        message = None
        if frame is not None and frame.body is not None:
            try:
                message = json.loads(frame.body)
            except ValueError:
                message = None
        options = message.get("params", {}).get("initializationOptions") if _is_initialize(message) else None
        given = options.pop(TOKEN_OPTION, None) if isinstance(options, dict) else None
        if isinstance(given, str) and hmac.compare_digest(given.encode(), self._token.encode()):  # type: ignore[union-attr]
            return json.dumps(message).encode("utf-8")
        self.refused += 1
        log.warning("refused client %s: its first message was not an initialize request with the right %s",
                    peer, TOKEN_OPTION)
        if isinstance(message, dict) and "id" in message:
            writer.write(_frame({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32600, "message": f"gdg-lsp: authentication required: send initializationOptions."
                                           f"{TOKEN_OPTION} with the server's token in the initialize request"}}))
        await asyncio.sleep(REFUSAL_PAUSE_SECONDS)
        return None


def _is_initialize(message: Any) -> bool:
    return (isinstance(message, dict) and message.get("method") == "initialize" and "id" in message
            and isinstance(message.get("params"), dict))


async def _close(writer: asyncio.StreamWriter) -> None:
    try:
        await writer.drain()
    except (ConnectionError, OSError):
        pass
    writer.close()
    try:
        await writer.wait_closed()
    except (ConnectionError, OSError):
        pass


def serve(make_server: Callable[[], Any], host: str, port: int, *, allow_remote: bool = False,
          token_file: Path | None = None, insecure: bool = False, own_settings: Settings | None = None) -> None:
    """Listen on ``host:port`` until stopped; what is refused raises GdgError first. ``insecure``
    serves without a token (``--insecure-no-token``), said at every start."""
    if (why := check_address(host, allow_remote)) is not None:
        raise GdgError(why)
    token = token_for(token_file, os.environ, insecure)
    warnings = []
    if token is None:
        warnings.append(f"gdg-lsp: warning: --insecure-no-token: any user of this machine"
                        f"{'' if is_loopback(host) else ' and anyone who reaches ' + host} can connect to port "
                        f"{port} and read the names of the workspace it opens (the settings that choose programs "
                        f"and folders still come from --tcp-settings only)")
    if not is_loopback(host):
        warnings.append(f"gdg-lsp: warning: listening on {host}:{port}, beyond this machine: whoever reaches it "
                        f"can read the names of the workspace, and the token travels unencrypted")
    for warning in warnings:
        print(warning, file=sys.stderr)
        log.warning("%s", warning)
    try:
        asyncio.run(TcpServer(make_server, host.strip("[]"), port, token, own_settings).run())
    except (KeyboardInterrupt, SystemExit):
        pass
