"""Batched decoding (``decoding/batching.py``): requests decoded concurrently through a
SlotPool get what they get one by one through ``FastLlamaBackend``.

Tiny random-weight Llama/Qwen2 models: the batched step against the
single-sequence step (logits to a tolerance, greedy tokens equal), then the
pool with request threads: several prompts at once, a request cancelled or
ending early while others go on, one arriving mid-batch, a failing request
that must not fail the others, slot affinity, and the guarantee (no reference
outside Γ) with concurrent requests.
"""

from __future__ import annotations

import keyword
import threading
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.lean.batching import SlotBackend, SlotPool, batched_step, pooled
from gdg_lsp.backends.lean.llama import (
    FastLlamaBackend,
    LeanLlama,
    LlamaShape,
    build_weights,
)
from gdg_lsp.decoding.engine import STOP_CANCELLED, Decoder, DecodeSpec
from tests.unit.test_guarantee import assert_no_ghosts

PROMPTS = ["def f(x):\n    return", "for ab in xy:\n    print(", "if not abc:\n    x =", "import"]
WINDOW_S = 0.05
"""Generous for tests: on a busy 2-core machine the request threads still meet in one batch."""


def _weights(vocab, kind: str = "llama", quant: str = "none", seed: int = 0, hidden: int = 64, max_positions: int = 512,
             device: str = "cpu"):
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        kind, vocab_size=vocab.size, hidden_size=hidden, intermediate_size=hidden * 3 // 2, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=max_positions, tie_word_embeddings=True)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if kind == "qwen2":  # random init leaves the biases at zero: give them values
        for name, value in state.items():
            if name.endswith("proj.bias"):
                value.normal_(0, 0.5)
    return build_weights(LlamaShape.from_config(config.to_dict()), state, quant=quant, device=device,
                         dtype=torch.float32, vocab_rows=vocab.size)


def _greedy(backend, ids, steps: int) -> tuple[list[int], list[torch.Tensor]]:
    logits = backend.prefill(ids)
    tokens, seen = [], [logits]
    for _ in range(steps):
        tokens.append(int(torch.argmax(logits)))
        logits = backend.step(tokens[-1])
        seen.append(logits)
    return tokens, seen


def _one_by_one(weights, vocab, prompts: list, steps: int, reference=None) -> list:
    """``_greedy`` over each prompt in turn on a single backend: what batching must reproduce."""
    reference = reference or FastLlamaBackend(weights, vocab, "reference")
    expected = []
    for ids in prompts:
        reference.reset()
        expected.append(_greedy(reference, ids, steps))
    return expected


def _assert_same_decoding(expected: list, got: list, tolerance: float) -> None:
    """The same greedy tokens, and logits within ``tolerance``, request by request."""
    for (tokens, logits), (got_tokens, got_logits) in zip(expected, got):
        assert got_tokens == tokens
        for e, g in zip(logits, got_logits):
            torch.testing.assert_close(g, e, atol=tolerance, rtol=tolerance)


def _on_threads(calls: list) -> list:
    """Run each call on its own thread, all at once; their results (or exceptions)."""
    results: list = [None] * len(calls)

    def run(index: int) -> None:
        try:
            results[index] = calls[index]()
        except Exception as err:  # handed to the test
            results[index] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def _concurrently(pool: SlotPool, jobs: list) -> list:
    """Run each ``job(slot_backend)`` on its own thread with its own slot; their results."""

    def leased(index: int):
        with pool.lease(f"file:///doc{index}.py") as slot:
            return jobs[index](slot)

    return _on_threads([lambda i=i: leased(i) for i in range(len(jobs))])


@pytest.fixture
def pool_factory():
    made: list[SlotPool] = []

    def make(weights, vocab, slots: int = 3, window_s: float = WINDOW_S) -> SlotPool:
        made.append(SlotPool(weights, vocab, "pool", slots=slots, window_s=window_s))
        return made[-1]

    yield make
    for pool in made:
        pool.close()


