"""The byte stream under JSON-RPC: frames in, messages to the protocol.

pygls' own reader only knows ``Content-Length: N\\r\\n`` spelled exactly so, at
the start of a line; anything else (a lower-case header, ``\\n`` line ends, a
length one byte short, a stray line of garbage) leaves it reading bodies as
headers, and from then on it drops every message: the server is alive but
deaf. This reader resynchronises instead:

- header names are case-insensitive and lines may end in ``\\n``;
- bytes outside any frame are dropped (and reported once per run of them);
- the body ends at the declared length, or earlier where another header begins
  inside it: valid JSON can hold neither a raw line break inside a string nor
  a bare word outside one, so a header inside a body means the length was
  wrong, and the message after it is not lost;
- a declared length above ``MAX_BODY_BYTES`` is refused without allocating it.

Whatever cannot be read becomes a ParseError response with id null (JSON-RPC's
answer when the id cannot be known), so a client waiting on a request that
never arrived intact hears about it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import BinaryIO

log = logging.getLogger(__name__)

HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d{1,15})[ \t]*\r?\n", re.IGNORECASE)
MAX_BODY_BYTES = 512 * 1024 * 1024
"""The largest message read (a 10 MB document escaped as JSON is at most 60 MB)."""
MAX_HEADER_BYTES = 16 * 1024
"""How far after Content-Length the blank line that ends the headers may be."""
_KEEP = 64
"""Bytes kept from a run of garbage: a header may be arriving in pieces."""
CHUNK = 1 << 20


@dataclass(frozen=True)
class Frame:
    body: bytes | None = None
    """A message body to parse (None for a problem alone)."""
    problem: str | None = None
    """What went wrong with the framing, for the log."""
    lost: bool = False
    """True when bytes that may have been a message were dropped: the client gets a ParseError."""


class FrameReader:
    """Splits a byte stream into message bodies; ``read_chunk`` returns b"" at the end."""

    def __init__(self, read_chunk: Callable[[], Awaitable[bytes]]) -> None:
        self._read_chunk = read_chunk
        self._buf = bytearray()
        self._eof = False

    async def _fill(self) -> None:
        chunk = await self._read_chunk()
        if chunk:
            self._buf += chunk
        else:
            self._eof = True

    async def next(self) -> Frame | None:
        """The next frame, or None at the end of the stream."""
        garbage = 0
        while True:
            header = HEADER.search(self._buf)
            if header is None:
                # no header yet: keep only a tail that may be the start of one
                cut = len(self._buf) if self._eof else max(0, len(self._buf) - _KEEP)
                garbage += _non_blank(self._buf[:cut])
                del self._buf[:cut]
                if self._eof:
                    return _garbage(garbage) if garbage else None
                await self._fill()
                continue
            if header.start():
                garbage += _non_blank(self._buf[: header.start()])
                del self._buf[: header.start()]
                continue
            if garbage:
                return _garbage(garbage)  # the header stays for the next call
            frame = await self._frame_at_start(header)
            if frame is not None:
                return frame

    async def _frame_at_start(self, header: re.Match) -> Frame:
        """The buffer starts with a Content-Length header: read its frame."""
        pos = header.end()
        while True:  # the other headers, up to the blank line
            line_end = self._buf.find(b"\n", pos)
            if line_end < 0 and not self._eof:
                if len(self._buf) - pos > MAX_HEADER_BYTES:
                    del self._buf[: header.end()]
                    return Frame(problem="a header section that never ends", lost=True)
                await self._fill()
                continue
            line = bytes(self._buf[pos : line_end + 1]) if line_end >= 0 else b""
            if line in (b"\r\n", b"\n"):
                body_start = line_end + 1
                break
            if HEADER.match(line):  # a second Content-Length: the first one had no message
                del self._buf[:pos]
                return Frame(problem="a Content-Length header without a message", lost=True)
            if not _OTHER_HEADER.match(line):  # no blank line: the body starts here
                body_start = pos
                break
            pos = line_end + 1
        length = int(header.group(1))
        if length > MAX_BODY_BYTES:
            del self._buf[:body_start]  # what follows reads as garbage until the next header
            return Frame(problem=f"a message of {length} bytes (the limit is {MAX_BODY_BYTES})", lost=True)
        scanned = body_start
        while True:
            end = body_start + length
            inner = HEADER.search(self._buf, max(body_start, scanned - _KEEP))
            scanned = len(self._buf)
            if inner is not None and inner.start() < end:
                body = bytes(self._buf[body_start : inner.start()])
                del self._buf[: inner.start()]
                return Frame(body, problem=f"Content-Length {length} ran past the message ({len(body)} bytes)")
            if len(self._buf) >= end and not self._eof and _ends_in_header_start(self._buf, body_start, end):
                await self._fill()  # the declared length may run into a header that is still arriving
                continue
            if len(self._buf) >= end:
                body = bytes(self._buf[body_start:end])
                del self._buf[:end]
                return Frame(body)
            if self._eof:
                body = bytes(self._buf[body_start:])
                self._buf.clear()
                return Frame(body, problem="the stream ended inside a message")
            await self._fill()


_OTHER_HEADER = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~-]+[ \t]*:[^\r\n]*\r?\n\Z")


def _prefix_pattern(pieces: list[bytes]) -> re.Pattern:
    """A regex matching any non-empty prefix of the concatenation of ``pieces``, up to the end of the input."""
    pattern = b""
    for piece in reversed(pieces[1:]):
        pattern = b"(?:" + piece + pattern + b")?"
    return re.compile(pieces[0] + pattern + rb"\Z", re.IGNORECASE)


_HEADER_START = _prefix_pattern([*(re.escape(bytes([c])) for c in b"content-length"),
                                 rb"[ \t]*", b":", rb"[ \t]*", rb"\d{1,15}", rb"[ \t]*", rb"\r?"])
"""The start of a Content-Length header cut off by the end of the buffer (the rest has not arrived)."""


def _ends_in_header_start(buf: bytearray, body_start: int, end: int) -> bool:
    """True when a header may begin inside the declared body and run past what has arrived.
    Valid JSON never ends like the start of a header, so an exact frame is never held back."""
    found = _HEADER_START.search(buf, max(body_start, len(buf) - 48))
    return found is not None and found.start() < end


def _non_blank(data: bytes | bytearray) -> int:
    return len(bytes(data).strip())


def _garbage(count: int) -> Frame:
    return Frame(problem=f"dropped {count} bytes that were not part of any message", lost=True)


def stdin_chunks(stream: BinaryIO, loop: asyncio.AbstractEventLoop) -> Callable[[], Awaitable[bytes]]:
    """Chunks of ``stream`` read by a daemon thread (it never holds up the exit), with backpressure."""
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=8)
    try:
        fd = stream.fileno()
        # os.read, not the buffered reader: a daemon thread blocked inside a
        # BufferedReader holds its lock, and the interpreter aborts at exit
        read: Callable[[int], bytes] = lambda n: os.read(fd, n)  # noqa: E731
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        read = getattr(stream, "read1", stream.read)

    def pump() -> None:
        while True:
            try:
                chunk = read(CHUNK)
            except (OSError, ValueError):
                chunk = b""
            try:
                asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
            except Exception:  # the loop is gone: the server is exiting
                return
            if not chunk:
                return

    threading.Thread(target=pump, name="gdg-stdin", daemon=True).start()
    return queue.get


async def serve(reader: FrameReader, receive: Callable[[bytes], None], report: Callable[[str], None],
                stop: threading.Event) -> None:
    """Read frames until the stream ends (or ``stop`` is set) and hand each body to ``receive``."""
    while not stop.is_set():
        frame = await reader.next()
        if frame is None:
            return
        if frame.problem:
            log.warning("framing: %s", frame.problem)
            if frame.lost:
                report(f"cannot read a message: {frame.problem}")
        if frame.body is not None:
            try:
                receive(frame.body)
            except Exception:  # the protocol answers what it can; nothing here may end the loop
                log.exception("a message could not be handled")


def stdio_streams() -> tuple[BinaryIO, BinaryIO]:
    return sys.stdin.buffer, sys.stdout.buffer


class PipeWriter:
    """pygls' writer over the stdout pipe, for a client that may close it at any time.

    An editor quitting closes the pipe while the server still answers (Neovim's ``:qa!``
    sends ``shutdown`` and closes it before reading the reply): the write fails, and pygls
    logged the BrokenPipeError's traceback twice, then the interpreter a third time while
    flushing stdout at exit. Here the first failed write means the client is gone: it is
    said once at INFO, ``on_closed`` runs (the server stops reading), the stream's file
    descriptor is pointed at the null device so that nothing else can fail on it, and later
    writes are dropped."""

    def __init__(self, stream: BinaryIO, on_closed: Callable[[], None] = lambda: None) -> None:
        self._stream = stream
        self._on_closed = on_closed
        self.closed = False

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self._stream.write(data)
            self._stream.flush()
        except (OSError, ValueError):  # EPIPE, ECONNRESET, or a stream closed under us
            self._gone()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._stream.close()
        except (OSError, ValueError):
            _silence(self._stream)

    def _gone(self) -> None:
        if self.closed:
            return
        self.closed = True
        log.info("the client closed the connection: the server stops")
        _silence(self._stream)
        self._on_closed()


def _silence(stream: BinaryIO) -> None:
    """Point ``stream``'s descriptor at the null device: what is still buffered goes nowhere."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (tests): nothing will flush it at exit
        pass
