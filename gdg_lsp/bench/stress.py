"""``gdg-lsp bench stress``: the reliability figures, measured on a live server.

- fuzz: hostile messages and edit sequences (``gdg_lsp.bench.hostile``) sent to
  the server in this process; every request must be answered, every edit must
  leave the server's text equal to ``TextModel``'s;
- storm: inline completion requests at a fixed rate while the document is
  typed into (a pause every ``PAUSE_EVERY`` keys until a decode runs, which the
  next key then cancels), with hover and completion timed in between, on a model whose
  every forward pass takes ``step_ms`` and returns random logits
  (``SlowRandomBackend``: the storm must overlap decodes on any machine); it reports how many decodes ran at once, how many
  model steps a superseded decode took after its cancellation, hover and
  completion p95, and the process's RSS before and after;
- neighbour: hover p95 in one document, idle and while another document's
  analysis reads a large P4 include (one under the include size limit, which
  takes seconds to analyse; and an 8 MiB one, over the limit: refused with a
  diagnostic instead of minutes of analysis);
- limits: τ_Γ instantiated over 10,000 names, and a 10 MB document opened.

The tests in ``tests/reliability`` call the same functions with assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import string
import time
from dataclasses import asdict, dataclass
from typing import Any

from gdg_lsp.bench.hostile import edit_session, hostile_message
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.text_model import TextModel
from gdg_lsp.documents import MAX_ANALYSED_CHARS
from gdg_lsp.latency import percentile

NO_MODEL = {"model": "/nonexistent/gdg-stress-model.gguf"}
STORM_TOKENS = sorted(
    set(string.ascii_letters + string.digits + "_ .,:;()[]{}=+-*/%<>!&|^~@#'\"\\\n\t")
    | {"    ", " =", " (", "()", "):", "self", "return", " return", "def", " if", " for", " in", "None", "\n    "}
)


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as stat:
            return int(stat.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# -- fuzz ---------------------------------------------------------------------------


@dataclass
class FuzzFigures:
    messages: int = 0
    requests: int = 0
    answered: int = 0
    edits: int = 0
    edits_matching: int = 0
    seconds: float = 0.0


async def fuzz(messages: int = 5000, edits: int = 2000, seed: int = 0) -> FuzzFigures:
    figures = FuzzFigures()
    began = time.perf_counter()
    rng = random.Random(seed)
    uris = ["file:///stress/a.py", "file:///stress/b.sql", "file:///stress/c.p4"]
    counter = itertools.count(1)
    async with InProcessServer(initialization_options=NO_MODEL) as server:
        await server.wait_model()
        for uri in uris:
            server.open(uri, "import os\nx = 1\n", "python" if uri.endswith(".py") else "sql")
        while figures.messages < messages:
            batch = [hostile_message(rng, lambda: next(counter), uris) for _ in range(25)]
            futures = []
            for message in batch:
                futures += [server.expect(i) for i in message.expected]
                server.send_bytes(message.body)
            figures.messages += len(batch)
            figures.requests += len(futures)
            if futures:
                done, _ = await asyncio.wait(futures, timeout=30)
                figures.answered += len(done)
            server.drain()
        model = TextModel(server.server.session.encoding.value)
        edit_uris = ["file:///stress/e1.py", "file:///stress/e2.py"]
        for edit in edit_session(rng, edit_uris, edits, lambda u: model.line_units(u) if u in model.docs else None):
            server.notify(edit.method, edit.params)
            model.apply(edit)
            figures.edits += 1
            figures.edits_matching += server.text(edit.uri) == model.text(edit.uri)
        figures.messages += figures.edits
    figures.seconds = time.perf_counter() - began
    return figures


# -- cancellation storm ---------------------------------------------------------------


class SlowRandomBackend:
    """A model backend that spends ``step_seconds`` per forward pass outside the interpreter
    (sleeping, as a real model spends it in native matrix code) and then returns random logits.

    The storm needs decodes that overlap the requests on any machine; a random-weight
    transformer would also do, but its tiny layers spend their time in Python and hold the
    interpreter lock far more than a real model, which would measure that instead of the
    server. The logits are random, so the masks, healing and grammar paths are exercised.
    """

    def __init__(self, vocab: Any, step_seconds: float, seed: int = 0) -> None:
        import torch

        from gdg_lsp.backends.base import BackendStats

        self.vocab = vocab
        self.name = f"slow-random-{seed}"
        self.device = "cpu"
        self.step_seconds = step_seconds
        self.stats = BackendStats()
        self._generator = torch.Generator().manual_seed(seed)
        self._ids: list[int] = []

    def reset(self) -> None:
        self._ids = []

    def prefill(self, ids):
        from gdg_lsp.backends.base import common_prefix

        if not ids:
            raise ValueError("empty prompt")
        keep = min(common_prefix(self._ids, ids), len(ids) - 1)
        self.stats.reused_tokens += keep
        self.stats.prefill_tokens += len(ids) - keep
        self._ids = list(ids)
        return self._forward()

    def step(self, token_id: int):
        self.stats.steps += 1
        self._ids.append(token_id)
        return self._forward()

    def _forward(self):
        import torch

        began = time.perf_counter()
        time.sleep(self.step_seconds)
        logits = torch.randn(self.vocab.size, generator=self._generator) * 4
        self.stats.model_seconds += time.perf_counter() - began
        return logits


def slow_random_resolver(step_seconds: float, seed: int = 0):
    """A ``DecodeWorker.resolve_model`` for ``SlowRandomBackend`` over a small vocabulary."""

    def resolve(settings, progress):
        def load(device: str):
            from gdg_lsp.vocab import ListVocabulary

            return SlowRandomBackend(ListVocabulary(STORM_TOKENS), step_seconds, seed)

        return f"slow-random-{seed}", load

    return resolve


STORM_DOCUMENT = '''import os
from collections import defaultdict


def summarise(paths, limit=10):
    counts = defaultdict(int)
    for path in paths:
        size = os.path.getsize(path)
        counts[os.path.splitext(path)[1]] += size
    ordered = sorted(counts.items(), key=lambda item: item[1], reverse=True)
    return ordered[:limit]


def main():
    found = summarise(os.listdir("."))
'''
TYPED = "    total = len(found) + sum(size for _, size in found)\n    print(total, found)\n"


@dataclass
class StormFigures:
    inline_requests: int = 0
    inline_answered: int = 0
    rate_per_second: float = 0.0
    edits: int = 0
    decodes: int = 0
    skipped_before_start: int = 0
    """Inline requests whose decode never started (superseded or cancelled while queued)."""
    cancelled_while_running: int = 0
    max_concurrent_decodes: int = 0
    max_tokens_after_cancel: int = 0
    """The most model steps any superseded decode took after its cancellation (the decoder checks before each)."""
    cancel_latency_p95_ms: float | None = None
    """Cancellation to the decode's end: a cancel that lands in a grammar compile or a prefill waits for it."""
    hover_p95_ms: float = 0.0
    completion_p95_ms: float = 0.0
    hovers: int = 0
    completions: int = 0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    seconds: float = 0.0


