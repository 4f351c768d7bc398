"""The replayed user of the quality bench: a suggestion is accepted whole, word by word (the
editors' accept-word pieces) or dismissed, judged against what the hole held."""

from __future__ import annotations

from gdg_lsp.bench.quality import markdown, summarize
from gdg_lsp.bench.replayed_acceptance import Replay, next_word, replay, summary


def _pieces(text: str) -> list[str]:
    pieces = []
    while text:
        pieces.append(next_word(text))
        text = text[len(pieces[-1]):]
    return pieces


def test_words_are_the_editors_accept_word_pieces():
    # the example remainder.lua documents for the Neovim plugin's accept-word key
    assert _pieces("x = foo(bar)") == ["x", " =", " foo", "(", "bar", ")"]
    assert _pieces("a\n    b") == ["a", "\n    b"]
    assert _pieces("naïve_x+1") == ["naïve_x", "+", "1"]
    assert _pieces("\r") == ["\r"]  # another blank goes alone


def test_a_suggestion_the_original_goes_on_with_is_accepted_whole():
    assert replay("return total", "return total / count") == Replay("accepted", len("return total"))
    assert replay("  return x  ", "return x") == Replay("accepted", len("return x"))


def test_the_words_the_original_shares_are_accepted_and_the_rest_typed_over():
    # 'return total' is kept; ' *' is the first piece the original does not have
    assert replay("return total * 2", "return total / count") == Replay("partly", len("return total"))
    # a word is taken whole or not at all: 'tot' of 'totals' is not a word of the original
    assert replay("return totals", "return total") == Replay("partly", len("return"))


def test_a_wrong_first_word_is_dismissed_and_an_empty_one_never_shown():
    assert replay("print(x)", "return x") == Replay("dismissed", 0)
    assert replay("   ", "return x") == Replay("not shown", 0)


def test_summary_counts_as_gdg_status_does():
    done = [replay("return total", "return total"), replay("return x + 1", "return x"),
            replay("pass", "return y"), replay("", "return z")]
    counts = summary(done, original_characters=40)
    assert counts == {"shown": 3, "accepted": 1, "partly": 1, "dismissed": 1,
                      "characters": len("return total") + len("return x"), "characters_share": 20 / 40}


def test_the_quality_table_carries_the_replay_per_arm():
    def row(arm: str, got: str, expected: str) -> dict:
        return {"arm": arm, "ghosts": [], "parsed": True, "passed": True, "exact": got == expected,
                "suggestion": got, "expected": expected, "tokens": 3, "free_bits": 1.0, "latency_ms": 10.0,
                "warm_latency_ms": 5.0, "details": {}, "replayed": vars(replay(got, expected))}

    rows = [row("scope", "x = 1", "x = 1"), row("scope", "x = 2", "x = 1"), row("none", "y", "x = 1")]
    table = summarize(rows, ["none", "scope"])
    assert table["scope"]["replayed"]["accepted"] == 1 and table["scope"]["replayed"]["partly"] == 1
    assert table["none"]["replayed"]["dismissed"] == 1
    text = markdown(table, "# t")
    assert "| scope | 2 | 1 | 1 | 0 | 8 (80%) |" in text and "| none | 1 | 0 | 0 | 1 | 0 (0%) |" in text
