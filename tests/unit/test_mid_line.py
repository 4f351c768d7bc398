"""Mid-line holes: text after the cursor stays, the middle is decoded under the fragment and ends
only where the statement reads with that text after it, and every name the middle reads is in Γ.

The scripted model writes a fixed middle and then wants to stop: the cases show where that stop
is taken and where it is refused (a name cut inside a word, a name nobody declared, a word run
into the suffix). The property test lets a noisy model write random middles from Γ's names and
invented ones before random suffixes; Python's own ``ast`` judges what comes out.
"""

from __future__ import annotations

import ast
import contextlib
import keyword

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp import python_ast
from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Document, Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.languages.base import NoHole, WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.fim_tokenizers import fim_vocab
from tests.tilelang.tl_scripted import NoisyBackend, ScriptedBackend

HEADER = "def f(alpha, beta):\n"


def _hole(code: str):
    cursor = code.index("@")
    code = code.replace("@", "", 1)
    snapshot = Snapshot("file:///m.py", "python", 1, code, parse(code.encode()))
    return code, cursor, PythonAnalyzer().hole_at(snapshot, cursor, WorkspaceContext())


def _middle(code_with_cursor: str, script: str, engine, vocab, backend=None) -> str:
    code, cursor, hole = _hole(code_with_cursor)
    backend = backend or ScriptedBackend(vocab, code[:cursor] + script)
    executor = Executor(PythonAnalyzer(), Decoder(backend), engine)
    prompt = Prompt(vocab.encode(code[:cursor]).ids, replay=hole.typed)
    return executor.run(hole, prompt, "scope", max_tokens=24, max_lines=3).text


@pytest.mark.parametrize("line, script", [
    ("    x = len(@) + beta\n", "alpha"),
    ("    x = len(@) + beta\n", "alpha, beta"),
    ("    x = len(@) + beta\n", "beta[0] * 2"),
    ("    if @ > beta:\n        pass\n", "alpha"),
    ("    y = [@ for q in alpha]\n", "q"),  # bound by the comprehension the suffix holds
    ("    y = g(alpha,\n          @, beta)\n", "alpha"),  # a line continuing a call opened above
    ("    y = @  # a comment\n", "alpha"),
])
def test_the_middle_ends_where_the_statement_reads_with_the_rest_of_the_line(line, script, tiny_vocab, tiny_engine):
    _, _, hole = _hole(HEADER + line)
    assert hole.suffix and hole.replace_end == hole.cursor  # the text after the cursor stays
    assert _middle(HEADER + line, script, tiny_engine, tiny_vocab) == script


def test_a_model_that_writes_the_rest_of_the_line_ends_the_middle_before_it(tiny_vocab, tiny_engine):
    """A FIM model laying the cursor's line out whole writes the middle, then the suffix again:
    where the middle fits, the suffix's start ends it (the editor keeps the user's own text)."""
    assert _middle(HEADER + "    x = len(@) + beta\n", "alpha) + beta", tiny_engine, tiny_vocab) == "alpha"


@pytest.mark.parametrize("line, script", [
    ("    x = len(@) + beta\n", "alp"),  # the start of a name the suffix would end: `alp` is no name
    ("    x = len(@) + beta\n", "zzz"),  # a keyword argument's start the grammar allowed, read as a name
    ("    x = @pha + 1\n", "al"),  # run into the suffix's word (`alpha` is in Γ, but not written here)
    ("    x = @.real\n", "beta #x"),  # not a name, but the rest of the line would be the comment's text
])
def test_a_middle_never_ends_on_a_name_that_is_not_in_gamma(line, script, tiny_vocab, tiny_engine):
    middle = _middle(HEADER + line, script, tiny_engine, tiny_vocab)
    assert middle != script
    if middle:  # whatever else it found must fit
        _assert_fits(HEADER + line, middle, {"alpha", "beta"})


@pytest.mark.parametrize("source, reads", [
    ("max(key=a, key=b)", False),  # parsed by ast, refused by CPython's compiler
    ("lambda x, x: 1", False),
    ("def g(a, *, a): pass", False),
    ("max(a, key=b)", True),
    ("f(**a, **b)", True),
])
def test_a_middle_is_judged_by_what_cpython_reads(source, reads):
    assert python_ast.parses(source) is reads
    with pytest.raises(SyntaxError) if not reads else contextlib.nullcontext():
        compile(source, "<test>", "exec", dont_inherit=True)  # the truth the judge stands for


def test_a_cursor_inside_a_name_is_no_hole():
    _, _, hole = _hole(HEADER + "    x = al@pha + 1\n")
    assert isinstance(hole, NoHole) and "inside a name" in hole.reason