STORM_MAX_TOKENS = 24
"""``gdg.maxTokens`` of the storm's server: with ``step_ms``, how long one decode runs."""


PAUSE_EVERY = 20
"""Keys between the user's pauses: each lasts until a decode has started (``PAUSE_LIMIT_S`` at most)."""
PAUSE_LIMIT_S = 3.0
"""A safety net only: on a machine where a plan takes longer (swapping, a busy core), the pause
still ends and the storm says how few decodes it overlapped instead of hanging."""


async def storm(requests: int = 500, rate: float = 60.0, step_ms: float = 15.0, seed: int = 0) -> StormFigures:
    from gdg_lsp.server import create_server

    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(step_ms / 1000, seed)
    uri = "file:///stress/storm.py"
    figures = StormFigures()
    async with InProcessServer(server=server_obj, initialization_options={"model": "slow-random", "maxTokens": STORM_MAX_TOKENS}) as server:
        if await server.wait_model() != "ready":
            raise RuntimeError(f"the storm's model did not load: {server_obj.session.worker.state.message}")
        server.open(uri, STORM_DOCUMENT)
        lines = STORM_DOCUMENT.count("\n")
        # warm-up: grammars compiled, caches filled, before the RSS baseline
        for _ in range(3):
            await server.request("textDocument/inlineCompletion", _inline_params(uri, lines, 0), timeout=60)
        gc.collect()
        figures.rss_before_mb = rss_bytes() / 2**20
        worker = server_obj.session.worker
        worker.max_running = 0
        base_stats = (worker.stats.decodes, worker.stats.skipped, worker.stats.cancelled_running)
        worker.stats.max_tokens_after_cancel = 0
        worker.stats.cancel_latency.clear()

        inline: list[asyncio.Future] = []
        hover_ms: list[float] = []
        completion_ms: list[float] = []
        line, column, typed = lines, 0, 0
        previous_id = None
        began = time.perf_counter()
        paused = 0.0  # the user's pauses (PAUSE_EVERY), left out of the rate
        interval = 1.0 / rate
        for n in range(requests):
            # the user types one character...
            char = TYPED[typed % len(TYPED)]
            typed += 1
            figures.edits += 1
            server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2 + n}, "contentChanges": [
                {"range": {"start": {"line": line, "character": column}, "end": {"line": line, "character": column}},
                 "text": char}]})
            if char == "\n":
                line, column = line + 1, 0
            else:
                column += 1
            # ...the editor cancels the previous ghost text request and asks again
            if previous_id is not None:
                server.notify("$/cancelRequest", {"id": previous_id})
            previous_id = f"inline-{n}"
            future = server.expect(previous_id)
            server.send({"jsonrpc": "2.0", "id": previous_id, "method": "textDocument/inlineCompletion",
                         "params": _inline_params(uri, line, column)})
            inline.append(future)
            if n % 3 == 0:
                hover_ms.append(await _timed(server, "textDocument/hover", {
                    "textDocument": {"uri": uri}, "position": {"line": 12, "character": 10}}))
                completion_ms.append(await _timed(server, "textDocument/completion", {
                    "textDocument": {"uri": uri}, "position": {"line": line, "character": column}}))
            if n % PAUSE_EVERY == PAUSE_EVERY - 1:
                # the user pauses until a decode runs, so the next key cancels one mid-decode:
                # on a CPU where a plan takes longer than a key, few decodes start otherwise
                paused_at = time.perf_counter()
                running = worker.stats.decodes
                while worker.stats.decodes == running and time.perf_counter() - paused_at < PAUSE_LIMIT_S:
                    await asyncio.sleep(0.005)
                paused += time.perf_counter() - paused_at
            delay = began + paused + (n + 1) * interval - time.perf_counter()
            await asyncio.sleep(max(0.0, delay))
        figures.rate_per_second = requests / (time.perf_counter() - began - paused)
        done, _ = await asyncio.wait(inline, timeout=120)
        figures.seconds = time.perf_counter() - began
        figures.inline_requests = requests
        figures.inline_answered = len(done)
        stats = worker.stats
        figures.decodes = stats.decodes - base_stats[0]
        # never started: superseded while queued, or their future cancelled with the request
        figures.skipped_before_start = requests - figures.decodes
        figures.cancelled_while_running = stats.cancelled_running - base_stats[2]
        figures.max_concurrent_decodes = worker.max_running
        figures.max_tokens_after_cancel = stats.max_tokens_after_cancel
        latencies = list(stats.cancel_latency)
        figures.cancel_latency_p95_ms = round(percentile(latencies, 0.95) * 1000, 1) if latencies else None
        figures.hover_p95_ms = round(percentile(hover_ms, 0.95), 1)
        figures.completion_p95_ms = round(percentile(completion_ms, 0.95), 1)
        figures.hovers, figures.completions = len(hover_ms), len(completion_ms)
        server.drain()
        gc.collect()
        figures.rss_after_mb = rss_bytes() / 2**20
    return figures


