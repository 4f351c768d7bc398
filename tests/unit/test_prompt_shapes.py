"""FIM prompts: the family is read from the tokenizer, the exact prompt per family, the
budget split between prefix and suffix, prefix-only for models without FIM tokens."""

from __future__ import annotations

import pytest

from gdg_lsp import prompt_shapes
from gdg_lsp.backends.models import random_backend as make
from gdg_lsp.documents import Document
from gdg_lsp.explain import explain_suggestion
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service import prompt as prompts
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.fim_tokenizers import fim_vocab

CODE = "def f(x):\n    y = g()\n    return y\n"
CURSOR = CODE.index("g(") + 2  # between the parentheses: the `)` follows

# The whole prompt, markers included, with the healed tail of the prefix ("(" here) left for
# the middle to write again.
EXPECTED = {
    "starcoder": "<fim_prefix>def f(x):\n    y = g<fim_suffix>)\n    return y\n<fim_middle>",
    "santacoder": "<fim-prefix>def f(x):\n    y = g<fim-suffix>)\n    return y\n<fim-middle>",
    "qwen2.5-coder": "<|fim_prefix|>def f(x):\n    y = g<|fim_suffix|>)\n    return y\n<|fim_middle|>",
    "codegemma": "<|fim_prefix|>def f(x):\n    y = g<|fim_suffix|>)\n    return y\n<|fim_middle|>",
    "codellama": "▁<PRE>def f(x):\n    y = g▁<SUF>)\n    return y\n▁<MID>",
    "deepseek-coder": "<｜fim▁begin｜>def f(x):\n    y = g<｜fim▁hole｜>)\n    return y\n<｜fim▁end｜>",
    "codestral": "[SUFFIX])\n    return y\n[PREFIX]def f(x):\n    y = g",
}


def _prompt(vocab, settings=Settings(), code=CODE, cursor=CURSOR):
    doc = Document("file:///p.py", "python", 1, code, parse)
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), cursor, WorkspaceContext())
    return prompts.build(vocab, prompt_shapes.detect(vocab), doc.snapshot(), hole, analyzer, settings, WorkspaceContext())


@pytest.mark.parametrize("family", [f.name for f in prompt_shapes.FAMILIES])
def test_each_family_gets_its_exact_prompt(family):
    vocab = fim_vocab(family)
    assert prompt_shapes.detect(vocab).family == family
    prompt, shape = _prompt(vocab)
    assert vocab.decode(prompt.ids) == EXPECTED[family]
    assert prompt.heal == "("
    assert shape.template == family and shape.suffix_tokens == len(vocab.encode(")\n    return y\n").ids)


def test_codegemma_and_qwen_share_markers_and_are_told_apart_by_codegemmas_file_separator():
    assert prompt_shapes.detect(fim_vocab("qwen2.5-coder")).family == "qwen2.5-coder"
    gemma = fim_vocab("codegemma")
    assert prompt_shapes.detect(gemma).family == "codegemma"
    # a FIM tokenizer's end-of-middle tokens stop the decoder
    assert gemma.token_id("<|file_separator|>") in gemma.stop_ids


def test_models_without_fim_tokens_get_the_prefix_alone(tiny_vocab, smol_vocab):
    assert prompt_shapes.detect(tiny_vocab) is None
    assert prompt_shapes.detect(smol_vocab) is None  # the default SmolLM2
    # SmolLM2 has <file_sep> but no FIM markers: it is not made a stop token
    assert smol_vocab.token_id("<file_sep>") is not None
    assert smol_vocab.token_id("<file_sep>") not in smol_vocab.stop_ids
    prompt, shape = _prompt(smol_vocab)
    assert shape.template == prompt_shapes.PREFIX_ONLY and shape.suffix_tokens == 0
    assert smol_vocab.decode(prompt.ids) + prompt.heal == CODE[:CURSOR]


def test_gdg_suffix_off_gives_fim_models_the_prefix_alone():
    vocab = fim_vocab("starcoder")
    prompt, shape = _prompt(vocab, Settings(suffix=False))
    assert shape.template == prompt_shapes.PREFIX_ONLY
    assert vocab.decode(prompt.ids) + prompt.heal == CODE[:CURSOR]


def test_prefix_and_suffix_share_the_budget():
    vocab = fim_vocab("starcoder")
    body = "".join(f"    v{i} = g(x, {i})\n" for i in range(300))
    code = "def f(x):\n" + body + "    y = g()\n" + body
    cursor = code.index("y = g(") + len("y = g(")
    settings = Settings(context_tokens=256)
    prompt, shape = _prompt(vocab, settings, code, cursor)
    assert len(prompt.ids) <= settings.context_tokens
    assert 0 < shape.suffix_tokens <= settings.context_tokens * prompts.SUFFIX_SHARE
    text = vocab.decode(prompt.ids)
    suffix = text[text.index("<fim_suffix>") + len("<fim_suffix>") : text.index("<fim_middle>")]
    assert code[cursor:].startswith(suffix) and suffix.startswith(")\n") and suffix.endswith("\n")  # whole lines
    prefix = text[len("<fim_prefix>") : text.index("<fim_suffix>")]
    assert code[:cursor].endswith(prefix + prompt.heal)


def test_the_service_and_explain_name_the_template():
    vocab = fim_vocab("deepseek-coder")
    service = CompletionService(make(vocab, seed=1, hidden=32, layers=1))
    doc = Document("file:///p.py", "python", 1, CODE, parse)
    settings = Settings(max_tokens=12)
    suggestion = service.complete(doc.snapshot(), CURSOR, settings)
    assert suggestion.summary()["promptTemplate"] == "deepseek-coder" and suggestion.suffix_tokens > 0
    assert "prompt template: deepseek-coder" in explain_suggestion(suggestion, settings)["text"]


def test_a_fim_model_given_by_path_gets_its_template_in_explain(tmp_path, capsys):
    """A Hugging Face folder (random weights, a StarCoder-style tokenizer) named by --model:
    ``gdg-lsp explain`` says which template the prompt used."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from gdg_lsp import cli

    vocab = fim_vocab("starcoder")
    model_dir = tmp_path / "fim-model"
    config = LlamaConfig(vocab_size=vocab.size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(model_dir)
    vocab.tokenizer.save_pretrained(model_dir)
    source = tmp_path / "m.py"
    source.write_text(CODE)
    assert cli.main(["explain", str(source), "--line", "2", "--col", str(CURSOR - CODE.index("\n") ),
                     "--model", str(model_dir), "--max-tokens", "4", "--device", "cpu"]) == 0
    assert "prompt template: starcoder (" in capsys.readouterr().out
