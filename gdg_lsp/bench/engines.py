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

Every engine runs in a process of its own (``EngineProcess`` over
``engine_worker.py``): a crash of one (llama.cpp's native code has segfaulted
on CPUs with AMX) is reported in its row, with its signal and the end of its
stderr, and the others are raced on; each engine's step and prefill times are
taken inside its process (the pipe's transfer of the logits is not counted), and
each reports its peak resident memory from after its load (``peak_rss_mb``):
the model's memory as the server holds it, not the benchmark's.

llama.cpp is driven through ``LlamaCppModel``: its own tokens' logits after a
prefill and after each step, as the lean backends give them. It is for
measuring only (llama-cpp-python is an optional extra, ``pip install
'gdg-lsp[llamacpp]'``, that CI does not install).
"""

from __future__ import annotations

import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
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


class EngineUnavailable(RuntimeError):
    """The engine's process could not load it (a package missing, a model it cannot run)."""


class EngineCrashed(RuntimeError):
    """The engine's process died while it was being driven (the message says how)."""


def describe_exit(code: int | None) -> str:
    """How a process ended: ``killed by SIGSEGV`` for a signal, ``exit code 3`` otherwise."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class EngineProcess:
    """An engine in its own process (``engine_worker.py``), driven as a backend: ``reset``,
    ``prefill`` and ``step`` return the next token's logits; ``last_seconds`` is the time
    the engine itself took for the last of them. ``command`` replaces the worker's command
    line (tests)."""

    def __init__(self, engine: str, model: str, threads: int, command: list[str] | None = None) -> None:
        self.name = engine
        self.last_seconds: float | None = None
        self.calls = 0
        self._stderr = tempfile.TemporaryFile()
        command = command or [sys.executable, "-m", "gdg_lsp.bench.engine_worker", engine, model, str(threads)]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        first = self._read_header()
        if "error" in first:
            self.close()
            raise EngineUnavailable(first["error"])
        self.facts = first

    def _stderr_tail(self, limit: int = 600) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - limit))
        return self._stderr.read().decode("utf-8", "replace").strip()

    def _died(self) -> EngineCrashed:
        try:
            code = self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        tail = self._stderr_tail()
        return EngineCrashed(f"{self.name} {describe_exit(code)} after {self.calls} calls"
                             + (f"; its stderr ends: {tail[-300:]}" if tail else ""))

    def _read_header(self) -> dict[str, Any]:
        line = self._process.stdout.readline() if self._process.stdout else b""
        if not line:
            raise self._died()
        return json.loads(line)

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        try:
            self._process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None
        return self._read_header()

    def _logits(self, request: dict[str, Any]) -> torch.Tensor:
        import numpy as np

        header = self._ask(request)
        raw = self._process.stdout.read(4 * header["n"])
        if len(raw) != 4 * header["n"]:
            raise self._died()
        self.last_seconds = header["s"]
        return torch.from_numpy(np.frombuffer(raw, dtype=np.float32).copy())

    def reset(self) -> None:
        self._ask({"op": "reset"})

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        return self._logits({"op": "prefill", "ids": [int(i) for i in ids]})

    def step(self, token_id: int) -> torch.Tensor:
        return self._logits({"op": "step", "token": int(token_id)})

    def set_threads(self, count: int) -> None:
        self._ask({"op": "threads", "count": count})

    def encode(self, text: str) -> list[int]:
        return self._ask({"op": "encode", "text": text})["ids"]

    def memory(self) -> dict[str, float]:
        return self._ask({"op": "memory"})

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._process.stdin.write(b'{"op": "quit"}\n')
                self._process.stdin.close()
                self._process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._stderr.close()


def _timed(model: Any, call: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, float]:
    """``call()`` and its seconds: the engine's own (an ``EngineProcess``) or the wall clock's."""
    began = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - began
    own = getattr(model, "last_seconds", None)
    return out, own if own is not None else seconds


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
    every model (round by round, position by position): ``paired_ratio`` compares them.
    A model whose process dies (``EngineCrashed``) leaves the race with ``crashed`` saying
    how; the others go on (the reference's death ends it)."""
    names = list(models)
    crashed: dict[str, str] = {}
    feed = _greedy_run(models[names[0]], prompt, None, steps)
    for name in names[1:]:
        try:
            _greedy_run(models[name], prompt, feed, steps)
        except EngineCrashed as err:
            crashed[name] = str(err)
    prefill: dict[str, list[float]] = {n: [] for n in names}
    step: dict[str, list[float]] = {n: [] for n in names}
    agree: dict[str, list[bool]] = {n: [] for n in names}
    def survives(name: str, call: Callable[[], Any]) -> bool:
        """Run ``call``; False once the engine's process has died (then said in ``crashed``)."""
        try:
            call()
        except EngineCrashed as err:
            if name == names[0]:
                raise
            crashed[name] = str(err)
            return False
        return True

    for index in range(rounds):
        alive = [n for n in names if n not in crashed]
        turn = index % len(alive)
        order = alive[turn:] + alive[:turn]
        logits: dict[str, torch.Tensor] = {}
        seconds: dict[str, float] = {}

        def timed(name: str, call: Callable[[], torch.Tensor]) -> None:
            logits[name], seconds[name] = _timed(models[name], call)

        for name in order:
            if survives(name, models[name].reset) and survives(name, lambda: timed(name, lambda: models[name].prefill(prompt))):
                prefill[name].append(seconds[name])
        for position in range(steps):
            for name in order:
                if name in crashed:
                    continue
                agree[name].append(int(torch.argmax(logits[name])) == feed[position])
                if survives(name, lambda: timed(name, lambda: models[name].step(feed[position]))):
                    step[name].append(seconds[name])
    out = {}
    for name in names:
        ms = statistics.median(step[name]) if step[name] else 0.0
        out[name] = {"prefill_ms": _median_ms(prefill[name]), "step_ms": _median_ms(step[name]),
                     "step_min_ms": round(min(step[name]) * 1000, 4) if step[name] else 0.0,
                     "tokens_per_s": round(1 / ms, 1) if ms else 0.0, "prompt_tokens": len(prompt),
                     "steps": len(step[name]), "step_times": [round(t, 6) for t in step[name]],
                     "greedy_agreement_race": sum(agree[name]) / len(agree[name]) if agree[name] else 0.0}
        if name in crashed:
            out[name]["crashed"] = crashed[name]
    return out


def paired_ratio(mine: list[float], base: list[float]) -> float:
    """The median of the ratios of steps taken side by side (the same round and position)."""
    ratios = [a / b for a, b in zip(mine, base) if b > 0]
    return statistics.median(ratios) if ratios else 0.0


def agreement(models: dict[str, Any], prompts: list[list[int]], tokens: int) -> dict[str, dict[str, Any]]:
    """Teacher-forced greedy agreement of every model with the first on each prompt (a model
    whose process dies is left out from then on, ``crashed`` saying how)."""
    names = list(models)
    hits = {n: 0 for n in names}
    positions = {n: 0 for n in names}
    crashed: dict[str, str] = {}
    for prompt in prompts:
        feed = _greedy_run(models[names[0]], prompt, None, tokens)
        hits[names[0]] += tokens
        positions[names[0]] += tokens
        for name in names[1:]:
            if name in crashed:
                continue
            try:
                picks = _greedy_run(models[name], prompt, feed, tokens)
            except EngineCrashed as err:
                crashed[name] = str(err)
                continue
            hits[name] += sum(a == b for a, b in zip(picks, feed))
            positions[name] += tokens
    out: dict[str, dict[str, Any]] = {
        n: {"agreement": hits[n] / positions[n] if positions[n] else 0.0, "positions": positions[n]} for n in names}
    for name, why in crashed.items():
        out[name]["crashed"] = why
    return out


def _llama_cpp_installed() -> str | None:
    """llama-cpp-python's version when it is installed (read from its metadata: the package
    is only imported by the engine's own process)."""
    from importlib import metadata

    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return None


def start_engines(model_setting: str, engines: list[str], threads: int,
                  log: Callable[[str], None]) -> tuple[dict[str, EngineProcess], dict[str, str]]:
    """Each engine's process, loaded (the reference first: it converts a GGUF file once for
    the others); engines that could not load or died loading, with the reason."""
    started: dict[str, EngineProcess] = {}
    missing: dict[str, str] = {}
    for engine in engines:
        began = time.perf_counter()
        try:
            started[engine] = EngineProcess(engine, model_setting, threads)
        except (EngineUnavailable, EngineCrashed) as err:
            if engine == REFERENCE:
                for process in started.values():
                    process.close()
                raise
            missing[engine] = str(err)
            log(f"engines: {engine} did not load: {err}")
            continue
        facts = started[engine].facts
        log(f"engines: {engine} loaded in {time.perf_counter() - began:.1f} s "
            f"(its own process; peak {facts.get('load_peak_mb', 0):.0f} MB while loading)")
    return started, missing


def run(model_setting: str, corpus: Path, engines: list[str], threads: list[int], rounds: int, steps: int,
        prompt_tokens: int, agreement_prompts: int, agreement_tokens: int, log: Callable[[str], None]) -> dict[str, Any]:
    """The ``engines`` section's report (see the module docstring)."""
    from gdg_lsp.backends import models as loading

    spec = loading.resolve(model_setting)
    wanted = [REFERENCE] + [e for e in engines if e not in (REFERENCE, LLAMA_CPP)]
    want_llama = LLAMA_CPP in engines
    version = _llama_cpp_installed() if want_llama else None
    note = None
    if want_llama and version is None:
        note = "llama-cpp-python is not installed (pip install 'gdg-lsp[llamacpp]'): lean engines only"
    elif want_llama and spec.kind != "gguf":
        note = f"llama.cpp needs a .gguf model; {spec.describe()} is not one: lean engines only"
    elif want_llama:
        wanted.append(LLAMA_CPP)
    report: dict[str, Any] = {"model": spec.describe(), "cpu": cpu_description(), "llama_cpp": version,
                              "note": note, "load_average_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                              "by_threads": {}}
    processes, missing = start_engines(model_setting, wanted, threads[0], log)
    try:
        report["loaded"] = {name: p.facts for name, p in processes.items()}
        report["not_loaded"] = missing
        encode = processes[REFERENCE].encode
        race_prompt = corpus_prompts(corpus, encode, 1, prompt_tokens, seed=1)
        if not race_prompt:
            raise ValueError(f"no corpus file in {corpus} has {prompt_tokens} tokens")
        for count in threads:
            for name, process in list(processes.items()):
                try:
                    process.set_threads(count)
                except EngineCrashed as err:
                    if name == REFERENCE:
                        raise
                    report.setdefault("crashed", {})[name] = str(err)
                    processes.pop(name).close()
            log(f"engines: {', '.join(processes)} at {count} thread(s), {rounds} alternating rounds")
            row = race(dict(processes), race_prompt[0], rounds, steps)
            for name, m in row.items():
                if "crashed" in m:
                    report.setdefault("crashed", {})[name] = m["crashed"]
                    processes.pop(name).close()
                else:
                    m.update({"peak_rss_mb": processes[name].memory()["peak_mb"]})
            base = row[LLAMA_CPP] if LLAMA_CPP in row and "crashed" not in row[LLAMA_CPP] else row[REFERENCE]
            for name, m in row.items():
                m["step_vs_base"] = m["step_ms"] / base["step_ms"] if base["step_ms"] else 0.0
                m["step_vs_base_paired"] = paired_ratio(m["step_times"], base["step_times"])
                m["prefill_vs_base"] = m["prefill_ms"] / base["prefill_ms"] if base["prefill_ms"] else 0.0
            base_name = LLAMA_CPP if base is row.get(LLAMA_CPP) else REFERENCE
            report["by_threads"][str(count)] = {"base": base_name, "engines": row}
            if count == threads[0] and agreement_prompts:
                prompts = corpus_prompts(corpus, encode, agreement_prompts, min(prompt_tokens, AGREEMENT_PROMPT_TOKENS),
                                         seed=2)
                log(f"engines: greedy agreement over {len(prompts)} prompts x {agreement_tokens} tokens")
                report["agreement"] = agreement(dict(processes), prompts, agreement_tokens)
                for name, m in report["agreement"].items():
                    if "crashed" in m:
                        report.setdefault("crashed", {})[name] = m["crashed"]
                        processes.pop(name).close()
    finally:
        for process in processes.values():
            process.close()
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
    for name, why in {**report.get("not_loaded", {}), **report.get("crashed", {})}.items():
        parts.append(f"\n**{name} did not finish**: {why}")
    for name, facts in report.get("loaded", {}).items():
        if facts.get("bridge"):
            parts.append(f"\n{name}: packed from the GGUF file's blocks by the benchmark (models.load widened them)")
    agree = report.get("agreement", {})
    rows = []
    for count, block in report["by_threads"].items():
        for name, m in block["engines"].items():
            rows.append([count, name, m["prompt_tokens"], m["prefill_ms"], m["prefill_vs_base"], m["step_ms"],
                         m["step_min_ms"], m["tokens_per_s"], m["step_vs_base"], m["step_vs_base_paired"],
                         agree.get(name, {}).get("agreement", "-") if count == next(iter(report["by_threads"])) else "-",
                         m.get("peak_rss_mb", "crashed" if "crashed" in m else "-")])
    base = next(iter(report["by_threads"].values()))["base"] if report["by_threads"] else REFERENCE
    positions = next(iter(agree.values()), {}).get("positions", 0)
    parts.append("\n" + table(["threads", "engine", "prompt tokens", "prefill ms", f"prefill × {base}", "step ms (median)",
                               "step ms (min)", "tokens/s", f"step × {base}", f"step × {base}, paired (median)",
                               f"greedy agreement with {REFERENCE} ({positions} positions)",
                               "peak RSS MB (its process, after load)"], rows))
    return "\n".join(parts)
