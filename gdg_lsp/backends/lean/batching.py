"""Batched decoding: concurrent requests from several documents share each model step.

At batch 1 a decode step of a small model reads every weight once to multiply
it by one vector; multiplying the same weights by B stacked vectors costs far
less than B steps (the weights are read once). ``SlotPool`` owns one set of
lean weights (``fast_llama``) and N sequence slots, each with its own KV cache
and the ids it holds. A request leases a slot (``lease``) and gets a
``SlotBackend``, an ordinary ModelBackend: the masked loop of ``engine.Decoder``
runs unchanged on the request's thread and calls ``prefill``/``step`` on it.

All model work runs on one scheduler thread, which

- gathers the steps of the slots that are decoding: it waits until every slot
  expected to step has submitted, or ``window_s`` after the first submission,
  whichever comes first, then runs ONE forward for all of them (the linears on
  the stacked rows, RoPE at each row's own position, attention per row against
  its own cache, the output layer per row over its ``allowed`` ids if given).
  A slot checking a draft (``engine.Decoder`` via ``extend``) brings several
  tokens and gets every position's logits: the batch is ragged.
  A slot that missed a batch (compiling a grammar, between regions) is not
  waited for again until it submits: it costs the others one window at most;
- runs prefills in chunks of ``PREFILL_CHUNK`` tokens, one chunk between two
  batched steps, so that a long prompt does not stall the slots that decode.

A slot keeps its sequence between requests and is leased preferably to the
document that used it last: that document's next request reuses its KV prefix
even when other documents decoded in between (one shared cache would have been
overwritten).

Greedy results do not depend on the batch: a batch of one runs the slot's
model exactly as ``FastLlamaBackend`` does, and a larger batch differs only by
the rounding of the batched products (fp32); with int8 weights the activations
are quantized per call, over the whole batch, so int8 linears run row by row to
keep each request's suggestion independent of what the others decode.

On CUDA the slots are ``StaticLlama``: a batch of one replays the slot's CUDA
graph, a larger batch replays the graph of its set of slots
(``cuda_graphs.BatchedGraphs``, captured the first time that set steps together).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from gdg_lsp.backends.base import BackendStats, PrefillCancelled, common_prefix
from gdg_lsp.backends.lean import native
from gdg_lsp.backends.lean.cuda_graphs import BatchedGraphs, StaticLlama
from gdg_lsp.backends.lean.linear import Linear
from gdg_lsp.backends.lean.llama import (
    LeanLlama,
    LlamaWeights,
    apply_rope,
    attend,
    causal_mask,
    feed_forward,
    prefill_chunk,
    rms_norm,
)
from gdg_lsp.vocab import Vocabulary

PREFILL_CHUNK = 64
"""Most prompt tokens per prefill forward: between two chunks the decoding slots take a step
(fewer for a larger model: ``llama.prefill_chunk``)."""

WINDOW_S = 0.008
"""How long a batch waits for the expected slots once the model is free. Between two
steps the masked loop spends ~1-8 ms (mask, pick, accept; the scope arm's average
mask is ~8 ms on the busy 2-core machine), against a 65-185 ms step: a few ms
gather every slot that is decoding; a slot that is away longer (a grammar compile)
costs the others one window, after which it is not waited for until it steps again."""


SLOT_CAPACITY = 1024
"""Default positions of a slot's KV cache on a CPU (47 MB for the default model)."""


class PoolClosed(RuntimeError):
    """The pool was shut down while a request waited on it."""


