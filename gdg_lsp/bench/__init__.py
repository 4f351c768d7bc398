"""Benchmarks: ``gdg-lsp bench quality|perf|stress|costs``.

- quality: holes cut from real code, none/syntax/scope arms, independent oracles
  (one plug-in module per language: ``gdg_lsp.bench.<language>``);
- perf: speed and memory of each stage, side by side, in one run;
- stress: hostile input and cancellation storms against a live server;
- costs: what workspace data an attacker picks makes one request cost, beside its bound.
"""

from __future__ import annotations


def main(kind: str, argv: list[str]) -> int:
    if kind == "quality":
        from gdg_lsp.bench.quality import main as quality

        return quality(argv)
    if kind == "perf":
        from gdg_lsp.bench.perf import main as perf

        return perf(argv)
    if kind == "stress":
        from gdg_lsp.bench.stress import main as stress

        return stress(argv)
    if kind == "costs":
        from gdg_lsp.bench.costs import main as costs

        return costs(argv)
    raise SystemExit(f"unknown benchmark {kind!r}")
