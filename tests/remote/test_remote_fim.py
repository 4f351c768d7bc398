"""FIM through a remote engine: the served model's markers are read from the engine's own
tokenizer (vLLM's and llama.cpp's ``/tokenize``), else from the served model's name, else the
prompt is the prefix alone, and the status says which and why."""

from __future__ import annotations

import pytest

from gdg_lsp import prompt_shapes
from gdg_lsp.backends import remote
from gdg_lsp.documents import Document
from gdg_lsp.languages.python.analyzer import parse
from tests.remote.fake_engine import FakeEngine
from tests.remote.test_remote_backend import service_for, settings_for

QWEN_MARKERS = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")
CODE = "import os\n\ndef f(alpha, beta):\n    gamma = alpha + 1\n    \n    return gamma\n"
CURSOR = CODE.index("    \n") + 4


@pytest.mark.parametrize("kind", ["vllm", "llamacpp"])
def test_the_engines_tokenizer_says_the_model_has_qwens_markers(kind):
    with FakeEngine(kind=kind, model="served-model") as engine:
        engine.special_tokens = QWEN_MARKERS
        backend = remote.connect(remote.Endpoint(engine.url, kind))
        template = prompt_shapes.detect(backend.vocab)
        assert template.family == "qwen2.5-coder" and template.repository
        assert "from the engine's tokenizer" in backend.fim_note
        asked = engine.tokenized[0]
        if kind == "vllm":
            assert asked["add_special_tokens"] is False and asked["model"] == "served-model" and "prompt" in asked
        else:
            assert asked["parse_special"] is True and asked["add_special"] is False and "content" in asked


def test_a_fim_prompt_goes_to_the_engine_as_text_with_the_markers():
    with FakeEngine(model="served-model") as engine:
        engine.special_tokens = QWEN_MARKERS
        statuses: list = []
        settings = settings_for(engine)
        service = service_for(settings, statuses=statuses)
        doc = Document("file:///s.py", "python", 1, CODE, parse)
        service.complete(doc.snapshot(), CURSOR, settings)
        prompt = next(r["prompt"] for r in engine.requests if r["prompt"].startswith("<|fim_prefix|>"))
        assert prompt == ("<|fim_prefix|>import os\n\ndef f(alpha, beta):\n    gamma = alpha + 1\n"
                          "<|fim_suffix|>\n    return gamma\n<|fim_middle|>   ")  # the indentation but one blank
        assert any("fill-in-the-middle as qwen2.5-coder" in s.message for s in statuses if s.state == "ready")


def test_without_a_tokenize_route_the_served_name_decides_and_says_so():
    with FakeEngine(model="Qwen2.5-Coder-1.5B-Instruct") as engine:
        backend = remote.connect(remote.Endpoint(engine.url, "vllm"))
        assert prompt_shapes.detect(backend.vocab).family == "qwen2.5-coder"
        assert "from the served model's name 'Qwen2.5-Coder-1.5B-Instruct'" in backend.fim_note
        assert "could not be asked" in backend.fim_note


def test_a_model_of_no_fim_family_gets_the_prefix_alone_and_the_reason():
    with FakeEngine(model="llama-3-8b") as engine:
        backend = remote.connect(remote.Endpoint(engine.url, "vllm"))
        assert prompt_shapes.detect(backend.vocab) is None
        assert backend.fim_note.startswith("prefix-only prompts: the engine's tokenizer could not be asked")
    with FakeEngine(model="Qwen2.5-Coder-1.5B-Instruct") as engine:
        engine.special_tokens = ()  # the route answers: no marker is one token, whatever the name says
        backend = remote.connect(remote.Endpoint(engine.url, "vllm"))
        assert prompt_shapes.detect(backend.vocab) is None
        assert backend.fim_note == "prefix-only prompts: the engine's tokenizer has no fill-in-the-middle tokens"