def _assert_fits(code_with_cursor: str, middle: str, gamma: set[str]) -> None:
    """``middle`` at the cursor leaves a module Python parses, and every name it reads is in
    ``gamma`` or bound inside the statement (a comprehension's target, a lambda's parameter)."""
    code = code_with_cursor.replace("@", middle, 1)
    line_no = code_with_cursor[: code_with_cursor.index("@")].count("\n") + 1
    col = code_with_cursor.index("@") - code_with_cursor.rfind("\n", 0, code_with_cursor.index("@")) - 1
    tree = ast.parse(code)
    start, end = col, col + len(middle.encode())
    bound = {t.id for node in ast.walk(tree) if isinstance(node, ast.comprehension)
             for t in ast.walk(node.target) if isinstance(t, ast.Name)}
    bound |= {a.arg for node in ast.walk(tree) if isinstance(node, ast.Lambda) for a in node.args.args}
    read = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.lineno == line_no
            and n.col_offset < end and n.end_col_offset > start]
    assert set(read) <= gamma | bound, (middle, read)


IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s) and not keyword.issoftkeyword(s))
LINES = ("    x = g(@) + {a}\n", "    x = {a} * (@) - 1\n", "    if @ == {a}:\n        pass\n",
         "    y = [@ for q in {a}]\n", "    z = h({a}, @, {a})\n", "    w = @.real\n", "    v = {a}[@] + 1\n")
JOINS = (", ", " + ", ") + (", " * ", "(", ".", "[", " if ", " else ", " ")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=5, unique=True), ghosts=st.lists(IDENT, min_size=1, max_size=3),
       words=st.lists(st.integers(0, 7), min_size=1, max_size=4), joins=st.lists(st.sampled_from(JOINS), max_size=3),
       line=st.sampled_from(LINES), seed=st.integers(0, 10_000))
def test_every_middle_fits_and_reads_only_gamma(names, ghosts, words, joins, line, seed, tiny_vocab, tiny_engine):
    """Random Γ, a noisy model that wants a random middle of Γ's names and invented ones: whatever
    is emitted parses with the suffix after it and reads only Γ (or what the statement binds)."""
    pool = names + [g for g in ghosts if g not in names]
    script = "".join(pool[w % len(pool)] + (joins[i] if i < len(joins) else "") for i, w in enumerate(words))
    code = f"def f({', '.join(names)}):\n" + line.format(a=names[0])
    plain, cursor, hole = _hole(code)
    backend = NoisyBackend(ScriptedBackend(tiny_vocab, plain[:cursor] + script), seed=seed, scale=1.5)
    middle = _middle(code, script, tiny_engine, tiny_vocab, backend)
    if middle:
        _assert_fits(code, middle, set(hole.gamma.names()))


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                               HealthCheck.too_slow])
@given(names=st.lists(IDENT, min_size=1, max_size=5, unique=True), line=st.sampled_from(LINES),
       seed=st.integers(0, 10_000))
def test_every_middle_of_a_random_qwen2_model_fits(names, line, seed, qwen_vocab, qwen_engine):
    """The same guarantee over a Qwen2.5-Coder-shaped vocabulary (151,936 ids, its FIM tokens) with
    a random-weight Qwen2 model, sampled."""
    code = f"def f({', '.join(names)}):\n" + line.format(a=names[0])
    plain, cursor, hole = _hole(code)
    backend = random_backend(qwen_vocab, seed=seed, hidden=16, layers=1, architecture="qwen2")
    executor = Executor(PythonAnalyzer(), Decoder(backend), qwen_engine)
    prompt = Prompt(qwen_vocab.encode(plain[:cursor]).ids, replay=hole.typed)
    middle = executor.run(hole, prompt, "scope", max_tokens=16, max_lines=1, temperature=1.0, seed=seed).text
    if middle:
        _assert_fits(code, middle, set(hole.gamma.names()))


CODE = HEADER + "    x = len() + beta\n    return x\n"
CURSOR = CODE.index("len(") + 4


def test_a_fim_model_answers_a_mid_line_hole_with_the_middle_alone():
    vocab = fim_vocab("qwen2.5-coder")
    service = CompletionService(ScriptedBackend(vocab, "x = len(alpha"))
    suggestion = service.complete(Document("file:///m.py", "python", 1, CODE, parse).snapshot(), CURSOR, Settings())
    assert (suggestion.text, suggestion.end, suggestion.prompt_template) == ("alpha", CURSOR, "qwen2.5-coder")
    assert suggestion.suffix_tokens > 0


@pytest.mark.parametrize("fim, suffix, why", [
    (False, True, "has no fill-in-the-middle tokens"),
    (True, False, "gdg.suffix is false"),
])
def test_mid_line_is_off_with_a_reason_where_the_model_cannot_read_the_suffix(fim, suffix, why, tiny_vocab):
    vocab = fim_vocab("qwen2.5-coder") if fim else tiny_vocab
    service = CompletionService(ScriptedBackend(vocab, "x = len(alpha"))
    suggestion = service.complete(Document("file:///m.py", "python", 1, CODE, parse).snapshot(), CURSOR,
                                  Settings(suffix=suffix))
    assert suggestion.text == "" and "mid-line holes are off" in suggestion.reason and why in suggestion.reason
