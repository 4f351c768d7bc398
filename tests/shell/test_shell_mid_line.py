"""Mid-line shell holes: the text after the cursor stays, a middle is a run of whole words the
grammar allows before it, and it ends only where the command line parses with that text after it.

Γ is made by hand (as in ``test_shell_property.py``); the judge of the property test is the bench's
oracle (``references``, read back with ``shlex``), not the analyzer.
"""

from __future__ import annotations

from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Document
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.gamma import Binding, Gamma
from gdg_lsp.languages.base import Hole, NoHole, WorkspaceContext
from gdg_lsp.languages.shell import members
from gdg_lsp.languages.shell.analyzer import ShellAnalyzer
from gdg_lsp.languages.shell.bench import references
from tests.tilelang.tl_scripted import ScriptedBackend

TOOLS = ["git", "make", "npm"]


def _gamma(branches, targets) -> Gamma:
    layer = [Binding(f"source:{k}", "Source", {"kind": k, "path": k}) for k in ("git", "make")]
    layer.append(Binding("remote.origin", "Remote", {"word": "origin"}))
    layer += [Binding(f"refs/heads/{b}", "Branch", {"word": b}) for b in branches]
    layer += [Binding(f"make:{t}", "MakeTarget", {"word": t}) for t in targets]
    return Gamma(layer)


def _hole(start: str, suffix: str, gamma: Gamma) -> Hole:
    context = {"members": members.members(gamma, TOOLS), "open_members": members.open_members(TOOLS),
               "reserved_names": TOOLS}
    return Hole("shell", "command", "Command", 0, len(start), len(start), start, "", gamma,
                MappingProxyType(context), suffix=suffix)


def _middle(hole: Hole, backend, vocab, engine, **kw) -> str:
    executor = Executor(ShellAnalyzer(), Decoder(backend), engine)
    prompt = Prompt(vocab.encode("#!/bin/sh\n" + hole.typed).ids, replay=hole.typed)
    return executor.run(hole, prompt, "scope", max_tokens=kw.pop("max_tokens", 24), max_lines=1, **kw).text


@pytest.mark.parametrize("start, suffix, script", [
    ("git checkout ", " -- README.md", "main"),
    ("make ", " && echo done", "build"),
    ("git log ", " | head", "main"),
])
def test_the_middle_ends_where_the_line_parses_with_the_rest(start, suffix, script, tiny_vocab, tiny_engine):
    hole = _hole(start, suffix, _gamma(["main", "dev"], ["build", "test"]))
    backend = ScriptedBackend(tiny_vocab, "#!/bin/sh\n" + start + script)
    assert _middle(hole, backend, tiny_vocab, tiny_engine) == script


@pytest.mark.parametrize("start, suffix, script", [
    ("git checkout ", " -- README.md", "mai"),  # half a branch's name
    ("git checkout ", " -- README.md", "ghost"),  # a branch nobody has
    ("make ", " && echo done", "build |"),  # a pipe into `&&`: the line no longer parses
])
def test_a_middle_never_ends_on_a_ghost_or_a_broken_line(start, suffix, script, tiny_vocab, tiny_engine):
    hole = _hole(start, suffix, _gamma(["main", "dev"], ["build", "test"]))
    backend = ScriptedBackend(tiny_vocab, "#!/bin/sh\n" + start + script)
    middle = _middle(hole, backend, tiny_vocab, tiny_engine)
    assert middle != script
    if middle:
        assert ShellAnalyzer().middle_fits(hole, middle)
        assert all(word in {"main", "dev", "build", "test"} for kind, word in references(start + middle)
                   if kind in ("ref", "branch", "target"))


@pytest.mark.parametrize("line, at, why", [
    ("git chec kout\n", 8, "inside a word"),
    ("git checkout main\n", 13, "inside a word"),  # right before a word: it would join it
    ("make build \\\n  test\n", 11, "lines below"),
])
def test_where_no_middle_is_decoded_the_reason_says_why(line, at, why):
    analyzer = ShellAnalyzer()
    snapshot = Document("file:///w/run.sh", "shellscript", 0, line, analyzer.parser()).snapshot()
    hole = analyzer.hole_at(snapshot, at, WorkspaceContext())
    assert isinstance(hole, NoHole) and why in hole.reason


def test_a_blank_between_words_is_a_mid_line_hole():
    analyzer = ShellAnalyzer()
    line = "git checkout  -- README.md\n"
    snapshot = Document("file:///w/run.sh", "shellscript", 0, line, analyzer.parser()).snapshot()
    hole = analyzer.hole_at(snapshot, 13, WorkspaceContext())
    assert isinstance(hole, Hole) and hole.suffix == " -- README.md" and hole.replace_end == 13


NAME = st.from_regex(r"[a-z][a-z0-9]{0,4}", fullmatch=True)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(branches=st.lists(NAME, min_size=1, max_size=3, unique=True), targets=st.lists(NAME, min_size=1, max_size=3,
                                                                                      unique=True),
       start=st.sampled_from(["git checkout ", "git log ", "make ", "git push origin "]),
       suffix=st.sampled_from([" -- README.md", " | head", " && echo done", " > out.txt"]), seed=st.integers(0, 10_000))
def test_every_shell_middle_names_only_what_exists(branches, targets, start, suffix, seed, tiny_vocab, tiny_engine):
    """A random-weight model sampling middles: whatever is emitted parses with the rest of the line,
    and every ref and target it names is in Γ."""
    hole = _hole(start, suffix, _gamma(branches, targets))
    backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
    middle = _middle(hole, backend, tiny_vocab, tiny_engine, temperature=1.0, seed=seed)
    if not middle:
        return
    assert ShellAnalyzer().middle_fits(hole, middle)
    known = {"ref": set(branches), "branch": set(branches), "target": set(targets)}
    for kind, word in references(start + middle):
        if kind in known:
            assert word in known[kind], (kind, word, middle)
