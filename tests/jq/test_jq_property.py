"""The No-Ghost guarantee for jq, as a property: a random JSON input, a
random-weight model sampling under the gamma grammar of a hole in an empty
filter; every field the filter reads is a key of the input where it reads it
(judged by the bench's oracle, with jq itself listing the paths)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gdg_lsp.backends.models import random_backend
from gdg_lsp.decoding.engine import Decoder
from gdg_lsp.documents import Snapshot
from gdg_lsp.executor import Executor, Prompt
from gdg_lsp.languages.base import Hole, WorkspaceContext
from gdg_lsp.languages.jq.analyzer import JqAnalyzer
from gdg_lsp.languages.jq.bench import ghosts

KEY = st.from_regex(r"[a-z][a-z0-9_]{0,4}", fullmatch=True).filter(
    lambda k: k not in {"if", "then", "else", "end", "as", "and", "or", "not", "def", "try", "catch", "reduce"})
JSON = st.recursive(st.one_of(st.integers(0, 9), st.booleans(), st.just("s")),
                    lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=2),
                                            st.dictionaries(KEY, inner, min_size=1, max_size=3)), max_leaves=8)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.dictionaries(KEY, JSON, min_size=1, max_size=4), seed=st.integers(0, 10_000),
       start=st.sampled_from(["", ".", "map(."]))
def test_filters_read_only_fields_the_input_has(data, seed, start, tiny_vocab, tiny_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("jq")
    (folder / "f.json").write_text(json.dumps(data))
    text = start
    hole = JqAnalyzer().hole_at(Snapshot((folder / "f.jq").as_uri(), "jq", 1, text, None), len(text),
                                WorkspaceContext([folder]))
    assert isinstance(hole, Hole)
    backend = random_backend(tiny_vocab, seed=seed, hidden=16, layers=1)
    executor = Executor(JqAnalyzer(), Decoder(backend), tiny_engine)
    execution = executor.run(hole, Prompt(tiny_vocab.encode("# f\n" + text).ids, replay=hole.typed), "scope",
                             max_tokens=40, max_lines=1, temperature=1.0, seed=seed)
    if not execution.text.strip() or execution.statements[0].rung != "gamma":
        return  # `map(.` on an object input: no element has fields, the gamma rung has no member
    program = text + execution.text
    assert not ghosts(program, data), (program, data)

