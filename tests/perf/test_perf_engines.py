"""The engines section of ``bench perf`` (``bench/engines.py``): llama.cpp driven as the
lean backends are, the alternating race and the greedy agreement, on fakes whose
logits are known; the real llama.cpp on the default GGUF under the ``llamacpp``
marker (deselected where llama-cpp-python is not installed)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from gdg_lsp.bench import engines

VOCAB = 11


class Counting:
    """A model whose next token is (sum of the sequence + shift) mod VOCAB; it logs its calls."""

    def __init__(self, shift: int = 0, log: list | None = None, name: str = "") -> None:
        self.shift, self.ids, self.log, self.name = shift, [], log if log is not None else [], name

    def _logits(self) -> torch.Tensor:
        out = torch.zeros(VOCAB)
        out[(sum(self.ids) + self.shift) % VOCAB] = 1.0
        return out

    def reset(self) -> None:
        self.ids = []

    def prefill(self, ids):
        self.log.append((self.name, "prefill"))
        self.ids = list(ids)
        return self._logits()

    def step(self, token):
        self.log.append((self.name, "step"))
        self.ids.append(int(token))
        return self._logits()


class FakeLlama:
    """What LlamaCppModel uses of ``llama_cpp.Llama``."""

    def __init__(self, **options) -> None:
        self.options, self.ids, self.calls = options, [], []

    def reset(self) -> None:
        self.calls.append("reset")
        self.ids = []

    def eval(self, tokens) -> None:
        self.calls.append(("eval", list(tokens)))
        self.ids.extend(tokens)


def test_llama_cpp_is_driven_like_a_backend():
    made = []

    def make(**options):
        made.append(FakeLlama(**options))
        return made[-1]

    model = engines.LlamaCppModel("model.gguf", threads=2, make=make,
                                  logits_of=lambda llm: np.arange(VOCAB, dtype=np.float32) * (len(llm.ids) % 3))
    (llm,) = made
    assert llm.options["n_threads"] == llm.options["n_threads_batch"] == 2
    assert llm.options["model_path"] == "model.gguf" and llm.options["logits_all"] is False
    logits = model.prefill([5, 6, 7])
    assert llm.calls == ["reset", ("eval", [5, 6, 7])]  # a prefill starts from an empty cache
    assert logits.dtype == torch.float32 and logits.shape == (VOCAB,) and logits[1] == 0.0  # 3 tokens: 3 % 3
    assert model.step(9)[1] == 1.0 and llm.calls[-1] == ("eval", [9])
    model.prefill([1])
    assert llm.ids == [1]


def test_race_alternates_and_measures_agreement_with_the_reference():
    log: list = []
    models = {"ref": Counting(0, log, "ref"), "same": Counting(0, log, "same"), "off": Counting(1, log, "off")}
    out = engines.race(models, [1, 2, 3], rounds=3, steps=5)
    assert out["ref"]["greedy_agreement_race"] == out["same"]["greedy_agreement_race"] == 1.0
    assert out["off"]["greedy_agreement_race"] == 0.0  # always one past the reference's token
    for m in out.values():
        assert m["steps"] == 15 and m["step_ms"] > 0 and m["prefill_ms"] > 0 and m["prompt_tokens"] == 3
        assert m["step_min_ms"] <= m["step_ms"] and m["tokens_per_s"] > 0
    timed = log[3 * 6:]  # after the untimed warm-up pass (a prefill and 5 steps each)
    prefills = [name for name, what in timed if what == "prefill"]
    assert prefills == ["ref", "same", "off", "same", "off", "ref", "off", "ref", "same"]  # the order turns
    first_round = [name for name, what in timed[3 : 3 + 15]]
    assert first_round == ["ref", "same", "off"] * 5  # stepped side by side, position by position
    assert len(out["off"]["step_times"]) == 15
    assert engines.paired_ratio([2.0, 4.0, 9.0], [1.0, 2.0, 3.0]) == 2.0


FAKE_ENGINE = r"""
import json, os, signal, struct, sys
crash_after, vocab = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout.buffer
out.write(json.dumps({"ready": True, "load_peak_mb": 1.0}).encode() + b"\n"); out.flush()
for calls, line in enumerate(sys.stdin.buffer, 1):
    if calls > crash_after:
        sys.stderr.write("ggml_compute_forward_mul_mat: about to fail\n"); sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    op = json.loads(line)["op"]
    if op in ("prefill", "step"):
        out.write(json.dumps({"s": 0.001, "n": vocab}).encode() + b"\n" + struct.pack(f"{vocab}f", *range(vocab)))
    else:
        out.write(b'{"ok": true}\n')
    out.flush()