def _inline_params(uri: str, line: int, column: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": column},
            "context": {"triggerKind": 2}}


async def _timed(server: InProcessServer, method: str, params: dict[str, Any]) -> float:
    began = time.perf_counter()
    response = await server.request(method, params, timeout=30)
    if "error" in response:
        raise RuntimeError(f"{method} failed during the storm: {response['error']}")
    return (time.perf_counter() - began) * 1000


# -- a busy neighbour -----------------------------------------------------------------


def p4_declarations(nbytes: int) -> str:
    """About ``nbytes`` of distinct P4 declarations (headers, constants, actions)."""
    parts, size, n = [], 0, 0
    while size < nbytes:
        piece = (f"header h{n}_t {{ bit<8> f{n}; bit<16> g{n}; }}\n"
                 f"const bit<32> C{n} = {n};\naction a{n}(bit<8> x) {{ }}\n")
        parts.append(piece)
        size += len(piece)
        n += 1
    return "".join(parts)


NEIGHBOUR_PY = "import os\n\n\ndef size_of(path):\n    size = os.path.getsize(path)\n    return size\n"
NEIGHBOUR_HOVER = {"line": 4, "character": 12}  # on `size`, assigned the line before


def _including(target: str) -> str:
    return f'#include "{target}"\ncontrol C() {{\n    apply {{\n        \n    }}\n}}\n'


