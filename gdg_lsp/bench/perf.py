"""``gdg-lsp bench perf``: what each stage costs, side by side, in one run.

Sections (each a table; ``--json OUT`` writes them all):

- decode: tokens/s, model step and per-step mask cost for the none/syntax/scope
  arms over holes cut from real code, asked through the CompletionService the
  server uses; end-to-end latency and its ratio to the ``none`` arm measured in
  the same run (first ask and warm repeat);
- batch: K documents' requests arriving together (K = 1, 2, 4): aggregate
  tokens/s and per-request latency, one at a time vs batched (decoding/batching.py),
  measured in the same run;
- grammar: a new Γ until the first mask is ready (τ_Γ, compile, first mask) against
  |Γ| (a Python module with N global names), for each grammar engine side by side
  (and XGrammar compiling every mask up front, the baseline), per-token mask cost
  against the model's step, and the Γ-independent part compiled once;
- keystroke: didChange → incremental re-parse → hole and Γ ready, against file
  size (real corpus code), p50/p95;
- typing: a statement typed key by key with a suggestion asked after each key;
  the grammar engine's counters prove no grammar is compiled twice (and none at
  all after the first key while Γ does not change);
- lsp: a real server subprocess over stdio (``bench/lsp_client.py``): cold start
  (empty model cache) and warm start to the first suggestion, inline-completion
  round-trips p50/p95 while typing, the server's peak RSS;
- engines: the model step and prefill of the lean engines and llama.cpp (when
  llama-cpp-python is installed) on the same model file, same prompt, greedy,
  alternating, at 1 and 2 threads, with greedy agreement against fp32
  (``bench/engines.py``);
- surfaces: Python member surfaces (issue 23): member Γ of a 500-member module the
  first time and from cache, the keystroke path with the member layer on and off,
  and the statement grammar's compile with and without member/keyword slots on
  corpus holes (measured in alternation);
- editor: typing replayed over stdio as a user feels it (``bench/editor.py``): start →
  first non-empty suggestion, first ask at a new hole, repeated ask, the shown
  suggestion typed key by key, answered share, decodes per ask, issue 18's targets;
- memory: this process's peak RSS.

``--model random`` writes a random-weight model of ``--shape`` with a real
tokenizer (``bench/random_model.py``): speed does not depend on the weights,
and CI has no GPU and little time (``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gdg_lsp.bench.quality import DEFAULT_CORPUS
from gdg_lsp.caches import all_stats
from gdg_lsp.latency import percentile

ARMS = ("none", "syntax", "scope")
SECTIONS = ("engines", "decode", "batch", "grammar", "keystroke", "typing", "lsp", "toolstate", "surfaces", "editor")
MODEL_SECTIONS = ("decode", "batch", "grammar", "typing", "lsp", "surfaces", "editor")
"""Sections that need a loaded model (the keystroke and toolstate sections only analyse; the engines
section loads its own)."""
SERVER_SECTIONS = ("lsp", "editor")
"""Sections that run a server subprocess (it loads the model itself)."""
TYPING_FUNCTION = "\n\ndef typed_here(alpha, beta):\n    total = alpha + beta\n    "
TYPED = "result = total"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gdg-lsp bench perf", description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS, help="corpus root (default: %(default)s)")
    parser.add_argument("--model", default="default", help="`default`, a model folder or .gguf, or `random`")
    parser.add_argument("--shape", default="tiny", help="shape of --model random: tiny, smollm2-135m, qwen2.5-0.5b")
    parser.add_argument("--tokenizer", type=Path, default=None, help="tokenizer folder for --model random (default: the default model's)")
    parser.add_argument("--engine", default="auto", help="auto, lean, lean-int8, transformers")
    parser.add_argument("--compare-engines", default="",
                        help="comma-separated extra engines whose decode arms are measured too (e.g. transformers,lean-int8)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--holes", type=int, default=12, help="holes for the decode section")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gamma-sizes", default="10,1000,10000")
    parser.add_argument("--grammar-reps", type=int, default=5, help="new Γs per size and engine in the grammar section")
    parser.add_argument("--grammar-engines", default=",".join(GRAMMAR_ENGINES),
                        help="grammar engines measured side by side in the grammar section; the decode section's "
                             "scope arm runs with each of them but the static baseline")
    parser.add_argument("--file-lines", default="100,1000,5000,10000")
    parser.add_argument("--keystrokes", type=int, default=40, help="keystrokes per file size")
    parser.add_argument("--lsp-requests", type=int, default=30)
    parser.add_argument("--no-lsp", action="store_true", help="skip the server subprocess sections (lsp, editor)")
    parser.add_argument("--editor-holes", type=int, default=12, help="holes the editor section types through")
    parser.add_argument("--editor-keys", type=int, default=12, help="keys of each shown suggestion the editor section types")
    parser.add_argument("--editor-constraint", default="",
                        help="gdg.constraint for the editor section (default: the setting's default; --quick with "
                             "--model random: none, as random weights rarely finish a statement under Γ)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start (it converts the GGUF model again)")
    parser.add_argument("--engines", default="lean,lean-packed,llama.cpp",
                        help="engines of the engines section (lean, the fp32 reference, always first; llama.cpp "
                             "when llama-cpp-python is installed and the model is a GGUF file)")
    parser.add_argument("--engine-threads", default="1,2", help="thread counts of the engines section")
    parser.add_argument("--engine-rounds", type=int, default=6, help="alternating rounds of the engines section")
    parser.add_argument("--engine-steps", type=int, default=16, help="steps per round of the engines section")
    parser.add_argument("--prompt-tokens", type=int, default=788, help="prompt length of the engines section")
    parser.add_argument("--agreement-prompts", type=int, default=30,
                        help="corpus prompts over which the engines section measures greedy agreement with fp32")
    parser.add_argument("--agreement-tokens", type=int, default=32, help="tokens per agreement prompt")
    parser.add_argument("--batch-sizes", default="1,2,4",
                        help="concurrent requests for the batch section (lean engines only; empty: skip it)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes for CI: 2 holes, 12 tokens, Γ up to 1000, files up to 5000 lines, batches of 1 and 2")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the report as JSON")
    parser.add_argument("--only", default="", metavar="SECTIONS",
                        help=f"comma-separated sections to run ({','.join(SECTIONS)}; default: all). "
                             "`--only keystroke` or `--only toolstate` loads no model")
    args = parser.parse_args(argv)
    args.sections = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    args.grammar_engines = [e.strip() for e in args.grammar_engines.split(",") if e.strip()]
    if unknown_engines := sorted(set(args.grammar_engines) - set(GRAMMAR_ENGINES)):
        parser.error(f"unknown grammar engine(s) {', '.join(unknown_engines)}; choose from {', '.join(GRAMMAR_ENGINES)}")
    unknown = sorted(set(args.sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    for section in ("lsp", "editor"):
        if args.no_lsp and section in args.sections:
            args.sections.remove(section)
    if args.quick:
        args.holes = min(args.holes, 2)
        args.max_tokens = min(args.max_tokens, 12)
        args.gamma_sizes = "10,100,1000"
        args.grammar_engines = [e for e in args.grammar_engines if e != "xgrammar-static"]  # seconds per compile
        args.file_lines = "100,1000,5000"
        args.keystrokes = min(args.keystrokes, 12)
        args.lsp_requests = min(args.lsp_requests, 8)
        args.batch_sizes = "1,2"
        args.editor_holes = min(args.editor_holes, 2)
        args.editor_keys = min(args.editor_keys, 4)
        if args.model == "random" and not args.editor_constraint:
            args.editor_constraint = "none"
        args.engine_rounds = min(args.engine_rounds, 2)
        args.engine_steps = min(args.engine_steps, 4)
        args.prompt_tokens = min(args.prompt_tokens, 128)
        args.agreement_prompts = min(args.agreement_prompts, 2)
        args.agreement_tokens = min(args.agreement_tokens, 4)
    return args


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _log(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def peak_rss_mb(pid: int | None = None) -> float:
    """Peak resident memory in MB: of ``pid`` (Linux /proc), or of this process."""
    if pid is not None:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return 0.0
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the model ------------------------------------------------------------------------


def model_setting(args: argparse.Namespace, scratch: Path) -> str:
    """The ``gdg.model`` value to load (writing the random model first when asked)."""
    if args.model != "random":
        return args.model
    from gdg_lsp.bench.random_model import write_random_model

    began = time.perf_counter()
    folder = write_random_model(scratch / f"random-{args.shape}", args.shape, args.tokenizer, args.seed)
    _log(f"random {args.shape} model written in {time.perf_counter() - began:.1f} s")
    return str(folder)


def load_backend(setting: str, args: argparse.Namespace, engine: str):
    from gdg_lsp.backends import models

    device, warning = models.resolve_device(args.device)
    if warning:
        _log(f"warning: {warning}")
    began = time.perf_counter()
    backend = models.load(models.resolve(setting), device, threads=args.threads, engine=engine)
    return backend, device, time.perf_counter() - began


def torch_threads(count: int) -> None:
    """Give torch ``count`` threads again (the engines section changes them)."""
    import torch

    torch.set_num_threads(count)


# -- decode: arms side by side ----------------------------------------------------------


def decode_arms(args: argparse.Namespace) -> dict[str, tuple[str, str]]:
    """Arm name -> (gdg.constraint, gdg.grammarEngine): none, syntax and scope with the
    default engine, then scope with each other engine measured (``scope/xgrammar``)."""
    engines = [e for e in args.grammar_engines if e != "xgrammar-static"]
    arms = {arm: (arm, "auto") for arm in ARMS}
    arms.update({f"scope/{e}": ("scope", e) for e in engines if e != _default_grammar_engine()})
    return arms


def _default_grammar_engine() -> str:
    from gdg_lsp.grammar import engine

    return engine.DEFAULT


def bench_decode(service, cases, args: argparse.Namespace) -> dict[str, Any]:
    from gdg_lsp.settings import Settings

    stats = service.backend.stats
    arms = decode_arms(args)
    rows: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    for case in cases:
        doc = case.document()
        # untimed: the document's prompt in the KV cache, as in an editing session
        service.complete(doc.snapshot(), case.cursor, Settings(constraint="none", max_tokens=1, timeout_ms=60000))
        for arm, (constraint, grammar_engine) in arms.items():
            settings = Settings(constraint=constraint, max_tokens=args.max_tokens, timeout_ms=60000,
                                grammar_engine=grammar_engine)
            first = service.complete(doc.snapshot(), case.cursor, settings)
            steps0, model0 = stats.steps, stats.model_seconds
            warm = service.complete(doc.snapshot(), case.cursor, settings)
            traces = warm.execution.statements if warm.execution else []
            rows[arm].append({
                "first_ms": first.timings.get("total", 0.0) * 1000,
                "warm_ms": warm.timings.get("total", 0.0) * 1000,
                "tokens": warm.tokens,
                "decode_s": warm.timings.get("decode", 0.0),
                "prefill_s": sum(t.seconds.get("prefill", 0.0) for t in traces),
                "mask_s": sum(t.seconds.get("mask", 0.0) for t in traces),
                "step_calls": stats.steps - steps0,
                "model_s": stats.model_seconds - model0,
                "rung": warm.rung or "none",
            })
    table: dict[str, Any] = {}
    for arm, mine in rows.items():
        tokens = sum(r["tokens"] for r in mine)
        step_calls = sum(r["step_calls"] for r in mine)
        step_s = sum(r["model_s"] - r["prefill_s"] for r in mine)
        model_step = step_s / step_calls if step_calls else 0.0
        mask_step = sum(r["mask_s"] for r in mine) / tokens if tokens else 0.0
        decode_s = sum(r["decode_s"] for r in mine)
        table[arm] = {
            "holes": len(mine), "tokens": tokens,
            "tokens_per_s": tokens / decode_s if decode_s else 0.0,
            "model_step_ms": model_step * 1000, "mask_step_ms": mask_step * 1000,
            "mask_pct_of_step": 100 * mask_step / model_step if model_step else 0.0,
            "first_p50_ms": percentile([r["first_ms"] for r in mine], 0.5),
            "warm_p50_ms": percentile([r["warm_ms"] for r in mine], 0.5),
            "warm_p95_ms": percentile([r["warm_ms"] for r in mine], 0.95),
            "rungs": sorted({r["rung"] for r in mine}),
        }
    base = table["none"]
    for arm in arms:
        m = table[arm]
        m["first_ratio_vs_none"] = m["first_p50_ms"] / base["first_p50_ms"] if base["first_p50_ms"] else 0.0
        m["warm_ratio_vs_none"] = m["warm_p50_ms"] / base["warm_p50_ms"] if base["warm_p50_ms"] else 0.0
        # per token: the arms stop at different lengths, so latency alone mixes in output length
        per_token = lambda a: (sum(r["warm_ms"] for r in rows[a]) / max(1, sum(r["tokens"] for r in rows[a])))
        m["warm_ms_per_token"] = per_token(arm)
        m["per_token_ratio_vs_none"] = per_token(arm) / per_token("none") if per_token("none") else 0.0
    return table


def bench_new_prompt(service, cases, args: argparse.Namespace) -> dict[str, Any]:
    """The scope arm's first ask when neither the prompt (KV cache) nor the grammar
    is cached (a file just opened, a jump elsewhere), with the prompt prefilled while
    the grammar compiles (what the service does) and one after the other (the
    baseline), alternating per hole so that load changes hit both alike."""
    from gdg_lsp.decoding.engine import Decoder
    from gdg_lsp.grammar import engine as grammar_engine
    from gdg_lsp.settings import Settings

    class Sequential(Decoder):
        prefill_ahead = None  # the executor then compiles first and prefills in the decode

    overlapped, grammars, backend = service.decoder, service.grammars(), service.backend
    decoders = {"overlapped": overlapped, "sequential": Sequential(backend)}
    settings = Settings(constraint="scope", max_tokens=args.max_tokens, timeout_ms=60000)
    times: dict[str, list[float]] = {name: [] for name in decoders}
    try:
        for index, case in enumerate(cases):
            doc = case.document()
            order = list(decoders) if index % 2 == 0 else list(reversed(decoders))
            for name in order:
                backend.reset()
                service.decoder = decoders[name]
                service.use_grammars(grammar_engine.create(grammars.name, service.vocab))  # an empty cache
                times[name].append(service.complete(doc.snapshot(), case.cursor, settings).timings["total"] * 1000)
    finally:
        service.decoder = overlapped
        service.use_grammars(grammars)
    out = {f"{name}_p50_ms": percentile(values, 0.5) for name, values in times.items()}
    out["overlapped_ratio_vs_sequential"] = (out["overlapped_p50_ms"] / out["sequential_p50_ms"]
                                            if out["sequential_p50_ms"] else 0.0)
    out["holes"] = len(cases)
    return out


def bench_drafts(service, cases, args: argparse.Namespace) -> dict[str, Any] | None:
    """Warm scope requests with drafts looked up in the context (the default) and
    without, alternating per hole: time per token, model forwards per token, and
    whether the suggestions are the same (they must be, up to float rounding)."""
    from gdg_lsp.settings import Settings

    decoder, stats = service.decoder, service.backend.stats
    if not getattr(decoder, "draft_tokens", 0):
        return None  # this engine does not draft (transformers, int8 weights)
    default = decoder.draft_tokens
    settings = Settings(constraint="scope", max_tokens=args.max_tokens, timeout_ms=60000)
    runs = {"drafts": [0, 0.0, 0], "steps": [0, 0.0, 0]}  # tokens, seconds, forwards
    texts: dict[str, list[str]] = {name: [] for name in runs}
    hits0, drafted0 = decoder.draft_hits, decoder.drafted
    try:
        for index, case in enumerate(cases):
            doc = case.document()
            service.complete(doc.snapshot(), case.cursor, settings)  # untimed: grammar compiled, prompt cached
            for name in (("drafts", "steps") if index % 2 == 0 else ("steps", "drafts")):
                decoder.draft_tokens = default if name == "drafts" else 0
                forwards = stats.steps
                suggestion = service.complete(doc.snapshot(), case.cursor, settings)
                run = runs[name]
                run[0] += suggestion.tokens
                run[1] += suggestion.timings.get("decode", 0.0)
                run[2] += stats.steps - forwards
                texts[name].append(suggestion.text)
    finally:
        decoder.draft_tokens = default
    out: dict[str, Any] = {"holes": len(cases), "draft_tokens": default}
    for name, (tokens, seconds, forwards) in runs.items():
        out[f"{name}_ms_per_token"] = 1000 * seconds / tokens if tokens else 0.0
        out[f"{name}_forwards_per_token"] = forwards / tokens if tokens else 0.0
    out["ratio_vs_steps"] = (out["drafts_ms_per_token"] / out["steps_ms_per_token"]
                             if out["steps_ms_per_token"] else 0.0)
    drafted = decoder.drafted - drafted0
    out["draft_acceptance"] = (decoder.draft_hits - hits0) / drafted if drafted else 0.0
    out["same_suggestions"] = sum(a == b for a, b in zip(texts["drafts"], texts["steps"]))
    return out


# -- batch: concurrent requests from several documents ----------------------------------------------


BATCH_ARMS = ("shared", "per-doc", "batched")
"""shared: one at a time over one KV cache (gdg.batchSize 1); per-doc: one at a time, each
document with a cache of its own (slot affinity without batching); batched: all at once
through a SlotPool (gdg.batchSize K)."""


def bench_batch(backend, cases, args: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    """K requests from K documents arriving together, for each K: aggregate tokens/s and
    per-request latency (from the common arrival to each answer), the three arms of
    BATCH_ARMS measured one after the other (their order turning with K) over the same weights. Each document was asked
    once before (untimed), as in an editing session; the arms start from the same state."""
    import threading

    from gdg_lsp import languages
    from gdg_lsp.backends.lean.batching import SlotPool
    from gdg_lsp.backends.lean.llama import FastLlamaBackend
    from gdg_lsp.documents import Document
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.service.local import CompletionService
    from gdg_lsp.settings import Settings

    workspace = WorkspaceContext(roots=[args.corpus])
    settings = Settings(constraint="scope", max_tokens=args.max_tokens, timeout_ms=120_000)
    # untimed first ask: the prompt in the KV cache and the first statement's grammars compiled
    prime = Settings(constraint="scope", max_tokens=1, timeout_ms=120_000)
    out: dict[str, Any] = {}
    for k in sizes:
        picked = [cases[i % len(cases)] for i in range(k)]
        docs = [Document(f"{c.uri}#batch{i}", c.language, 1, c.text, languages.analyzer(c.language, c.text).parser())
                for i, c in enumerate(picked)]

        def single() -> FastLlamaBackend:  # the loaded engine's class (a CUDA graph per step on a GPU)
            return type(backend)(backend.weights, backend.vocab, backend.name, backend.device)

        shared = CompletionService(single(), workspace)
        per_doc = [CompletionService(single(), workspace) for _ in docs]
        pool = SlotPool(backend.weights, backend.vocab, backend.name, backend.device, slots=k)
        batched = CompletionService(pool, workspace)
        for service in (*per_doc, batched):  # one grammar cache: no arm pays a compile the other did
            service.use_grammars(shared.grammars())
        try:
            for i, (doc, case) in enumerate(zip(docs, picked)):  # untimed: each document asked once before
                shared.complete(doc.snapshot(), case.cursor, prime)
                per_doc[i].complete(doc.snapshot(), case.cursor, prime)
            prime_threads = [threading.Thread(target=batched.complete, args=(d.snapshot(), c.cursor, prime))
                             for d, c in zip(docs, picked)]
            for t in prime_threads:
                t.start()
            for t in prime_threads:
                t.join()
            pool.batch_sizes.clear()

            def one_at_a_time(services: list) -> tuple[list, list[float], float]:
                began = time.perf_counter()
                answers, latencies = [], []
                for service, doc, case in zip(services, docs, picked):
                    answers.append(service.complete(doc.snapshot(), case.cursor, settings))
                    latencies.append(time.perf_counter() - began)
                return answers, latencies, time.perf_counter() - began

            def all_at_once() -> tuple[list, list[float], float]:
                answers: list = [None] * k
                latencies = [0.0] * k
                start = threading.Barrier(k + 1)

                def ask(i: int) -> None:
                    start.wait()
                    answers[i] = batched.complete(docs[i].snapshot(), picked[i].cursor, settings)
                    latencies[i] = time.perf_counter() - began

                threads = [threading.Thread(target=ask, args=(i,)) for i in range(k)]
                for t in threads:
                    t.start()
                began = time.perf_counter()
                start.wait()
                for t in threads:
                    t.join()
                return answers, latencies, time.perf_counter() - began

            arms = {"shared": lambda: one_at_a_time([shared] * k), "per-doc": lambda: one_at_a_time(per_doc),
                    "batched": all_at_once}
            # the arms' order turns with K: a drift of the machine's load does not always hit the same arm
            turn = sizes.index(k) % len(BATCH_ARMS)
            order = BATCH_ARMS[turn:] + BATCH_ARMS[:turn]
            measured = {arm: arms[arm]() for arm in order}
            runs = {arm: measured[arm] for arm in BATCH_ARMS}
        finally:
            pool.close()
        row: dict[str, Any] = {"requests": k}
        texts = {}
        for arm, (answers, latencies, wall) in runs.items():
            tokens = sum(a.tokens for a in answers)
            texts[arm] = [a.text for a in answers]
            row[arm] = {"tokens": tokens, "wall_s": round(wall, 3), "tokens_per_s": tokens / wall if wall else 0.0,
                        "latency_p50_ms": percentile([x * 1000 for x in latencies], 0.5),
                        "latency_max_ms": max(latencies) * 1000}
        row["batched_vs_shared"] = row["batched"]["tokens_per_s"] / row["shared"]["tokens_per_s"] if row["shared"]["tokens_per_s"] else 0.0
        row["batched_vs_per_doc"] = row["batched"]["tokens_per_s"] / row["per-doc"]["tokens_per_s"] if row["per-doc"]["tokens_per_s"] else 0.0
        # greedy: the same suggestions whichever arm decoded them (fp32 rounding may rarely flip a near tie)
        row["same_text"] = sum(a == b for a, b in zip(texts["batched"], texts["per-doc"])) / k
        row["batch_sizes"] = dict(sorted(pool.batch_sizes.items()))
        out[str(k)] = row
        _log(f"batch K={k}: {row['batched']['tokens_per_s']:.1f} tokens/s batched vs {row['shared']['tokens_per_s']:.1f} "
             f"shared ({row['batched_vs_shared']:.2f}x), {row['per-doc']['tokens_per_s']:.1f} per-doc")
    return out


# -- engines: model step time, interleaved ------------------------------------------------------


def bench_engines(backends: dict[str, Any], prompt: str, rounds: int, steps: int = 8) -> dict[str, Any]:
    """Per-step time of each engine, measured in alternation (round by round) so that a
    change in the machine's load hits every engine alike; and how often each engine's
    greedy token agrees with the first engine's on the same inputs."""
    import torch

    names = list(backends)
    first = backends[names[0]]
    ids = first.vocab.encode(prompt).ids
    times: dict[str, list[float]] = {n: [] for n in names}
    agree: dict[str, list[bool]] = {n: [] for n in names}
    for _ in range(rounds):
        picks: dict[str, list[int]] = {}
        for name in names:
            backend = backends[name]
            backend.reset()
            logits = backend.prefill(ids)
            # the same inputs for every engine: the first engine's greedy tokens
            feed = picks.get(names[0]) or []
            chosen = []
            for index in range(steps):
                chosen.append(int(torch.argmax(logits)))
                token = feed[index] if feed else chosen[-1]
                began = time.perf_counter()
                logits = backend.step(token)
                times[name].append(time.perf_counter() - began)
            picks[name] = chosen
            agree[name].extend(a == b for a, b in zip(chosen, picks[names[0]]))
    base = statistics.median(times[names[0]])
    return {name: {"step_ms": _ms(statistics.median(times[name])), "tokens_per_s": 1 / statistics.median(times[name]),
                   "ratio_vs_first": statistics.median(times[name]) / base,
                   "greedy_agreement": sum(agree[name]) / len(agree[name])} for name in names}


