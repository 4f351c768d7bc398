"""Small byte-level BPE tokenizers with a FIM family's marker tokens, trained here in
milliseconds (no hub download): what the FIM prompt and candidate tests run on."""

from __future__ import annotations

import functools

TRAINING_TEXT = "def f(x):\n    y = g(x, 1)\n    return y\n" * 20


@functools.lru_cache(maxsize=None)
def fim_vocab(family_name: str):
    """An ``HFVocabulary`` whose tokenizer has ``family_name``'s markers (and its marks)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from gdg_lsp import prompt_shapes
    from gdg_lsp.vocab import HFVocabulary

    family = next(f for f in prompt_shapes.FAMILIES if f.name == family_name)
    specials = ["<|endoftext|>", family.prefix[0], family.suffix[0], *family.middle[:1], *family.marks]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=specials, show_progress=False,  # every merge of the text: the same for all families
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([TRAINING_TEXT], trainer)
    return HFVocabulary(PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>"))


QWEN_VOCAB_SIZE = 151_936
"""Qwen2.5's embedding rows (its config's vocab_size): 151,643 BPE tokens, 22 special tokens, padding."""
QWEN_BPE_TOKENS = 151_643
QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                 "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                 "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
                 "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")
"""In Qwen2.5's order: they take ids 151,643 to 151,664, as in the real tokenizer."""


@functools.lru_cache(maxsize=None)
def qwen_shaped_vocab():
    """An ``HFVocabulary`` shaped as Qwen2.5-Coder's: 151,936 ids, its special tokens at their
    real ids (FIM and repository tokens included), a byte-level BPE over code-like tokens.

    Built in seconds without a download and without Qwen's own files: the BPE tokens are the
    prefixes of the words of this interpreter's standard library (most frequent first), then
    letter strings, CJK characters and digit strings until there are as many as Qwen has. A set
    of tokens closed under prefixes is a valid BPE whose merges add one character at a time."""
    import collections
    import itertools
    import string
    import sysconfig
    from pathlib import Path

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from gdg_lsp.vocab import HFVocabulary

    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    spelled = {}  # text -> its byte-level spelling

    def spelling(text: str) -> str:
        if text not in spelled:
            spelled[text] = "".join(piece for piece, _ in byte_level.pre_tokenize_str(text))
        return spelled[text]

    counts: collections.Counter = collections.Counter()
    read = 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        counts.update(piece for piece, _ in byte_level.pre_tokenize_str(text))
        read += len(text)
        if read > 3_000_000:
            break
    wanted = QWEN_BPE_TOKENS - len(alphabet)
    tokens: dict[str, None] = {}

    def words():
        yield from (word for word, _ in counts.most_common())
        for n in (1, 2, 3):
            for letters in itertools.product(string.ascii_lowercase, repeat=n):
                yield "".join(letters)
                yield spelling(" " + "".join(letters))
        yield from (spelling(chr(code)) for code in range(0x4E00, 0xA000))
        for n in itertools.count(1):
            yield from ("".join(digits) for digits in itertools.product(string.digits, repeat=n))

    for word in words():
        for end in range(2, len(word) + 1):
            tokens.setdefault(word[:end], None)
        if len(tokens) >= wanted:
            break
    chosen = list(tokens)[:wanted]
    vocab = {char: i for i, char in enumerate(alphabet)}
    for token in (*chosen, *QWEN_SPECIALS):
        vocab[token] = len(vocab)
    merges = [(token[:-1], token[-1]) for token in sorted(chosen, key=len)]
    tokenizer = Tokenizer(models.BPE(vocab, merges))
    tokenizer.pre_tokenizer = byte_level
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(list(QWEN_SPECIALS))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")
    return HFVocabulary(fast, vocab_size=QWEN_VOCAB_SIZE)
