"""Compile time and per-token mask time of the P4 fragments with the real vocabulary.

For each hole cut from the corpus: the grammar of every rung of the hole's
fragment is instantiated from Γ and compiled (no cache), then the expected
line is tokenized with the model's tokenizer and replayed through a matcher,
timing ``fill_next_token_bitmask`` before each token.

    PYTHONPATH=. python scripts/p4_grammar_perf.py --n 40
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import xgrammar as xgr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus"))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from transformers import AutoTokenizer

    from gdg_lsp import fragments
    from gdg_lsp.backends import models
    from gdg_lsp.documents import Document
    from gdg_lsp.languages import analyzer
    from gdg_lsp.languages.base import Hole, WorkspaceContext
    from gdg_lsp.languages.p4 import bench
    from gdg_lsp.settings import P4Settings, Settings
    from gdg_lsp.vocab import HFVocabulary

    folder = models.converted_dir(models.resolve("default"))
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    vocab = HFVocabulary(tokenizer)
    compiler = xgr.GrammarCompiler(vocab.tokenizer_info(), max_threads=2, cache_enabled=False)
    p4 = analyzer("p4")
    compile_ms: dict[str, list[float]] = {}
    mask_ms: dict[str, list[float]] = {}
    worst: dict[str, float] = {}
    for case in bench.cut_holes(args.corpus, args.n, args.seed):
        workspace = WorkspaceContext([], Settings(p4=P4Settings(include_paths=case.meta["include_paths"])))
        hole = p4.hole_at(Document(case.uri, "p4", 0, case.text, p4.parser()).snapshot(), case.cursor, workspace)
        if not isinstance(hole, Hole):
            continue
        fragment = fragments.fragment("p4", hole.fragment)
        ids = tokenizer.encode(case.expected + "\n", add_special_tokens=False)
        for rung in fragment.rungs:
            key = f"{hole.fragment}/{rung}"
            grammar = fragments.instantiate(fragment, rung, hole.gamma, hole.context)
            began = time.perf_counter()
            compiled = compiler.compile_grammar(grammar.text)
            compile_ms.setdefault(key, []).append((time.perf_counter() - began) * 1000)
            matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
            bitmask = xgr.allocate_token_bitmask(1, vocab.size)
            for token in ids:
                began = time.perf_counter()
                matcher.fill_next_token_bitmask(bitmask)
                spent = (time.perf_counter() - began) * 1000
                mask_ms.setdefault(key, []).append(spent)
                worst[key] = max(worst.get(key, 0.0), spent)
                if not matcher.accept_token(token):
                    break
    print(f"{'fragment/rung':28} {'grammars':>8} {'compile p50':>11} {'p95':>7} {'max':>7} "
          f"{'mask/token p50':>14} {'mean':>6} {'p95':>6} {'max':>7}  (ms)")
    for key in sorted(compile_ms):
        c, m = sorted(compile_ms[key]), sorted(mask_ms.get(key, [0.0]))
        print(f"{key:28} {len(c):8d} {statistics.median(c):11.1f} {c[int(0.95 * (len(c) - 1))]:7.1f} {c[-1]:7.1f} "
              f"{statistics.median(m):14.3f} {statistics.mean(m):6.3f} {m[int(0.95 * (len(m) - 1))]:6.3f} {worst[key]:7.2f}")


if __name__ == "__main__":
    main()