def batched_step(models: Sequence[LeanLlama], tokens: Sequence[int | Sequence[int]],
                 allowed: Sequence[torch.Tensor | None], every_position: Sequence[bool] | None = None) -> list[torch.Tensor]:
    """Append tokens to each model's sequence in one forward; the logits of each.

    ``tokens[b]``: one token (a step) or several (a draft checked at once, as
    ``FastLlamaBackend.extend``). The result for ``b`` is its last row's logits
    ([vocab]; only the ``allowed[b]`` ids computed if given), or with
    ``every_position[b]`` the logits after each of its tokens ([n, vocab]).
    Every model shares one ``LlamaWeights``; each has its own cache."""
    first = models[0]
    s, w = first.shape, first.w
    B = len(models)
    H, KV, D, G = s.heads, s.kv_heads, s.head_dim, s.group
    every = list(every_position) if every_position is not None else [False] * B
    runs = [[int(t)] if isinstance(t, int) else [int(x) for x in t] for t in tokens]
    counts = [len(r) for r in runs]
    starts = [m.cache.length for m in models]
    offsets = [sum(counts[:b]) for b in range(B)]
    for model, start, n in zip(models, starts, counts):
        model.cache.ensure(start + n)
    device = w.device
    flat = [t for run in runs for t in run]
    h = w.embed_rows(torch.tensor(flat, dtype=torch.long, device=device)).to(w.dtype)  # [rows, hidden]
    at = torch.tensor([start + i for start, n in zip(starts, counts) for i in range(n)], dtype=torch.long, device=device)
    cos = first._cos.index_select(0, at)[:, None, :]  # [rows, 1, D]: each row at its own position
    sin = first._sin.index_select(0, at)[:, None, :]
    masks = [causal_mask(start, n, G, device) for start, n in zip(starts, counts)]
    native_cache = native.fits(first.cache.k[0]) and D % 2 == 0
    for index, layer in enumerate(w.layers):
        x = rms_norm(h, layer.ln1, s.rms_eps)
        qkv = _linear(layer.qkv, x).contiguous()
        if not native_cache:
            q_all = apply_rope(qkv[:, : H * D].view(-1, H, D), cos, sin)
            k = apply_rope(qkv[:, H * D : (H + KV) * D].view(-1, KV, D), cos, sin)
            v = qkv[:, (H + KV) * D :].view(-1, KV, D)
        outs = []
        for model, start, n, o, mask in zip(models, starts, counts, offsets, masks):
            # attention is per sequence (each against its own cache); the linears are the cost
            keys, values = model.cache.k[index], model.cache.v[index]
            if native_cache:  # as LeanLlama.forward does it: a batch of one is the single sequence's step
                q = native.rope_into_cache(qkv[o : o + n], first._cos[start : start + n], first._sin[start : start + n],
                                           H, KV, keys, values, start)
            else:
                keys[:, start : start + n].copy_(k[o : o + n].transpose(0, 1))
                values[:, start : start + n].copy_(v[o : o + n].transpose(0, 1))
                q = q_all[o : o + n].transpose(0, 1)
            outs.append(attend(q, keys[:, : start + n], values[:, : start + n], mask, first._scale))
        h = feed_forward(h + _linear(layer.o, torch.cat(outs)), layer, s.rms_eps, _linear)
    for model, start, n in zip(models, starts, counts):
        model.cache.length = start + n
    normed = rms_norm(h, w.norm, s.rms_eps)
    # the whole output layer, in one product, for the rows that need it
    wanted = [b for b in range(B) if every[b] or allowed[b] is None]
    picked = [i for b in wanted for i in (range(offsets[b], offsets[b] + counts[b]) if every[b] else [offsets[b] + counts[b] - 1])]
    full = _linear(w.head, normed[picked]).float() if picked else None
    out: list[torch.Tensor | None] = [None] * B
    at_row = 0
    for b in wanted:
        n = counts[b] if every[b] else 1
        assert full is not None
        out[b] = full[at_row : at_row + n] if every[b] else full[at_row]
        at_row += n
    for b in range(B):
        ids = allowed[b]
        if out[b] is None and ids is not None:  # only the rows of the output layer this request's grammar allows
            last = offsets[b] + counts[b] - 1
            partial = torch.full((w.head.out_features,), -math.inf, device=device)
            partial[ids] = w.head.rows(normed[last : last + 1], ids)[0].float()
            out[b] = partial
    return out  # type: ignore[return-value]


