"""Drafts looked up in the context save model steps and change nothing else."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gdg_lsp.decoding import drafts
from gdg_lsp.decoding.engine import Decoder, DecodeSpec
from gdg_lsp.grammar.xgrammar_engine import GrammarCache


def test_the_latest_occurrence_of_the_longest_suffix_is_followed():
    context = [1, 2, 3, 9, 9, 5, 2, 3, 7, 7, 8, 1, 2, 3]
    # [1, 2, 3] occurred at 0 (then 9 9 5 ...); [2, 3] alone last occurred at 6 (then 7 7):
    # the longer match wins even though it is older
    assert drafts.propose(context, 3) == [9, 9, 5]
    assert drafts.propose([4, 2, 3, 7, 7, 2, 3], 2) == [7, 7]
    assert drafts.propose([4, 5, 6], 4) == []
    assert drafts.propose([1, 2, 1, 2], 0) == []
    assert len(drafts.propose(list(range(50)) * 2, 6)) == 6


class CopyingModel:
    """A backend whose next token is the one that followed the previous occurrence of
    the last token (else token 1): it repeats its context, so drafts are often right.
    Tracks its cache like a real backend and counts forwards."""

    extends_exactly = True

    def __init__(self, vocab) -> None:
        self.vocab, self.name, self.device = vocab, "copying", "cpu"
        self.ids: list[int] = []
        self.forwards = 0

    def _logits(self, ids: list[int]) -> torch.Tensor:
        out = torch.zeros(self.vocab.size)
        last = ids[-1]
        for i in range(len(ids) - 2, -1, -1):
            if ids[i] == last:
                out[ids[i + 1]] = 5.0
                break
        else:
            out[1] = 5.0
        out += torch.arange(self.vocab.size) * 1e-3  # no ties
        return out

    def prefill(self, ids):
        self.ids = list(ids)
        self.forwards += 1
        return self._logits(self.ids)

    def step(self, token):
        self.ids.append(token)
        self.forwards += 1
        return self._logits(self.ids)

    def extend(self, ids):
        self.forwards += 1
        rows = []
        for token in ids:
            self.ids.append(token)
            rows.append(self._logits(self.ids))
        return torch.stack(rows)

    def truncate(self, length):
        assert length <= len(self.ids)
        del self.ids[length:]


@settings(max_examples=30, deadline=None)
@given(body=st.lists(st.sampled_from(["x", "ab", "(", ")", " =", "len", "self", ".", ",", "1"]), min_size=4, max_size=24),
       constrained=st.booleans())
def test_decoding_with_drafts_gives_the_tokens_of_stepping(tiny_vocab, body, constrained):
    text = "".join(body) * 2
    ids = tiny_vocab.encode(text).ids
    grammar = GrammarCache(tiny_vocab).get('root ::= [a-z() =.,1]+ "\\n"') if constrained else None
    results = {}
    for tokens in (0, 6):
        model = CopyingModel(tiny_vocab)
        decoder = Decoder(model)
        decoder.draft_tokens = tokens
        result = decoder.decode(DecodeSpec(ids, grammar=grammar, max_tokens=20, stop_at_newline=False))
        results[tokens] = (result.token_ids, result.stop_reason, model.forwards, decoder)
        # the cache holds the prompt and what was emitted (and at most the unused rest of a draft)
        assert model.ids[: len(ids) + len(result.token_ids) - 1] == [*ids, *result.token_ids[:-1]]
    plain, drafted = results[0], results[6]
    assert drafted[:2] == plain[:2]
    assert drafted[2] <= plain[2]
    assert plain[3].draft_hits == 0


def test_a_repetitive_context_is_decoded_in_fewer_forwards(tiny_vocab):
    ids = tiny_vocab.encode("self.x = len(ab)\nself.x = len(ab)\nself.x").ids
    model = CopyingModel(tiny_vocab)
    decoder = Decoder(model)
    result = decoder.decode(DecodeSpec(ids, max_tokens=12, stop_at_newline=False))
    assert decoder.draft_hits >= 6
    assert model.forwards <= 1 + result.steps - decoder.draft_hits
