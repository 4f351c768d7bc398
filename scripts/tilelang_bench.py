"""Run the TileLang holes under the none / syntax / scope arms and print the table.

    PYTHONPATH=. python scripts/tilelang_bench.py [--n 48] [--seed 0] [--out bench-out/tilelang.json]

Uses the same CompletionService as the server (real default model on the CPU)
and the plug-in's independent checker (pyflakes + the corpus API name list).
Until ``gdg-lsp bench quality`` lands on main this is how the numbers in
docs/tilelang.md are produced.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from gdg_lsp.bench import tilelang as plugin
from gdg_lsp.decoding import models
from gdg_lsp.documents import Document
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python import parse
from gdg_lsp.service import CompletionService
from gdg_lsp.settings import from_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arms", default="none,syntax,scope")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--timeout-ms", type=int, default=120000)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    cases = plugin.cut_holes(args.corpus, args.n, args.seed)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    backend = models.load(models.resolve("default"), "cpu")
    service = CompletionService(backend, WorkspaceContext())
    rows = []
    arms = args.arms.split(",")
    # holes outside, arms inside: an interrupted run still compares the arms on the same holes
    for case in cases:
        for arm in arms:
            settings, _ = from_json({"constraint": arm, "maxTokens": args.max_tokens, "timeoutMs": args.timeout_ms,
                                     "maxLines": 1})
            doc = Document(case.uri, "python", 0, case.text, parse)
            began = time.perf_counter()
            suggestion = service.complete(doc.snapshot(), case.cursor, settings)
            seconds = time.perf_counter() - began
            verdict = plugin.check(case, suggestion.text)
            rows.append({"arm": arm, "case": case.case_id, "category": case.meta["category"],
                         "text": suggestion.text, "expected": case.expected, "rung": suggestion.rung,
                         "ghosts": verdict.ghosts, "parsed": verdict.parsed, "exact": verdict.details["exact"],
                         "seconds": seconds, "tokens": suggestion.tokens,
                         "fragment": suggestion.hole.fragment if suggestion.hole else None})
            print(f"{arm:6} {case.case_id:70} ghosts={verdict.ghosts} exact={verdict.details['exact']} "
                  f"{seconds*1000:.0f}ms {suggestion.text!r}", file=sys.stderr, flush=True)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(json.dumps(rows, indent=1))
    print_table(rows, arms)
    return 0


def print_table(rows: list[dict], arms: list[str]) -> None:
    print("| arm | holes | ghost names | holes with a ghost | exact line | parses | median latency (ms) | p90 (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if not mine:
            continue
        latencies = sorted(r["seconds"] * 1000 for r in mine)
        print(f"| {arm} | {len(mine)} | {sum(len(r['ghosts']) for r in mine)} | {sum(1 for r in mine if r['ghosts'])} | "
              f"{sum(r['exact'] for r in mine)} | {sum(r['parsed'] for r in mine)} | {statistics.median(latencies):.0f} | "
              f"{latencies[int(0.9 * (len(latencies) - 1))]:.0f} |")


if __name__ == "__main__":
    raise SystemExit(main())