def _linear(layer: Linear, x: torch.Tensor) -> torch.Tensor:
    if not layer.rows_independent and x.shape[0] > 1:
        # fbgemm quantizes the activations with one scale per call: row by row, a
        # request's result does not depend on the other rows of the batch
        return torch.cat([layer(x[b : b + 1]) for b in range(x.shape[0])])
    return layer(x)


@dataclass
class _Slot:
    index: int
    model: Any = None
    """Its LeanLlama (KV cache), made at its first lease: slots nobody uses cost no memory."""
    ids: list[int] = field(default_factory=list)
    """The sequence the slot's cache holds."""
    key: str | None = None
    """The document that used the slot last (affinity)."""
    leased: bool = False
    last_used: float = 0.0
    backend: SlotBackend | None = None


@dataclass
class _Prefill:
    slot: _Slot
    ids: list[int]
    """Tokens still to run (after the reused prefix)."""
    future: Future
    cancel: Any = None
    """The request's cancel event: checked before each chunk after the first."""
    ran: int = 0


@dataclass
class _Step:
    slot: _Slot
    tokens: list[int]
    """One token (a step) or several (``extend``: a draft checked in one forward)."""
    allowed: torch.Tensor | None
    future: Future
    every_position: bool = False
    """The logits after each token ([n, vocab]) rather than after the last."""


