"""Quality of P4 completions: none vs syntax vs scope on the same corpus holes.

Holes come from ``gdg_lsp.bench.p4.cut_holes`` (statement lines cut from the P4
corpus, include path ``<corpus>/p4/include``); every arm completes every hole
through ``CompletionService`` with the real default model, and
``gdg_lsp.bench.p4.check`` (an independent declared-name scan) counts ghosts.

Per hole, one throwaway request first fills the model's KV cache with the
prompt, so every arm is timed as in an editor that already saw the file
(analysis + grammar + masked decoding, no cold prefill).

    PYTHONPATH=. python scripts/p4_bench.py --n 40 --out bench-out/p4.json
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arms", default="none,syntax,scope")
    parser.add_argument("--timeout-ms", type=int, default=90000)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--out", type=Path, default=Path("bench-out/p4.json"))
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    from gdg_lsp.bench import p4 as bench
    from gdg_lsp.decoding import models
    from gdg_lsp.documents import Document
    from gdg_lsp.languages import analyzer
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.service import CompletionService
    from gdg_lsp.settings import P4Settings, Settings

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    cases = bench.cut_holes(args.corpus, args.n, args.seed)
    include = cases[0].meta["include_paths"] if cases else []
    backend = models.load(models.resolve("default"), "cpu")
    service = CompletionService(backend, WorkspaceContext([], Settings(p4=P4Settings(include_paths=include))))
    p4 = analyzer("p4")
    rows = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for index, case in enumerate(cases):
        snapshot = Document(case.uri, "p4", 0, case.text, p4.parser()).snapshot()
        warm = Settings(constraint="none", max_tokens=1, timeout_ms=120_000, p4=P4Settings(include_paths=include))
        service.complete(snapshot, case.cursor, warm)
        for arm in arms:
            settings = Settings(constraint=arm, max_tokens=args.max_tokens, timeout_ms=args.timeout_ms,
                                p4=P4Settings(include_paths=include))
            suggestion = service.complete(snapshot, case.cursor, settings)
            verdict = bench.check(case, suggestion.text)
            row = {
                "case": case.case_id, "arm": arm, "expected": case.expected, "text": suggestion.text,
                "exact": suggestion.text.strip() == case.expected.strip(), "ghosts": verdict.ghosts,
                "parsed": verdict.parsed, "rung": suggestion.rung, "stop": suggestion.stop_reason,
                "tokens": suggestion.tokens, "ms": suggestion.timings.get("total", 0.0) * 1000,
                "hole": suggestion.hole.fragment if suggestion.hole else None,
            }
            rows.append(row)
            print(f"[{index + 1}/{len(cases)}] {arm:6} {row['ms']:7.0f} ms exact={row['exact']!s:5} "
                  f"ghosts={row['ghosts']} {case.expected!r} -> {suggestion.text!r}", file=sys.stderr, flush=True)
        args.out.write_text(json.dumps({"cases": [asdict(c) | {"text": None} for c in cases[: index + 1]],
                                        "rows": rows}, indent=1))
    print(table(rows, arms, len(cases)))
    return 0


def table(rows: list[dict], arms: list[str], holes: int) -> str:
    lines = [f"P4 statement holes: {holes} (same holes in every arm)",
             f"{'arm':7} {'ghost ids':>9} {'holes w/ ghost':>14} {'exact':>6} {'well-formed':>11} {'empty':>6} "
             f"{'p50 ms':>7} {'p95 ms':>7}"]
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        ms = [r["ms"] for r in mine]
        lines.append(
            f"{arm:7} {sum(len(r['ghosts']) for r in mine):9d} {sum(1 for r in mine if r['ghosts']):14d} "
            f"{sum(r['exact'] for r in mine):6d} {sum(r['parsed'] for r in mine):11d} "
            f"{sum(1 for r in mine if not r['text'].strip()):6d} {percentile(ms, 0.5):7.0f} {percentile(ms, 0.95):7.0f}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