# -- grammar: a new Γ to the first mask, per engine, against |Γ| ----------------------------------

GRAMMAR_ENGINES = ("llguidance", "xgrammar", "xgrammar-static")
"""Measured side by side: the two engines, and XGrammar compiling every mask up front (how
gdg-lsp compiled before the engines had an interface: the baseline of the same run)."""


def _module_with_names(count: int, tag: str) -> tuple[str, int]:
    lines = [f"{tag}_{i:05d} = {i}" for i in range(count)]
    text = "\n".join(lines) + "\n\n\ndef use_them():\n    "
    return text, len(text)


def _grammar_engine(name: str, vocab):
    from gdg_lsp.grammar import engine as grammar_engine
    from gdg_lsp.grammar.xgrammar_engine import XGrammarEngine

    return XGrammarEngine(vocab, dynamic=False) if name == "xgrammar-static" else grammar_engine.create(name, vocab)


def _model_step_seconds(backend, prompt_ids: list[int], steps: int = 12) -> float:
    """The default model's step in this run (median of ``steps`` after a prefill)."""
    backend.reset()
    logits = backend.prefill(prompt_ids)
    token = int(logits.argmax())
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        logits = backend.step(token)
        times.append(time.perf_counter() - began)
        token = int(logits.argmax())
    backend.reset()
    return statistics.median(times)


