"""The masked decoding loop. It knows nothing about languages.

One call decodes one region: it replays the text already typed in the region
into the grammar matcher, holds the first tokens to the healed text (see
``healing``), then picks each token greedily among those the grammar allows,
until the region's line ends, the grammar ends, a stop token comes, the token
or time budget runs out, or the request is cancelled (checked before every
token).

A mid-line hole (``DecodeSpec.end_check``) decodes the middle before text that
stays after the cursor: no token may break the line, and the middle ends where
the model ends it (its stop token, or a token that starts writing the suffix
itself: FIM models trained on whole lines write the middle, then the rest of
the line) only where the middle fits, that is where the suffix's first character
continues the grammar (a name cut inside a word, or run into a word of the
suffix, ends nowhere) and the language's parser reads the statement with the
suffix after it. Elsewhere the stop token is masked (the model's next choice is
taken) and a token like the suffix's start is part of the middle; a middle cut
by a budget is cut back to the first point where it fitted (a model that never
reached the suffix went on writing a line of its own after it).

``free_bits`` is Σ log2 |allowed tokens| over the steps: 0 for a forced
string, about log2 |V| per step for unconstrained text. Counting needs the
whole mask at every step, so it is measured only when asked
(``DecodeSpec.measure_free_bits``). Otherwise a step first asks the grammar
whether the model's own choice is allowed and builds the mask only when it is
not: the token is the one the mask would have given (greedy: the best allowed
token is the best token when that is allowed; sampling: a draw from the whole
distribution, kept when allowed and redrawn under the mask when not, is a draw
from the distribution renormalised over the allowed tokens), and every token is
still accepted by the matcher before it is emitted. Most steps then cost one
check of one token instead of a mask (a mask costs milliseconds on the Python
statement grammar, against a 70 ms CPU step and a few ms on a GPU).

The grammar is reached only through ``gdg_lsp.grammar.engine`` (a ``Compiled``
and its ``Matcher``), whichever engine compiled it.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from gdg_lsp.backends.base import ModelBackend, PrefillCancelled, drafts_exactly, prefill, stats_of
from gdg_lsp.decoding import drafts
from gdg_lsp.grammar.engine import Compiled, Matcher, allocate_bitmask

STOP_NEWLINE = "newline"
STOP_GRAMMAR = "grammar-complete"
STOP_EOS = "end-of-text"
STOP_MAX_TOKENS = "max-tokens"
STOP_TIMEOUT = "timeout"
STOP_CANCELLED = "cancelled"
STOP_DEAD_END = "no-allowed-token"
NATURAL_STOPS = frozenset({STOP_NEWLINE, STOP_GRAMMAR, STOP_EOS})
HEAL_TOP = 32
"""Healing candidates tried in score order before the rest are sorted."""
DRAFT_TOKENS = 6
"""Tokens of a draft looked up in the context (``drafts``), checked in one forward."""


@dataclass
class DecodeSpec:
    prompt_ids: Sequence[int]
    heal: str = ""
    """Text the continuation must start with (the backed-off end of the prompt)."""
    heal_outside: int = 0
    """How many leading characters of ``heal`` lie before the region (not fed to the grammar)."""
    replay: str = ""
    """Region text typed before the healed part: fed to the matcher before decoding."""
    grammar: Compiled | None = None
    """The compiled grammar (``gdg_lsp.grammar.engine``), or None for unconstrained decoding."""
    stop_at_newline: bool = True
    region_may_start_blank: bool = True
    """False when the region starts after the line's indentation: a blank there would
    indent the line twice."""
    max_tokens: int = 64
    deadline: float | None = None
    cancel: threading.Event | None = None
    end_marker: str = "\n"
    """What ends a region in this fragment's language (used to find where a region
    cut by the budget could have ended)."""
    prefilled: Future | None = None
    """From ``Decoder.prefill_ahead(prompt_ids)``: the prompt already running through
    the model (while the grammar compiled); its logits are used instead of a prefill."""
    temperature: float = 0.0
    """0: greedy (the default: the same request gives the same suggestion). Above 0:
    sampled among the allowed tokens (tests walk a grammar at random this way)."""
    seed: int | None = None
    avoid_start: str = ""
    """Text the generated part may not start with (blanks before it aside): the first token
    that would begin with it is masked, so the model's next choice is taken instead (a
    suggestion at ``f(|)`` that would only close the call)."""
    measure_free_bits: bool = True
    """Build the whole mask at every step to count the allowed tokens (benchmarks,
    explain). False: the model's choice is checked first (see the module doc)
    and ``DecodeResult.free_bits`` is None."""
    end_check: Callable[[str], bool] | None = None
    """A mid-line hole: whether the generated text, inserted at the cursor, leaves a statement
    that parses with the text after it (see the module doc). None: the region ends as usual."""
    suffix: str = ""
    """With ``end_check``: the text after the cursor as the grammar would read it (comments
    left out); its first character must continue the grammar where the middle ends."""


@dataclass
class DecodeResult:
    text: str
    """Generated text after the healed part, cut at the region's newline."""
    region_text: str
    """Everything the grammar consumed: replay + region part of heal + generated text."""
    stop_reason: str
    token_ids: list[int] = field(default_factory=list)
    free_bits: float | None = 0.0
    """None when not measured (``DecodeSpec.measure_free_bits``)."""
    logprob: float | None = 0.0
    """Sum of the model's log-probabilities of the chosen tokens (before the mask): how
    natural the model finds the text, to rank candidates. None from engines that do not say."""
    steps: int = 0
    prefill_seconds: float = 0.0
    model_seconds: float = 0.0
    mask_seconds: float = 0.0
    total_seconds: float = 0.0
    trailing_layout: str = ""
    """Blanks the last token carried after the newline (the next line's indentation)."""
    line_continues: bool = False
    """The region ended at a newline the grammar allowed inside an unfinished fragment (a
    line break inside brackets, where the fragment offers one): what follows continues it."""
    complete_text: str | None = None
    """For a region cut short (budget, timeout, cancel): ``text`` up to the last point
    where the grammar would have accepted the end of the region, so that what is
    suggested is a complete statement read the way the grammar read it (a cut
    ``a = b = c,`` would otherwise read as a reference to ``c``). None when the
    region ended naturally or there is no grammar. A mid-line middle that did not end
    with the model's stop token: the text up to the first point where it fitted ("" if none)."""
    token_ends: list[int] = field(default_factory=list)
    """Byte offsets in ``text`` (UTF-8) where a token ended, in order."""

    @property
    def natural(self) -> bool:
        return self.stop_reason in NATURAL_STOPS

    def token_prefixes(self) -> list[str]:
        """For a region cut short: the prefixes of ``text`` that end where a token ended and
        not inside a word the text goes on with (``pri`` of ``print``), longest first. Each is
        a prefix the grammar accepted. A word at the very end may itself be cut: whoever
        shows a prefix judges that one (``Analyzer.trim_partial``)."""
        data = self.text.encode("utf-8")
        found = []
        for end in reversed(self.token_ends):
            if end <= 0 or end > len(data):
                continue
            try:
                prefix = data[:end].decode("utf-8")
            except UnicodeDecodeError:  # a token ended inside a character
                continue
            following = data[end:end + 4].decode("utf-8", "ignore")[:1]
            if following and _is_word(following) and _is_word(prefix[-1]):
                continue
            found.append(prefix)
        return found