@pytest.mark.parametrize("kind,quant", [("llama", "none"), ("qwen2", "none"), ("llama", "int8")])
def test_batched_step_matches_one_sequence_at_a_time(tiny_vocab, kind, quant):
    weights = _weights(tiny_vocab, kind, quant)
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    single = [LeanLlama(weights) for _ in prompts]
    batched = [LeanLlama(weights) for _ in prompts]
    for a, b, ids in zip(single, batched, prompts):  # different lengths: rows at different positions
        a.forward(ids)
        b.forward(ids)
    allowed = [None, torch.tensor([1, 4, 9, tiny_vocab.size - 1]), None]
    tokens = [3, 7, 11]
    for _ in range(6):
        expected = [m.forward([t], ids) for m, t, ids in zip(single, tokens, allowed)]
        got = batched_step(batched, tokens, allowed)
        for e, g in zip(expected, got):
            if quant == "int8":  # row by row: the very same products
                assert torch.equal(e, g)
            torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)
        tokens = [int(torch.argmax(g)) for g in got]
    assert [m.cache.length for m in batched] == [m.cache.length for m in single]


def test_a_ragged_batch_checks_a_draft_beside_the_other_steps(tiny_vocab):
    """One slot brings a draft (several tokens, every position's logits, as
    FastLlamaBackend.extend) while the others bring one token: one forward for all."""
    weights = _weights(tiny_vocab)
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    single = [LeanLlama(weights) for _ in prompts]
    batched = [LeanLlama(weights) for _ in prompts]
    for a, b, ids in zip(single, batched, prompts):
        a.forward(ids)
        b.forward(ids)
    draft = tiny_vocab.encode("x + len(xy)").ids
    allowed = torch.tensor([2, 8, 30])
    expected = [single[0].forward([4], allowed), single[1].forward(draft, every_position=True),
                single[2].forward([9])]
    got = batched_step(batched, [4, draft, [9]], [allowed, None, None], [False, True, False])
    assert got[1].shape == (len(draft), tiny_vocab.size)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g, e, atol=1e-4, rtol=1e-4)
    assert [m.cache.length for m in batched] == [m.cache.length for m in single]


def test_drafts_through_slots_decode_what_fast_llama_does(tiny_vocab, pool_factory):
    """The decoder's drafts (extend/truncate) on slots decoding concurrently: the same
    tokens as the single backend, which drafts too, and drafts really were checked."""
    weights = _weights(tiny_vocab, seed=1)
    reference = FastLlamaBackend(weights, tiny_vocab, "reference")
    # repetitive prompts: drafts looked up in the context find something to propose
    prompts = [tiny_vocab.encode(p * 4).ids for p in ("x = len(xy) + abc\n", "print(ab, abc)\n", "for x in ab:\n    ")]
    expected = []
    for ids in prompts:
        reference.reset()
        decoder = Decoder(reference)
        assert decoder.draft_tokens > 0
        expected.append(decoder.decode(DecodeSpec(ids, max_tokens=40, stop_at_newline=False)).token_ids)
    pool = pool_factory(weights, tiny_vocab)
    decoders: list = []

    def run(slot, ids):
        decoder = Decoder(slot)
        decoders.append(decoder)
        return decoder.decode(DecodeSpec(ids, max_tokens=40, stop_at_newline=False)).token_ids

    got = _concurrently(pool, [lambda slot, ids=ids: run(slot, ids) for ids in prompts])
    assert got == expected
    assert all(d.draft_tokens > 0 for d in decoders) and sum(d.drafted for d in decoders) > 0


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_concurrent_requests_decode_what_sequential_ones_do(tiny_vocab, pool_factory, kind):
    weights = _weights(tiny_vocab, kind)
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    expected = _one_by_one(weights, tiny_vocab, prompts, 24)
    pool = pool_factory(weights, tiny_vocab)
    got = _concurrently(pool, [lambda slot, ids=ids: _greedy(slot, ids, 24) for ids in prompts])
    _assert_same_decoding(expected, got, 1e-4)
    # the steps really were shared: most forwards ran with more than one row
    assert max(pool.batch_sizes) >= 2, pool.batch_sizes
    assert sum(n for size, n in pool.batch_sizes.items() if size > 1) > 24 // 2