def bench_grammar(service, sizes: list[int], reps: int = 3, engines: tuple[str, ...] = GRAMMAR_ENGINES) -> dict[str, Any]:
    """For Python modules with N fresh global names, at the statement hole after them:
    τ_Γ, then per engine the compile and the first mask (a new Γ until the first mask is
    ready: what a request pays before its first constrained token), and a cache hit. Then,
    on the 1,000-name grammar, each engine's per-token cost over a statement (the whole
    mask, and the check of one token the decoder does first) against the model's step,
    and what the Γ-independent part costs once (llguidance: the template's Lark)."""
    from gdg_lsp import fragments, languages
    from gdg_lsp.documents import Document
    from gdg_lsp.grammar import llguidance_engine
    from gdg_lsp.grammar.engine import allocate_bitmask
    from gdg_lsp.languages.base import NoHole, WorkspaceContext

    vocab = service.vocab
    made = {name: _grammar_engine(name, vocab) for name in engines}  # tokenizers built before timing
    bitmask = allocate_bitmask(vocab.size)

    def hole_for(size: int, tag: str):
        text, cursor = _module_with_names(size, tag)
        analyzer = languages.analyzer("python", text)
        hole = analyzer.hole_at(Document("file:///gamma.py", "python", 1, text, analyzer.parser()).snapshot(), cursor,
                                WorkspaceContext())
        if isinstance(hole, NoHole):
            raise RuntimeError(f"no hole in the Γ-size module: {hole.reason}")
        return hole

    def instantiate(hole) -> tuple[fragments.Instantiated, float]:
        began = time.perf_counter()
        grammar = fragments.instantiate(fragments.fragment(hole.language, hole.fragment), "gamma", hole.gamma.overlay(),
                                        dict(hole.context))
        return grammar, time.perf_counter() - began

    # the Γ-independent part, once (then cached across documents for as long as the process runs)
    llguidance_engine._STATIC.clear()
    grammar, _ = instantiate(hole_for(10, "warm"))
    began = time.perf_counter()
    template = llguidance_engine.lark_text(grammar)
    static = {"llguidance_template_lark_ms": _ms(time.perf_counter() - began),
              "llguidance_template_lark_chars": len(template)}
    for engine in made.values():  # each engine's first compile (libraries' one-time set-up) untimed
        engine.get(grammar)

    rows = []
    per_token_grammar = None
    for size in sizes:
        samples: dict[str, dict[str, list[float]]] = {name: {"compile": [], "first_mask": [], "new_gamma": [], "hit": []}
                                                      for name in engines}
        inst_times, gamma_size = [], 0
        for rep in range(reps):
            hole = hole_for(size, f"n{rep}x{size}")  # fresh names: a real miss for every engine
            gamma_size = len(hole.gamma)
            for name in engines:  # τ_Γ is part of each engine's new-Γ time (its text is rendered lazily)
                grammar, inst_seconds = instantiate(hole)
                inst_times.append(inst_seconds)
                began = time.perf_counter()
                compiled = made[name].get(grammar)
                compiled_at = time.perf_counter()
                compiled.matcher().fill_mask(bitmask)
                done = time.perf_counter()
                samples[name]["compile"].append(compiled_at - began)
                samples[name]["first_mask"].append(done - compiled_at)
                samples[name]["new_gamma"].append(inst_seconds + done - began)
                began = time.perf_counter()
                made[name].get(grammar)
                samples[name]["hit"].append(time.perf_counter() - began)
            if size == 1000 or (per_token_grammar is None and size == sizes[-1]):
                per_token_grammar = (grammar, f"n{rep}x{size}")
        rows.append({
            "names": size, "gamma_size": gamma_size, "rung": "gamma",
            "instantiate_ms": _ms(statistics.median(inst_times)),
            "engines": {name: {"compile_ms": _ms(statistics.median(m["compile"])),
                               "first_mask_ms": _ms(statistics.median(m["first_mask"])),
                               "new_gamma_p50_ms": _ms(statistics.median(m["new_gamma"])),
                               "cache_hit_ms": round(statistics.median(m["hit"]) * 1000, 5)}
                        for name, m in samples.items()},
        })
        _log(f"grammar |Γ|={gamma_size}: " + ", ".join(f"{name} {rows[-1]['engines'][name]['new_gamma_p50_ms']:.1f} ms"
                                                      for name in engines))

    # per token, over a statement that uses the names (the grammar and names of the 1,000-name module)
    assert per_token_grammar is not None
    grammar, tag = per_token_grammar
    line = f"result = {tag}_00001 + {tag}_00002(len({tag}_00003), 2) * 3\n"
    ids = vocab.encode(line).ids
    per_token: dict[str, dict[str, float]] = {}
    for name in engines:
        compiled = made[name].get(grammar)
        masks, checks = [], []
        matcher = compiled.matcher()
        for token in ids:
            began = time.perf_counter()
            matcher.fill_mask(bitmask)
            masked = time.perf_counter()
            allowed = matcher.allows(token)
            checks.append(time.perf_counter() - masked)
            masks.append(masked - began)
            if not (allowed and matcher.accept_token(token)):
                raise RuntimeError(f"{name} refused the statement {line!r} at token {vocab.token_bytes[token]!r}")
        per_token[name] = {"mask_ms": _ms(statistics.mean(masks)), "mask_p50_ms": _ms(statistics.median(masks)),
                           "check_ms": _ms(statistics.mean(checks))}
    step = _model_step_seconds(service.backend, vocab.encode("def f(x):\n    return x\n" * 20).ids)
    step_ms = _ms(step) or step * 1000  # the shares are of the step as reported (a µs-rounded tiny step too)
    for name, m in per_token.items():
        m["mask_pct_of_step"] = 100 * m["mask_ms"] / step_ms
        m["check_pct_of_step"] = 100 * m["check_ms"] / step_ms
    return {"engines": list(engines), "rows": rows, "static": static,
            "per_token": {"tokens": len(ids), "line": line, "model_step_ms": step_ms, "engines": per_token}}


