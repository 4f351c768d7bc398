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
- **Token** (``--tcp-token-file FILE``, for anything beyond loopback): the file's
  first line is the token (the file must be readable by its owner only). The
  client's first message must be ``initialize`` with
  ``initializationOptions.gdgToken`` equal to it; the token is removed before the
  server sees the options. Anything else (another method first, a wrong token,
  nothing within ``FIRST_MESSAGE_SECONDS``) is answered with an error, if it was a
  request, and the connection is closed after a pause; nothing of it reaches the
  server. Comparisons take constant time.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gdg_lsp.consent import is_loopback
from gdg_lsp.errors import GdgError
from gdg_lsp.server import transport

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
            f"anyway (with --tcp-token-file to require a token)")


def read_token(path: Path) -> str:
    """The first line of the token file; refused when others may read it or it is empty."""
    try:
        info = path.stat()
        token = path.read_text(encoding="utf-8").splitlines()[0].strip() if path.stat().st_size else ""
    except (OSError, UnicodeDecodeError, IndexError) as err:
        raise GdgError(f"cannot read the token file {path}: {err}") from err
    if os.name == "posix" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise GdgError(f"the token file {path} may be read by others (mode {stat.filemode(info.st_mode)}); "
                       f"chmod 600 it")
    if len(token) < 16:
        raise GdgError(f"the token in {path} is empty or shorter than 16 characters")
    return token


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class TcpServer:
    """Accepts connections on ``host:port``; each client is served by ``make_server()``'s server."""

    def __init__(self, make_server: Callable[[], Any], host: str, port: int, token: str | None = None) -> None:
        self._make_server = make_server
        self.host = host
        self.port = port
        self._token = token
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
          token_file: Path | None = None) -> None:
    """Listen on ``host:port`` until stopped; what is refused raises GdgError first."""
    if (why := check_address(host, allow_remote)) is not None:
        raise GdgError(why)
    token = read_token(token_file) if token_file is not None else None
    if not is_loopback(host):
        warning = (f"gdg-lsp: warning: listening on {host}:{port}, beyond this machine: whoever reaches it "
                   f"can read the names of the workspace" + ("" if token else " (no --tcp-token-file: no token is asked)"))
        print(warning, file=sys.stderr)
        log.warning("%s", warning)
    try:
        asyncio.run(TcpServer(make_server, host.strip("[]"), port, token).run())
    except (KeyboardInterrupt, SystemExit):
        pass
