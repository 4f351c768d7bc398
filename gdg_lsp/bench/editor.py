"""``gdg-lsp bench perf --only editor``: completion as a user feels it, replayed over the LSP.

A real server subprocess over stdio (``bench/lsp_client.py``) with the default
settings (budget included) and the model under test. The replay, per hole cut
from real code (``languages/python/bench.py``), in a freshly opened document:

1. ask at the hole (the *first ask at a new hole*);
2. ask again without changing anything (the *repeated ask*);
3. type the suggestion shown (the repeated ask's, or the first's if that one is empty)
   key by key, one key every 60–100 ms (seeded), with an inline request after each key (the *typed-through asks*), up to ``--editor-keys``
   keys or the end of its first line.

Before the holes, the *start*: from launching the server to the first answer the
model gave and to the first non-empty suggestion, asking at the first hole right after
``initialized`` (and again every ``RETRY_S`` while the answer is empty), as an editor
does while the model loads.

Then the *work-ahead comparison* (``_work_ahead_comparison``): first asks at new lines
with ``gdg.workAhead`` on and off in the same server, the user pressing Enter at the line.

Reported: start → first non-empty suggestion; first ask p50/p95; repeated ask
p50/p95; typed-through p50/p95 over stdio and as the server measured it; the share
of asks answered non-empty; decodes per ask (from ``gdg/status``); and the
targets of issue 18 met or missed.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from gdg_lsp.bench.perf import peak_rss_mb
from gdg_lsp.latency import percentile

RETRY_S = 0.25
"""How often the start phase asks again while the answer is empty."""
START_LIMIT_S = 600
ASKS_AFTER_READY = 10
"""The start phase gives up on a non-empty suggestion after this many answers from the model
(a random-weight model may never give one; the default model did within 4–9 asks)."""
KEY_INTERVAL_S = (0.060, 0.100)
READ_S = 1.0
"""Work-ahead comparison: from opening a file to the first key."""
TYPED_LINE_CHARS = 40
"""Work-ahead comparison: at most this many characters of the line before the hole are typed."""
EDITOR_DEBOUNCE_S = 0.12
"""Work-ahead comparison: from the edit to the inline request (the Neovim plugin's default wait)."""
SERVER_PHASES = ("analysis", "prompt", "decode")
"""Work-ahead comparison: the parts of the server's time for a request (its ``timingsMs``):
the hole and Γ, the prompt, and prefill with decoding."""
TARGETS = {
    "typed_through_p95_ms": 20.0,
    "typed_through_server_p95_ms": 10.0,
    "repeated_p95_ms": 20.0,
    "first_ask_p50_ms": 400.0,
    "first_ask_p95_ms": 1000.0,
    "start_to_first_suggestion_s": 4.0,
}
"""Issue 18's targets (over stdio unless named ``server``)."""


def _position(text: str, offset: int) -> tuple[int, int]:
    """(line, UTF-16 character) of a code-point offset."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, len(text[start:offset].encode("utf-16-le")) // 2


class _Asker:
    """Inline requests over one client, each timed, with the server's own account of it."""

    def __init__(self, client) -> None:
        self.client = client
        self.ids = 1000

    def ask(self, uri: str, line: int, character: int, timeout: float = 300) -> tuple[str, float, dict | None]:
        """(the suggestion's text or "", round trip in ms, the gdg/suggestion the server sent for it)."""
        self.ids += 1
        seen = len(self.client.messages)
        began = time.perf_counter()
        answer = self.client.request(self.ids, "textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}}, timeout=timeout)
        rtt = (time.perf_counter() - began) * 1000
        if "error" in answer:
            raise RuntimeError(f"inline completion failed: {answer['error']}")
        items = (answer.get("result") or {}).get("items") or []
        info = next((m["params"] for m in self.client.messages[seen:] if m.get("method") == "gdg/suggestion"), None)
        return (items[0]["insertText"] if items else ""), rtt, info


def _server_ms(info: dict | None) -> float | None:
    if info is None:
        return None
    return (info.get("timingsMs") or {}).get("total")


def _p50(values: list[float]) -> float | None:
    return round(percentile(values, 0.5), 1) if values else None


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0, "p50_ms": 0.0, "p95_ms": 0.0}
    return {"n": len(values), "p50_ms": round(percentile(values, 0.5), 2), "p95_ms": round(percentile(values, 0.95), 2)}


def bench_editor(model: str, corpus: Path, args: Any, scratch: Path) -> dict[str, Any]:
    from gdg_lsp.bench.lsp_client import StdioClient
    from gdg_lsp.languages.python.bench import cut_holes

    cases = cut_holes(corpus, args.editor_holes, args.seed + 18)
    rng = random.Random(args.seed)
    options = {"gdg": {"model": model, "engine": args.engine, "threads": args.threads, "device": args.device}}
    if args.editor_constraint:
        options["gdg"]["constraint"] = args.editor_constraint
    launched = time.perf_counter()
    client = StdioClient(env={"TOKENIZERS_PARALLELISM": "false"}, stderr=scratch / "editor.log")
    asker = _Asker(client)
    out: dict[str, Any] = {"holes": len(cases), "keys_per_hole": args.editor_keys,
                           "constraint": args.editor_constraint or "default"}
    first: list[float] = []
    repeated: list[float] = []
    typed: list[float] = []
    typed_server: list[float] = []
    asks = answered = 0
    try:
        client.initialize({"general": {"positionEncodings": ["utf-16"]}, "window": {"workDoneProgress": False}}, options)
        # the start: ask at the first hole at once, and again while the answer is empty
        start_case = cases[0]
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": "file:///bench/editor/start.py", "languageId": "python", "version": 1, "text": start_case.text}})
        line, character = _position(start_case.text, start_case.cursor)
        start_asks = answered_asks = 0
        while True:
            text, _, info = asker.ask("file:///bench/editor/start.py", line, character)
            start_asks += 1
            if info is not None and "start_to_first_answer_s" not in out:  # the model answered (maybe nothing)
                out["start_to_first_answer_s"] = round(time.perf_counter() - launched, 2)
            if text:
                out["start_to_first_suggestion_s"] = round(time.perf_counter() - launched, 2)
                break
            answered_asks += info is not None
            if time.perf_counter() - launched > START_LIMIT_S or answered_asks > ASKS_AFTER_READY:
                out["start_to_first_suggestion_s"] = None
                break
            time.sleep(RETRY_S)
        out["start_asks"] = start_asks
        decodes_before = client.request("status-before", "gdg/status", {})["result"]["worker"]["decodes"]
        for index, case in enumerate(cases):
            uri = f"file:///bench/editor/hole{index}.py"
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": case.text}})
            line, character = _position(case.text, case.cursor)
            shown, rtt, _ = asker.ask(uri, line, character)
            first.append(rtt)
            asks, answered = asks + 1, answered + bool(shown)
            again, rtt, _ = asker.ask(uri, line, character)
            repeated.append(rtt)
            asks, answered = asks + 1, answered + bool(again)
            shown = again or shown  # what the editor shows now (a first ask cut by the budget may be empty)
            version = 1
            for key in shown.split("\n", 1)[0][: args.editor_keys]:
                pause = time.perf_counter() + rng.uniform(*KEY_INTERVAL_S)
                version += 1
                client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                    {"range": {"start": {"line": line, "character": character},
                               "end": {"line": line, "character": character}}, "text": key}]})
                character += len(key.encode("utf-16-le")) // 2
                rest, rtt, info = asker.ask(uri, line, character)
                typed.append(rtt)
                if (ms := _server_ms(info)) is not None:
                    typed_server.append(ms)
                asks, answered = asks + 1, answered + bool(rest)
                time.sleep(max(0.0, pause - time.perf_counter()))
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        status = client.request("status-after", "gdg/status", {})["result"]
        out["work_ahead"] = _work_ahead_comparison(client, asker, corpus, args, rng)
        out["server_peak_rss_mb"] = round(peak_rss_mb(client.proc.pid), 1)
    finally:
        out["server_exit_code"] = client.close()
    out.update({
        "first_ask": _summary(first), "repeated_ask": _summary(repeated), "typed_through": _summary(typed),
        "typed_through_server": _summary(typed_server), "asks": asks,
        "answered_share": round(answered / asks, 3) if asks else 0.0,
        "decodes_per_ask": round((status["worker"]["decodes"] - decodes_before) / asks, 3) if asks else 0.0,
        "reuse": status.get("reuse"),
        "heap": status.get("heap"),
    })
    out["targets"] = _targets(out)
    return out