# -- surfaces: Python members after a dot ---------------------------------------------------------


def _without_members(gamma):
    """Γ as it was before member surfaces: no member bindings, no receiver or keyword attrs."""
    from gdg_lsp.gamma import Binding, Frame, Gamma

    def strip(frame):
        return Frame(frame.kind, [Binding(b.name, b.sort, {k: v for k, v in b.attrs.items()
                                                           if k not in ("members", "keywords")}, b.origin)
                                  for b in frame if b.sort != "Member"])

    return Gamma(strip(gamma.global_layer), [strip(f) for f in gamma.frames])


def bench_surfaces(vocab, corpus: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Member Γ of a 500-member module (first time, from cache), the keystroke path with
    the member layer on and off, and the grammar compile with and without member slots."""

    from gdg_lsp import fragments
    from gdg_lsp.documents import Document, PositionEncoding
    from gdg_lsp.grammar.xgrammar_engine import GrammarCache
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.python import interpreter, members, surfaces
    from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

    reps = 2 if args.quick else 5
    out: dict[str, Any] = {}
    search = interpreter.own()
    first, cached, sizes = [], [], []
    with tempfile.TemporaryDirectory(prefix="gdg-surfaces-") as tmp:
        root = Path(tmp)
        reader = surfaces.SurfaceReader(search, [root])
        reader.module("builtins")  # a running server has read the builtins' stub (their keywords) already
        for rep in range(reps):
            # a new module each time: its first read is a real one
            (root / f"big{rep}.py").write_text("".join(f"def member_{i:03d}(a, *, flag=False):\n    return a\n\n"
                                                       for i in range(500)))
            code = f"import big{rep}\n\n\ndef use(a):\n    "
            doc = Document((root / "doc.py").as_uri(), "python", 1, code, parse)
            analyzer = PythonAnalyzer()
            analyzer.member_surfaces = False
            hole = analyzer.hole_at(doc.snapshot(), len(code), WorkspaceContext(roots=[root]))
            began = time.perf_counter()
            gamma, report = members.MemberLayer(reader, lambda b: None).extend(hole.gamma)
            first.append(time.perf_counter() - began)
            sizes.append(report.members)
            for _ in range(20):
                began = time.perf_counter()
                members.MemberLayer(reader, lambda b: None).extend(hole.gamma)  # each request makes a new layer
                cached.append(time.perf_counter() - began)
    out["module_500"] = {"members": max(sizes), "first_ms": _ms(statistics.median(first)),
                         "cached_p50_ms": _ms(percentile(cached, 0.5)), "cached_p95_ms": _ms(percentile(cached, 0.95))}
    _log(f"surfaces: 500-member module {out['module_500']['first_ms']:.1f} ms first, "
         f"{out['module_500']['cached_p50_ms']:.2f} ms cached")

    # the keystroke path: a statement typed in a function of real code, members on and off, alternating
    text = corpus_module(corpus, 600 if args.quick else 1500)
    text = "import os\nimport json\nimport re\nimport collections\n" + text
    timings: dict[str, list[float]] = {"off": [], "on": []}
    docs, analyzers = {}, {}
    for arm in timings:
        analyzers[arm] = PythonAnalyzer()
        analyzers[arm].member_surfaces = arm == "on"
        docs[arm] = Document(f"file:///keys-{arm}.py", "python", 1, text, parse)
    workspace = WorkspaceContext(roots=[corpus])
    line = docs["on"].line_count - 1
    for arm in timings:
        snapshot = docs[arm].snapshot()
        analyzers[arm].hole_at(snapshot, len(snapshot.text), workspace)
    enter: dict[str, list[float]] = {"off": [], "on": []}
    keys = [*"result = os.path.join(total, json.dumps(alpha))", "\n    ", *"value = re.compile(result)", "\n    "]
    for key in keys:
        row = line
        for arm in ("on", "off") if len(timings["on"]) % 2 else ("off", "on"):
            doc = docs[arm]
            col = len(doc.line_text(row))
            doc.apply_changes([((row, col, row, col), key)], doc.version + 1, PositionEncoding.UTF16)
            at = row + 1 if key.startswith("\n") else row
            snapshot = doc.snapshot()
            began = time.perf_counter()
            analyzers[arm].hole_at(snapshot, doc.offset_at(at, len(doc.line_text(at))), workspace)
            (enter if key.startswith("\n") else timings)[arm].append(time.perf_counter() - began)
        line = row + 1 if key.startswith("\n") else row
    out["keystroke"] = {arm: {"keys": len(t), "p50_ms": _ms(percentile(t, 0.5)), "p95_ms": _ms(percentile(t, 0.95)),
                              "enter_ms": _ms(statistics.median(enter[arm]))}
                        for arm, t in timings.items()}
    out["keystroke"]["on_vs_off_p50"] = round(percentile(timings["on"], 0.5) / percentile(timings["off"], 0.5), 2)

    # the grammar: the statement fragment at corpus holes, with and without member slots, alternating
    from gdg_lsp.languages.python.bench import cut_holes

    cases = cut_holes(corpus, 3 if args.quick else 8, args.seed)
    compiler = GrammarCache(vocab)
    fragment = fragments.fragment("python", "statement")
    rows = []
    for case in cases:
        analyzer = PythonAnalyzer()
        hole = analyzer.hole_at(case.document().snapshot(), case.cursor, WorkspaceContext(roots=[corpus]))
        grammars = {"with": fragments.instantiate(fragment, "gamma", hole.gamma, hole.context),
                    "without": fragments.instantiate(fragment, "gamma", _without_members(hole.gamma),
                                                     {**hole.context, "kwargs": []})}
        seconds: dict[str, list[float]] = {"with": [], "without": []}
        for rep in range(1 if args.quick else 2):
            for arm in ("with", "without") if rep % 2 == 0 else ("without", "with"):
                began = time.perf_counter()
                compiler._compiler.compile_grammar(grammars[arm].text)  # uncached: the engine itself
                seconds[arm].append(time.perf_counter() - began)
        slots = grammars["with"].slot_values
        rows.append({"case": case.case_id, "members": len(slots.get("member", ())) + len(slots.get("receiver", ())),
                     "callees": len(slots.get("callee", ())) + len(slots.get("callee_open", ())),
                     "keywords": len(slots.get("kwarg", ())), "names": len(slots.get("name", ())),
                     "without_ms": _ms(statistics.median(seconds["without"])),
                     "with_ms": _ms(statistics.median(seconds["with"])),
                     "instantiate_with_ms": _ms(grammars["with"].seconds),
                     "instantiate_without_ms": _ms(grammars["without"].seconds)})
        _log(f"surfaces grammar {case.case_id}: {rows[-1]['without_ms']:.0f} → {rows[-1]['with_ms']:.0f} ms")
    out["grammar"] = rows
    out["grammar_ratio_p50"] = round(statistics.median(r["with_ms"] for r in rows)
                                     / statistics.median(r["without_ms"] for r in rows), 2)
    return out


# -- keystroke: didChange → re-parse → Γ ---------------------------------------------------------


def corpus_module(corpus: Path, lines: int) -> str:
    """About ``lines`` lines of real Python (corpus modules end to end, cut before a
    top-level definition so that no block or string is left open), then a function
    to type in."""
    from gdg_lsp.languages.python.bench import corpus_files

    files = corpus_files(corpus)
    if not files:
        raise RuntimeError(f"no Python files under {corpus}")
    out: list[str] = []
    while len(out) < lines:
        for path in files:
            out.extend(path.read_text(encoding="utf-8").split("\n"))
            if len(out) >= lines:
                break
    cut = lines
    while cut > 0 and not out[cut].startswith(("def ", "class ")):
        cut -= 1
    return "\n".join(out[: cut or lines]) + TYPING_FUNCTION


def bench_keystroke(corpus: Path, sizes: list[int], keystrokes: int) -> list[dict[str, Any]]:
    """Type TYPED into a function at the end of real code, Enter (a line break and the
    indentation, one change as editors send it) after each statement, and time each
    key from didChange to the hole and its Γ. The first request (the whole file is
    analysed) is timed apart; Enter keys are in the totals and also reported alone
    (the hole moves to a new line, so the function around it is analysed again)."""
    from gdg_lsp import languages
    from gdg_lsp.documents import Document, PositionEncoding
    from gdg_lsp.languages.base import NoHole, WorkspaceContext

    workspace = WorkspaceContext()
    out = []
    for size in sizes:
        text = corpus_module(corpus, size)
        uri = f"file:///typing-{size}.py"
        analyzer = languages.analyzer("python", text)
        doc = Document(uri, "python", 1, text, analyzer.parser())
        line = doc.line_count - 1
        began = time.perf_counter()
        snapshot = doc.snapshot()
        languages.analyzer("python", snapshot.text).hole_at(snapshot, len(snapshot.text), workspace)
        first = time.perf_counter() - began
        parse, gamma, total, cpu, enter, in_line, gamma_sizes = [], [], [], [], [], [], []
        typed = 0
        for _ in range(keystrokes):
            col = len(doc.line_text(line))
            if typed == len(TYPED):  # Enter: the next statement goes on a new line
                key, typed = "\n    ", 0
            else:
                key, typed = TYPED[typed], typed + 1
            began, began_cpu = time.perf_counter(), time.thread_time()
            doc.apply_changes([((line, col, line, col), key)], doc.version + 1, PositionEncoding.UTF16)
            parsed = time.perf_counter()
            if key.startswith("\n"):
                line += 1
            snapshot = doc.snapshot()
            offset = doc.offset_at(line, len(doc.line_text(line)))
            hole = languages.analyzer("python", snapshot.text).hole_at(snapshot, offset, workspace)
            ready = time.perf_counter()
            cpu.append(time.thread_time() - began_cpu)
            parse.append(parsed - began)
            gamma.append(ready - parsed)
            total.append(ready - began)
            (enter if key.startswith("\n") else in_line).append(ready - began)
            gamma_sizes.append(0 if isinstance(hole, NoHole) else len(hole.gamma))
        languages.forget(uri)
        out.append({
            "lines": doc.line_count, "keystrokes": keystrokes, "gamma_size": max(gamma_sizes),
            "first_hole_ms": _ms(first),
            "reparse_p95_ms": _ms(percentile(parse, 0.95)), "gamma_p95_ms": _ms(percentile(gamma, 0.95)),
            "total_p50_ms": _ms(percentile(total, 0.5)), "total_p95_ms": _ms(percentile(total, 0.95)),
            # this thread's CPU time: on a shared machine the wall-clock tail is mostly preemption
            "cpu_p50_ms": _ms(percentile(cpu, 0.5)), "cpu_p95_ms": _ms(percentile(cpu, 0.95)),
            "in_line_p95_ms": _ms(percentile(in_line, 0.95)),
            "enter_keys": len(enter), "enter_p50_ms": _ms(percentile(enter, 0.5)) if enter else None,
            "enter_max_ms": _ms(max(enter)) if enter else None,
        })
        _log(f"keystroke {doc.line_count} lines: p95 {out[-1]['total_p95_ms']:.2f} ms")
    return out


# -- typing: the recompilation counter -------------------------------------------------------------


def bench_typing(service, corpus: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Type TYPED key by key at the end of a real module, asking for a suggestion after
    each key; count grammar compilations and cache hits."""
    from gdg_lsp import languages
    from gdg_lsp.documents import Document, PositionEncoding
    from gdg_lsp.settings import Settings

    text = corpus_module(corpus, 300)
    doc = Document("file:///typing.py", "python", 1, text, languages.analyzer("python", text).parser())
    cache = service.grammars()
    seen: set[str] = set()
    original_get = cache.get

    def recording_get(grammar):
        seen.add(cache.key(grammar))
        return original_get(grammar)

    cache.get = recording_get  # the executor reads cache.get per request
    settings = Settings(constraint="scope", max_tokens=min(args.max_tokens, 8), timeout_ms=60000)
    line = doc.line_count - 1
    compiles0, hits0 = cache.stats.compiles, cache.stats.hits
    compiles_after_first = 0
    first_distinct = 0
    latencies = []
    try:
        for index, ch in enumerate(TYPED):
            col = len(doc.line_text(line))
            doc.apply_changes([((line, col, line, col), ch)], doc.version + 1, PositionEncoding.UTF16)
            before = cache.stats.compiles
            snapshot = doc.snapshot()
            suggestion = service.complete(snapshot, len(snapshot.text), settings)
            latencies.append(suggestion.timings.get("total", 0.0) * 1000)
            if index == 0:
                first_distinct = len(seen)
            else:
                compiles_after_first += cache.stats.compiles - before
    finally:
        del cache.get
    compiles = cache.stats.compiles - compiles0
    return {
        "keystrokes": len(TYPED), "typed": TYPED, "compiles": compiles, "cache_hits": cache.stats.hits - hits0,
        "distinct_grammars": len(seen), "distinct_grammars_first_key": first_distinct,
        "compiles_after_first_key": compiles_after_first,
        "recompilations": compiles - len(seen),
        "latency_p50_ms": round(percentile(latencies, 0.5), 2),
    }


# -- lsp: a real server over stdio ------------------------------------------------------------------


def _start_to_first_suggestion(model: str, args: argparse.Namespace, text: str, cursor_line: int, env: dict[str, str],
                               log: Path):
    """Start a server; (client, seconds to ready, seconds to the first answered suggestion)."""
    from gdg_lsp.bench.lsp_client import StdioClient

    began = time.perf_counter()
    client = StdioClient(env=env, stderr=log)
    options = {"gdg": {"model": model, "engine": args.engine, "threads": args.threads, "device": args.device,
                       "maxTokens": args.max_tokens, "timeoutMs": 60000, "diagnostics": False}}
    client.initialize({"general": {"positionEncodings": ["utf-16"]}}, options)
    status = client.wait_for(lambda m: m.get("method") == "gdg/status" and m["params"]["state"] in ("ready", "failed"), 900)
    if status["params"]["state"] != "ready":
        client.close()
        raise RuntimeError(f"the server could not load the model: {status['params']['message']}")
    ready = time.perf_counter() - began
    uri = "file:///bench/typing.py"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    answer = client.request(2, "textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": cursor_line, "character": 4}, "context": {"triggerKind": 2}},
        timeout=300)
    if "error" in answer:
        raise RuntimeError(f"inline completion failed: {answer['error']}")
    return client, ready, time.perf_counter() - began