@dataclass
class NeighbourFigures:
    hover_idle_p95_ms: float = 0.0
    include_kib: int = 0
    analysis_seconds: float = 0.0
    """How long the other document's first answer took (its include analysed off the loop)."""
    hovers_during: int = 0
    hover_during_p95_ms: float = 0.0
    hover_during_max_ms: float = 0.0
    huge_mib: float = 0.0
    huge_answer_ms: float = 0.0
    """The document including the huge file: its first answer (the include refused unread)."""
    huge_refused: bool = False
    """The ``#include`` of the huge file got a diagnostic naming the size limit."""
    hover_during_huge_max_ms: float = 0.0


async def neighbour(include_kib: int = 384, huge_mib: float = 8.0, idle_hovers: int = 20) -> NeighbourFigures:
    """Hover in a Python document while a P4 document next to it is being analysed."""
    import tempfile
    from pathlib import Path

    from gdg_lsp.languages.p4.workspace import MAX_INCLUDE_BYTES

    figures = NeighbourFigures(include_kib=include_kib, huge_mib=huge_mib)
    with tempfile.TemporaryDirectory(prefix="gdg-bench-neighbour-") as folder:
        root = Path(folder)
        (root / "big.p4").write_text(p4_declarations(include_kib * 1024))
        (root / "huge.p4").write_text(p4_declarations(int(huge_mib * 2**20)))
        options = {**NO_MODEL, "diagnostics": True}
        async with InProcessServer(initialization_options=options, root_uri=root.as_uri()) as server:
            a = (root / "a.py").as_uri()
            server.open(a, NEIGHBOUR_PY)
            # a.py's own first diagnostics (reading the standard library's stubs for member
            # warnings, seconds when cold) run in a.py's lane before its later hovers: wait
            # for them, so that the figures below are the neighbour's effect alone
            await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                  and m["params"]["uri"] == a, 60)
            hover = {"textDocument": {"uri": a}, "position": NEIGHBOUR_HOVER}
            idle = [await _timed(server, "textDocument/hover", hover) for _ in range(idle_hovers)]
            figures.hover_idle_p95_ms = round(percentile(idle, 0.95), 1)

            during = await _hovers_while(server, root, "b.p4", "big.p4", hover, figures)
            figures.hovers_during = len(during)
            figures.hover_during_p95_ms = round(percentile(during, 0.95), 1) if during else 0.0
            figures.hover_during_max_ms = round(max(during), 1) if during else 0.0

            began = time.perf_counter()
            huge = await _hovers_while(server, root, "c.p4", "huge.p4", hover, None)
            figures.huge_answer_ms = round((time.perf_counter() - began) * 1000, 1)
            figures.hover_during_huge_max_ms = round(max(huge), 1) if huge else 0.0
            limit = f"over the limit of {MAX_INCLUDE_BYTES / 2**20:.1f} MiB"
            published = await server.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                               and m["params"]["uri"].endswith("/c.p4"), 60)
            figures.huge_refused = any(limit in d["message"] for d in published["params"]["diagnostics"])
    return figures


async def _hovers_while(server: InProcessServer, root, name: str, include: str, hover: dict[str, Any],
                        figures: NeighbourFigures | None) -> list[float]:
    """Open ``name`` (which includes ``include``), ask for a hover in it, and time hovers in
    the neighbour until it is answered."""
    uri = (root / name).as_uri()
    server.open(uri, _including(include), "p4")
    began = time.perf_counter()
    pending = server.send_request("textDocument/hover", {"textDocument": {"uri": uri},
                                                         "position": {"line": 1, "character": 8}})  # on `C`
    times: list[float] = []
    while not pending.done():
        times.append(await _timed(server, "textDocument/hover", hover))
        await asyncio.sleep(0.02)
    await pending
    if figures is not None:
        figures.analysis_seconds = round(time.perf_counter() - began, 2)
    return times


# -- limits -------------------------------------------------------------------------


@dataclass
class LimitFigures:
    gamma_names: int = 0
    gamma_instantiate_ms: float = 0.0
    gamma_compile_ms: float = 0.0
    document_mb: float = 0.0
    document_open_ms: float = 0.0
    document_edit_ms: float = 0.0
    document_completion_ms: float = 0.0


