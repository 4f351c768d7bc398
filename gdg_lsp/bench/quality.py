"""``gdg-lsp bench quality``: how often each arm invents names, and what it costs.

Holes are cut from real code by the language's plug-in
(``gdg_lsp.languages.<language>.bench``), asked through the same CompletionService the
server uses, once per arm, and judged by the plug-in's independent oracle.
Output: a JSON file with every case, a markdown table, and PNG plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import attrs

from gdg_lsp import languages
from gdg_lsp.bench import replayed_acceptance, show_threshold
from gdg_lsp.languages.cases import HoleCase
from gdg_lsp.backends import presets
from gdg_lsp.service import confidence, suffix
from gdg_lsp.latency import percentile

DEFAULT_CORPUS = Path("/work/shared/corpus")


def plugins() -> list[str]:
    """The languages with a benchmark plug-in (``gdg_lsp.languages.<language>.bench``)."""
    return languages.benchmarked()


def load_fragment_languages(argv: list[str]) -> None:
    """``--fragments PATH``: fragment files that teach languages (their bench plug-in is
    languages/generic/bench.py); loaded first, so that ``--lang`` can name them."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--fragments", type=Path, action="append", default=[])
    paths = early.parse_known_args(argv)[0].fragments
    if paths:
        from gdg_lsp.service.fragment_library import FragmentLibrary

        for state in FragmentLibrary().sync([], paths):
            for problem in state.problems:
                print(f"{state.path}:{problem.line}: {problem.message}", file=sys.stderr)


def parse_args(argv: list[str]) -> argparse.Namespace:
    load_fragment_languages(argv)
    parser = argparse.ArgumentParser(prog="gdg-lsp bench quality", description=__doc__.splitlines()[0])
    parser.add_argument("--fragments", type=Path, action="append", default=[],
                        help="fragment files or folders to load first (languages they teach can be --lang)")
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS, help="corpus root (default: %(default)s)")
    parser.add_argument("--lang", default="python", choices=plugins(), help="language of the holes (default: %(default)s)")
    parser.add_argument("--arms", default="none,syntax,scope", help="comma-separated: none,syntax,scope")
    parser.add_argument("--n", type=int, default=50, help="number of holes")
    parser.add_argument("--seed", type=int, default=0, help="which holes are cut (same seed, same holes)")
    parser.add_argument("--model", default="default", help="as gdg.model: default, a Hugging Face folder or a .gguf")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--max-tokens", type=int, default=48, help="token budget per suggestion")
    parser.add_argument("--max-lines", type=int, default=1, help="statements per suggestion")
    parser.add_argument("--timeout-ms", type=int, default=30000, help="time budget per suggestion (generous: the bench measures, it does not cut)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for the model")
    parser.add_argument("--engine", default="auto", help="as gdg.engine: auto, lean, lean-packed, lean-int8, transformers")
    parser.add_argument("--grammar-engine", default="auto", choices=("auto", "llguidance", "xgrammar"),
                        help="as gdg.grammarEngine (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("bench-out"), help="folder for JSON, markdown and plots")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--filter", default="", metavar="REGEX",
                        help="keep only holes whose original code matches REGEX (e.g. '\\b\\w+\\.\\w' for attribute references)")
    parser.add_argument("--warm", action="store_true",
                        help="ask each arm twice and also report the second (grammar already compiled) latency")
    parser.add_argument("--holes", default="line", choices=("line", "midline", "inside", "continuation"),
                        help="line: a statement's line emptied; midline: a call's arguments removed, the cursor "
                             "between ( and ) (languages whose plug-in cuts them: python); inside: an expression "
                             "removed from inside a line, the rest of the line after the cursor (python); continuation: a line "
                             "inside a statement's brackets, or a P4 table's key element, emptied (python, "
                             "tilelang, p4)")
    parser.add_argument("--prompt", default="", metavar="VARIANTS",
                        help="prompt variants side by side, comma-separated: prefix-only (gdg.suffix and "
                             "gdg.definitions off), suffix (FIM models see the text after the cursor, suggestions "
                             "are fitted before it), context (suffix + definitions from other files); default: "
                             "the settings' own")
    parser.add_argument("--sql-prompt", default="schema",
                        help="SQL: the prompt(s) the model sees, comma-separated: schema, plain "
                             "(both: each arm runs once per prompt, reported side by side as arm/prompt)")
    return parser.parse_args(argv)


PROMPT_VARIANTS = {"prefix-only": {"suffix": False, "definitions": False},
                   "suffix": {"suffix": True, "definitions": False},
                   "context": {"suffix": True, "definitions": True}}
