"""Compile time and per-token mask time of the TileLang fragments, with the default model's vocabulary.

    PYTHONPATH=. python scripts/tilelang_grammar_cost.py [--holes 12] [--threads 1]

For corpus holes (the benchmark's), each fragment that applies is instantiated
at each of its rungs, compiled without cache, and the hole's original line is
fed token by token through a matcher, timing ``fill_next_token_bitmask``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import xgrammar as xgr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tilelang"))

from gdg_lsp import fragments, languages  # noqa: E402
from gdg_lsp.decoding import models  # noqa: E402
from gdg_lsp.grammar.xgrammar_engine import GrammarCache  # noqa: E402
from gdg_lsp.languages.tilelang import bench as plugin  # noqa: E402
from gdg_lsp.vocab import HFVocabulary  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--holes", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    from tl_helpers import hole_at_line
    from transformers import AutoTokenizer

    spec = models.resolve("default")
    tokenizer = AutoTokenizer.from_pretrained(str(models.converted_dir(spec)), local_files_only=True)
    vocab = HFVocabulary(tokenizer, vocab_size=49152)
    analyzer = languages.analyzer("tilelang")
    results: dict[tuple[str, str], dict[str, list[float]]] = {}
    for case in plugin.cut_holes(args.corpus, args.holes, 0):
        line_index = case.text.count("\n", 0, case.cursor)
        hole = hole_at_line(analyzer, case.text, line_index, case.uri)
        for name in ("statement", case.meta["category"]):
            fragment = fragments.fragment("tilelang", name)
            for rung in fragment.rungs:
                try:
                    grammar = fragments.instantiate(fragment, rung, hole.gamma, hole.context)
                except Exception:
                    continue
                cache = GrammarCache(vocab, threads=args.threads)
                began = time.perf_counter()
                compiled = cache.get(grammar.text)
                compile_s = time.perf_counter() - began
                matcher = xgr.GrammarMatcher(compiled)
                bitmask = xgr.allocate_token_bitmask(1, vocab.size)
                masks = []
                for token in vocab.encode(case.expected + "\n").ids:
                    t0 = time.perf_counter()
                    matcher.fill_next_token_bitmask(bitmask)
                    masks.append(time.perf_counter() - t0)
                    if not matcher.accept_token(token):
                        break
                entry = results.setdefault((name if name == "statement" else "per-op", rung),
                                           {"compile": [], "mask": [], "maxmask": [], "gamma": []})
                entry["compile"].append(compile_s)
                entry["mask"].extend(masks)
                entry["maxmask"].append(max(masks) if masks else 0.0)
                entry["gamma"].append(len(hole.gamma))
    print("| fragment | rung | grammars | Γ size (median) | compile median (ms) | compile max (ms) | mask per token median (ms) | mask p99 (ms) | worst single mask (ms) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (name, rung), e in sorted(results.items()):
        masks = sorted(e["mask"])
        print(f"| {name} | {rung} | {len(e['compile'])} | {statistics.median(e['gamma']):.0f} | "
              f"{statistics.median(e['compile']) * 1000:.0f} | {max(e['compile']) * 1000:.0f} | "
              f"{statistics.median(masks) * 1000:.3f} | {masks[int(0.99 * (len(masks) - 1))] * 1000:.2f} | "
              f"{max(e['maxmask']) * 1000:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
