"""Alternatives (gdg.candidates): distinct, ranked (parsing first, then mean log-probability),
each ghost-free under the same mask, and all of them in the inline completion response."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.bench.stress import slow_random_resolver
from gdg_lsp.documents import Document
from gdg_lsp.executor import StopReason
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.server import create_server
from gdg_lsp.service import candidates as cands
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.unit.test_guarantee import IDENT, assert_no_ghosts


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=6, unique=True), seed=st.integers(0, 10_000))
def test_every_candidate_references_only_gamma(names, seed, tiny_vocab):
    """Random Γ (the parameters), a random-weight model: each candidate loads only Γ's
    names; the candidates are distinct and ranked."""
    service = CompletionService(random_backend(tiny_vocab, seed=seed, hidden=16, layers=1))
    params = ", ".join(names)
    code = f"def f({params}):\n    "
    doc = Document("file:///c.py", "python", 1, code, parse)
    suggestion = service.complete(doc.snapshot(), len(code), Settings(max_tokens=16, candidates=3))
    found = suggestion.candidates
    assert len(found) <= 3
    assert len({(c.text, c.end) for c in found}) == len(found)
    if found:
        assert suggestion.text == found[0].text
    for candidate in found:
        assert candidate.execution.rung in ("gamma", None)
        assert_no_ghosts(f"def f({params})", candidate.text, set(suggestion.hole.gamma.names()))
    assert cands.rank(found) == found


def _candidate(parses, logprob, stop=StopReason.MAX_LINES, text="x"):
    class _Execution:
        mean_logprob = logprob
        stop_reason = stop
        rung = "gamma"

    return cands.Candidate(text, 0, _Execution(), parses)


def test_ranking_puts_parsing_lines_first_then_the_likelier():
    a, b, c, d = _candidate(False, -0.1), _candidate(True, -2.0), _candidate(True, -0.5), _candidate(None, -0.2)
    assert cands.rank([a, b, c, d]) == [c, b, d, a]


def test_a_statement_cut_by_the_budget_never_ranks_above_a_complete_one():
    """With gdg.candidates 3 a bare `return` cut by the time budget (it parses, and one likely token
    has a high mean log-probability) ranked above `return average, spread`."""
    cut = _candidate(True, -0.05, StopReason.TIMEOUT, "return")
    tokens = _candidate(True, -0.1, StopReason.MAX_TOKENS, "return average,")
    whole = _candidate(True, -0.9, StopReason.MAX_LINES, "return average, spread")
    broken = _candidate(False, -0.3, StopReason.MODEL_END, "return average spread")
    assert cands.rank([cut, tokens, whole, broken]) == [whole, broken, cut, tokens]
    assert [c.complete for c in (cut, tokens, whole, broken)] == [False, False, True, True]


def test_the_parse_check_reads_only_the_edited_line():
    parser = parse
    doc = "def f(x):\n    y = g()\n    return y\n"
    at = doc.index("g(") + 2
    assert cands.line_parses(parser, doc, at, at + 1, "x)") is True
    assert cands.line_parses(parser, doc, at, at + 1, "x))") is False
    broken_elsewhere = "def f(x):\n    y = g()\n    return (\n"
    assert cands.line_parses(parser, broken_elsewhere, at, at + 1, "x)") is True
    assert cands.line_parses(None, doc, at, at, "x") is None


def test_one_candidate_is_the_default_and_costs_one_decode(random_backend):
    service = CompletionService(random_backend)
    code = "def f(ab):\n    x = ab\n    "
    doc = Document("file:///s.py", "python", 1, code, parse)
    before = service.model_steps()
    suggestion = service.complete(doc.snapshot(), len(code), Settings(max_tokens=8))
    assert len(suggestion.candidates) <= 1
    assert service.model_steps() - before <= 8 + 1
    # each candidate's entry, with why it carries no guarantee (None when it does)
    assert suggestion.summary()["candidates"] == [
        {**c.summary(), "notGuaranteedBecause": None if c.guaranteed else suggestion.unguaranteed_because()}
        for c in suggestion.candidates]


async def test_the_first_candidate_comes_at_once_and_the_others_on_the_next_ask():
    """gdg.candidates 3: the first answer holds one item (the others would have cut it short in
    one budget); they are decoded after it in a time slice of their own, and the next ask at the
    same place (VS Code's show-next, Neovim's cycle) is answered with all of them, without another
    decode of the first, the first keeping its id; gdg/suggestion says how the search went."""
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0, seed=5)
    uri = "file:///cands/m.py"
    # no work ahead: its prefill would draw from the random model's stream at a moment of its own
    # (on a loaded machine the first answer then came out empty)
    options = {"maxTokens": 24, "candidates": 3, "workAhead": False}
    async with InProcessServer(server=server_obj, initialization_options=options) as server:
        assert await server.wait_model() == "ready"
        server.open(uri, "import os\nvalue_total = 1\nvalue_count = 2\n")
        ask = {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 0}, "context": {"triggerKind": 1}}
        first = (await server.request("textDocument/inlineCompletion", ask))["result"]["items"]
        info = next(m["params"] for m in reversed(server.messages) if m.get("method") == "gdg/suggestion")
        assert len(first) == 1 and info["alternatives"]["pending"] and info["alternatives"]["wanted"] == 3
        assert [c["id"] for c in info["candidates"]] == [first[0]["command"]["arguments"][0]["id"]]

        again = (await server.request("textDocument/inlineCompletion", ask))["result"]["items"]
        update = next(m["params"] for m in server.messages if m.get("method") == "gdg/suggestion"
                      and m["params"].get("update") == "alternatives")
        assert [i["insertText"] for i in again] == [c["text"] for c in update["candidates"]]
        assert 2 <= len(again) <= 3 and len({i["insertText"] for i in again}) == len(again)
        ids = [i["command"]["arguments"][0]["id"] for i in again]
        assert len(set(ids)) == len(ids) and first[0]["command"]["arguments"][0]["id"] in ids
        assert first[0]["insertText"] in [i["insertText"] for i in again]
        assert update["alternatives"]["found"] == len(again)
        # each alternative with its own label and, without the guarantee, its reason
        assert all((c["notGuaranteedBecause"] is None) == c["guaranteed"] for c in update["candidates"])


async def test_alternatives_survive_typing_through():
    """Typed through, each alternative the typed text starts is kept (shortened, its id kept), the
    others go, and nothing is decoded for the key."""
    server_obj = create_server(dev=True)
    server_obj.session.worker.resolve_model = slow_random_resolver(0.0, seed=12)  # 7==()@9, Fjz..., 7!=tuple...
    uri = "file:///cands/t.py"
    # no work ahead: its prefill would draw from the random model's stream at a moment of its own
    options = {"maxTokens": 24, "candidates": 3, "workAhead": False}
    async with InProcessServer(server=server_obj, initialization_options=options) as server:
        assert await server.wait_model() == "ready"
        server.open(uri, "import os\nvalue_total = 1\nvalue_count = 2\n")
        ask = {"textDocument": {"uri": uri}, "position": {"line": 3, "character": 0}, "context": {"triggerKind": 1}}
        await server.request("textDocument/inlineCompletion", ask)
        shown = (await server.request("textDocument/inlineCompletion", ask))["result"]["items"]
        assert len(shown) >= 2
        typed = shown[0]["insertText"][0]
        server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}, "text": typed}]})
        decodes = server_obj.session.worker.stats.decodes
        ask["position"]["character"] = 1
        rest = (await server.request("textDocument/inlineCompletion", ask))["result"]["items"]
        expected = [(i["insertText"][1:], i["command"]["arguments"][0]["id"]) for i in shown
                    if i["insertText"].startswith(typed) and len(i["insertText"]) > 1]
        assert [(i["insertText"], i["command"]["arguments"][0]["id"]) for i in rest] == expected
        assert 1 <= len(expected) < len(shown)  # one alternative kept, one gone
        assert all(i["command"]["arguments"][0]["offset"] == 1 for i in rest)
        assert server_obj.session.worker.stats.decodes == decodes  # no decode for the key typed


def test_the_alternatives_slice_has_its_own_budget_and_says_when_it_ran_out(random_backend):
    """The first candidate alone (first_only), then the others in a slice of gdg.timeoutMs of their
    own: a model too slow for eight in that slice gives fewer, and says it was cut by time."""
    import time as clock

    class Slow:
        def __init__(self, inner):
            self.inner, self.vocab, self.name = inner, inner.vocab, "slow"

        def reset(self):
            self.inner.reset()

        def prefill(self, ids):
            return self.inner.prefill(ids)

        def step(self, token_id):
            clock.sleep(0.02)
            return self.inner.step(token_id)

    service = CompletionService(Slow(random_backend))
    code = "def f(ab, cd):\n    x = ab\n    "
    doc = Document("file:///slice.py", "python", 1, code, parse)
    first = service.complete(doc.snapshot(), len(code), Settings(candidates=8, max_tokens=6, timeout_ms=30_000),
                             first_only=True)
    assert len(first.candidates) <= 1 and first.alternatives["pending"] and first.more is not None
    began = clock.monotonic()
    more = service.more_candidates(first, doc.snapshot(), Settings(candidates=8, max_tokens=6, timeout_ms=150))
    assert clock.monotonic() - began < 2.0
    assert more.alternatives["cut"] == "time" and more.alternatives["found"] < 8
    assert more.alternatives["pending"] is False and "alternatives" in more.timings
    assert {c.text for c in first.candidates} <= {c.text for c in more.candidates}  # ranked with the others


def test_a_greedy_answer_that_only_writes_the_suffix_back_is_retried():
    """At ``len(|)`` a small model often closes the call at once: fitted, that is nothing.
    The model's next-best start is decoded then (greedy, the closer masked as the first
    token), and sampled decodes after it if that too gives nothing, even for one candidate."""
    import time

    from gdg_lsp.executor import Execution, StopReason
    from gdg_lsp.languages.base import WorkspaceContext
    from gdg_lsp.languages.python.analyzer import PythonAnalyzer

    calls = []
    answers = {}

    def run(temperature=0.0, seed=None, avoid_start=""):
        calls.append((temperature, seed, avoid_start))
        return Execution(answers.get(avoid_start or "sampled", "ab)"), [], StopReason.MAX_LINES)

    code = "def f(ab):\n    y = len()\n"
    doc = Document("file:///r.py", "python", 1, code, parse)
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), code.index("len(") + 4, WorkspaceContext())

    def alternatives(first_text, settings):
        calls.clear()
        return CompletionService._alternatives(Execution(first_text, [], StopReason.MAX_LINES), run, doc.snapshot(),
                                               hole, analyzer, settings, time.monotonic() + 30, None)

    found = alternatives(")", Settings())
    assert [(c.text, c.end) for c in found] == [("ab", hole.cursor)] and calls == [(0.0, None, ")")]
    answers[")"] = ")"  # the next-best start closes the call too: sampled decodes follow
    assert [c.text for c in alternatives(")", Settings())] == ["ab"]
    assert calls == [(0.0, None, ")"), (cands.SAMPLING_TEMPERATURE, 2)[:2] + ("",)]
    assert [c.text for c in alternatives("ab)", Settings())] == ["ab"] and calls == []  # a useful answer: one decode
    assert [c.text for c in alternatives("", Settings())] == [] and calls == []  # nothing at all: no retry
    assert [c.text for c in alternatives(")", Settings(suffix=False))] == [")"] and calls == []
