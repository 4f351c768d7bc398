"""The masked decoding loop with a random-weight model: healing, budgets, cancellation, free_bits."""

from __future__ import annotations

import math
import threading
import time

import pytest

from gdg_lsp import fragments
from gdg_lsp.decoding import healing
from gdg_lsp.decoding.engine import (
    STOP_CANCELLED,
    STOP_MAX_TOKENS,
    STOP_NEWLINE,
    STOP_TIMEOUT,
    Decoder,
    DecodeSpec,
)
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.grammar.engine import full_match
from gdg_lsp.grammar.xgrammar_engine import GrammarCache


@pytest.fixture(scope="module")
def tiny_cache(tiny_vocab):
    return GrammarCache(tiny_vocab)


def _line_grammar(names):
    rules = ebnf.parse('root ::= %name% "(" %name% ")" "\\n"')
    frag = fragments.Fragment("t", "call", "Stmt", ("gamma",), rules,
                              {"name": fragments.SlotSpec("name", {"gamma": {"sort": "Variable"}})})
    return fragments.instantiate(frag, "gamma", Gamma([Binding(n, "Variable") for n in names])).text


def test_masked_decode_produces_a_complete_line(random_backend, tiny_cache):
    decoder = Decoder(random_backend)
    compiled = tiny_cache.get(_line_grammar(["len", "abc", "x"]))
    prompt = random_backend.vocab.encode("x = 1\n").ids
    result = decoder.decode(DecodeSpec(prompt, grammar=compiled, max_tokens=40))
    assert result.stop_reason == STOP_NEWLINE
    assert full_match(compiled, result.region_text.split("\n")[0] + "\n")
    assert result.free_bits >= 0 and result.steps == len(result.token_ids)


def test_replay_and_healing_continue_the_typed_text(random_backend, tiny_cache):
    decoder = Decoder(random_backend)
    compiled = tiny_cache.get(_line_grammar(["len", "abc", "abd"]))
    text = "y = 2\nab"
    enc = random_backend.vocab.encode(text)
    split = healing.split(text, enc, random_backend.vocab)
    assert split.heal_text and text.endswith(split.heal_text)
    region_start = text.index("ab")
    replay = text[region_start : split.heal_start] if split.heal_start >= region_start else ""
    outside = max(0, region_start - split.heal_start)
    result = decoder.decode(DecodeSpec(split.ids, heal=split.heal_text, heal_outside=outside, replay=replay,
                                       grammar=compiled, max_tokens=40))
    line = (text[region_start:] + result.text)
    assert line.startswith("ab") and full_match(compiled, line + "\n"), line


def test_budgets_and_cancellation(random_backend, tiny_cache):
    decoder = Decoder(random_backend)
    prompt = random_backend.vocab.encode("x").ids
    grammar = tiny_cache.get('root ::= [a-z]+ "\\n"')
    assert decoder.decode(DecodeSpec(prompt, grammar=grammar, max_tokens=3)).stop_reason == STOP_MAX_TOKENS
    assert decoder.decode(DecodeSpec(prompt, grammar=grammar, max_tokens=50, deadline=time.monotonic() - 1)).stop_reason == STOP_TIMEOUT
    cancel = threading.Event()
    cancel.set()
    result = decoder.decode(DecodeSpec(prompt, grammar=grammar, max_tokens=50, cancel=cancel))
    assert result.stop_reason == STOP_CANCELLED and result.steps == 0


def test_cancel_stops_within_one_token(random_backend, tiny_cache):
    decoder = Decoder(random_backend)
    cancel = threading.Event()
    steps_seen = []
    original = random_backend.step

    def step_then_cancel(token):
        steps_seen.append(token)
        if len(steps_seen) == 3:
            cancel.set()
        return original(token)

    random_backend.step = step_then_cancel
    try:
        grammar = tiny_cache.get('root ::= [a-z]+ "\\n"')
        result = decoder.decode(DecodeSpec(random_backend.vocab.encode("x").ids, grammar=grammar, max_tokens=50, cancel=cancel))
    finally:
        del random_backend.step
    assert result.stop_reason == STOP_CANCELLED
    assert result.steps == 3  # the token being decoded when the event came is the last


def test_free_bits_are_zero_for_a_forced_string(random_backend, tiny_cache):
    decoder = Decoder(random_backend)
    grammar = tiny_cache.get('root ::= "abc" "\\n"')
    result = decoder.decode(DecodeSpec(random_backend.vocab.encode("x").ids, grammar=grammar, max_tokens=20))
    assert result.text == "abc"
    # one way to spell it per step can still mean a few tokenizations: free_bits stays small
    assert result.free_bits <= 3 * math.log2(4)


def test_unconstrained_decode_stops_at_the_newline(random_backend):
    decoder = Decoder(random_backend)
    result = decoder.decode(DecodeSpec(random_backend.vocab.encode("a").ids, max_tokens=200))
    assert "\n" not in result.text
    assert result.free_bits > 0


def test_kv_cache_is_reused_for_a_shared_prefix(random_backend):
    ids = random_backend.vocab.encode("def f(x):\n    return x\n").ids
    random_backend.reset()
    random_backend.prefill(ids)
    before = random_backend.stats.reused_tokens
    random_backend.prefill(ids + random_backend.vocab.encode("print").ids)
    assert random_backend.stats.reused_tokens - before == len(ids)


def test_healing_backs_off_indentation_and_partial_words(smol_vocab):
    for text, must_cover in [("def f():\n    ", "\n    "), ("x = foo.ba", "ba"), ("x = 1\n", "\n")]:
        split = healing.split(text, smol_vocab.encode(text), smol_vocab)
        assert text.endswith(split.heal_text) and split.heal_text.endswith(must_cover), (text, split.heal_text)
        assert smol_vocab.decode(split.ids) + split.heal_text == text
    floor_split = healing.split("f(a,\n    b", smol_vocab.encode("f(a,\n    b"), smol_vocab, floor=5)
    assert floor_split.heal_start >= 5


@pytest.mark.parametrize("heal", ["", " "])
def test_avoid_start_masks_the_first_token_only(random_backend, tiny_cache, heal):
    """``avoid_start`` (the service's next-best retry at ``f(|)``): whatever the weights, the
    generated text does not start with it (blanks aside), healed or not, and it may still
    come later in the same line."""
    decoder = Decoder(random_backend)
    grammar = tiny_cache.get('root ::= " "? (")" | "ab" ")" | "x" "," " "? ")") "\\n"')
    prompt = random_backend.vocab.encode("f(").ids
    starts, later = set(), 0
    for seed in range(30):
        free = decoder.decode(DecodeSpec(prompt, heal=heal, grammar=grammar, max_tokens=10, temperature=1.0, seed=seed))
        starts.add(free.text.lstrip()[:1])
        result = decoder.decode(DecodeSpec(prompt, heal=heal, grammar=grammar, max_tokens=10, temperature=1.0,
                                           seed=seed, avoid_start=")"))
        assert result.text.lstrip()[:1] in ("a", "x"), result.text
        later += ")" in result.text
    assert ")" in starts  # without it, the closer does come first sometimes: the mask did something
    assert later  # only the first token is masked