HOSTILE_NAMES = ['quo"te', "back\\slash", "pi|pe", "(paren)", "new\nline", "tab\there", "[cls]", "star*", "q?",
                 "{1,3}", "::=", "%slot%", "nul\x00byte", "\x01\x1f", "del\x7f", "#comment", "it's", "\u2028sep",
                 "\ufeffbom", "emoji😀", "root ::= x", ")(", "\\u0041", "\r\n"]
"""Names with every character that means something in a grammar, and control characters."""


def gamma_of(count: int, seed: int = 0, hostile: bool = True):
    """A Γ of ``count`` distinct Variable names (the hostile ones included)."""
    from gdg_lsp.gamma import Binding, Gamma

    rng = random.Random(seed)
    names = set(HOSTILE_NAMES if hostile else ())
    alphabet = string.ascii_letters + string.digits + "_"
    while len(names) < count:
        names.add(rng.choice(string.ascii_letters) + "".join(rng.choice(alphabet) for _ in range(rng.randrange(3, 16))))
    names = sorted(names)
    return Gamma([Binding(name, "Variable") for name in names]), names


def name_fragment():
    """A fragment whose one slot is the Variable names of Γ: ``root ::= %name%``."""
    from gdg_lsp import fragments
    from gdg_lsp.fragments import ebnf

    slot = fragments.SlotSpec("name", {"gamma": {"sort": "Variable"}})
    return fragments.Fragment("stress", "slot", "Name", ("gamma",), ebnf.parse("root ::= %name%"), {"name": slot})


def big_gamma_instantiation(count: int = 10_000, seed: int = 0):
    """(grammar text, names, instantiate seconds, compile seconds) for a Γ of ``count`` names."""
    from gdg_lsp import fragments
    from gdg_lsp.explain import byte_grammars

    gamma, names = gamma_of(count, seed)
    began = time.perf_counter()
    text = fragments.instantiate(name_fragment(), "gamma", gamma).text
    instantiate_s = time.perf_counter() - began
    began = time.perf_counter()
    byte_grammars().get(text)
    compile_s = time.perf_counter() - began
    return text, names, instantiate_s, compile_s