class SlotPool:
    """One lean model, ``slots`` sequences, one scheduler thread; see the module docstring.

    It stands where a backend stands for the service (``vocab``, ``name``,
    ``device``, ``stats`` summed over the slots), but decoding goes through
    ``lease``."""

    def __init__(self, weights: LlamaWeights, vocab: Vocabulary, name: str, device: str = "cpu", slots: int = 4,
                 window_s: float = WINDOW_S, make_model: Callable[[LlamaWeights], LeanLlama] | None = None,
                 capacity: int = SLOT_CAPACITY) -> None:
        """``capacity``: positions a slot's KV cache holds before it grows (by doubling) on a
        CPU; the server sizes it to a prompt window plus a suggestion. ``make_model``:
        how a slot's model is made (default: ``LeanLlama``, ``StaticLlama`` on CUDA)."""
        if slots < 1:
            raise ValueError("a pool needs at least one slot")
        self.weights = weights
        self.vocab = vocab
        self.name = name
        self.device = device
        self.window_s = window_s
        self.stats = BackendStats()
        self.passes = 0
        """Model forwards run (a batched step counts once): how far a cancelled request can have run."""
        self.batch_sizes: dict[int, int] = {}
        """How many batched steps ran with each number of rows (read by tests and the bench)."""
        self._make_model = make_model or _default_model(device, capacity)
        self._graphs = BatchedGraphs()
        """The batched steps of StaticLlama slots (CUDA graphs on a GPU)."""
        self._slots = [_Slot(i) for i in range(slots)]
        for slot in self._slots:
            slot.backend = SlotBackend(self, slot)
        self._vocab_size = vocab.size
        self._cond = threading.Condition()
        self._steps: dict[int, _Step] = {}
        self._expected: set[int] = set()
        """Slots that stepped in the last batch or just prefilled: the batch waits for them."""
        self._prefills: deque[_Prefill] = deque()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="gdg-batch", daemon=True)
        self._thread.start()

    @property
    def size(self) -> int:
        return len(self._slots)

    @property
    def quant(self) -> str:
        return self.weights.quant

    # -- leasing ----------------------------------------------------------------------

    @contextmanager
    def lease(self, key: str | None = None) -> Iterator[SlotBackend]:
        """A slot for one request, the one ``key`` used last if it is free; blocks while all are leased."""
        with self._cond:
            while True:
                if self._closed:
                    raise PoolClosed("the model was unloaded")
                free = [s for s in self._slots if not s.leased]
                if free:
                    break
                self._cond.wait()
            mine = [s for s in free if key is not None and s.key == key]
            # else the least recently used slot: the one least likely to hold a document's prefix still wanted
            slot = mine[0] if mine else min(free, key=lambda s: s.last_used)
            slot.leased, slot.key = True, key
        try:
            if slot.model is None:
                slot.model = self._make_model(self.weights)
            assert slot.backend is not None
            yield slot.backend
        finally:
            with self._cond:
                slot.leased = False
                slot.last_used = time.monotonic()
                self._expected.discard(slot.index)
                self._cond.notify_all()

    def reset(self) -> None:
        with self._cond:
            for slot in self._slots:
                if not slot.leased and slot.model is not None:
                    slot.ids = []
                    slot.model.cache.length = 0

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- what the slots ask for (on the request threads) ---------------------------------

    def _prefill(self, slot: _Slot, ids: Sequence[int], cancel: Any = None) -> torch.Tensor:
        if not ids:
            raise ValueError("empty prompt")
        future: Future = Future()
        with self._cond:
            self._check_open()
            keep = min(common_prefix(slot.ids, ids), len(ids) - 1)
            slot.ids = slot.ids[:keep]
            slot.model.cache.length = keep  # the rows after it are overwritten
            self.stats.reused_tokens += keep
            self.stats.prefill_tokens += len(ids) - keep
            self._expected.discard(slot.index)  # not stepping while it prefills
            self._prefills.append(_Prefill(slot, list(ids[keep:]), future, cancel))
            self._cond.notify_all()
        return self._wait(future)

    def _step(self, slot: _Slot, token: int, allowed: torch.Tensor | None) -> torch.Tensor:
        future: Future = Future()
        with self._cond:
            self._check_open()
            self.stats.steps += 1
            self._steps[slot.index] = _Step(slot, [int(token)], allowed, future)
            self._cond.notify_all()
        return self._wait(future)

    def _extend(self, slot: _Slot, ids: Sequence[int]) -> torch.Tensor:
        future: Future = Future()
        with self._cond:
            self._check_open()
            self.stats.steps += 1
            self._steps[slot.index] = _Step(slot, [int(t) for t in ids], None, future, every_position=True)
            self._cond.notify_all()
        return self._wait(future)

    def _wait(self, future: Future) -> torch.Tensor:
        logits = future.result()
        logits = logits[..., : self._vocab_size]
        return logits if logits.device.type == "cpu" else logits.cpu()

    def _check_open(self) -> None:
        if self._closed:
            raise PoolClosed("the model was unloaded")

    # -- the scheduler thread ------------------------------------------------------------------

    def _run(self) -> None:
        torch.set_grad_enabled(False)
        prefer_steps = True
        while True:
            with self._cond:
                while not self._closed and not self._steps and not self._prefills:
                    self._cond.wait()
                if self._closed:
                    self._fail_all(PoolClosed("the model was unloaded"))
                    return
                batch: list[_Step] = []
                prefill: _Prefill | None = None
                if self._steps and (prefer_steps or not self._prefills):
                    self._gather()
                    batch = list(self._steps.values())
                    self._steps.clear()
                    # whoever missed this batch is not waited for until it submits again
                    self._expected = {step.slot.index for step in batch}
                elif self._prefills:
                    prefill = self._prefills[0]
            # alternate: a step batch, then one prefill chunk, so neither starves the other
            prefer_steps = not batch
            if batch:
                self._run_batch(batch)
            elif prefill is not None:
                self._run_prefill_chunk(prefill)

    def _gather(self) -> None:
        """Wait (holding the condition) until every expected slot has a step in, or the window passed.

        The window starts now, when the model is free, not at the first submission:
        steps that arrived during the last forward would otherwise run at once
        without the slots still choosing their token, and the slots would settle
        into two alternating half-batches, each paying a whole forward."""
        deadline = time.monotonic() + self.window_s
        while not self._closed:
            waiting = self._expected - self._steps.keys()
            if not waiting:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _run_batch(self, batch: list[_Step]) -> None:
        batch = [step for step in batch if self._admissible(step)]
        if not batch:
            return
        began = time.perf_counter()
        try:
            with torch.inference_mode():
                models = [s.slot.model for s in batch]
                single_tokens = all(len(s.tokens) == 1 for s in batch)
                if len(batch) == 1:  # exactly what FastLlamaBackend runs (a CUDA graph on a GPU)
                    one = batch[0]
                    if one.every_position:  # a draft: the eager forward, as FastLlamaBackend.extend
                        results = [LeanLlama.forward(one.slot.model, one.tokens, every_position=True)]
                    else:
                        results = [one.slot.model.forward(one.tokens, one.allowed)]
                elif single_tokens and isinstance(models[0], StaticLlama):  # a CUDA graph per set of slots
                    results = self._static_batch(models, batch)
                else:
                    results = batched_step(models, [s.tokens for s in batch], [s.allowed for s in batch],
                                           [s.every_position for s in batch])
        except BaseException as err:  # e.g. a sequence past the model's length: fail these steps, keep serving
            for step in batch:
                step.future.set_exception(err)
            self._resync(batch)
            return
        seconds = time.perf_counter() - began
        with self._cond:
            self.passes += 1
            self.stats.model_seconds += seconds
            self.batch_sizes[len(batch)] = self.batch_sizes.get(len(batch), 0) + 1
            for step in batch:
                step.slot.ids.extend(step.tokens)
        for step, logits in zip(batch, results):
            step.future.set_result(logits)

    def _static_batch(self, models: list, batch: list[_Step]) -> list[torch.Tensor]:
        positions = [m.cache.length for m in models]
        rows = self._graphs.step(models, [s.tokens[0] for s in batch], positions)
        for model, position in zip(models, positions):
            model.cache.length = position + 1
        out = []
        for row, step in zip(rows, batch):
            if step.allowed is not None:  # the graph computed every row of the output layer: keep the allowed ones
                masked = torch.full_like(row, -math.inf)
                masked[step.allowed] = row[step.allowed]
                row = masked
            out.append(row)
        return out

    def _admissible(self, step: _Step) -> bool:
        """Fail a step that would fail the whole batch (a sequence past the model's
        length, ids outside the output layer) on its own, before the forward."""
        try:
            step.slot.model.cache.ensure(step.slot.model.cache.length + len(step.tokens))
            ids = step.allowed
            rows = self.weights.head.out_features
            if ids is not None and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= rows):
                raise IndexError(f"allowed token ids outside the output layer's {rows} rows")
            for token in step.tokens:
                if not 0 <= token < self.weights.shape.vocab_size:
                    raise IndexError(f"token id {token} outside the vocabulary")
        except Exception as err:
            step.future.set_exception(err)
            return False
        return True

    def _resync(self, batch: list[_Step]) -> None:
        # a failed forward may have written some caches: drop what the slots hold
        with self._cond:
            for step in batch:
                step.slot.ids = []
                step.slot.model.cache.length = 0

    def _run_prefill_chunk(self, job: _Prefill) -> None:
        if job.ran and job.cancel is not None and job.cancel.is_set():
            with self._cond:  # the slot keeps the chunks that ran: its next request reuses them
                self._prefills.popleft()
            job.future.set_exception(PrefillCancelled(f"cancelled after {job.ran} prompt tokens"))
            return
        chunk = job.ids[: min(PREFILL_CHUNK, prefill_chunk(self.weights.shape))]
        began = time.perf_counter()
        try:
            with torch.inference_mode():
                # only the prompt's last chunk has logits anybody reads
                logits = job.slot.model.forward(chunk, logits=len(chunk) == len(job.ids))
        except BaseException as err:
            with self._cond:
                self._prefills.popleft()
                job.slot.ids = []
                job.slot.model.cache.length = 0
            job.future.set_exception(err)
            return
        seconds = time.perf_counter() - began
        with self._cond:
            self.passes += 1
            self.stats.model_seconds += seconds
            job.slot.ids.extend(chunk)
            job.ids = job.ids[len(chunk) :]
            job.ran += len(chunk)
            done = not job.ids
            if done:
                self._prefills.popleft()
                self._expected.add(job.slot.index)  # its first step comes right after
        if done:
            job.future.set_result(logits)

    def _fail_all(self, err: BaseException) -> None:
        for step in self._steps.values():
            step.future.set_exception(err)
        self._steps.clear()
        for job in self._prefills:
            job.future.set_exception(err)
        self._prefills.clear()


