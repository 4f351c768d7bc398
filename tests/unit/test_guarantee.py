"""The No-Ghost guarantee, tested as a guarantee: random Γ (hostile names included),
a random-weight model, random seeds; every suggestion is in the fragment's language
and references only names of Γ."""

from __future__ import annotations

import ast
import keyword
import textwrap
import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp import fragments
from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder, DecodeSpec
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.fragments import ebnf
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse

HOSTILE = st.text(alphabet=st.sampled_from(list('ab"\\|()[]*+?{}#%\n\t é😀\x00:=')), min_size=1, max_size=12)
IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True).filter(lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s))

CALL = ebnf.parse('root ::= %name% "(" %name% ")" "\\n"')
CALL_FRAGMENT = fragments.Fragment("t", "call", "Stmt", ("gamma",), CALL,
                                   {"name": fragments.SlotSpec("name", {"gamma": {"sort": "Variable"}})})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(HOSTILE, min_size=1, max_size=6, unique=True), seed=st.integers(0, 10_000))
def test_hostile_names_never_leak_outside_their_slot(names, seed, tiny_vocab, tiny_engine):
    """With names full of grammar metacharacters, the output is exactly name(name), with either engine."""
    _hostile_names_stay_in_their_slot(names, seed, random_backend(tiny_vocab, seed=seed, hidden=32, layers=1),
                                      tiny_engine)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(names=st.lists(HOSTILE, min_size=1, max_size=6, unique=True), seed=st.integers(0, 10_000))
def test_hostile_names_stay_in_their_slot_with_a_qwen2_model(names, seed, qwen_vocab, qwen_engine):
    """The same with a random-weight Qwen2 model over a Qwen2.5-Coder-shaped vocabulary (151,936 ids,
    multi-byte BPE tokens that cross a name's end, special tokens): either engine."""
    backend = random_backend(qwen_vocab, seed=seed, hidden=32, layers=1, architecture="qwen2")
    _hostile_names_stay_in_their_slot(names, seed, backend, qwen_engine)


def _hostile_names_stay_in_their_slot(names, seed, backend, engine) -> None:
    gamma = Gamma([Binding(n, "Variable") for n in names])
    compiled = engine.get(fragments.instantiate(CALL_FRAGMENT, "gamma", gamma))
    result = Decoder(backend).decode(DecodeSpec(backend.vocab.encode("x").ids, grammar=compiled, max_tokens=80,
                                                stop_at_newline=False, temperature=1.0, seed=seed))
    produced = result.region_text
    if produced.endswith("\n") and result.natural:
        line = produced[:-1]
        assert any(line == f"{a}({b})" for a in names for b in names), (names, line)
    else:  # stopped by the budget: still a prefix of some a(b)
        assert any(f"{a}({b})\n".startswith(produced) for a in names for b in names), (names, produced)


def _scoped_bindings(stmt: ast.AST) -> set[str]:
    """Names bound inside the statement's own comprehensions and lambdas."""
    bound: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for gen in node.generators:
                bound |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Lambda):
            bound |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    return bound


def _ghosts_in_order(body: list[ast.stmt], gamma: set[str]) -> set[str]:
    """Loads that name nothing in Γ or in an earlier statement of the suggestion."""
    known = set(gamma)
    ghosts: set[str] = set()
    for stmt in body:
        loads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        ghosts |= loads - known - _scoped_bindings(stmt)
        known |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            known.add(stmt.name)
            known |= {a.arg for a in ast.walk(stmt) if isinstance(a, ast.arg)}
    return ghosts


def assert_no_ghosts(header: str, suggestion: str, gamma: set[str]) -> None:
    """A suggestion decoded as the body of ``header`` loads nothing outside Γ and its
    own earlier statements. Statements cut by the budget may be incomplete: the
    complete ones are judged."""
    body = textwrap.indent(suggestion.strip("\n"), "    ")
    lines = f"{header}:\n{body}\n".splitlines()
    while lines:
        try:
            with warnings.catch_warnings():  # a random model writes odd escapes; only names matter here
                warnings.simplefilter("ignore")
                tree = ast.parse("\n".join(lines) + ("\n        pass" if lines[-1].rstrip().endswith(":") else ""))
            break
        except SyntaxError:
            lines.pop()
    else:
        return
    ghosts = _ghosts_in_order(tree.body[0].body, gamma)
    assert not ghosts, (ghosts, suggestion)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=8, unique=True), seed=st.integers(0, 10_000), max_lines=st.integers(1, 3))
def test_python_suggestions_reference_only_gamma(names, seed, max_lines, tiny_vocab, tiny_engine):
    """The whole Python pipeline (analyzer → π → decoder → executor) with a random model:
    every name a suggestion loads is in Γ (checked with Python's own ast), with either engine."""
    _python_suggestions_name_only_gamma(names, seed, max_lines, random_backend(tiny_vocab, seed=seed, hidden=16,
                                                                               layers=1), tiny_engine)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=8, unique=True), seed=st.integers(0, 10_000), max_lines=st.integers(1, 3))
def test_python_suggestions_reference_only_gamma_with_a_qwen2_model(names, seed, max_lines, qwen_vocab, qwen_engine):
    """The same pipeline with a random-weight Qwen2 model over a Qwen2.5-Coder-shaped vocabulary."""
    backend = random_backend(qwen_vocab, seed=seed, hidden=16, layers=1, architecture="qwen2")
    _python_suggestions_name_only_gamma(names, seed, max_lines, backend, qwen_engine)


def _python_suggestions_name_only_gamma(names, seed, max_lines, backend, engine) -> None:
    vocab = backend.vocab
    params = ", ".join(names)
    code = f"def f({params}):\n    "
    snapshot = Snapshot("file:///g.py", "python", 1, code, parse(code.encode()))
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(snapshot, len(code), WorkspaceContext())
    executor = Executor(analyzer, Decoder(backend), engine)
    prompt = Prompt(vocab.encode(code).ids)
    execution = executor.run(hole, prompt, "scope", max_tokens=150, max_lines=max_lines, temperature=1.0, seed=seed)
    for trace in execution.statements:
        assert trace.rung in ("gamma", None)
    text = execution.text
    if not text.strip():
        return
    assert_no_ghosts(f"def f({params})", text, set(hole.gamma.names()))