def bench_lsp(model: str, corpus: Path, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    text = corpus_module(corpus, 300)
    line = text.count("\n")
    env = {"TOKENIZERS_PARALLELISM": "false"}
    out: dict[str, Any] = {}
    if not args.no_cold:
        cold_cache = scratch / "cold-cache"
        client, ready, first = _start_to_first_suggestion(model, args, text, line, {**env, "GDG_LSP_CACHE_DIR": str(cold_cache)},
                                                          scratch / "cold.log")
        client.close()
        out["cold_ready_s"], out["cold_first_suggestion_s"] = round(ready, 2), round(first, 2)
        _log(f"cold start: first suggestion after {first:.1f} s")
    client, ready, first = _start_to_first_suggestion(model, args, text, line, env, scratch / "warm.log")
    out["warm_ready_s"], out["warm_first_suggestion_s"] = round(ready, 2), round(first, 2)
    _log(f"warm start: first suggestion after {first:.1f} s")
    try:
        uri = "file:///bench/typing.py"
        rtt: list[float] = []
        tokens: list[int] = []
        server_ms: list[float] = []
        items = 0
        version = 1
        for index in range(args.lsp_requests):
            ch = TYPED[index % len(TYPED)]
            col = 4 + index % len(TYPED)
            version += 1
            if index and index % len(TYPED) == 0:  # the statement is typed: start it again
                client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                    {"range": {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 4 + len(TYPED)}}, "text": ""}]})
                version += 1
            client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                {"range": {"start": {"line": line, "character": col}, "end": {"line": line, "character": col}}, "text": ch}]})
            seen = len(client.messages)
            began = time.perf_counter()
            answer = client.request(100 + index, "textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": col + 1}, "context": {"triggerKind": 2}},
                timeout=300)
            rtt.append((time.perf_counter() - began) * 1000)
            if "error" in answer:
                raise RuntimeError(f"inline completion failed: {answer['error']}")
            items += bool(answer["result"] and answer["result"].get("items"))
            # the server's own account of the request (sent before the answer)
            for message in client.messages[seen:]:
                if message.get("method") == "gdg/suggestion":
                    info = message["params"]
                    tokens.append(info.get("tokens", 0))
                    server_ms.append(info.get("timingsMs", {}).get("total", 0.0))
        out.update({
            "requests": len(rtt), "with_suggestion": items,
            "rtt_p50_ms": round(percentile(rtt, 0.5), 1), "rtt_p95_ms": round(percentile(rtt, 0.95), 1),
            "tokens_mean": round(statistics.mean(tokens), 1) if tokens else 0.0,
            "server_total_p50_ms": round(percentile(server_ms, 0.5), 1),
            # what the protocol adds: round trip minus the server's own time, per request
            "overhead_p50_ms": round(percentile([r - m for r, m in zip(rtt, server_ms)], 0.5), 1) if server_ms else 0.0,
            "server_peak_rss_mb": round(peak_rss_mb(client.proc.pid), 1),
        })
    finally:
        code = client.close()
    out["server_exit_code"] = code
    return out