class Decoder:
    """Holds the per-vocabulary buffers; ``decode`` runs one region."""

    fits_mid_line = True
    """It checks where a mid-line middle may end (``DecodeSpec.end_check``); a decoder that hands
    the region to another engine cannot, and mid-line holes are off with it."""

    def __init__(self, backend: ModelBackend) -> None:
        self.backend = backend
        self.vocab = backend.vocab
        size = self.vocab.size
        self._bitmask = allocate_bitmask(size)
        self._size = size
        blocked = np.zeros(size, dtype=bool)
        for i in self.vocab.special_ids:
            if i < size:
                blocked[i] = True
        self._special_np = blocked
        self._special = torch.from_numpy(blocked)
        self._special_or_blank = self._special | torch.from_numpy(self.vocab.blank_start)
        self._avoid_masks: dict[bytes, torch.Tensor] = {}
        self.model_first_hits = 0
        """Steps where the grammar accepted the model's own choice (no mask built)."""
        self.masks_built = 0
        self.draft_tokens = DRAFT_TOKENS if drafts_exactly(backend) else 0
        """0: no drafts (a backend without an exact ``extend`` and ``truncate``, or turned off)."""
        self.drafted = 0
        self.draft_hits = 0
        """Tokens whose logits came from a draft's forward instead of a step of their own."""
        self._draft: list[int] = []
        self._draft_rows: list[torch.Tensor] = []
        self._stop = sorted(i for i in self.vocab.stop_ids if i < size)
        self._line_breaking: torch.Tensor | None = None
        self._stopping: torch.Tensor | None = None

    def prefill_ahead(self, ids: Sequence[int], cancel: threading.Event | None = None,
                      deadline: float | None = None) -> Future:
        """Start running ``ids`` through the model on another thread; pass the
        future as ``DecodeSpec.prefilled``. It stops between chunks when ``cancel`` is
        set or ``deadline`` (``time.monotonic``) has passed (``PrefillCancelled``).

        Grammar compilation (C++ or Rust) and the model's prefill (torch) both
        release the GIL, so the caller compiles the statement's grammar while the
        prompt is prefilled: the first request after Γ changes pays the longer
        of the two, not their sum. Until the future is done the backend belongs
        to that thread: the caller must wait for it (``settle``) before anything
        else touches the backend, whether or not it decodes.
        """
        future: Future = Future()
        ids = list(ids)

        def run() -> None:
            try:
                future.set_result(prefill(self.backend, ids, until(cancel, deadline)))
            except BaseException as err:  # re-raised in the decoding thread by result()
                future.set_exception(err)

        threading.Thread(target=run, name="gdg-prefill-ahead", daemon=True).start()
        return future

    def _allowed_from_bitmask(self) -> np.ndarray:
        bits = np.unpackbits(self._bitmask.numpy().view(np.uint8), bitorder="little")
        return bits[: self._size].astype(bool)

    def decode(self, spec: DecodeSpec) -> DecodeResult:
        began = time.perf_counter()
        vocab = self.vocab
        matcher = spec.grammar.matcher() if spec.grammar is not None else None
        if matcher is not None and spec.replay and not matcher.accept_text(spec.replay):
            raise ValueError(f"the grammar does not accept the typed text {spec.replay!r}")

        self._generator = None
        if spec.temperature > 0:
            self._generator = torch.Generator().manual_seed(spec.seed if spec.seed is not None else 0)
        self._temperature = spec.temperature
        pending = spec.heal.encode("utf-8")
        outside = len(spec.heal[: spec.heal_outside].encode("utf-8"))
        produced = bytearray()  # everything generated, healed part included
        region = bytearray(spec.replay.encode("utf-8"))
        ids: list[int] = []
        last_complete: int | None = None  # len(produced) where the region could have ended
        heal_bytes = len(spec.heal.encode("utf-8"))
        token_ends: list[int] = []  # where tokens ended, in bytes after the healed text
        end_marker = spec.end_marker.encode("utf-8")
        free_bits = 0.0
        logprob = 0.0
        mask_seconds = 0.0
        stop = STOP_MAX_TOKENS
        continues = False
        avoid_bytes = spec.avoid_start.encode("utf-8")
        model_before = stats_of(self.backend).model_seconds
        mid_line = spec.end_check is not None
        suffix_bytes = spec.suffix.encode("utf-8")
        fits = False  # mid-line: the middle decoded so far may end here
        first_fit: int | None = None

        prefill_began = time.perf_counter()
        try:
            if spec.prefilled is not None:  # only the wait is counted: the rest overlapped the compile
                logits = spec.prefilled.result()
            else:  # a long prompt stops between chunks when a newer request supersedes this one
                logits = prefill(self.backend, spec.prompt_ids, until(spec.cancel, spec.deadline))
        except PrefillCancelled:
            # superseded, or the budget ran out before the prompt was in: nothing decoded, the
            # chunks that ran stay in the cache for the next request
            cancelled = spec.cancel is not None and spec.cancel.is_set()
            return DecodeResult(text="", region_text=spec.replay, stop_reason=STOP_CANCELLED if cancelled else STOP_TIMEOUT,
                                prefill_seconds=time.perf_counter() - prefill_began,
                                total_seconds=time.perf_counter() - began, free_bits=None)
        prefill_seconds = time.perf_counter() - prefill_began
        self._draft, self._draft_rows = [], []

        for _ in range(spec.max_tokens):
            if spec.cancel is not None and spec.cancel.is_set():
                stop = STOP_CANCELLED
                break
            if spec.deadline is not None and time.monotonic() > spec.deadline:
                stop = STOP_TIMEOUT
                break
            mask_began = time.perf_counter()
            # half-precision logits (an fp16 output layer) are read once as float32: torch's CPU
            # argmax over 151,936 of them took 1.7 ms a step against 0.4 ms in float32
            logits = logits.float()
            no_blank = not spec.region_may_start_blank and not region
            avoid = avoid_bytes if avoid_bytes and not bytes(produced[heal_bytes:]).strip(b" \t") else b""
            if mid_line and fits and self._reaches_suffix(self._pick(logits.masked_fill(self._special, -math.inf)),
                                                          suffix_bytes):
                mask_seconds += time.perf_counter() - mask_began
                stop = STOP_EOS  # the model ends the middle where it fits
                break
            if pending:
                token, allowed_count = self._heal_step(logits, pending, produced, outside, matcher, no_blank, avoid,
                                                       mid_line)
            else:
                blocked = self._avoid_mask(avoid) if avoid else None
                if mid_line:  # the stop token was judged above; the middle stays on its line
                    ends = self._line_breaks() | self._stops_mask()
                    blocked = ends if blocked is None else blocked | ends
                token, allowed_count = self._masked_step(logits, matcher, no_blank, not spec.measure_free_bits,
                                                         blocked)
            mask_seconds += time.perf_counter() - mask_began
            if token is None:
                stop = STOP_DEAD_END
                break
            if allowed_count is not None:
                free_bits += math.log2(max(allowed_count, 1))
            if token in vocab.stop_ids:
                stop = STOP_EOS
                break
            piece = vocab.token_bytes[token]
            region_piece = piece[max(0, outside - len(produced)) :]
            if matcher is not None:
                if pending or outside > len(produced):
                    ok = not region_piece or matcher.accept_bytes(bytes(region_piece))
                else:
                    ok = matcher.accept_token(token)
                if not ok:  # cannot happen under the mask; never emit past it
                    stop = STOP_DEAD_END
                    break
            ids.append(token)
            logprob += float(torch.log_softmax(logits, dim=-1)[token])
            produced += piece
            if len(produced) > heal_bytes:
                token_ends.append(len(produced) - heal_bytes)
            region += region_piece
            pending = pending[len(piece) :] if len(piece) < len(pending) else b""
            if spec.stop_at_newline and not pending and b"\n" in region_piece:
                stop = STOP_NEWLINE
                continues = matcher is not None and not matcher.is_complete()
                break
            if matcher is not None and matcher.is_terminated():
                stop = STOP_GRAMMAR
                break
            if matcher is not None and not pending and matcher.could_end_with(end_marker):
                last_complete = len(produced)
            if mid_line:
                fits = not pending and self._middle_fits(spec, matcher, bytes(produced[heal_bytes:]))
                first_fit = len(produced) if fits and first_fit is None else first_fit
            logits = self._advance(token, spec, ids, tokens_left=spec.max_tokens - len(ids))

        generated = bytes(produced[len(spec.heal.encode("utf-8")) :]) if len(produced) >= len(spec.heal.encode("utf-8")) else b""
        text, layout = _cut_line(generated.decode("utf-8", "ignore"), spec.stop_at_newline and stop == STOP_NEWLINE)
        model_after = stats_of(self.backend).model_seconds
        complete_text = None
        if mid_line and stop != STOP_EOS:
            complete_text = bytes(produced[heal_bytes:first_fit]).decode("utf-8", "ignore") if first_fit else ""
        elif matcher is not None and stop not in NATURAL_STOPS:
            cut = bytes(produced[heal_bytes:last_complete]) if last_complete is not None and last_complete >= heal_bytes else b""
            complete_text = cut.decode("utf-8", "ignore")
        return DecodeResult(
            text=text,
            region_text=bytes(region).decode("utf-8", "ignore"),
            stop_reason=stop,
            token_ids=ids,
            free_bits=free_bits if spec.measure_free_bits else None,
            logprob=logprob,
            steps=len(ids),
            prefill_seconds=prefill_seconds,
            model_seconds=model_after - model_before,
            mask_seconds=mask_seconds,
            total_seconds=time.perf_counter() - began,
            trailing_layout=layout,
            line_continues=continues,
            complete_text=complete_text,
            token_ends=token_ends if complete_text is not None else [],
        )

    def _advance(self, token: int, spec: DecodeSpec, ids: list[int], tokens_left: int) -> torch.Tensor:
        """Feed the chosen ``token`` to the model; the logits after it.

        When the previous forward ran over a draft that starts with this token,
        its logits are already there. Otherwise a new draft is looked up and the
        model runs once over the token and the draft, keeping the logits of every
        position: the draft's tokens are used only as far as the tokens chosen
        (under the grammar, as always) agree with it, so what is decoded is what
        stepping token by token gives."""
        if self._draft:
            expected, row = self._draft.pop(0), self._draft_rows.pop(0)
            if token == expected:
                self.draft_hits += 1
                return row
            # the cache holds the rest of a refused draft: keep the prompt and the tokens before this one
            self.backend.truncate(len(spec.prompt_ids) + len(ids) - 1)
            self._draft, self._draft_rows = [], []
        draft = []
        if self.draft_tokens and tokens_left > 1:
            draft = drafts.propose([*spec.prompt_ids, *ids], min(self.draft_tokens, tokens_left - 1))
            if spec.stop_at_newline:  # nothing past the end of the region is needed
                for i, d in enumerate(draft):
                    if b"\n" in self.vocab.token_bytes[d]:
                        draft = draft[: i + 1]
                        break
        if not draft:
            return self.backend.step(token)
        rows = self.backend.extend([token, *draft])
        self.drafted += len(draft)
        self._draft, self._draft_rows = draft, list(rows[1:])
        return rows[0]

    @staticmethod
    def _middle_fits(spec: DecodeSpec, matcher: Matcher | None, generated: bytes) -> bool:
        """Whether a mid-line middle may end after ``generated`` (see the module doc)."""
        try:
            middle = generated.decode("utf-8")
        except UnicodeDecodeError:  # a token ended inside a character
            return False
        if not middle.strip():
            return False
        suffix = spec.suffix
        if suffix[:1] and _is_word(suffix[0]) and _is_word(middle[-1]):
            return False  # the middle's last word would run into the suffix's first
        if middle[-1] in " \t" and (not suffix or suffix[0] in " \t)]},:;."):
            return False  # a blank before a blank, a closer or the line's end is never wanted
        if matcher is not None:
            ahead = suffix.lstrip(" \t")[:1]
            if not ahead:  # nothing but blanks follows: the statement ends with the middle
                if not matcher.could_end_with(spec.end_marker.encode("utf-8")):
                    return False
            # the blanks and the first character after them: a name the middle ends on must be
            # complete there. After a closer or an operator, that character alone also does (where
            # the grammar writes no blank); never after a word, whose blank may be what makes it a
            # word (a shell's `8 >` is an argument, `8>` a redirection)
            else:
                blanked = suffix[: len(suffix) - len(suffix.lstrip(" \t")) + 1]
                tries = (blanked,) if _is_word(middle[-1]) else tuple(dict.fromkeys((blanked, ahead)))
                if not any(_continues(matcher, s) for s in tries):
                    return False
        return spec.end_check(middle)

    def _reaches_suffix(self, token: int, suffix: bytes) -> bool:
        """Where the middle fits, whether the model's choice ends it: its stop token, or a token that
        starts writing the suffix itself (a FIM model that lays the cursor's line out whole
        writes the middle, then the rest of the line, then the line's end)."""
        if token in self.vocab.stop_ids:
            return True
        piece = self.vocab.token_bytes[token] if token < len(self.vocab.token_bytes) else b""
        line = piece.split(b"\n", 1)[0]
        if not suffix:
            return bool(piece) and not line.strip()  # the line's end (or blanks before it)
        return bool(line.strip()) and (suffix.startswith(line) or line.startswith(suffix))

    def _line_breaks(self) -> torch.Tensor:
        """Tokens with a line break (a mid-line middle stays on its line)."""
        if self._line_breaking is None:
            flags = np.array([b"\n" in piece or b"\r" in piece for piece in self.vocab.token_bytes[: self._size]]
                             + [False] * max(0, self._size - len(self.vocab.token_bytes)), dtype=bool)
            self._line_breaking = torch.from_numpy(flags)
        return self._line_breaking

    def _stops_mask(self) -> torch.Tensor:
        if self._stopping is None:
            flags = np.zeros(self._size, dtype=bool)
            flags[self._stop] = True
            self._stopping = torch.from_numpy(flags)
        return self._stopping

    def _pick(self, scores: torch.Tensor) -> int:
        if self._generator is None:  # numpy's argmax (the first maximum, as torch's): 0.01 ms over 151,936
            return int(np.argmax(scores.numpy()))  # float32 scores where torch's took 0.2 ms
        probs = torch.softmax(scores / self._temperature, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self._generator))

    def _avoid_mask(self, avoid: bytes) -> torch.Tensor:
        """Tokens whose bytes, blanks before them aside, start with ``avoid`` (or are a start of
        it: ``)`` split over tokens), kept per text."""
        mask = self._avoid_masks.get(avoid)
        if mask is None:
            flags = np.zeros(self._size, dtype=bool)
            for token, piece in enumerate(self.vocab.token_bytes[: self._size]):
                body = piece.lstrip(b" \t")
                flags[token] = bool(body) and (body.startswith(avoid) or avoid.startswith(body))
            mask = self._avoid_masks[avoid] = torch.from_numpy(flags)
        return mask

    def _masked_step(self, logits: torch.Tensor, matcher: Matcher | None, no_blank: bool = False,
                     model_first: bool = False, avoid: torch.Tensor | None = None) -> tuple[int | None, int | None]:
        """(token, how many tokens were allowed); the count is None when the model's
        choice was checked alone (``model_first``) and the grammar accepted it. ``avoid``:
        tokens masked besides the grammar's (``DecodeSpec.avoid_start``)."""
        blocked = self._special_or_blank if no_blank else self._special
        if avoid is not None:
            blocked = blocked | avoid
        if model_first and matcher is not None:
            if self._generator is None:  # greedy: the best token, unless it is blocked (rare: no copy of the logits)
                guess = self._pick(logits)
                if blocked[guess]:
                    guess = self._pick(logits.masked_fill(blocked, -math.inf))
            else:
                guess = self._pick(logits.masked_fill(blocked, -math.inf))
            if matcher.allows(guess):  # the loop accepts the token it is given
                self.model_first_hits += 1
                return guess, None
        if matcher is not None:
            self.masks_built += 1
        if matcher is None or not matcher.fill_mask(self._bitmask):
            return self._pick(logits.masked_fill(blocked, -math.inf)), self._size - int(blocked.sum())
        allowed = self._allowed_from_bitmask()
        allowed &= ~self._special_np  # an engine may allow a special token's text inside a string
        if no_blank:
            allowed &= ~self.vocab.blank_start
        if avoid is not None:
            allowed &= ~avoid.numpy()
        count = int(allowed.sum())
        if count == 0:
            return None, 0
        scores = logits.masked_fill(torch.from_numpy(~allowed), -math.inf)
        return self._pick(scores), count

    def _heal_step(
        self, logits: torch.Tensor, pending: bytes, produced: bytearray, outside: int, matcher: Matcher | None,
        no_blank: bool = False, avoid: bytes = b"", mid_line: bool = False,
    ) -> tuple[int | None, int]:
        """The best token consistent with the healed text (and with the grammar past it);
        with ``avoid``, not one whose bytes past the healed text start with it.

        Candidates are tried best-first and the first admissible one wins, so a
        healed blank (thousands of tokens start with one) costs a few grammar
        checks rather than thousands. The count returned for ``free_bits`` is
        the number of candidates, an upper bound of the admissible set.
        """
        candidates = self.vocab.healing_candidates(pending)
        if not len(candidates):
            return None, 0
        scores = logits[torch.from_numpy(candidates)]
        # a blank has thousands of candidates and the best few almost always fit:
        # sort them all only when the first HEAL_TOP do not
        top = torch.topk(scores, min(HEAL_TOP, len(candidates))).indices.tolist()
        rest = lambda: torch.argsort(scores, descending=True).tolist()[HEAL_TOP:]  # noqa: E731
        for position in itertools.chain(top, _lazy(rest)):
            token = int(candidates[position])
            piece = self.vocab.token_bytes[token]
            region_piece = piece[max(0, outside - len(produced)) :] if len(produced) + len(piece) > outside else b""
            if no_blank and region_piece[:1] in (b" ", b"\t"):
                continue
            if mid_line and (b"\n" in piece or b"\r" in piece):
                continue
            if avoid and (beyond := piece[len(pending):].lstrip(b" \t")) and (
                    beyond.startswith(avoid) or avoid.startswith(beyond)):
                continue
            if matcher is not None and len(piece) > len(pending):
                if region_piece:
                    if not matcher.accept_bytes(bytes(region_piece)):
                        continue
                    matcher.rollback(1)
            return token, len(candidates)
        return None, 0


