"""Cost cases of workspace data: jq input globs over a link farm, a 0.3 M-character P4
document typed into, and a remote engine's endless answer.

- ``jq-globs``: ``gdg.jq.inputs`` names ``farm/*/*/…/*.json`` over a folder whose two
  links lead back to itself, so each ``*/`` doubles the directories a link-following
  glob lists; each completion request in a ``.jq`` file is timed through the server.
- ``p4-completion``: a P4 program of about 0.3 M characters (one control holding
  ~1,400 actions, the shape that makes the whole control one declaration) is opened
  with diagnostics on, and a statement is typed into its apply block key by key, a
  completion request after each key.
- ``remote-body``: an engine that answers a completion with hundreds of MB (a body
  with its length, one without, and one server-sent event line that does not end);
  the figures are the client's resident-memory growth while it reads and the bytes
  the engine got out before the client hung up.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gdg_lsp.bench.costs import Figure, case
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import NO_MODEL
from gdg_lsp.latency import percentile

JQ_TARGET_MS = 100.0
P4_TARGET_MS = 1000.0
"""A keystroke's completion in the 0.3 M-character document (the issue measured 6-28 s)."""
REMOTE_GROWTH_TARGET_MB = 32.0
"""Resident growth while one huge answer is refused (the cap is a few MB; the rest is slack)."""
REMOTE_SENT_TARGET_MB = 24.0
"""Bytes the engine gets out before the client hangs up: the cap plus the sockets' buffers."""


def _ms(began: float) -> float:
    return (time.perf_counter() - began) * 1000


# -- jq globs over a link farm -----------------------------------------------------------------


def link_farm(root: Path, depth: int) -> str:
    """``root/farm`` with two links back to itself (and one JSON file), and the glob of
    ``depth`` ``*/`` steps under it: a glob that follows links lists 2^depth folders."""
    farm = root / "farm"
    farm.mkdir(parents=True)
    (farm / "sample.json").write_text('{"id": 1, "name": "x"}\n')
    for name in ("a", "b"):
        (farm / name).symlink_to(farm, target_is_directory=True)
    return "farm/" + "*/" * depth + "*.json"


async def _jq_requests(root: Path, glob: str, requests: int) -> tuple[list[float], list[str]]:
    options = {**NO_MODEL, "diagnostics": False, "jq": {"inputs": [{"filter": "*.jq", "input": glob}]}}
    document = root / "filter.jq"
    document.write_text(".")
    async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(document.as_uri(), ".", "jq")
        times = []
        for _ in range(requests):
            began = time.perf_counter()
            response = await server.request("textDocument/completion", {
                "textDocument": {"uri": document.as_uri()}, "position": {"line": 0, "character": 1}}, timeout=600)
            if "error" in response:
                raise RuntimeError(f"jq completion failed: {response['error']}")
            times.append(_ms(began))
        await server.settle(0.05)
        return times, [m for m in server.shown() if "gdg.jq.inputs" in m]


@case("jq-globs")
def jq_globs(scratch: Path, quick: bool) -> list[Figure]:
    depth = 12 if quick else 18
    glob = link_farm(scratch, depth)
    times, shown = asyncio.run(_jq_requests(scratch, glob, 5))
    what = f"completion, {depth} */ over 2 links"
    return [Figure("jq-globs", f"{what}: first request", times[0], "ms", JQ_TARGET_MS),
            Figure("jq-globs", f"{what}: later requests, max", max(times[1:]), "ms", JQ_TARGET_MS),
            Figure("jq-globs", "gdg.jq.inputs problems shown to the user", len(shown), "")]


# -- P4 completion in a 0.3 M-character document ------------------------------------------------

P4_HEAD = """#include <core.p4>
#include <v1model.p4>

typedef bit<9>  port_t;
typedef bit<48> mac_t;

header ethernet_t {
    mac_t dst;
    mac_t src;
    bit<16> kind;
}

header ipv4_t {
    bit<8>  ttl;
    bit<8>  protocol;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t {
    bit<32> seen;
}

control Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t smeta) {
"""

P4_ACTION = """    action set_port_{n}(mac_t next_hop, port_t port) {{
        smeta.egress_spec = port;
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = next_hop;
        hdr.ipv4.ttl = hdr.ipv4.ttl - {step};
        meta.seen = meta.seen + 1;
    }}

"""

P4_TAIL = """    table route {
        key = { hdr.ipv4.dst: lpm; }
        actions = { set_port_0; NoAction; }
        default_action = NoAction();
    }

    apply {
        route.apply();
#CURSOR
    }
}
"""

P4_INDENT = "        "
P4_TYPED = ("hdr.ipv4.ttl = meta.seen;", "route.apply();")
"""Statements typed into the apply block, each on a new line (Enter with its indent, as an
editor's auto-indent gives it), then key by key."""


def p4_document(chars: int) -> tuple[str, int]:
    """A P4 program of at least ``chars`` characters and the offset where typing goes."""
    actions, size, n = [], len(P4_HEAD) + len(P4_TAIL), 0
    while size < chars:
        actions.append(P4_ACTION.format(n=n, step=1 + n % 7))
        size += len(actions[-1])
        n += 1
    text = P4_HEAD + "".join(actions) + P4_TAIL
    at = text.index("#CURSOR")
    return text[:at] + text[at + len("#CURSOR\n"):], at


