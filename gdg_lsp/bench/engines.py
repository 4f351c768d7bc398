"""``gdg-lsp bench perf --only engines``: the model step and the prefill of each engine, side by side.

The lean variants (``lean``: fp32, the reference; ``lean-packed``; any other
asked for) and, when llama-cpp-python is importable and the model is a GGUF
file, llama.cpp itself on the same file: the same prompt (the last
``--prompt-tokens`` tokens before a corpus hole), greedy, the engines
alternating round by round (their order turning) so that a change of the
machine's load hits each alike, at each thread count of ``--engine-threads``.
Each round prefills the prompt from an empty cache in every engine, then steps
them in turn position by position, every engine fed the reference's greedy
tokens: the step times are of the same positions, taken milliseconds apart, and
the agreement is per position. Besides each engine's median step, the median of
its step's ratio to the base's step at the same round and position is printed
(paired: a burst of load hits both sides of a ratio alike).

Greedy agreement with the reference is also measured over
``--agreement-prompts`` corpus prompts × ``--agreement-tokens`` tokens (teacher
forced: each engine is fed the reference's tokens and its own argmax is
compared at every position).

llama.cpp is driven through ``LlamaCppModel``: its own tokens' logits after a
prefill and after each step, as the lean backends give them. It is for
measuring only (llama-cpp-python is an optional extra, ``pip install
'gdg-lsp[llamacpp]'``, that CI does not install).
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

REFERENCE = "lean"
LLAMA_CPP = "llama.cpp"
AGREEMENT_PROMPT_TOKENS = 256
"""Length of the agreement prompts (shorter than the race's: 30 fp32 prefills take minutes)."""
CPU_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
"""The CPU features the engines' kernels choose between (printed with the figures)."""


def cpu_description() -> dict[str, Any]:
    """The CPU model, its core count and which of ``CPU_FLAGS`` it has (Linux /proc/cpuinfo)."""
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("model name") and ":" in line:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and ":" in line:
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return {"model": name, "cores": os.cpu_count(), "flags": [f for f in CPU_FLAGS if f in flags]}


def llama_cpp_version() -> str | None:
    """llama-cpp-python's version when it is importable, else None."""
    try:
        import llama_cpp
    except Exception:  # not installed, or its shared library does not load here
        return None
    return str(getattr(llama_cpp, "__version__", "?"))


class LlamaCppModel:
    """llama.cpp over one GGUF file, driven as the lean backends are: ``prefill``
    (from an empty cache) and ``step``, each returning the next token's logits
    (float32, 1-D). ``make`` builds the ``llama_cpp.Llama`` (tests pass a fake)."""

    name = LLAMA_CPP

    def __init__(self, path: Path, threads: int, context: int = 4096, make: Callable[..., Any] | None = None,
                 logits_of: Callable[[Any], Any] | None = None) -> None:
        if make is None:
            from llama_cpp import Llama

            make = Llama
        self._llm = make(model_path=str(path), n_ctx=context, n_threads=threads, n_threads_batch=threads,
                         n_batch=512, logits_all=False, verbose=False)
        self._logits_of = logits_of or _last_logits

    def reset(self) -> None:
        self._llm.reset()

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        self._llm.reset()
        self._llm.eval(list(ids))
        return self._logits()

    def step(self, token_id: int) -> torch.Tensor:
        self._llm.eval([int(token_id)])
        return self._logits()

    def _logits(self) -> torch.Tensor:
        return torch.tensor(self._logits_of(self._llm), dtype=torch.float32)


def _last_logits(llm: Any) -> Any:
    """The logits llama.cpp computed for the last token evaluated (a copy)."""
    import llama_cpp
    import numpy as np

    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()


def corpus_prompts(corpus: Path, encode: Callable[[str], list[int]], count: int, length: int,
                   seed: int = 0) -> list[list[int]]:
    """``count`` windows of ``length`` tokens from the corpus's Python files (random files, random ends)."""
    files = sorted(p for p in corpus.rglob("*.py") if p.is_file())
    rng = random.Random(seed)
    prompts: list[list[int]] = []
    tries = 0
    while files and len(prompts) < count and tries < 50 * count:
        tries += 1
        ids = encode(rng.choice(files).read_text(encoding="utf-8", errors="replace"))
        if len(ids) <= length + 8:
            continue
        end = rng.randrange(length, len(ids))
        prompts.append(ids[end - length : end])
    return prompts


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 4) if values else 0.0