async def big_document(megabytes: float = 10.0) -> dict[str, Any]:
    """Open, edit and complete in a Python document of ``megabytes``: times, and whether the
    server's text still follows the edits and the user was told it is not analysed."""
    line = "value_{n} = compute(value_{m}, 'text with é and 😀')\n"
    parts, size, n = [], 0, 0
    while size < megabytes * 2**20:
        piece = line.format(n=n, m=max(0, n - 1))
        parts.append(piece)
        size += len(piece.encode("utf-8"))
        n += 1
    text = "".join(parts)
    uri = "file:///stress/huge.py"
    async with InProcessServer(initialization_options={**NO_MODEL, "diagnostics": False}) as server:
        began = time.perf_counter()
        server.open(uri, text)
        open_ms = (time.perf_counter() - began) * 1000
        lines = text.count("\n")
        began = time.perf_counter()
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": lines // 2, "character": 0}, "end": {"line": lines // 2, "character": 0}},
             "text": "inserted = 1\n"}]})
        edit_ms = (time.perf_counter() - began) * 1000
        cut = sum(len(p) for p in parts[: lines // 2])
        followed = server.text(uri) == text[:cut] + "inserted = 1\n" + text[cut:]
        began = time.perf_counter()
        response = await server.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": lines, "character": 0}}, timeout=120)
        completion_ms = (time.perf_counter() - began) * 1000
        if "error" in response:
            raise RuntimeError(f"completion in a {megabytes} MB document failed: {response['error']}")
        told = [m for m in server.shown() if "is not analysed" in m]
    return {"open_ms": open_ms, "edit_ms": edit_ms, "completion_ms": completion_ms, "followed": followed,
            "told": len(told), "chars": len(text)}


# -- the command --------------------------------------------------------------------

SECTIONS = ("fuzz", "storm", "neighbour", "limits")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gdg-lsp bench stress", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000, help="hostile messages to send (default 10,000)")
    parser.add_argument("--edits", type=int, default=3_000, help="edits checked against the text model")
    parser.add_argument("--requests", type=int, default=500, help="inline requests in the storm")
    parser.add_argument("--rate", type=float, default=60.0, help="inline requests per second in the storm")
    parser.add_argument("--step-ms", type=float, default=15.0, help="the slow model's time per step")
    parser.add_argument("--megabytes", type=float, default=10.0, help="size of the big document")
    parser.add_argument("--include-kib", type=int, default=384,
                        help="size of the P4 include the neighbour analyses (under the include limit)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=SECTIONS, action="append",
                        help="run only this section (repeatable; default: all of them)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    sections = args.only or list(SECTIONS)

    import logging

    for name in ("pygls", "gdg_lsp"):
        logging.getLogger(name).setLevel(logging.CRITICAL)

    figures: dict[str, dict[str, Any]] = {}
    if "fuzz" in sections:
        figures["fuzz"] = asdict(asyncio.run(fuzz(args.messages, args.edits, args.seed)))
    if "storm" in sections:
        figures["storm"] = asdict(asyncio.run(storm(args.requests, args.rate, args.step_ms, args.seed)))
    if "neighbour" in sections:
        figures["neighbour"] = asdict(asyncio.run(neighbour(args.include_kib)))
    if "limits" in sections:
        limits = LimitFigures()
        _, names, instantiate_s, compile_s = big_gamma_instantiation(10_000, args.seed)
        limits.gamma_names, limits.gamma_instantiate_ms, limits.gamma_compile_ms = len(names), instantiate_s * 1000, compile_s * 1000
        limits.document_mb = args.megabytes
        big = asyncio.run(big_document(args.megabytes))
        limits.document_open_ms, limits.document_edit_ms, limits.document_completion_ms = big["open_ms"], big["edit_ms"], big["completion_ms"]
        figures["limits"] = asdict(limits)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print("gdg-lsp bench stress")
    if "fuzz" in figures:
        f = FuzzFigures(**figures["fuzz"])
        print(f"  fuzz     messages fuzzed {f.messages:,} ({f.messages - f.edits:,} hostile + {f.edits:,} edits) in {f.seconds:.1f} s")
        print(f"           requests answered {f.answered:,} / {f.requests:,}; edits matching the text model {f.edits_matching:,} / {f.edits:,}")
    if "storm" in figures:
        s = StormFigures(**figures["storm"])
        print(f"  storm    {s.inline_requests} inline requests at {s.rate_per_second:.0f}/s while typing ({s.edits} edits), "
              f"answered {s.inline_answered}")
        print(f"           concurrent decodes max {s.max_concurrent_decodes}; decodes run {s.decodes}, superseded before start "
              f"{s.skipped_before_start}, cancelled while running {s.cancelled_while_running}")
        print(f"           stop latency: {s.max_tokens_after_cancel} token(s) after cancellation at most "
              f"(p95 {s.cancel_latency_p95_ms} ms, model step {args.step_ms:g} ms)")
        print(f"           hover p95 {s.hover_p95_ms} ms ({s.hovers}), completion p95 {s.completion_p95_ms} ms ({s.completions})")
        print(f"           RSS before {s.rss_before_mb:.1f} MB, after {s.rss_after_mb:.1f} MB "
              f"({s.rss_after_mb - s.rss_before_mb:+.1f} MB)")
    if "neighbour" in figures:
        near = NeighbourFigures(**figures["neighbour"])
        print(f"  neighbour hover p95 in a.py: idle {near.hover_idle_p95_ms} ms | while b.p4's {near.include_kib} KiB "
              f"include is analysed ({near.analysis_seconds} s): {near.hover_during_p95_ms} ms "
              f"(max {near.hover_during_max_ms}, {near.hovers_during} hovers)")
        print(f"           c.p4 includes {near.huge_mib:g} MiB: answered in {near.huge_answer_ms:.0f} ms, "
              f"{'refused with a diagnostic naming the limit' if near.huge_refused else 'NOT refused'}; "
              f"hover max meanwhile {near.hover_during_huge_max_ms} ms")
    if "limits" in figures:
        limits = LimitFigures(**figures["limits"])
        print(f"  limits   Γ of {limits.gamma_names:,} names: instantiate {limits.gamma_instantiate_ms:.0f} ms, "
              f"compile {limits.gamma_compile_ms:.0f} ms (byte vocabulary)")
        print(f"           {limits.document_mb:g} MB document: open {limits.document_open_ms:.0f} ms, "
              f"edit {limits.document_edit_ms:.1f} ms, completion {limits.document_completion_ms:.0f} ms "
              f"(kept in step, not analysed above {MAX_ANALYSED_CHARS:,} characters)")
    return 0