def _default_model(device: str, capacity: int) -> Callable[[LlamaWeights], LeanLlama]:
    if str(device).startswith("cuda"):
        return StaticLlama  # a batch of one replays the slot's CUDA graph, a batch a graph of its set of slots
    return lambda weights: LeanLlama(weights, capacity)


def pooled(backend: Any, slots: int, capacity: int = SLOT_CAPACITY, window_s: float = WINDOW_S) -> Any:
    """``backend`` as a SlotPool of ``slots`` sequences over the same weights when it is a
    lean backend and ``slots`` > 1; otherwise ``backend`` itself (one request at a time)."""
    from gdg_lsp.backends.lean.llama import FastLlamaBackend

    if slots <= 1 or not isinstance(backend, FastLlamaBackend):
        return backend
    return SlotPool(backend.weights, backend.vocab, backend.name, backend.device, slots, window_s, capacity=capacity)


class SlotBackend:
    """One slot of a ``SlotPool`` seen as a ModelBackend (what ``engine.Decoder`` drives)."""

    def __init__(self, pool: SlotPool, slot: _Slot) -> None:
        self._pool = pool
        self._slot = slot
        self.vocab = pool.vocab
        self.name = pool.name
        self.device = pool.device
        self.stats = BackendStats()

    @property
    def index(self) -> int:
        return self._slot.index

    @property
    def ids(self) -> list[int]:
        return list(self._slot.ids)

    def reset(self) -> None:
        self._slot.ids = []
        self._slot.model.cache.length = 0

    def prefill(self, ids: Sequence[int]) -> torch.Tensor:
        return self.prefill_until(ids, None)

    def prefill_until(self, ids: Sequence[int], cancel: Any) -> torch.Tensor:
        """``prefill``, stopping between chunks once ``cancel`` is set (``PrefillCancelled``)."""
        began = time.perf_counter()
        reused_before = common_prefix(self._slot.ids, ids)
        logits = self._pool._prefill(self._slot, ids, cancel)
        keep = min(reused_before, len(ids) - 1)
        self.stats.reused_tokens += keep
        self.stats.prefill_tokens += len(ids) - keep
        self.stats.model_seconds += time.perf_counter() - began
        return logits

    def step(self, token_id: int, allowed: torch.Tensor | None = None) -> torch.Tensor:
        began = time.perf_counter()
        self.stats.steps += 1
        logits = self._pool._step(self._slot, token_id, allowed)
        self.stats.model_seconds += time.perf_counter() - began
        return logits

    @property
    def extends_exactly(self) -> bool:
        """As ``FastLlamaBackend.extends_exactly`` (the decoder then checks drafts with
        ``extend``): weights that compute each row on its own, and no CUDA graph (a
        draft's forward is eager)."""
        return self._pool.weights.rows_independent and not getattr(self._slot.model, "use_graph", False)

    def extend(self, ids: Sequence[int]) -> torch.Tensor:
        """Append ``ids``; row i holds the logits after ``ids[: i + 1]``. Batched with
        the other slots' steps: a draft's rows ride along in their forward."""
        began = time.perf_counter()
        self.stats.steps += 1
        logits = self._pool._extend(self._slot, ids)
        self.stats.model_seconds += time.perf_counter() - began
        return logits

    def truncate(self, length: int) -> None:
        """Forget every token after the first ``length`` (the refused part of a draft)."""
        slot = self._slot
        if length < len(slot.ids):  # the slot is this request's: nothing else touches it now
            slot.ids = slot.ids[:length]
            slot.model.cache.length = length
