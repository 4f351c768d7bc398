"""Shared fixtures.

- ``byte_cache``: grammars compiled for a one-byte-per-token vocabulary (fast, model-free),
  by the default grammar engine.
- ``engine_name``: each grammar engine in turn (``llguidance``, ``xgrammar``); tests that
  must hold for both (gates, guarantees) take it, with ``byte_engine``, ``tiny_engine``
  and ``smol_engine`` (that engine for each vocabulary).
- ``tiny_vocab`` / ``random_backend``: a small vocabulary and a random-weight
  model over it; the guarantee must hold for any weights, so this is how it is tested.
- ``smol_vocab``: the default model's real tokenizer (for healing and gate tests).
- ``qwen_vocab`` / ``qwen_engine``: a Qwen2.5-Coder-shaped tokenizer (151,936 ids) and each
  grammar engine over it, for the guarantee tests with a random-weight Qwen2 model.
- ``real_backend``: the default model itself (slow tests).
"""

from __future__ import annotations

import logging
import os
import string
import sys
from pathlib import Path

import pytest
from hypothesis import settings

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
if not CORPUS.is_dir():  # a clone outside the workspace layout
    CORPUS = Path(os.environ.get("GDG_CORPUS", "/work/shared/corpus"))
PYTHON_CORPUS = CORPUS / "python" / "Lib"


# Property tests explore new examples on every run locally; in CI (.ci/run sets
# GDG_CI) they are derandomized, so a run is reproducible and a red CI always
# means a change, not a lucky draw. Examples found to fail are pinned with
# @example in their tests.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("GDG_CI") or os.environ.get("CI"):
    settings.load_profile("ci")


_EXIT_STATUS = 0


def pytest_sessionfinish(session, exitstatus):
    global _EXIT_STATUS
    _EXIT_STATUS = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """End the test process with pytest's own status once everything is reported, without the
    interpreter's teardown. A full run once passed every test and then aborted in that teardown
    ("terminate called without an active exception", exit 134): a native library's C++ thread
    object destroyed while its thread still ran, with the daemon threads of the many servers the
    tests started still alive. Nothing of the tests' outcome is left to decide by then."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT_STATUS)


def pytest_collection_modifyitems(config, items):
    # GPU tests need CUDA, llamacpp tests llama-cpp-python (an optional extra CI
    # does not install); where they are missing the tests are deselected (and
    # counted in the summary), never silently passed.
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:
        has_cuda = False
    from gdg_lsp.bench.engines import llama_cpp_version

    missing = {marker for marker, present in (("gpu", has_cuda), ("llamacpp", llama_cpp_version() is not None))
               if not present}
    if not missing:
        return
    kept, dropped = [], []
    for item in items:
        (dropped if any(item.get_closest_marker(m) for m in missing) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True)
def _torch_threads():
    """One CPU thread, as the server uses by default: OpenMP spin-waits cost more
    than they save on these models, badly so on a busy 2-core machine."""
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    yield


@pytest.fixture(scope="session")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"corpus not found at {CORPUS} (set GDG_CORPUS)"
    return CORPUS


@pytest.fixture(scope="session")
def byte_cache():
    from gdg_lsp.explain import byte_grammars

    return byte_grammars()


GRAMMAR_ENGINES = ("llguidance", "xgrammar")
_ENGINES: dict = {}


def engine_for(name: str, vocab):
    """One engine per (engine, vocabulary) for the whole session (their caches are shared)."""
    key = (name, id(vocab))
    if key not in _ENGINES:
        from gdg_lsp.grammar import engine

        _ENGINES[key] = (vocab, engine.create(name, vocab))
    return _ENGINES[key][1]


@pytest.fixture(scope="session", params=GRAMMAR_ENGINES)
def engine_name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def byte_engine(engine_name):
    from gdg_lsp.explain import byte_grammars

    return byte_grammars(engine_name)


@pytest.fixture(scope="session")
def tiny_engine(engine_name, tiny_vocab):
    return engine_for(engine_name, tiny_vocab)


@pytest.fixture(scope="session")
def smol_engine(engine_name, smol_vocab):
    return engine_for(engine_name, smol_vocab)


@pytest.fixture(scope="session")
def qwen_vocab():
    """A tokenizer shaped as Qwen2.5-Coder's: 151,936 ids, its special tokens at their ids
    (``tests/fim_tokenizers.py``), for the guarantee with a 3x larger vocabulary."""
    from tests.fim_tokenizers import qwen_shaped_vocab

    return qwen_shaped_vocab()


@pytest.fixture(scope="session")
def qwen_engine(engine_name, qwen_vocab):
    return engine_for(engine_name, qwen_vocab)


TINY_TOKENS = sorted(
    set(string.ascii_letters + string.digits + "_ .,:;()[]{}=+-*/%<>!&|^~@#'\"\\\n\t")
    | {"    ", "  ", " =", " (", "()", "):", "self", "return", " return", "def", "if", " if", "for", " for",
       " in", "not", " not", "and", " and", "lambda", "None", "True", "False", "pass", "import", "from",
       "\n    ", "\n        ", "x", "xy", "ab", "abc", "len", "print"}
)


@pytest.fixture(scope="session")
def tiny_vocab():
    from gdg_lsp.vocab import ListVocabulary

    return ListVocabulary(TINY_TOKENS)


@pytest.fixture(scope="session")
def random_backend(tiny_vocab):
    from gdg_lsp.backends.models import random_backend

    return random_backend(tiny_vocab, seed=0)


@pytest.fixture(scope="session")
def smol_vocab():
    """The default model's tokenizer, without its weights."""
    from transformers import AutoTokenizer

    from gdg_lsp.backends import models
    from gdg_lsp.vocab import HFVocabulary

    spec = models.resolve("default")
    converted = models.converted_dir(spec)
    if (converted / "tokenizer.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
    return HFVocabulary(tokenizer, vocab_size=49152)


@pytest.fixture(scope="session")
def smol_cache(smol_vocab):
    from gdg_lsp.grammar.engine import DEFAULT

    return engine_for(DEFAULT, smol_vocab)


@pytest.fixture(scope="session")
def real_backend():
    from gdg_lsp.backends import models

    return models.load(models.resolve("default"), "cpu")
