"""A model that writes a fixed script wherever the grammar lets it, for servers under test.

``resolver(script)`` is a ``DecodeWorker.resolve_model`` for servers in this process;
``prelude(script)`` is Python for ``StdioClient(prelude=...)`` that installs it in a server
process before it starts (the tests' own scripted backend, over the small test vocabulary:
it loads at once and its suggestions are known in advance)."""

from __future__ import annotations


def resolver(script: str):
    def resolve(settings, progress):
        from gdg_lsp.vocab import ListVocabulary
        from tests.conftest import TINY_TOKENS
        from tests.tilelang.tl_scripted import ScriptedBackend

        return "scripted", lambda device: ScriptedBackend(ListVocabulary(TINY_TOKENS), script)

    return resolve


def prelude(script: str) -> str:
    return ("import gdg_lsp.server.worker as _worker\n"
            "from tests.lsp.scripted_model import resolver as _resolver\n"
            f"_worker.local_model = _resolver({script!r})\n")