def _greedy_run(model: Any, prompt: Sequence[int], feed: Sequence[int] | None, steps: int) -> list[int]:
    """Prefill ``prompt`` from an empty cache, then step ``steps`` times fed ``feed`` (or the
    model's own greedy tokens); the model's argmax at each position."""
    model.reset()
    logits = model.prefill(prompt)
    picks: list[int] = []
    for position in range(steps):
        picks.append(int(torch.argmax(logits)))
        logits = model.step(feed[position] if feed is not None else picks[-1])
    return picks


def race(models: dict[str, Any], prompt: Sequence[int], rounds: int, steps: int) -> dict[str, dict[str, Any]]:
    """Prefill and step every model, alternating: each round prefills every model (the order
    turning round by round), then steps them in turn, position by position, so that the
    steps compared were taken within milliseconds of each other. The first model is the
    reference whose greedy tokens every model is fed; an untimed first pass warms every
    model up and gives them. ``step_times`` keeps each step's seconds in the same order for
    every model (round by round, position by position): ``paired_ratio`` compares them."""
    names = list(models)
    feed = _greedy_run(models[names[0]], prompt, None, steps)
    for name in names[1:]:
        _greedy_run(models[name], prompt, feed, steps)
    prefill: dict[str, list[float]] = {n: [] for n in names}
    step: dict[str, list[float]] = {n: [] for n in names}
    agree: dict[str, list[bool]] = {n: [] for n in names}
    for index in range(rounds):
        turn = index % len(names)
        order = names[turn:] + names[:turn]
        logits = {}
        for name in order:
            models[name].reset()
            began = time.perf_counter()
            logits[name] = models[name].prefill(prompt)
            prefill[name].append(time.perf_counter() - began)
        for position in range(steps):
            for name in order:
                agree[name].append(int(torch.argmax(logits[name])) == feed[position])
                began = time.perf_counter()
                logits[name] = models[name].step(feed[position])
                step[name].append(time.perf_counter() - began)
    out = {}
    for name in names:
        ms = statistics.median(step[name]) if step[name] else 0.0
        out[name] = {"prefill_ms": _median_ms(prefill[name]), "step_ms": _median_ms(step[name]),
                     "step_min_ms": round(min(step[name]) * 1000, 4) if step[name] else 0.0,
                     "tokens_per_s": round(1 / ms, 1) if ms else 0.0, "prompt_tokens": len(prompt),
                     "steps": len(step[name]), "step_times": [round(t, 6) for t in step[name]],
                     "greedy_agreement_race": sum(agree[name]) / len(agree[name]) if agree[name] else 0.0}
    return out


def paired_ratio(mine: list[float], base: list[float]) -> float:
    """The median of the ratios of steps taken side by side (the same round and position)."""
    ratios = [a / b for a, b in zip(mine, base) if b > 0]
    return statistics.median(ratios) if ratios else 0.0


def agreement(models: dict[str, Any], prompts: list[list[int]], tokens: int) -> dict[str, dict[str, Any]]:
    """Teacher-forced greedy agreement of every model with the first on each prompt."""
    names = list(models)
    hits = {n: 0 for n in names}
    total = 0
    for prompt in prompts:
        feed = _greedy_run(models[names[0]], prompt, None, tokens)
        total += tokens
        hits[names[0]] += tokens
        for name in names[1:]:
            hits[name] += sum(a == b for a, b in zip(_greedy_run(models[name], prompt, feed, tokens), feed))
    return {n: {"agreement": hits[n] / total if total else 0.0, "positions": total} for n in names}


