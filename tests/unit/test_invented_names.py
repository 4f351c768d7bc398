"""A fallback never shows an invented name (issue 31, item 2).

After a name Γ lacks is typed (``return undefined_thing``), π climbs to the ``base`` rung,
whose names are open identifiers: the model may lengthen the typed name into another that
exists nowhere. Every candidate of such a rung is checked with the diagnostics the server
publishes, on the document with the candidate in place, before it is shown; one that writes
a name absent from Γ is dropped (``gdg.showUnguaranteed``: ``noInventedNames``, the default),
with the reason in the suggestion's data and ``explain``; one shown is marked.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.documents import Document
from gdg_lsp.explain import explain_suggestion
from gdg_lsp.languages.python.analyzer import parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.tilelang.tl_scripted import ScriptedBackend
from tests.unit.test_guarantee import IDENT

STATS = '''import math


def mean(values):
    return sum(values) / len(values)


def summary(samples, digits=2):
    average = mean(samples)
    spread = math.sqrt(samples)
    return undefined_thing
'''
LINE = "    return undefined_thing"


def _complete(script: str, tiny_vocab, **options):
    service = CompletionService(ScriptedBackend(tiny_vocab, script))
    doc = Document("file:///stats.py", "python", 1, STATS, parse)
    offset = STATS.index(LINE) + len(LINE)
    return service.complete(doc.snapshot(), offset, Settings(max_tokens=80, timeout_ms=60_000, **options))


def test_a_base_rung_candidate_that_lengthens_the_typed_name_is_dropped(tiny_vocab):
    """The case seen in VS Code: the ghost offered ``_statistics(average, spread)``, a call of
    ``undefined_thing_statistics``, which exists nowhere."""
    suggestion = _complete("_statistics(average, spread)\n", tiny_vocab)
    assert suggestion.rung == "base" and suggestion.execution.text.startswith("_statistics(average, spread)")
    assert suggestion.text == "" and suggestion.candidates == []
    assert [d["text"] for d in suggestion.dropped] == ["_statistics(average, spread)"]
    assert "undefined_thing_statistics" in suggestion.dropped[0]["why"]
    assert suggestion.reason.startswith("not shown:") and "undefined_thing_statistics" in suggestion.reason
    summary = suggestion.summary()
    assert summary["dropped"] == suggestion.dropped
    report = explain_suggestion(suggestion, Settings())
    assert "undefined_thing_statistics" in report["text"]


def test_a_base_rung_candidate_that_invents_nothing_is_shown_and_marked(tiny_vocab):
    suggestion = _complete("(average, spread)\n", tiny_vocab)
    assert suggestion.rung == "base" and suggestion.text == "(average, spread)"
    assert suggestion.dropped == [] and not suggestion.guaranteed
    summary = suggestion.summary()
    assert summary["guaranteed"] is False and summary["candidates"][0]["guaranteed"] is False
    assert "base" in summary["notGuaranteedBecause"]
    # each candidate says why, in the words of the whole: an editor marks the alternative it shows
    assert summary["candidates"][0]["notGuaranteedBecause"] == summary["notGuaranteedBecause"]
    alternative = dataclasses.replace(suggestion.candidates[0], execution=dataclasses.replace(suggestion.execution))
    assert suggestion.candidate_summary(alternative)["notGuaranteedBecause"] == summary["notGuaranteedBecause"]


def test_the_setting_chooses(tiny_vocab):
    invented = "_statistics(average, spread)\n"
    shown = _complete(invented, tiny_vocab, show_unguaranteed="always")
    assert shown.text == "_statistics(average, spread)" and shown.summary()["notGuaranteedBecause"]
    assert _complete("(average, spread)\n", tiny_vocab, show_unguaranteed="never").text == ""
    # no constraint, or the syntax arm alone, is a choice of no guarantee: nothing is dropped there
    assert _complete(invented, tiny_vocab, constraint="syntax").text == "_statistics(average, spread)"


def _loads(source: str) -> set[str] | None:
    """Names ``source`` (one statement, maybe cut short) loads, or None when no prefix of it parses."""
    text = source
    while text:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text.strip())
            break
        except SyntaxError:  # cut a word at a time: a name cut in two is not a name it wrote
            text = text[: -len(word.group())] if (word := re.search(r"\w+\Z", text)) else text[:-1]
    else:
        return None
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)):
            bound |= {n.arg for n in ast.walk(node) if isinstance(n, ast.arg)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=5, unique=True), ghost=IDENT, seed=st.integers(0, 10_000),
       opener=st.sampled_from(["return ", "x = ", "print(", "", "y = 1 + "]))
@example(names=["average", "spread"], ghost="undefined_thing", seed=1, opener="return ")
def test_no_shown_suggestion_names_what_gamma_lacks(names, ghost, seed, opener, tiny_vocab):
    """Random Γ (the parameters), a typed ghost (a name Γ lacks, so π climbs past the gamma rung), a
    random-weight model sampling a second candidate: whatever rung, every candidate shown loads
    only Γ's names and the ghost the user typed, never a name the model made up."""
    if ghost in names:
        return
    service = CompletionService(random_backend(tiny_vocab, seed=seed, hidden=16, layers=1))
    params = ", ".join(names)
    code = f"def f({params}):\n    {opener}{ghost}"
    doc = Document("file:///g.py", "python", 1, code, parse)
    suggestion = service.complete(doc.snapshot(), len(code), Settings(max_tokens=16, candidates=2, timeout_ms=60_000))
    gamma = set(suggestion.hole.gamma.names()) if suggestion.hole else set()
    for candidate in suggestion.candidates:
        statement = f"{opener}{ghost}{candidate.text}"
        loads = _loads(statement)
        if loads is None:
            continue
        assert loads <= gamma | {ghost}, (statement, candidate.execution.rung, loads - gamma - {ghost})
