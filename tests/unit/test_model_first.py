"""Checking the model's own choice before building a mask changes nothing but the cost:
greedy decoding gives the same tokens, sampling the same distribution, and the
mask is built only on the steps where the grammar refuses the model's choice."""

from __future__ import annotations

import collections
import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp import fragments
from gdg_lsp.decoding.engine import Decoder, DecodeSpec
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.vocab import ListVocabulary

NAMES = ["x", "xy", "ab", "abc", "len", "print", "self", "a_1", "b2", "zz"]


def _call_grammar(names: list[str]) -> str:
    rules = ebnf.parse('root ::= %name% " = " %name% "(" (%name% ("," %name%)*)? ")" "\\n"')
    frag = fragments.Fragment("t", "call", "Stmt", ("gamma",), rules,
                              {"name": fragments.SlotSpec("name", {"gamma": {"sort": "Variable"}})})
    return fragments.instantiate(frag, "gamma", Gamma([Binding(n, "Variable") for n in names])).text


@settings(max_examples=25, deadline=None)
@given(names=st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True),
       prompt=st.sampled_from(["x = 1\n", "ab(", "def f():\n", "print(len(x))\n"]))
def test_greedy_tokens_are_those_of_the_full_mask(random_backend, tiny_vocab, names, prompt):
    compiled = GrammarCache(tiny_vocab).get(_call_grammar(names))
    ids = tiny_vocab.encode(prompt).ids
    full = Decoder(random_backend).decode(DecodeSpec(ids, grammar=compiled, max_tokens=30))
    fast_decoder = Decoder(random_backend)
    fast = fast_decoder.decode(DecodeSpec(ids, grammar=compiled, max_tokens=30, measure_free_bits=False))
    assert fast.token_ids == full.token_ids and fast.stop_reason == full.stop_reason
    assert fast.free_bits is None and full.free_bits is not None
    assert fast_decoder.model_first_hits + fast_decoder.masks_built == fast.steps + (fast.stop_reason == "no-allowed-token")


def test_both_outcomes_happen_with_a_random_model(random_backend, tiny_vocab):
    """The random model is often refused by the grammar and sometimes not: the
    equivalence above covers both branches."""
    compiled = GrammarCache(tiny_vocab).get(_call_grammar(NAMES))
    decoder = Decoder(random_backend)
    for seed in range(8):
        decoder.decode(DecodeSpec(tiny_vocab.encode("x = 1\n").ids, grammar=compiled, max_tokens=30,
                                  measure_free_bits=False, temperature=1.0, seed=seed))
    assert decoder.model_first_hits > 0 and decoder.masks_built > 0


class FixedLogits:
    """A backend whose next-token distribution never changes."""

    def __init__(self, vocab: ListVocabulary, logits: torch.Tensor) -> None:
        self.vocab, self.logits, self.name, self.device = vocab, logits, "fixed", "cpu"

    def prefill(self, ids):
        return self.logits.clone()

    def step(self, token_id):
        return self.logits.clone()


def test_sampling_is_the_distribution_renormalised_over_the_allowed_tokens():
    """p(a)=0.1, p(b)=0.2, p(c)=0.7 and the grammar allows a or b: a draw must be
    a with probability 1/3, b with 2/3, whether or not the mask was built first."""
    vocab = ListVocabulary(["a", "b", "c", "\n"])
    probs = torch.tensor([1e-9, 0.1, 0.2, 0.7, 1e-9])
    backend = FixedLogits(vocab, probs.log())
    compiled = GrammarCache(vocab).get('root ::= ("a" | "b") "\\n"')
    counts = {flag: collections.Counter() for flag in (True, False)}
    draws = 3000
    for measure in (True, False):
        decoder = Decoder(backend)
        for seed in range(draws):
            result = decoder.decode(DecodeSpec([3], grammar=compiled, max_tokens=1, temperature=1.0, seed=seed,
                                               measure_free_bits=measure))
            counts[measure][result.text] += 1
    for measure, seen in counts.items():
        assert set(seen) == {"a", "b"}, seen
        share_a = seen["a"] / draws
        # 1/3 ± 4 standard deviations of a binomial share over 3000 draws
        assert abs(share_a - 1 / 3) < 4 * math.sqrt((1 / 3) * (2 / 3) / draws), (measure, seen)