# -- the report -----------------------------------------------------------------------------------


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
        if isinstance(v, list):
            return ",".join(map(str, v))
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render(report: dict[str, Any]) -> str:
    if "model" in report:
        parts = [f"## bench perf: model {report['model']} ({report['engine']}) on {report['device']}, "
                 f"load {report['load_s']:.1f} s, load average {report['load_average']}"]
    elif "engine_comparison" in report:
        parts = [f"## bench perf, load average {report['load_average']}"]
    else:
        parts = [f"## bench perf (no model loaded), load average {report['load_average']}"]
    for engine, decode in report.get("decode", {}).items():
        parts.append(f"\n### decode ({engine}; {report['holes']} holes, ≤{report['max_tokens']} tokens)\n")
        parts.append(_table(
            ["arm", "tokens", "tokens/s", "model step ms", "mask/step ms", "mask % of step", "first p50 ms",
             "warm p50 ms", "warm p95 ms", "ms/token", "first ×none", "warm ×none", "ms/token ×none", "rungs"],
            [[arm, m["tokens"], m["tokens_per_s"], m["model_step_ms"], m["mask_step_ms"], m["mask_pct_of_step"],
              m["first_p50_ms"], m["warm_p50_ms"], m["warm_p95_ms"], m["warm_ms_per_token"], m["first_ratio_vs_none"],
              m["warm_ratio_vs_none"], m["per_token_ratio_vs_none"], m["rungs"]] for arm, m in decode.items()]))
    if report.get("engines"):
        parts.append("\n### engines: model step, measured in alternation (same prompt, same tokens)\n")
        parts.append(_table(["engine", "step ms", "tokens/s", "× first", "greedy agreement with first"],
                            [[name, e["step_ms"], e["tokens_per_s"], e["ratio_vs_first"], e["greedy_agreement"]]
                             for name, e in report["engines"].items()]))
    if report.get("engine_comparison"):
        from gdg_lsp.bench import engines

        parts.append(engines.render(report["engine_comparison"], _table))
    if report.get("new_prompt"):
        n = report["new_prompt"]
        parts.append(f"\n### first ask with nothing cached (scope; {n['holes']} holes): prefill during the compile\n")
        parts.append(_table(["overlapped p50 ms", "sequential p50 ms", "overlapped ×sequential"],
                            [[n["overlapped_p50_ms"], n["sequential_p50_ms"], n["overlapped_ratio_vs_sequential"]]]))
    if report.get("drafts"):
        d = report["drafts"]
        parts.append(f"\n### drafts looked up in the context (scope, warm; {d['holes']} holes, "
                     f"≤{d['draft_tokens']} tokens per draft)\n")
        parts.append(_table(["with drafts ms/token", "stepping ms/token", "drafts ×stepping", "forwards/token with",
                             "forwards/token without", "draft tokens used", "same suggestions"],
                            [[d["drafts_ms_per_token"], d["steps_ms_per_token"], d["ratio_vs_steps"],
                              d["drafts_forwards_per_token"], d["steps_forwards_per_token"], d["draft_acceptance"],
                              f"{d['same_suggestions']}/{d['holes']}"]]))
    if report.get("batch"):
        parts.append("\n### batch: K documents' requests arriving together (scope; shared = one at a time over one "
                     "KV cache, per-doc = one at a time with a cache per document, batched = SlotPool)\n")
        rows = []
        for k, b in report["batch"].items():
            for arm in BATCH_ARMS:
                m = b[arm]
                ratio = {"batched": f"{b['batched_vs_shared']:.2f}× shared, {b['batched_vs_per_doc']:.2f}× per-doc"}
                rows.append([k, arm, m["tokens"], m["tokens_per_s"], m["latency_p50_ms"], m["latency_max_ms"],
                             ratio.get(arm, ""), b["same_text"] if arm == "batched" else "",
                             " ".join(f"{n}:{c}" for n, c in b["batch_sizes"].items()) if arm == "batched" else ""])
        parts.append(_table(["K", "arm", "tokens", "tokens/s", "latency p50 ms", "latency max ms", "tokens/s ratio",
                             "same text", "batched forwards (rows:count)"], rows))
    if "grammar" in report:
        g = report["grammar"]
        engines = g["engines"]
        parts.append("\n### grammar: a new Γ until the first mask is ready (τ_Γ + compile + first mask), p50 ms, "
                     "engines side by side\n")
        parts.append(_table(["names", "|Γ|", "τ_Γ ms", *(f"{e} new Γ" for e in engines),
                             *(f"{e} compile / first mask" for e in engines), *(f"{e} hit" for e in engines)],
                            [[r["names"], r["gamma_size"], r["instantiate_ms"],
                              *(r["engines"][e]["new_gamma_p50_ms"] for e in engines),
                              *(f"{r['engines'][e]['compile_ms']:.1f} / {r['engines'][e]['first_mask_ms']:.1f}" for e in engines),
                              *(r["engines"][e]["cache_hit_ms"] for e in engines)] for r in g["rows"]]))
        t = g["per_token"]
        parts.append(f"\nper token over {t['line'].strip()!r} ({t['tokens']} tokens, the 1,000-name grammar), against "
                     f"the model's step ({t['model_step_ms']:.1f} ms in this run):\n")
        parts.append(_table(["engine", "whole mask ms", "mask p50 ms", "mask % of step", "check of one token ms",
                             "check % of step"],
                            [[e, m["mask_ms"], m["mask_p50_ms"], m["mask_pct_of_step"], m["check_ms"], m["check_pct_of_step"]]
                             for e, m in t["engines"].items()]))
        st = g["static"]
        parts.append(f"\nΓ-independent part, once per fragment shape (then cached across documents): llguidance's "
                     f"template Lark emitted in {st['llguidance_template_lark_ms']:.1f} ms "
                     f"({st['llguidance_template_lark_chars']} characters); XGrammar compiles the whole grammar each time.")
    if "keystroke" in report:
        parts.append("\n### keystroke: didChange → re-parse → hole and Γ ready\n")
        parts.append(_table(["lines", "keys", "|Γ|", "first hole ms", "re-parse p95 ms", "Γ p95 ms", "total p50 ms",
                             "total p95 ms", "CPU p50 ms", "CPU p95 ms", "keys on a line p95 ms", "Enter keys", "Enter p50 ms", "Enter max ms"],
                            [[k["lines"], k["keystrokes"], k["gamma_size"], k.get("first_hole_ms", "-"),
                              k["reparse_p95_ms"], k["gamma_p95_ms"], k["total_p50_ms"], k["total_p95_ms"],
                              k.get("cpu_p50_ms", "-"), k.get("cpu_p95_ms", "-"), k.get("in_line_p95_ms", "-"),
                              k.get("enter_keys", "-"), k.get("enter_p50_ms", "-"), k.get("enter_max_ms", "-")]
                             for k in report["keystroke"]]))
    if "surfaces" in report:
        su = report["surfaces"]
        m = su["module_500"]
        parts.append("\n### surfaces: Python members after a dot\n")
        parts.append(_table(["module members", "member Γ first time ms", "member Γ cached p50 ms", "cached p95 ms"],
                            [[m["members"], m["first_ms"], m["cached_p50_ms"], m["cached_p95_ms"]]]))
        k = su["keystroke"]
        parts.append("\n" + _table(["member layer (hole and Γ ready)", "keys on a line", "p50 ms", "p95 ms", "Enter ms"],
                                    [[arm, k[arm]["keys"], k[arm]["p50_ms"], k[arm]["p95_ms"], k[arm]["enter_ms"]]
                                     for arm in ("off", "on")])
                     + f"\nmember layer on/off (p50): {k['on_vs_off_p50']}")
        parts.append("\n" + _table(["hole", "names", "members+receivers", "callees", "keywords",
                                    "compile without ms", "compile with ms", "instantiate without ms", "instantiate with ms"],
                                    [[r["case"], r["names"], r["members"], r["callees"], r["keywords"], r["without_ms"],
                                      r["with_ms"], r["instantiate_without_ms"], r["instantiate_with_ms"]]
                                     for r in su["grammar"]])
                     + f"\ncompile with/without member slots (median): {su['grammar_ratio_p50']}")
    if "typing" in report:
        t = report["typing"]
        parts.append(f"\n### typing {t['typed']!r} key by key, a suggestion after each\n")
        parts.append(_table(["keys", "compiles", "cache hits", "distinct grammars", "compiles after 1st key",
                             "recompilations", "p50 ms"],
                            [[t["keystrokes"], t["compiles"], t["cache_hits"], t["distinct_grammars"],
                              t["compiles_after_first_key"], t["recompilations"], t["latency_p50_ms"]]]))
    if "toolstate" in report:
        t = report["toolstate"]
        parts.append(f"\n### toolstate: Γ of a shell hole from the tools' own help ({', '.join(t['described'])})\n")
        parts.append(_table(["first request ms (runs)", "new process ms (runs)", "later Γ p50 ms", "later Γ p95 ms",
                             "later hole p50 ms", "later hole p95 ms", "first / later"],
                            [[f"{t['cold_first_ms']:.0f} ({t['cold_runs']})", f"{t['disk_first_ms']:.0f} ({t['disk_runs']})",
                              t["warm_gamma_p50_ms"], t["warm_gamma_p95_ms"], t["warm_hole_p50_ms"], t["warm_hole_p95_ms"],
                              t["cold_over_warm"]]]))
    if report.get("lsp"):
        lsp = report["lsp"]
        parts.append("\n### LSP over stdio (a server subprocess)\n")
        parts.append(_table(["cold start → 1st suggestion s", "warm start → 1st suggestion s", "requests", "with suggestion",
                             "tokens/suggestion", "round-trip p50 ms", "round-trip p95 ms", "server time p50 ms",
                             "protocol overhead p50 ms", "server peak RSS MB"],
                            [[lsp.get("cold_first_suggestion_s", "-"), lsp["warm_first_suggestion_s"], lsp["requests"],
                              lsp["with_suggestion"], lsp.get("tokens_mean", "-"), lsp["rtt_p50_ms"], lsp["rtt_p95_ms"],
                              lsp.get("server_total_p50_ms", "-"), lsp.get("overhead_p50_ms", "-"),
                              lsp["server_peak_rss_mb"]]]))
    if report.get("editor"):
        from gdg_lsp.bench import editor

        parts.append("\n" + "\n".join(editor.render(report["editor"])))
    if report.get("caches"):
        parts.append("\n### Caches (this process, at the end of the run)\n")
        parts.append(_table(["cache", "entries", "limit", "hits", "misses", "evictions", "weight"],
                            [[c["name"], c["entries"], c["maxEntries"], c["hits"], c["misses"], c["evictions"],
                              c["weight"] or "-"] for c in report["caches"]]))
    parts.append(f"\npeak RSS of this process: {report['peak_rss_mb']:.0f} MB; total {report['seconds']:.1f} s "
                 f"({', '.join(f'{k} {v} s' for k, v in report['section_seconds'].items())})")
    return "\n".join(parts) + "\n"