class _Until:
    """A stop flag for a prefill: set when the request is cancelled or its deadline has passed
    (a prompt of thousands of tokens must not run past the budget the editor waits for)."""

    def __init__(self, cancel: threading.Event | None, deadline: float) -> None:
        self._cancel = cancel
        self._deadline = deadline

    def is_set(self) -> bool:
        return (self._cancel is not None and self._cancel.is_set()) or time.monotonic() > self._deadline


def until(cancel: threading.Event | None, deadline: float | None) -> Any:
    """What a prefill checks between chunks: ``cancel``, and ``deadline`` when there is one."""
    return cancel if deadline is None else _Until(cancel, deadline)


def settle(future: Future | None) -> None:
    """Wait until a ``prefill_ahead`` is over, whatever its outcome (its error, if
    any, is raised where its logits are used)."""
    if future is not None:
        future.exception()


def _lazy(make: Any):
    yield from make()


def _continues(matcher: Matcher, char: str) -> bool:
    """Whether the grammar takes ``char`` next (the matcher is left as it was)."""
    if not matcher.accept_bytes(char.encode("utf-8")):
        return False
    matcher.rollback(1)
    return True


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _cut_line(text: str, ended_by_newline: bool) -> tuple[str, str]:
    """Split generated text at its first newline: (line, blanks after it)."""
    if not ended_by_newline or "\n" not in text:
        return text, ""
    line, rest = text.split("\n", 1)
    return line, rest if not rest.strip() else ""