"""--prompt: the settings each variant runs with (``context``: the suffix and the definitions
of imported names from other files)."""


def _variants(plugin: Any, args: argparse.Namespace) -> list[str | None]:
    """The prompt variants asked for (--prompt, else the plug-in's: SQL --sql-prompt), or [None]."""
    if getattr(args, "prompt", ""):
        asked = [v.strip() for v in args.prompt.split(",") if v.strip()]
        unknown = [v for v in asked if v not in PROMPT_VARIANTS]
        if unknown or not asked:
            raise SystemExit(f"--prompt: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(PROMPT_VARIANTS)}")
        return asked
    known = getattr(plugin, "VARIANTS", None)
    if not known:
        return [None]
    asked = [v.strip() for v in args.sql_prompt.split(",") if v.strip()]
    unknown = [v for v in asked if v not in known]
    if unknown or not asked:
        raise SystemExit(f"--sql-prompt: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(known)}")
    return asked


_CORE_FLAGS = {"parsed", "passed", "match", "exact"}
"""Oracle facts the main table already has (under its own names)."""
_CORE_RATES = {"ghost_rate", "parse_rate", "answered_parse_rate", "oracle_pass_rate", "empty_rate", "attribute_ghost_rate",
               *(f"{flag}_rate" for flag in _CORE_FLAGS)}


def summarize(rows: list[dict[str, Any]], arms: list[str],
              preset_threshold: float | None = None) -> dict[str, dict[str, float]]:
    """The report's figures per arm; ``preset_threshold``: the one ``gdg.showThreshold`` ``auto``
    applies for the run's model and language, judged on these rows too."""
    table: dict[str, dict[str, float]] = {}
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        if not mine:
            continue
        latencies = [r["latency_ms"] for r in mine]
        table[arm] = {
            "holes": len(mine),
            "ghost_suggestions": sum(1 for r in mine if r["ghosts"]),
            "ghost_rate": sum(1 for r in mine if r["ghosts"]) / len(mine),
            "ghost_names": sum(len(r["ghosts"]) for r in mine),
            "parse_rate": sum(r["parsed"] for r in mine) / len(mine),
            "oracle_pass_rate": sum(r["passed"] for r in mine) / len(mine),
            "exact_match": sum(r["exact"] for r in mine) / len(mine),
            "empty_rate": sum(1 for r in mine if not r["suggestion"].strip()) / len(mine),
            "answered": sum(1 for r in mine if r.get("answered", bool(r["suggestion"].strip()))),
            "answered_parse_rate": sum(1 for r in mine if r.get("answered") and r["parsed"])
            / max(1, sum(1 for r in mine if r.get("answered"))),
            "edit_similarity": statistics.mean(r.get("similarity", 0.0) for r in mine),
            "repeats_suffix": sum(1 for r in mine if r.get("repeats_suffix")),
            "tokens_mean": statistics.mean(r["tokens"] for r in mine),
            "free_bits_mean": statistics.mean(r["free_bits"] for r in mine),
            "latency_p50_ms": percentile(latencies, 0.5),
            "latency_p95_ms": percentile(latencies, 0.95),
            "warm_p50_ms": percentile([r["warm_latency_ms"] for r in mine], 0.5),
            "warm_p95_ms": percentile([r["warm_latency_ms"] for r in mine], 0.95),
            "stops": dict(Counter(str(r["stop"]) for r in mine if r.get("stop")).most_common()),
            "replayed": replayed_acceptance.summary(
                (replayed_acceptance.Replay(**r["replayed"]) for r in mine if "replayed" in r),
                sum(len(r.get("expected", "").strip()) for r in mine)),
            "threshold_sweep": show_threshold.sweep(mine),
            "threshold_calibrated": show_threshold.calibrate(mine),
            "threshold_preset": show_threshold.at(mine, preset_threshold) if preset_threshold is not None else None,
        }
        # attributes that do not exist (the Python oracle's attribute column), where the oracle reports them
        judged = [r for r in mine if "attribute_ghosts" in r["details"]]
        if judged:
            table[arm]["attribute_ghost_suggestions"] = sum(1 for r in judged if r["details"]["attribute_ghosts"])
            table[arm]["attribute_ghost_rate"] = table[arm]["attribute_ghost_suggestions"] / len(mine)
            table[arm]["attribute_ghosts"] = sum(len(r["details"]["attribute_ghosts"]) for r in judged)
            table[arm]["attributes_judged"] = sum(r["details"].get("attributes_judged", 0) for r in judged)
        # yes/no facts an oracle reports besides pass (SQL: "executes") become rates too
        flags = sorted({k for r in mine for k, v in r["details"].items() if isinstance(v, bool) and k not in _CORE_FLAGS})
        for flag in flags:
            table[arm][f"{flag}_rate"] = sum(bool(r["details"].get(flag)) for r in mine) / len(mine)
    return table