# -- toolstate: Γ from the tools' own help, first request and after ------------------------------


def bench_toolstate(tools: list[str], requests: int) -> dict[str, Any]:
    """Γ of a shell hole from tool state: the first request of a new cache (the tools
    describe themselves), of a new process (the disk cache; only versions are asked),
    and each later request (memory), in one run on one machine."""
    from gdg_lsp.boundary import Boundary
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.shell import analyzer as shell_analyzer
    from gdg_lsp.languages.shell.commands import parse
    from gdg_lsp.languages.shell.gamma import Place, Sources
    from gdg_lsp.languages.shell.tool_help import ToolHelp
    from gdg_lsp.settings import Settings, ShellSettings

    with tempfile.TemporaryDirectory(prefix="gdg-bench-toolstate-") as tmp:
        root = Path(tmp) / "ws"
        for name, text in {".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": "0" * 40 + "\n",
                           ".git/refs/heads/dev": "0" * 40 + "\n", "Makefile": "build:\n\techo b\n",
                           "package.json": '{"scripts": {"test": "x"}}'}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        place = Place(root, Boundary.of([root]))
        cache = Path(tmp) / "cache"

        def timed(sources: Sources) -> float:
            mark = time.perf_counter()
            sources.gamma(place, tools)
            return time.perf_counter() - mark

        cold_help = ToolHelp(cache)
        cold = timed(Sources(cold_help))
        disk_help = ToolHelp(cache)
        disk_sources = Sources(disk_help)
        disk = timed(disk_sources)
        warm = [timed(disk_sources) for _ in range(requests)]
        text = "#!/bin/sh\ngit checkout "
        snapshot = Snapshot((root / "run.sh").as_uri(), "shell", 1, text, parse(text.encode()))
        context = WorkspaceContext([root], Settings(shell=ShellSettings(tools=list(tools))))
        analyzer = shell_analyzer.ShellAnalyzer()
        saved = shell_analyzer.SOURCES
        shell_analyzer.SOURCES = disk_sources
        try:
            analyzer.hole_at(snapshot, len(text), context)
            holes = []
            for _ in range(requests):
                mark = time.perf_counter()
                analyzer.hole_at(snapshot, len(text), context)
                holes.append(time.perf_counter() - mark)
        finally:
            shell_analyzer.SOURCES = saved
        described = [t for t in tools if disk_help.surface(t, place.boundary) is not None]
    result = {
        "tools": tools, "described": described, "requests": requests,
        "cold_first_ms": _ms(cold), "cold_runs": cold_help.runs, "disk_first_ms": _ms(disk), "disk_runs": disk_help.runs,
        "warm_gamma_p50_ms": _ms(percentile(warm, 0.5)), "warm_gamma_p95_ms": _ms(percentile(warm, 0.95)),
        "warm_hole_p50_ms": _ms(percentile(holes, 0.5)), "warm_hole_p95_ms": _ms(percentile(holes, 0.95)),
    }
    result["cold_over_warm"] = round(cold / max(percentile(warm, 0.5), 1e-9), 1)
    _log(f"toolstate: first {result['cold_first_ms']:.0f} ms ({cold_help.runs} runs), warm Γ p95 "
         f"{result['warm_gamma_p95_ms']:.3f} ms")
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.python.bench import cut_holes
    from gdg_lsp.service.local import CompletionService

    began = time.perf_counter()
    sections: dict[str, float] = {}
    report: dict[str, Any] = {"load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()), "engine": args.engine}
    wanted = set(args.sections)
    with tempfile.TemporaryDirectory(prefix="gdg-bench-perf-") as tmp:
        scratch = Path(tmp)
        service = None
        model = model_setting(args, scratch) if wanted & {"engines", *MODEL_SECTIONS} else args.model
        if "engines" in wanted:
            from gdg_lsp.bench import engines

            mark = time.perf_counter()
            report["engine_comparison"] = engines.run(
                model, args.corpus, [e.strip() for e in args.engines.split(",") if e.strip()],
                [int(x) for x in args.engine_threads.split(",") if x.strip()], args.engine_rounds, args.engine_steps,
                args.prompt_tokens, args.agreement_prompts, args.agreement_tokens, _log)
            torch_threads(args.threads)
            sections["engines"] = time.perf_counter() - mark
        if wanted & (set(MODEL_SECTIONS) - set(SERVER_SECTIONS)):  # the server sections load their own
            models_began = time.perf_counter()
            cases = cut_holes(args.corpus, args.holes, args.seed)
            report["decode"] = {}
            backends: dict[str, Any] = {}
            engines = [args.engine, *[e.strip() for e in args.compare_engines.split(",") if e.strip()]]
            for engine in engines if "decode" in wanted else engines[:1]:
                backend, device, load_s = load_backend(model, args, engine)
                engine_name = f"{engine} → {type(backend).__name__}"
                if service is None:
                    report.update({"model": backend.name, "device": device, "load_s": load_s, "engine": engine_name,
                                   "holes": len(cases), "max_tokens": args.max_tokens})
                engine_service = CompletionService(backend, WorkspaceContext(roots=[args.corpus]))
                if "decode" in wanted:
                    _log(f"{engine_name}: loaded in {load_s:.1f} s; decoding {len(cases)} holes")
                    report["decode"][engine_name] = bench_decode(engine_service, cases, args)
                backends[engine_name] = backend
                if service is None:
                    service = engine_service
            assert service is not None
            if len(backends) > 1:
                report["engines"] = bench_engines(backends, cases[0].text[: cases[0].cursor][-3000:], 3 if args.quick else 8)
            first_backend = backends[next(iter(backends))]
            for name in list(backends)[1:]:
                del backends[name]
            if "decode" in wanted:
                report["new_prompt"] = bench_new_prompt(service, cases, args)
                report["drafts"] = bench_drafts(service, cases, args)
            sections["decode"] = time.perf_counter() - models_began
            sizes = [int(x) for x in args.batch_sizes.split(",") if x.strip()]
            if "batch" in wanted and sizes and hasattr(first_backend, "weights"):  # a lean engine: its weights can serve a SlotPool
                mark = time.perf_counter()
                report["batch"] = bench_batch(first_backend, cases, args, sizes)
                sections["batch"] = time.perf_counter() - mark
            del first_backend
        if "grammar" in wanted:
            mark = time.perf_counter()
            report["grammar"] = bench_grammar(service, [int(x) for x in args.gamma_sizes.split(",") if x],
                                              1 if args.quick else args.grammar_reps, tuple(args.grammar_engines))
            sections["grammar"] = time.perf_counter() - mark
        if "surfaces" in wanted:
            mark = time.perf_counter()
            report["surfaces"] = bench_surfaces(service.vocab, args.corpus, args)
            sections["surfaces"] = time.perf_counter() - mark
        if "keystroke" in wanted:
            mark = time.perf_counter()
            report["keystroke"] = bench_keystroke(args.corpus, [int(x) for x in args.file_lines.split(",") if x],
                                                  args.keystrokes)
            sections["keystroke"] = time.perf_counter() - mark
        if "typing" in wanted:
            mark = time.perf_counter()
            report["typing"] = bench_typing(service, args.corpus, args)
            sections["typing"] = time.perf_counter() - mark
        if "lsp" in wanted:
            mark = time.perf_counter()
            report["lsp"] = bench_lsp(model, args.corpus, args, scratch)
            sections["lsp"] = time.perf_counter() - mark
        if "editor" in wanted:
            from gdg_lsp.bench.editor import bench_editor

            mark = time.perf_counter()
            report["editor"] = bench_editor(model, args.corpus, args, scratch)
            sections["editor"] = time.perf_counter() - mark
        if "toolstate" in wanted:
            mark = time.perf_counter()
            report["toolstate"] = bench_toolstate(["git", "make", "npm", "docker", "pip", "python", "jq", "ffmpeg", "curl"],
                                                  50 if args.quick else 200)
            sections["toolstate"] = time.perf_counter() - mark
    report["section_seconds"] = {k: round(v, 1) for k, v in sections.items()}
    report["peak_rss_mb"] = peak_rss_mb()
    report["caches"] = [stats.payload() for stats in all_stats()]
    report["seconds"] = time.perf_counter() - began
    report["command"] = "gdg-lsp bench perf " + " ".join(sys.argv[3:] if sys.argv[1:3] == ["bench", "perf"] else [])
    return report


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    report = run(args)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    print(render(report))
    return 0