"""


def fake_engine(crash_after: int) -> engines.EngineProcess:
    """A process that speaks the engine protocol (its argmax is always the last token id) and
    dies by SIGSEGV at its call ``crash_after + 1``, as llama.cpp's AMX matmul did."""
    return engines.EngineProcess(engines.LLAMA_CPP, "model.gguf", 1,
                                 command=[sys.executable, "-c", FAKE_ENGINE, str(crash_after), str(VOCAB)])


def test_an_engine_process_answers_with_its_own_timing():
    process = fake_engine(crash_after=100)
    try:
        assert process.facts["ready"] and process.facts["load_peak_mb"] == 1.0
        process.reset()
        logits = process.prefill([1, 2])
        assert logits.dtype == torch.float32 and int(torch.argmax(logits)) == VOCAB - 1
        assert process.last_seconds == 0.001  # the engine's own time, not the pipe's
    finally:
        process.close()


def test_an_engine_that_crashes_is_reported_and_the_others_race_on():
    crashing = fake_engine(crash_after=9)  # the warm-up pass survives, the first timed round does not
    models = {"ref": Counting(0), "same": Counting(0), engines.LLAMA_CPP: crashing}
    out = engines.race(models, [1, 2, 3], rounds=3, steps=4)
    why = out[engines.LLAMA_CPP]["crashed"]
    assert "killed by SIGSEGV" in why and "about to fail" in why  # its signal and its stderr's end
    assert out["same"]["steps"] == out["ref"]["steps"] == 12  # every round ran for the others
    assert out["same"]["greedy_agreement_race"] == 1.0
    assert out[engines.LLAMA_CPP]["steps"] < 12
    with pytest.raises(engines.EngineCrashed):  # a dead process says so at once
        crashing.step(1)
    crashing.close()


def test_an_engine_that_cannot_load_says_why():
    refuse = [sys.executable, "-c", "import json; print(json.dumps({'error': 'ModuleNotFoundError: llama_cpp'}))"]
    with pytest.raises(engines.EngineUnavailable, match="llama_cpp"):
        engines.EngineProcess(engines.LLAMA_CPP, "model.gguf", 1, command=refuse)
    assert engines.describe_exit(-11) == "killed by SIGSEGV" and engines.describe_exit(3) == "exit code 3"


def test_agreement_is_teacher_forced_per_position():
    models = {"ref": Counting(0), "same": Counting(0), "off": Counting(1)}
    out = engines.agreement(models, [[1], [2, 3]], tokens=4)
    assert out["ref"] == {"agreement": 1.0, "positions": 8}
    assert out["same"]["agreement"] == 1.0 and out["off"]["agreement"] == 0.0


def test_corpus_prompts_are_windows_of_the_asked_length(tmp_path):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(" ".join(f"name{i}_{k}" for k in range(200)))
    (tmp_path / "short.py").write_text("x = 1")
    encode = lambda text: [len(word) for word in text.split()]  # noqa: E731
    prompts = engines.corpus_prompts(tmp_path, encode, 5, 50)
    assert len(prompts) == 5 and all(len(p) == 50 for p in prompts)


def test_cpu_description_names_the_kernels_features():
    cpu = engines.cpu_description()
    assert cpu["cores"] >= 1 and cpu["model"]
    assert set(cpu["flags"]) <= set(engines.CPU_FLAGS)


@pytest.mark.llamacpp
@pytest.mark.slow
def test_real_llama_cpp_on_the_default_gguf_agrees_with_lean():
    from gdg_lsp.backends import models

    spec = models.resolve("default")
    lean = models.load(spec, "cpu", engine="lean")
    llama = engines.LlamaCppModel(spec.path, threads=1)
    ids = lean.vocab.encode("import os\n\n\ndef main(argv):\n    for arg in argv:\n        print(").ids
    a, b = lean.prefill(ids), llama.prefill(ids)
    assert b.shape == a.shape[:1] or b.shape[0] >= a.shape[0]
    b = b[: a.shape[0]]
    assert torch.nn.functional.cosine_similarity(a, b, dim=0) > 0.98
    agree = 0
    for _ in range(8):
        token = int(torch.argmax(a))
        agree += token == int(torch.argmax(b))
        a, b = lean.step(token), llama.step(token)[: a.shape[0]]
    assert agree >= 6