def markdown(table: dict[str, dict[str, float]], header: str) -> str:
    lines = [header, "", "| arm | holes | ghost suggestions | ghost names | parse | oracle pass | exact | empty | tokens | free_bits | p50 ms | p95 ms | warm p50 | warm p95 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for arm, m in table.items():
        lines.append(
            f"| {arm} | {m['holes']} | {m['ghost_suggestions']} ({m['ghost_rate']:.0%}) | {m['ghost_names']} | "
            f"{m['parse_rate']:.0%} | {m['oracle_pass_rate']:.0%} | {m['exact_match']:.0%} | {m['empty_rate']:.0%} | "
            f"{m['tokens_mean']:.1f} | {m['free_bits_mean']:.1f} | {m['latency_p50_ms']:.0f} | {m['latency_p95_ms']:.0f} | "
            f"{m['warm_p50_ms']:.0f} | {m['warm_p95_ms']:.0f} |")
    if any("attribute_ghost_suggestions" in m for m in table.values()):
        lines += ["", "| arm | suggestions with an attribute ghost | attribute ghosts | attributes judged |", "|---|---|---|---|"]
        lines += [f"| {arm} | {m['attribute_ghost_suggestions']} ({m['attribute_ghost_rate']:.0%}) | {m['attribute_ghosts']} | "
                  f"{m['attributes_judged']} |" for arm, m in table.items() if "attribute_ghost_suggestions" in m]
    flags = sorted({key for m in table.values() for key in m if key.endswith("_rate") and key not in _CORE_RATES})
    if flags:
        lines += ["", "| arm | " + " | ".join(f[: -len("_rate")] for f in flags) + " |", "|---|" + "---|" * len(flags)]
        lines += [f"| {arm} | " + " | ".join(f"{m.get(f, 0):.0%}" for f in flags) + " |" for arm, m in table.items()]
    lines += ["", "| arm | answered (the item changes the hole) | exact | edit similarity | answered that parse "
              "| repeats the suffix |", "|---|---|---|---|---|---|"]
    lines += [f"| {arm} | {m['answered']}/{m['holes']} | {m['exact_match']:.0%} | {m['edit_similarity']:.2f} | "
              f"{m['answered_parse_rate']:.0%} | {m['repeats_suffix']} |" for arm, m in table.items()]
    lines += ["", "| arm | shown | accepted whole | accepted in part (words) | dismissed | characters accepted "
              "(share of the holes') |", "|---|---|---|---|---|---|"]
    lines += [f"| {arm} | {r['shown']} | {r['accepted']} | {r['partly']} | {r['dismissed']} | {r['characters']} "
              f"({r['characters_share']:.0%}) |" for arm, r in ((arm, m["replayed"]) for arm, m in table.items())]
    if any(m.get("threshold_sweep") for m in table.values()):
        lines += ["", "| arm | hidden below a log-probability (first statement) of | shown hidden | wrong hidden "
                  "(dismissed by the replay) | exact hidden | wrong −30% for ≤ 10% of exact |",
                  "|---|---|---|---|---|---|"]
        for arm, m in table.items():
            lines += show_threshold.markdown(arm, m.get("threshold_sweep", []))
            if m.get("threshold_calibrated"):
                lines += show_threshold.markdown(arm, [m["threshold_calibrated"]], " (picked on these holes)")
            if m.get("threshold_preset"):
                lines += show_threshold.markdown(arm, [m["threshold_preset"]], " (the preset's: auto)")
    if any(m.get("stops") for m in table.values()):
        lines += ["", "| arm | why suggestions ended (executor.StopReason) |", "|---|---|"]
        lines += [f"| {arm} | " + ", ".join(f"{k} {v}" for k, v in m.get("stops", {}).items()) + " |"
                  for arm, m in table.items()]
    if "none" in table and "scope" in table and table["none"]["latency_p50_ms"]:
        lines.append("")
        lines.append(f"scope/none latency ratio (p50): {table['scope']['latency_p50_ms'] / table['none']['latency_p50_ms']:.2f}"
                     + (f"; warm: {table['scope']['warm_p50_ms'] / table['none']['warm_p50_ms']:.2f}"
                        if table["none"]["warm_p50_ms"] else ""))
    return "\n".join(lines) + "\n"


def plot(table: dict[str, dict[str, float]], rows: list[dict[str, Any]], out: Path, title: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(table)
    paths = []
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, (key, label) in zip(axes, [("ghost_rate", "suggestions with a ghost"), ("oracle_pass_rate", "oracle pass"),
                                       ("exact_match", "exact match")]):
        values = [table[a][key] * 100 for a in arms]
        ax.bar(arms, values, color=(["#999999", "#6a8fbf", "#2f7d4a"] * len(arms))[: len(arms)])
        ax.set_ylim(0, 100)
        ax.set_title(label)
        ax.set_ylabel("%")
        for i, v in enumerate(values):
            ax.text(i, v + 1, f"{v:.0f}%", ha="center", fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    paths.append(out / "quality.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.boxplot([[r["latency_ms"] for r in rows if r["arm"] == a] for a in arms], tick_labels=arms, showfliers=False)
    ax.set_ylabel("latency per suggestion (ms)")
    ax.set_title(f"{title}: latency")
    fig.tight_layout()
    paths.append(out / "latency.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def applied(case: HoleCase, suggestion: Any) -> str:
    """What the hole holds once the item is accepted: the suggestion for a line hole; for a
    mid-line hole the rest of the line from the cursor (the suggestion, then what its range
    left of the line), whether the item inserted before the suffix or replaced it."""
    if not case.meta.get("midline"):
        return suggestion.text
    return (suggestion.text + case.text[suggestion.end :]).split("\n", 1)[0]


def edit_similarity(got: str, expected: str) -> float:
    """Normalized Levenshtein similarity of the stripped texts (1.0: equal)."""
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.normalized_similarity(got.strip(), expected.strip()))


def repeats_suffix(case: HoleCase, suggestion: Any) -> bool:
    """The accepted item leaves the text after the cursor twice: the suggestion was inserted
    (the suffix kept) and itself ends with that suffix, closing what the suffix closes
    (``a)`` before ``)``; ``f(x)`` before ``)`` closes its own bracket and is fine)."""
    rest = case.meta.get("rest", "")
    return bool(rest.strip() and suggestion.text.strip() and suggestion.end == suggestion.start
                and suggestion.text.rstrip().endswith(rest.strip()) and suffix.closes_outer(suggestion.text))


def changes_the_hole(case: HoleCase, got: str) -> bool:
    """The item does something: not empty, and (mid-line) not the suffix written back."""
    return bool(got.strip()) and got.strip() != case.meta.get("rest", "").strip() if case.meta.get("midline") \
        else bool(got.strip())


def run(args: argparse.Namespace) -> dict[str, Any]:
    from gdg_lsp.backends import models
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.service.local import CompletionService
    from gdg_lsp.settings import Settings

    plugin = languages.bench_plugin(args.lang)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    variants = _variants(plugin, args)
    labels = [arm if len(variants) == 1 else f"{arm}/{variant}" for arm in arms for variant in variants]
    cases: list[HoleCase]
    cut = plugin.cut_holes
    kind = getattr(args, "holes", "line")
    if kind != "line":
        cut = getattr(plugin, f"cut_{kind}_holes", None)
        if cut is None:
            raise SystemExit(f"--holes {kind}: the {args.lang} plug-in cuts no {kind} holes")
    if getattr(args, "filter", ""):  # a kind of hole (attribute references...): cut more, keep those that match
        pattern = re.compile(args.filter)
        cases = [c for c in cut(args.corpus, args.n * 20, args.seed) if pattern.search(c.expected)][: args.n]
    else:
        cases = cut(args.corpus, args.n, args.seed)
    print(f"{len(cases)} {args.lang} holes from {args.corpus}; arms {arms}", file=sys.stderr)
    device, warning = models.resolve_device(args.device)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    backend = models.load(models.resolve(args.model), device,
                          lambda m, p: print(f"  {m}" + (f" ({p}%)" if p is not None else ""), file=sys.stderr),
                          args.threads, args.engine)
    # optional plug-in hooks: the workspace a case sees, and settings it needs (P4: include paths)
    workspace_for = getattr(plugin, "workspace_for", None)
    settings_for = getattr(plugin, "settings_for", None)
    service = CompletionService(backend, WorkspaceContext(roots=[args.corpus]))
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for index, case in enumerate(cases, 1):
        if workspace_for is not None:
            service.workspace = workspace_for(case, args)
        doc = case.document()
        for arm, variant in [(arm, variant) for variant in variants for arm in arms]:
            if arm == arms[0]:
                # Untimed: put this document's prompt in the KV cache, as an editor session
                # has it when the user types, so that no arm pays a cold prefill for the others.
                prime = Settings(constraint="none", max_tokens=1, timeout_ms=args.timeout_ms)
                prime = plugin.variant_settings(prime, variant) if variant is not None and variant not in PROMPT_VARIANTS \
                    else prime
                service.workspace.settings = prime = settings_for(case, prime) if settings_for else prime
                service.complete(doc.snapshot(), case.cursor, prime)
            # arms side by side on each hole: the same warm state for all
            settings = Settings(constraint=arm, max_tokens=args.max_tokens, max_lines=args.max_lines,
                                timeout_ms=args.timeout_ms, model=args.model, device=args.device,
                                grammar_engine=args.grammar_engine,
                                # every suggestion is scored and judged; the threshold's effect is
                                # computed from the scores (show_threshold)
                                show_threshold="off")
            if variant in PROMPT_VARIANTS:
                settings = attrs.evolve(settings, **PROMPT_VARIANTS[variant])
            elif variant is not None:
                settings = plugin.variant_settings(settings, variant)
            if settings_for is not None:
                settings = settings_for(case, settings)
            service.workspace.settings = settings
            # free_bits is counted here (a whole mask per token); the warm repeat runs as the server does
            suggestion = service.complete(doc.snapshot(), case.cursor, settings, measure_free_bits=True)
            # again, as the next keystroke's request would: the grammar is compiled now
            warm = service.complete(doc.snapshot(), case.cursor, settings) if args.warm else suggestion
            got = applied(case, suggestion)
            verdict = plugin.check(case, got)
            rows.append({
                "case": case.case_id, "arm": arm if len(variants) == 1 else f"{arm}/{variant}",
                "suggestion": suggestion.text, "expected": case.expected,
                "rung": suggestion.rung, "stop": suggestion.stop_reason, "reason": suggestion.reason,
                "parsed": verdict.parsed, "passed": verdict.passed, "ghosts": verdict.ghosts,
                "exact": got.strip() == case.expected.strip(), "tokens": suggestion.tokens,
                "similarity": edit_similarity(got, case.expected), "repeats_suffix": repeats_suffix(case, suggestion),
                "answered": changes_the_hole(case, got),
                # what a user typing the original would have done with it (accept, words, dismiss)
                "replayed": dataclasses.asdict(replayed_acceptance.replay(got, case.expected)),
                "range": [suggestion.start, suggestion.end], "prompt_template": suggestion.prompt_template,
                "free_bits": suggestion.free_bits, "latency_ms": suggestion.timings.get("total", 0.0) * 1000,
                "guaranteed": suggestion.guaranteed, "open_positions": suggestion.open_positions,
                "mean_logprob": suggestion.execution.mean_logprob if suggestion.execution is not None else None,
                "logprob": suggestion.execution.logprob if suggestion.execution is not None else None,
                "score": confidence.score(suggestion.execution) if suggestion.execution is not None else None,
                "warm_latency_ms": warm.timings.get("total", 0.0) * 1000,
                "details": verdict.details,
            })
        print(f"  [{index}/{len(cases)}] {case.case_id}: "
              + "  ".join(f"{r['arm']}={'GHOST' if r['ghosts'] else 'ok'}" for r in rows[-len(labels):]), file=sys.stderr)
    preset = presets.find(args.model)
    table = summarize(rows, labels, dict(preset.show_thresholds).get(args.lang) if preset is not None else None)
    return {"language": args.lang, "corpus": str(args.corpus), "n": len(cases), "seed": args.seed, "arms": labels,
            "model": backend.name, "device": device, "max_tokens": args.max_tokens,
            "seconds": time.perf_counter() - began, "summary": table, "cases": rows}


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = run(args)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"quality-{args.lang}"
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    command = "gdg-lsp bench quality " + " ".join(sys.argv[3:] if sys.argv[1:3] == ["bench", "quality"] else [])
    header = (f"### {args.lang}: {report['n']} {getattr(args, 'holes', 'line')} holes, model {report['model']} on {report['device']}, "
              f"seed {args.seed}, max {args.max_tokens} tokens\n\n`{command.strip()}`")
    md = markdown(report["summary"], header)
    (args.out / f"{stem}.md").write_text(md, encoding="utf-8")
    print(md)
    if not args.no_plots:
        try:
            for path in plot(report["summary"], report["cases"], args.out, f"{args.lang} ({report['n']} holes)"):
                print(f"plot: {path}", file=sys.stderr)
        except ImportError:
            print("matplotlib is not installed: no plots (pip install 'gdg-lsp[bench]')", file=sys.stderr)
    return 0