def run(model_setting: str, corpus: Path, engines: list[str], threads: list[int], rounds: int, steps: int,
        prompt_tokens: int, agreement_prompts: int, agreement_tokens: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The ``engines`` section's report (see the module docstring)."""
    from gdg_lsp.backends import models as loading

    spec = loading.resolve(model_setting)
    lean_engines = [REFERENCE] + [e for e in engines if e not in (REFERENCE, LLAMA_CPP)]
    want_llama = LLAMA_CPP in engines
    version = llama_cpp_version() if want_llama else None
    note = None
    if want_llama and version is None:
        note = "llama-cpp-python is not installed (pip install 'gdg-lsp[llamacpp]'): lean engines only"
    elif want_llama and spec.kind != "gguf":
        note = f"llama.cpp needs a .gguf model; {spec.describe()} is not one: lean engines only"
    report: dict[str, Any] = {"model": spec.describe(), "cpu": cpu_description(), "llama_cpp": version,
                              "note": note, "load_average_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                              "by_threads": {}}
    backends = {}
    for engine in lean_engines:
        began = time.perf_counter()
        backends[engine] = loading.load(spec, "cpu", threads=threads[0], engine=engine)
        log(f"engines: {engine} loaded in {time.perf_counter() - began:.1f} s")
    vocab = backends[REFERENCE].vocab
    encode = lambda text: vocab.encode(text).ids  # noqa: E731
    race_prompt = corpus_prompts(corpus, encode, 1, prompt_tokens, seed=1)
    if not race_prompt:
        raise ValueError(f"no corpus file in {corpus} has {prompt_tokens} tokens")
    for count in threads:
        torch.set_num_threads(count)
        contenders: dict[str, Any] = dict(backends)
        if want_llama and note is None:
            contenders[LLAMA_CPP] = LlamaCppModel(spec.path, count)
        log(f"engines: {', '.join(contenders)} at {count} thread(s), {rounds} alternating rounds")
        row = race(contenders, race_prompt[0], rounds, steps)
        base = row.get(LLAMA_CPP, row[REFERENCE])
        for name, m in row.items():
            m["step_vs_base"] = m["step_ms"] / base["step_ms"] if base["step_ms"] else 0.0
            m["step_vs_base_paired"] = paired_ratio(m["step_times"], base["step_times"])
            m["prefill_vs_base"] = m["prefill_ms"] / base["prefill_ms"] if base["prefill_ms"] else 0.0
        report["by_threads"][str(count)] = {"base": LLAMA_CPP if LLAMA_CPP in row else REFERENCE, "engines": row}
        if count == threads[0] and agreement_prompts:
            prompts = corpus_prompts(corpus, encode, agreement_prompts, min(prompt_tokens, AGREEMENT_PROMPT_TOKENS), seed=2)
            log(f"engines: greedy agreement over {len(prompts)} prompts x {agreement_tokens} tokens")
            report["agreement"] = agreement(contenders, prompts, agreement_tokens)
        contenders.pop(LLAMA_CPP, None)
    report["load_average_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return report


def render(report: dict[str, Any], table: Callable[[list[str], list[list[Any]]], str]) -> str:
    cpu = report["cpu"]
    parts = [f"\n### engines: model step and prefill side by side ({report['model']})\n",
             f"CPU: {cpu['model']}, {cpu['cores']} cores, flags {' '.join(cpu['flags']) or '-'}; "
             f"llama-cpp-python {report['llama_cpp'] or 'not installed'}; "
             f"load average {report['load_average_before']} → {report['load_average_after']}"]
    if report.get("note"):
        parts.append(f"\n{report['note']}")
    agree = report.get("agreement", {})
    rows = []
    for count, block in report["by_threads"].items():
        for name, m in block["engines"].items():
            rows.append([count, name, m["prompt_tokens"], m["prefill_ms"], m["prefill_vs_base"], m["step_ms"],
                         m["step_min_ms"], m["tokens_per_s"], m["step_vs_base"], m["step_vs_base_paired"],
                         agree.get(name, {}).get("agreement", "-") if count == next(iter(report["by_threads"])) else "-"])
    base = next(iter(report["by_threads"].values()))["base"] if report["by_threads"] else REFERENCE
    positions = next(iter(agree.values()), {}).get("positions", 0)
    parts.append("\n" + table(["threads", "engine", "prompt tokens", "prefill ms", f"prefill × {base}", "step ms (median)",
                               "step ms (min)", "tokens/s", f"step × {base}", f"step × {base}, paired (median)",
                               f"greedy agreement with {REFERENCE} ({positions} positions)"], rows))
    return "\n".join(parts)