async def p4_keystrokes(root: Path, chars: int, keys: int) -> tuple[list[float], list[float], int]:
    """(completion ms after each Enter, completion ms after each other key, document size)."""
    text, at = p4_document(chars)
    document = root / "big.p4"
    document.write_text(text)
    uri = document.as_uri()
    options = {**NO_MODEL, "diagnostics": True}
    async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
        server.open(uri, text, "p4")
        # the first analysis of the opened document (everything parsed once) is not a keystroke's
        await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri, timeout=600)
        first_line = text.count("\n", 0, at)
        version = 1
        enters: list[float] = []
        others: list[float] = []

        async def type_and_ask(line: int, character: int, typed: str, into: list[float]) -> None:
            nonlocal version
            version += 1
            where = {"line": line, "character": character}
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                     "contentChanges": [{"range": {"start": where, "end": where},
                                                                         "text": typed}]})
            began = time.perf_counter()
            at = {"line": line, "character": character + len(typed) if "\n" not in typed else len(P4_INDENT)}
            response = await server.request("textDocument/completion", {"textDocument": {"uri": uri},
                                                                        "position": at}, timeout=600)
            if "error" in response:
                raise RuntimeError(f"P4 completion failed: {response['error']}")
            into.append(_ms(began))

        for n, statement in enumerate(P4_TYPED):
            line = first_line + n
            await type_and_ask(line, 0, P4_INDENT + "\n", enters)  # the new line, indented
            for k, key in enumerate(statement[:keys]):
                await type_and_ask(line, len(P4_INDENT) + k, key, others)
        return enters, others, len(text)


@case("p4-completion")
def p4_completion(scratch: Path, quick: bool) -> list[Figure]:
    enters, others, size = asyncio.run(p4_keystrokes(scratch, 300_000, 4 if quick else 100))
    what = f"completion, {size / 1e6:.2f} M chars"
    return [Figure("p4-completion", f"{what}: after Enter, max ({len(enters)})", max(enters), "ms", P4_TARGET_MS),
            Figure("p4-completion", f"{what}: after a key, p50", percentile(others, 0.5), "ms", P4_TARGET_MS),
            Figure("p4-completion", f"{what}: after a key, max ({len(others)})", max(others), "ms", P4_TARGET_MS)]


# -- a remote engine's endless answer ------------------------------------------------------------


class HugeBodyEngine:
    """An engine whose completions answer with ``size`` bytes of text: a JSON body
    (``streamed=False``) or one server-sent event line, with its Content-Length
    (``declared``) or without (read until the engine closes the connection). It counts the
    bytes it got out before the client hung up."""

    CHUNK = 1 << 20

    def __init__(self, size: int, streamed: bool, declared: bool = True, pieces: bool = False) -> None:
        self.size, self.streamed, self.declared = size, streamed, declared
        self.pieces = pieces
        """Streamed as many small events, each with empty text, instead of one line."""
        self.sent = 0
        self.done = threading.Event()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return None

            def do_GET(self) -> None:
                body = b'{"object": "list", "data": [{"id": "huge"}]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                engine._answer(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        head, tail = (b'data: {"choices": [{"text": "', b'"}]}\n\n') if self.streamed else \
            (b'{"choices": [{"text": "', b'", "finish_reason": "length"}]}')
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream" if self.streamed else "application/json")
        if self.declared:
            handler.send_header("Content-Length", str(len(head) + self.size + len(tail)))
        else:
            handler.send_header("Connection", "close")
            handler.close_connection = True
        handler.end_headers()
        chunk = b"x" * self.CHUNK
        if self.pieces:
            event = b'data: {"choices": [{"text": ""}]}\n\n'
            head, tail, chunk = b"", b"", event * (self.CHUNK // len(event))
        try:
            handler.wfile.write(head)
            left = self.size
            while left > 0:
                piece = chunk[:left]
                handler.wfile.write(piece)
                self.sent += len(piece)
                left -= len(piece)
            handler.wfile.write(tail)
        except OSError:
            pass  # the client hung up: what it was sent until then is counted
        finally:
            self.done.set()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def resident_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakResident:
    """The largest resident size seen while the block runs (sampled every few ms)."""

    def __init__(self) -> None:
        self.base = self.peak = resident_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, resident_bytes())

    def __enter__(self) -> PeakResident:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, resident_bytes())


def read_huge_answer(size: int, streamed: bool, declared: bool = True, pieces: bool = False) -> tuple[float, int, str]:
    """(resident growth in MB, bytes the engine sent, what the client said) for one completion."""
    from gdg_lsp.backends import remote

    engine = HugeBodyEngine(size, streamed, declared, pieces)
    endpoint = remote.Endpoint(engine.url, "vllm", "huge", first_token_timeout=30.0)
    outcome = "read whole"
    try:
        with PeakResident() as memory:
            try:
                for _ in remote.EngineClient(endpoint).completion({"prompt": "x"}, time.monotonic() + 120, None):
                    pass
            except remote.RemoteError as err:
                outcome = str(err)
        engine.done.wait(10)
    finally:
        engine.close()
    return (memory.peak - memory.base) / 2**20, engine.sent, outcome


@case("remote-body")
def remote_body(scratch: Path, quick: bool) -> list[Figure]:
    size = (32 if quick else 300) << 20
    figures = []
    for streamed, declared in ((False, True), (False, False), (True, False)):
        grown, sent, _ = read_huge_answer(size, streamed, declared)
        kind = "event line" if streamed else ("body" if declared else "body, no length")
        # what the engine got out includes what the kernel's socket buffers took
        figures += [Figure("remote-body", f"{size >> 20} MB {kind}: client RSS growth", grown, "MB",
                           REMOTE_GROWTH_TARGET_MB),
                    Figure("remote-body", f"{size >> 20} MB {kind}: bytes the engine sent", sent / 2**20, "MB",
                           REMOTE_SENT_TARGET_MB)]
    return figures