def _work_ahead_comparison(client, asker: _Asker, corpus: Path, args: Any, rng: random.Random) -> dict[str, Any]:
    """First ask at a new line, with ``gdg.workAhead`` on and off in the same server, arms
    alternating over holes not asked before. The user writes the line before the hole and
    goes on to the next: the file is opened without the end of that line (up to
    ``TYPED_LINE_CHARS``) and without the hole's line; after ``READ_S`` the end of the line
    is typed key by key (``KEY_INTERVAL_S`` apart: faster than the editor's own debounce,
    so the editor asks nothing meanwhile), then Enter (the editor indents), and after the
    editor's debounce the ask. Per arm: the ask's round trip, the prompt tokens the
    request did not find in the cache (its prompt less the cached prefix), and where the
    server's time went (``SERVER_PHASES``, p50 each) with the tokens it decoded."""
    from gdg_lsp.languages.python.bench import cut_holes

    cases = cut_holes(corpus, 2 * max(1, args.editor_holes // 2), args.seed + 19)
    arms: dict[str, dict[str, list[float]]] = {
        arm: {"ms": [], "prefilled": [], "answered": [], "keys": [], "decoded": [], **{p: [] for p in SERVER_PHASES}}
        for arm in ("on", "off")}
    for index, case in enumerate(cases):
        arm = "on" if index % 2 == 0 else "off"
        client.notify("workspace/didChangeConfiguration", {"settings": {"gdg": {"workAhead": arm == "on"}}})
        text = case.text
        line_start = text.rfind("\n", 0, case.cursor) + 1
        line_end = text.find("\n", case.cursor)
        line_end = len(text) if line_end < 0 else line_end
        enter_at = max(line_start - 1, 0)  # the end of the line before the hole
        previous = text[text.rfind("\n", 0, enter_at) + 1 : enter_at]
        typed = previous.lstrip()[-TYPED_LINE_CHARS:]
        cut_at = enter_at - len(typed)
        before = text[:cut_at] + text[line_end:]  # that line's end and the hole's line not there yet
        uri = f"file:///bench/editor/ahead{index}.py"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": before}})
        time.sleep(READ_S)
        version = 1
        line, character = _position(text, cut_at)
        for key in [*typed, "\n" + text[line_start : case.cursor]]:
            version += 1
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                {"range": {"start": {"line": line, "character": character},
                           "end": {"line": line, "character": character}}, "text": key}]})
            character += len(key.encode("utf-16-le")) // 2
            if not key.startswith("\n"):  # after Enter the editor's own wait follows
                time.sleep(rng.uniform(*KEY_INTERVAL_S))
        time.sleep(EDITOR_DEBOUNCE_S)
        shown, rtt, info = asker.ask(uri, *_position(text, case.cursor))
        arms[arm]["ms"].append(rtt)
        arms[arm]["answered"].append(float(bool(shown)))
        arms[arm]["keys"].append(float(len(typed) + 1))
        if info is not None and "promptTokens" in info:
            arms[arm]["prefilled"].append(float(info["promptTokens"] - info.get("reusedTokens", 0)))
            arms[arm]["decoded"].append(float(info.get("tokens") or 0))
            for phase in SERVER_PHASES:
                arms[arm][phase].append(float((info.get("timingsMs") or {}).get(phase, 0.0)))
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    client.notify("workspace/didChangeConfiguration", {"settings": {"gdg": {"workAhead": True}}})
    result: dict[str, Any] = {"read_s": READ_S, "editor_debounce_s": EDITOR_DEBOUNCE_S}
    for arm, values in arms.items():
        result[arm] = {**_summary(values["ms"]),
                       "prefilled_tokens_p50": _p50(values["prefilled"]),
                       "keys_typed_p50": _p50(values["keys"]) or 0,
                       "answered_share": round(sum(values["answered"]) / len(values["answered"]), 3)
                       if values["answered"] else 0.0,
                       "decoded_tokens_p50": _p50(values["decoded"]),
                       "server_p50_ms": {phase: _p50(values[phase]) for phase in SERVER_PHASES}}
    off = result["off"]["p50_ms"]
    result["p50_ratio_on_off"] = round(result["on"]["p50_ms"] / off, 3) if off else None
    return result


