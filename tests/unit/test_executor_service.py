"""The executor (Γ growing statement by statement) and the service (prompt, healing, window)."""

from __future__ import annotations

from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Document, Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.grammar.xgrammar_engine import GrammarCache
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.service.prompt import window_start
from gdg_lsp.settings import Settings


def test_gamma_grows_with_each_statement(random_backend, tiny_vocab):
    """Whatever the model writes, statement k+1 is decoded under a Γ that holds the
    names statements 1..k declared (and only those beyond the hole's Γ)."""
    code = "def f(ab):\n    "
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(Snapshot("file:///e.py", "python", 1, code, parse(code.encode())), len(code), WorkspaceContext())
    cache = GrammarCache(tiny_vocab)
    grew = 0
    for seed in range(30):
        execution = Executor(analyzer, Decoder(random_backend), cache).run(
            hole, Prompt(tiny_vocab.encode(code).ids), "scope", max_tokens=120, max_lines=3, temperature=1.0, seed=seed)
        sizes = [t.gamma_size for t in execution.statements]
        declared = [t.declared for t in execution.statements]
        for k in range(1, len(sizes)):
            new_names = {n for n in declared[k - 1] if n not in hole.gamma}
            assert sizes[k] >= sizes[k - 1] + len(new_names) - 1  # a name may shadow (same name, new frame)
            grew += sizes[k] > sizes[k - 1]
    assert grew > 0, "no run declared anything: the test did not exercise Γ growth"


def test_window_start_is_quantized_and_bounded():
    text = "".join(f"line {i}\n" for i in range(400))
    cursor = len(text)
    start = window_start(text, cursor, floor=cursor, max_chars=500)
    assert text.count("\n", 0, start) % 16 == 0
    assert cursor - start <= 500 + 16 * 9
    # moving the cursor one line keeps the same window (the KV cache prefix)
    assert window_start(text, cursor - 8, floor=cursor - 8, max_chars=500) == start


def test_service_end_to_end_with_a_random_model(random_backend):
    service = CompletionService(random_backend)
    code = "def f(ab):\n    x = ab\n    "
    doc = Document("file:///s.py", "python", 1, code, parse)
    suggestion = service.complete(doc.snapshot(), len(code), Settings(max_tokens=30))
    assert suggestion.hole is not None and suggestion.rung in ("gamma", None)
    assert suggestion.start == len(code) and suggestion.end == len(code)
    assert "\n" not in suggestion.text
    assert set(suggestion.timings) >= {"analysis", "prompt", "decode", "total"}
    summary = suggestion.summary()
    assert summary["constraint"] == "scope" and summary["holeSort"] == "Stmt"


def test_service_explains_why_there_is_no_hole(random_backend):
    service = CompletionService(random_backend)
    code = "x = 1  # a comment"
    doc = Document("file:///s.py", "python", 1, code, parse)
    suggestion = service.complete(doc.snapshot(), len(code), Settings())
    assert suggestion.text == "" and "comment" in suggestion.reason


def test_every_way_a_region_ends_is_a_stop_reason_of_the_execution():
    from gdg_lsp.backends import remote
    from gdg_lsp.decoding import engine
    from gdg_lsp.executor import StopReason

    stops = [getattr(module, name) for module in (engine, remote) for name in dir(module) if name.startswith("STOP_")]
    assert len(stops) >= 10
    for stop in stops:
        assert StopReason(stop).value == stop  # explain and the bench show the same words
    assert StopReason.MAX_TOKENS.budget and StopReason.TIMEOUT.budget and not StopReason.MODEL_END.budget