def _decode(slot: SlotBackend, ids: list[int], max_tokens: int, cancel=None):
    return Decoder(slot).decode(DecodeSpec(ids, max_tokens=max_tokens, stop_at_newline=False, cancel=cancel))


class _CancelAfter(threading.Event):
    """Reads as set from its ``checks``-th check on (the decoder checks before every token)."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self._left = checks

    def is_set(self) -> bool:
        self._left -= 1
        return self._left < 0


def test_a_cancelled_or_short_request_leaves_the_others_going(tiny_vocab, pool_factory):
    weights = _weights(tiny_vocab)
    reference = FastLlamaBackend(weights, tiny_vocab, "reference")
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    budgets = [30, 3, 30]  # the second ends early (budget)
    expected = []
    for ids, budget in zip(prompts, budgets):
        reference.reset()
        expected.append(Decoder(reference).decode(DecodeSpec(ids, max_tokens=budget, stop_at_newline=False)).token_ids)
    pool = pool_factory(weights, tiny_vocab)
    jobs = [
        lambda slot: _decode(slot, prompts[0], budgets[0], cancel=_CancelAfter(6)),  # cancelled mid-batch
        lambda slot: _decode(slot, prompts[1], budgets[1]),
        lambda slot: _decode(slot, prompts[2], budgets[2]),
    ]
    cancelled, short, full = _concurrently(pool, jobs)
    assert cancelled.stop_reason == STOP_CANCELLED and cancelled.token_ids == expected[0][:6]
    assert short.token_ids == expected[1] and len(short.token_ids) == 3
    assert full.token_ids == expected[2] and len(full.token_ids) == 30
    assert max(pool.batch_sizes) >= 2  # the cancelled one stepped in a batch


def test_a_request_arriving_while_others_decode_joins_them(tiny_vocab, pool_factory):
    weights = _weights(tiny_vocab)
    reference = FastLlamaBackend(weights, tiny_vocab, "reference")
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    expected = []
    for ids in prompts:
        reference.reset()
        expected.append(_greedy(reference, ids, 40)[0])
    pool = pool_factory(weights, tiny_vocab)

    def late(slot):
        while pool.passes < 10:  # the two others are decoding by now
            time.sleep(0.002)
        return _greedy(slot, prompts[2], 40)[0]

    got = _concurrently(pool, [lambda slot: _greedy(slot, prompts[0], 40)[0],
                               lambda slot: _greedy(slot, prompts[1], 40)[0], late])
    assert got == expected
    assert pool.batch_sizes.get(3, 0) > 0, pool.batch_sizes  # it joined the running batch


def test_a_failing_request_does_not_fail_the_others(tiny_vocab, pool_factory):
    weights = _weights(tiny_vocab, max_positions=64)
    reference = FastLlamaBackend(weights, tiny_vocab, "reference")
    prompt = tiny_vocab.encode(PROMPTS[0]).ids
    expected = _greedy(reference, prompt, 30)[0]
    pool = pool_factory(weights, tiny_vocab)

    def too_long(slot):  # past the model's 64 positions: its prefill fails
        return _greedy(slot, [5] * 80, 4)

    def runs_out(slot):  # a sequence that reaches the model's length while stepping with the others
        return _greedy(slot, [5] * 50, 30)

    def bad_ids(slot):
        slot.prefill(prompt)
        slot.step(3)
        return slot.step(4, allowed=torch.tensor([1, tiny_vocab.size + 50]))

    results = _concurrently(pool, [lambda slot: _greedy(slot, prompt, 30)[0], too_long, runs_out, bad_ids])
    assert results[0] == expected
    assert isinstance(results[1], ValueError) and "longer than the model" in str(results[1])
    assert isinstance(results[2], ValueError)
    assert isinstance(results[3], IndexError)
    # and the pool still serves: the failed slots start over
    assert _concurrently(pool, [lambda slot: _greedy(slot, prompt, 30)[0]] * 2) == [expected, expected]


def test_a_document_keeps_its_slot_and_its_kv_prefix(tiny_vocab, pool_factory):
    weights = _weights(tiny_vocab)
    pool = pool_factory(weights, tiny_vocab, slots=2)
    a = tiny_vocab.encode("def f(x):\n    return x + len(xy)\n" * 3).ids
    b = tiny_vocab.encode("for ab in xy:\n    print(abc)\n" * 3).ids
    with pool.lease("file:///a.py") as slot:
        slot.prefill(a)
        first = slot.index
    with pool.lease("file:///b.py") as slot:  # another document decodes in between
        slot.prefill(b)
        assert slot.index != first
    with pool.lease("file:///a.py") as slot:
        reused = slot.stats.reused_tokens
        slot.prefill(a + [3])
        assert slot.index == first and slot.stats.reused_tokens - reused == len(a)
    # one shared cache (FastLlamaBackend) keeps only what b and a have in common
    single = FastLlamaBackend(weights, tiny_vocab, "single")
    single.prefill(a)
    single.prefill(b)
    before = single.stats.reused_tokens
    single.prefill(a + [3])
    assert single.stats.reused_tokens - before < len(a) // 2


def test_pooled_wraps_only_lean_backends(tiny_vocab, random_backend):
    weights = _weights(tiny_vocab)
    lean = FastLlamaBackend(weights, tiny_vocab, "lean")
    assert pooled(lean, 1) is lean
    assert pooled(random_backend, 4) is random_backend  # transformers: one at a time
    pool = pooled(lean, 3)
    try:
        assert isinstance(pool, SlotPool) and pool.size == 3 and pool.weights is weights
    finally:
        pool.close()


def test_the_service_decodes_several_documents_at_once(tiny_vocab, pool_factory):
    from gdg_lsp.documents import Document
    from gdg_lsp.languages.python.analyzer import parse
    from gdg_lsp.service.local import CompletionService
    from gdg_lsp.settings import Settings

    weights = _weights(tiny_vocab)
    codes = ["def f(ab):\n    x = ab\n    ", "def g(xy, abc):\n    for x in xy:\n        ", "import os\nabc = 1\n"]
    docs = [Document(f"file:///s{i}.py", "python", 1, code, parse) for i, code in enumerate(codes)]
    settings = Settings(max_tokens=20, max_lines=2, timeout_ms=60_000)
    sequential = CompletionService(FastLlamaBackend(weights, tiny_vocab, "single"))
    expected = [sequential.complete(d.snapshot(), len(d.text), settings).text for d in docs]
    service = CompletionService(pool_factory(weights, tiny_vocab))
    assert service.concurrency == 3
    got: list = [None] * 3

    def ask(i: int) -> None:
        got[i] = service.complete(docs[i].snapshot(), len(docs[i].text), settings).text

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert got == expected


def test_static_slots_step_together_as_the_graphs_would(tiny_vocab):
    """The static batched step (what a CUDA graph per set of slots replays), run eagerly on
    the CPU: the tokens and logits of one-by-one decoding, also once the caches outgrow
    their capacity (the static step attends over the whole capacity under a mask)."""
    from gdg_lsp.backends.lean.cuda_graphs import StaticLlama

    weights = _weights(tiny_vocab)
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    expected = _one_by_one(weights, tiny_vocab, prompts, 30)
    pool = SlotPool(weights, tiny_vocab, "static", slots=3, window_s=WINDOW_S,
                    make_model=lambda w: StaticLlama(w, capacity=32, use_graph=False))
    try:
        got = _concurrently(pool, [lambda slot, ids=ids: _greedy(slot, ids, 30) for ids in prompts])
        assert all(isinstance(s.model, StaticLlama) and s.model.cache.capacity > 32 for s in pool._slots)
    finally:
        pool.close()
    _assert_same_decoding(expected, got, 1e-4)
    assert max(pool.batch_sizes) >= 2 and pool._graphs.captures == 0  # eager: no graph on a CPU


@pytest.mark.gpu
def test_batched_slots_on_cuda_match_the_graph_backend(tiny_vocab):
    """On CUDA a slot is a StaticLlama: alone it replays its CUDA graph, with others the
    graph of its set of slots; either way it decodes what GraphLlamaBackend does."""
    from gdg_lsp.backends.lean.cuda_graphs import GraphLlamaBackend, StaticLlama

    weights = _weights(tiny_vocab, device="cuda")
    reference = GraphLlamaBackend(weights, tiny_vocab, "reference", "cuda", capacity=512)
    prompts = [tiny_vocab.encode(p).ids for p in PROMPTS[:3]]
    expected = _one_by_one(weights, tiny_vocab, prompts, 24, reference)
    pool = SlotPool(weights, tiny_vocab, "pool", "cuda", slots=3, window_s=WINDOW_S)
    try:
        alone = _concurrently(pool, [lambda slot: _greedy(slot, prompts[0], 24)])[0]  # batches of one: the graph
        assert isinstance(pool._slots[0].model, StaticLlama)
        assert any(s.model.replays > 0 for s in pool._slots)
        assert alone[0] == expected[0][0]
        got = _concurrently(pool, [lambda slot, ids=ids: _greedy(slot, ids, 24) for ids in prompts])
    finally:
        pool.close()
    _assert_same_decoding(expected, got, 1e-3)
    assert max(pool.batch_sizes) >= 2
    assert pool._graphs.captures >= 1 and pool._graphs.replays >= 1


_POOLS: dict = {}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True).filter(
           lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s)), min_size=1, max_size=6, unique=True),
           min_size=2, max_size=3),
       seed=st.integers(0, 10_000))
def test_concurrent_suggestions_reference_only_their_gamma(names, seed, tiny_vocab):
    """Each of 2-3 concurrent requests (its own random Γ, sampled decoding) references
    only names of its own Γ, whatever the others in the batch decode."""
    from gdg_lsp.documents import Snapshot
    from gdg_lsp.executor import Executor, Prompt
    from gdg_lsp.grammar.xgrammar_engine import GrammarCache
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

    if "pool" not in _POOLS:  # one pool for all examples (its weights do not matter to the guarantee)
        _POOLS["pool"] = SlotPool(_weights(tiny_vocab, hidden=32, seed=3), tiny_vocab, "guarantee", slots=3,
                                  window_s=0.01)
        _POOLS["cache"] = GrammarCache(tiny_vocab)
    pool, cache = _POOLS["pool"], _POOLS["cache"]
    analyzer = PythonAnalyzer()

    def request(index: int):
        params = ", ".join(names[index])
        code = f"def f{index}({params}):\n    "
        hole = analyzer.hole_at(Snapshot(f"file:///g{index}.py", "python", 1, code, parse(code.encode())), len(code),
                                WorkspaceContext())
        with pool.lease(f"file:///g{index}.py") as slot:
            execution = Executor(analyzer, Decoder(slot), cache).run(
                hole, Prompt(tiny_vocab.encode(code).ids), "scope", max_tokens=60, max_lines=2, temperature=1.0,
                seed=seed + index)
        return hole, params, execution

    for result in _on_threads([lambda i=i: request(i) for i in range(len(names))]):
        assert not isinstance(result, Exception), result
        hole, params, execution = result
        assert all(trace.rung in ("gamma", None) for trace in execution.statements)
        if execution.text.strip():
            assert_no_ghosts(f"def f({params})", execution.text, set(hole.gamma.names()))
