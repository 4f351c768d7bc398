"""FIM prompts: the family is read from the tokenizer, the exact prompt per family, the
budget split between prefix and suffix, prefix-only for models without FIM tokens."""

from __future__ import annotations

import pytest

from gdg_lsp import prompt_shapes
from gdg_lsp.backends.base import common_prefix
from gdg_lsp.backends.models import random_backend as make
from gdg_lsp.documents import Document
from gdg_lsp.explain import explain_suggestion
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service import prompt as prompts
from gdg_lsp.service.local import CompletionService
from gdg_lsp.settings import Settings
from tests.fim_tokenizers import fim_vocab, qwen_shaped_vocab

CODE = "def f(x):\n    y = g()\n    return y\n"
CURSOR = CODE.index("g(") + 2  # between the parentheses: the `)` follows

# The whole prompt, markers included, with the healed tail of the cursor's line ("(" here) left for
# the middle to write again; the line itself goes after the middle marker (the KV cache of the
# prompt up to it is the previous keystroke's).
EXPECTED = {
    "starcoder": "<fim_prefix>def f(x):\n<fim_suffix>)\n    return y\n<fim_middle>    y = g",
    "santacoder": "<fim-prefix>def f(x):\n<fim-suffix>)\n    return y\n<fim-middle>    y = g",
    "qwen2.5-coder": "<|fim_prefix|>def f(x):\n<|fim_suffix|>)\n    return y\n<|fim_middle|>    y = g",
    "codegemma": "<|fim_prefix|>def f(x):\n<|fim_suffix|>)\n    return y\n<|fim_middle|>    y = g",
    "codellama": "▁<PRE>def f(x):\n▁<SUF>)\n    return y\n▁<MID>    y = g",
    "deepseek-coder": "<｜fim▁begin｜>def f(x):\n<｜fim▁hole｜>)\n    return y\n<｜fim▁end｜>    y = g",
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
    line = text[text.index("<fim_middle>") + len("<fim_middle>"):]
    assert code[:cursor].endswith(prefix + line + prompt.heal) and line + prompt.heal == "    y = g("


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


# -- Qwen2.5-Coder's shape: its 151,936 ids, FIM and repository tokens at their real ids ---------

def test_a_qwen_shaped_tokenizer_gets_qwens_layout_with_the_line_after_the_middle_marker():
    vocab = qwen_shaped_vocab()
    template = prompt_shapes.detect(vocab)
    assert template.family == "qwen2.5-coder" and template.repository
    assert (template.prefix_id, template.suffix_id, template.middle_id) == (151659, 151661, 151660)
    assert (template.repo_name_id, template.file_sep_id) == (151663, 151664)
    assert {vocab.token_id(t) for t in ("<|fim_pad|>", "<|file_sep|>", "<|endoftext|>")} <= vocab.stop_ids
    prompt, shape = _prompt(vocab)
    assert vocab.decode(prompt.ids) == EXPECTED["qwen2.5-coder"] and prompt.heal == "("
    assert shape.files == 0  # no other file: no repository block


def _with_recent_edit(tmp_path, other_text: str, line: int):
    from gdg_lsp.service.recent import RecentEdits

    recent = RecentEdits()
    other = Document((tmp_path / "pkg" / "helpers.py").as_uri(), "python", 3, other_text, parse)
    recent.note(other, line)
    return recent


def _workspace_prompt(vocab, tmp_path, recent, settings=Settings()):
    doc = Document((tmp_path / "app" / "p.py").as_uri(), "python", 1, CODE, parse)
    workspace = WorkspaceContext([tmp_path], settings, recent)
    analyzer = PythonAnalyzer()
    hole = analyzer.hole_at(doc.snapshot(), CURSOR, workspace)
    return prompts.build(vocab, prompt_shapes.detect(vocab), doc.snapshot(), hole, analyzer, settings, workspace)


def test_recent_edits_of_other_files_are_laid_out_as_the_repositorys_files(tmp_path):
    vocab = qwen_shaped_vocab()
    helper = "def g():\n    return 1\n"
    prompt, shape = _workspace_prompt(vocab, tmp_path, _with_recent_edit(tmp_path, helper, 1))
    assert vocab.decode(prompt.ids) == (
        f"<|repo_name|>{tmp_path.name}\n<|file_sep|>pkg/helpers.py\n{helper.strip()}\n"
        f"<|file_sep|>app/p.py\n" + EXPECTED["qwen2.5-coder"])
    assert shape.files == 1 and shape.template == "qwen2.5-coder"
    # gdg.definitions off: nothing from elsewhere, the single-file layout
    prompt, shape = _workspace_prompt(vocab, tmp_path, _with_recent_edit(tmp_path, helper, 1),
                                      Settings(definitions=False))
    assert vocab.decode(prompt.ids) == EXPECTED["qwen2.5-coder"] and shape.files == 0


def test_a_family_without_repository_tokens_reads_other_files_as_text(tmp_path):
    vocab = fim_vocab("deepseek-coder")
    assert not prompt_shapes.detect(vocab).repository
    prompt, shape = _workspace_prompt(vocab, tmp_path, _with_recent_edit(tmp_path, "def g():\n    return 1\n", 1))
    assert vocab.decode(prompt.ids) == EXPECTED["deepseek-coder"].replace(
        "<｜fim▁begin｜>", "<｜fim▁begin｜>def g():\n    return 1\n\n")
    assert shape.files == 0


TYPED_LINE = "    total = alpha + beta"
TYPING = "def f(alpha, beta):\n    first = alpha\n{line}\n    return total * first\n\n\ndef h():\n    return f(1, 2)\n"


def _new_tokens_per_key(vocab) -> list[tuple[int, int]]:
    """Typing TYPED_LINE one key at a time: (prompt tokens not shared with the previous key's
    prompt, the suffix's tokens) per key -- what the model must run again, the KV cache holding
    the rest."""
    analyzer = PythonAnalyzer()
    previous, out = None, []
    for typed in range(len("    total = "), len(TYPED_LINE) + 1):
        code = TYPING.format(line=TYPED_LINE[:typed])
        cursor = code.index(TYPED_LINE[:typed]) + typed
        doc = Document("file:///t.py", "python", typed, code, parse)
        hole = analyzer.hole_at(doc.snapshot(), cursor, WorkspaceContext())
        prompt, shape = prompts.build(vocab, prompt_shapes.detect(vocab), doc.snapshot(), hole, analyzer, Settings(),
                                      WorkspaceContext())
        if previous is not None:
            out.append((len(prompt.ids) - common_prefix(previous, prompt.ids), shape.suffix_tokens))
        previous = prompt.ids
    return out


def test_typing_on_a_line_runs_only_the_line_again(monkeypatch):
    """The KV cache of one keystroke's prompt serves the next up to the middle marker: the suffix,
    the prefix's lines and the marker are reused; with the line before the suffix (the families'
    documented layout) every key runs the whole suffix again."""
    vocab = qwen_shaped_vocab()
    line_tokens = len(vocab.encode(TYPED_LINE).ids)
    in_middle = _new_tokens_per_key(vocab)
    assert all(new <= line_tokens for new, _ in in_middle), in_middle
    monkeypatch.setattr(prompts, "LINE_IN_MIDDLE", False)
    before_suffix = _new_tokens_per_key(vocab)
    # (a key inside a word leaves the prompt as it was: healing backs the partial word off)
    assert all(new == 0 or new > suffix for new, suffix in before_suffix), before_suffix
    assert sum(new for new, _ in in_middle) * 5 < sum(new for new, _ in before_suffix), (in_middle, before_suffix)


def test_the_service_completes_with_a_random_qwen2_model_in_the_fim_layout():
    vocab = qwen_shaped_vocab()
    service = CompletionService(make(vocab, seed=3, hidden=32, layers=1, architecture="qwen2"))
    doc = Document("file:///p.py", "python", 1, CODE, parse)
    settings = Settings(max_tokens=10)
    suggestion = service.complete(doc.snapshot(), CURSOR, settings)
    assert suggestion.summary()["promptTemplate"] == "qwen2.5-coder" and suggestion.suffix_tokens > 0
    assert suggestion.reason is None or suggestion.text == ""


def test_a_model_whose_fim_wins_mid_line_only_gets_the_prefix_alone_at_a_lines_end(monkeypatch):
    """The Qwen2.5-Coder presets (``fim_where = mid-line``, measured): between brackets the suffix
    goes in the prompt, at the end of a line the prefix alone, with the whole budget."""
    vocab = qwen_shaped_vocab()
    monkeypatch.setattr(vocab, "fim_where", "mid-line", raising=False)
    assert prompt_shapes.detect(vocab).mid_line_only
    prompt, shape = _prompt(vocab)  # the cursor between g( and )
    assert shape.template == "qwen2.5-coder" and vocab.decode(prompt.ids) == EXPECTED["qwen2.5-coder"]
    at_end = CODE.index("    return y") + len("    return y")
    prompt, shape = _prompt(vocab, cursor=at_end)
    assert shape.template == prompt_shapes.PREFIX_ONLY and shape.suffix_tokens == 0
    assert vocab.decode(prompt.ids) + prompt.heal == CODE[:at_end]


def test_a_middle_that_starts_a_line_keeps_its_indentation_but_one_blank():
    """On a line of blanks alone the middle starts with the line's indentation, all of it but
    the blank a word's first token carries (measured: +0.11 edit similarity on line holes against
    healing the whole indentation, when the model guessed the depth itself)."""
    vocab = qwen_shaped_vocab()
    code = "def f(x):\n    y = g(x)\n        \n    return y\n"
    cursor = code.index("        \n") + 8
    prompt, _ = _prompt(vocab, code=code, cursor=cursor)
    assert vocab.decode(prompt.ids).endswith("<|fim_middle|>       ") and prompt.heal == " "