def _targets(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each target: the figure, the limit, met or not, and by how much it is missed (a ratio)."""
    figures = {
        "typed_through_p95_ms": out["typed_through"]["p95_ms"],
        "typed_through_server_p95_ms": out["typed_through_server"]["p95_ms"],
        "repeated_p95_ms": out["repeated_ask"]["p95_ms"],
        "first_ask_p50_ms": out["first_ask"]["p50_ms"],
        "first_ask_p95_ms": out["first_ask"]["p95_ms"],
        "start_to_first_suggestion_s": out.get("start_to_first_suggestion_s"),
    }
    result = {}
    for name, limit in TARGETS.items():
        value = figures[name]
        met = value is not None and value <= limit
        result[name] = {"value": value, "limit": limit, "met": met,
                        "times_the_limit": None if value is None else round(value / limit, 2)}
    return result


def render(editor: dict[str, Any]) -> list[str]:
    """The section's lines for ``bench perf``'s report."""
    rows = [
        ("start → first answer from the model", f"{editor.get('start_to_first_answer_s')} s"),
        ("start → first non-empty suggestion", f"{editor.get('start_to_first_suggestion_s')} s "
                                               f"({editor.get('start_asks')} asks)"),
        ("first ask at a new hole p50 / p95", f"{editor['first_ask']['p50_ms']:.0f} / {editor['first_ask']['p95_ms']:.0f} ms"),
        ("repeated ask p50 / p95", f"{editor['repeated_ask']['p50_ms']:.1f} / {editor['repeated_ask']['p95_ms']:.1f} ms"),
        ("typed-through p50 / p95 (stdio)", f"{editor['typed_through']['p50_ms']:.1f} / "
                                            f"{editor['typed_through']['p95_ms']:.1f} ms over {editor['typed_through']['n']} keys"),
        ("typed-through p50 / p95 (server)", f"{editor['typed_through_server']['p50_ms']:.1f} / "
                                             f"{editor['typed_through_server']['p95_ms']:.1f} ms"),
        ("asks answered non-empty", f"{editor['answered_share']:.0%} of {editor['asks']}"),
        ("decodes per ask", f"{editor['decodes_per_ask']:.2f}"),
    ]
    heap = editor.get("heap") or {}
    if heap.get("longestPauseMs"):
        rows.append(("server heap: frozen objects; full collections; longest full-collection pause",
                     f"{heap['frozenObjects']:,}; {heap['collections'][2]}; {heap['longestPauseMs'][2]:.1f} ms"))
    lines = [f"### editor: typing replayed over stdio ({editor['holes']} holes, default budget, constraint "
             f"{editor['constraint']})", "",
             "| measure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    ahead = editor.get("work_ahead")
    if ahead:
        lines += ["", f"First ask at a new line with gdg.workAhead on and off (same server, arms alternating over "
                      f"holes; the line before typed from {ahead['read_s']} s after opening, then Enter, the ask "
                      f"{ahead['editor_debounce_s']} s after Enter):", "",
                  "| gdg.workAhead | asks | keys (p50) | p50 / p95 | prompt tokens not in the cache (p50) | answered "
                  "| server p50: " + " / ".join(SERVER_PHASES) + " | tokens decoded (p50) |",
                  "|---|---|---|---|---|---|---|---|"]
        for arm in ("on", "off"):
            a = ahead[arm]
            phases = " / ".join(f"{a['server_p50_ms'][p]:.0f}" if a['server_p50_ms'][p] is not None else "–"
                                for p in SERVER_PHASES)
            lines.append(f"| {arm} | {a['n']} | {a['keys_typed_p50']} | {a['p50_ms']:.0f} / {a['p95_ms']:.0f} ms | "
                         f"{a['prefilled_tokens_p50']} | {a['answered_share']:.0%} | {phases} ms | "
                         f"{a['decoded_tokens_p50']} |")
        lines.append(f"\np50 on / off: {ahead['p50_ratio_on_off']}")
    lines += ["", "| target | value | limit | met | × limit |", "|---|---|---|---|---|"]
    for name, t in editor["targets"].items():
        lines.append(f"| {name} | {t['value']} | {t['limit']} | {'yes' if t['met'] else 'no'} | {t['times_the_limit']} |")
    return lines
