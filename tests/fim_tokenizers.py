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
