"""Development and test features, present only in ``gdg-lsp --dev`` (never in an editor's session).

- ``gdg/documentText`` (request, params ``{textDocument: {uri}, includeText?: bool}``):
  the server's copy of a document: ``{version, length, sha256, text?}`` (length in
  code points; sha256 of its UTF-8 with lone surrogates passed through), or
  ``null`` when it is not open. The protocol tests compare it with their own
  model of the edits after every edit: only the text itself shows that no edit
  was lost or misplaced (hover and completion see names, not characters).
- ``gdg.model: "random"`` or ``"random:SEED"``: a small random-weight model over
  the default model's tokenizer (from its converted cache, else from the GGUF
  file). The guarantee must hold for any weights, and the cancellation and
  failure tests need a model that loads in seconds; suggestions are noise.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from gdg_lsp.errors import ModelUnavailableError

log = logging.getLogger(__name__)

RANDOM_MODEL = "random"


def register(server) -> None:
    from gdg_lsp.server.worker import default_model_resolver

    session = server.session
    fallback = default_model_resolver

    def resolve_model(settings, progress):
        if settings.model == RANDOM_MODEL or settings.model.startswith(RANDOM_MODEL + ":"):
            seed = _seed(settings.model)
            return f"random-{seed}", lambda device: random_model(seed)
        return fallback(settings, progress)

    session.worker.resolve_model = resolve_model

    @server.feature("gdg/documentText")
    def document_text(ls, params: Any) -> dict | None:
        document = _get(params, "textDocument") or {}
        uri = _get(document, "uri")
        if not isinstance(uri, str):
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams("gdg/documentText needs textDocument.uri")
        doc = ls.session.documents.find(uri)
        if doc is None:
            return None
        answer = {"version": doc.version, "length": len(doc.text), "sha256": text_digest(doc.text)}
        if _get(params, "includeText"):
            answer["text"] = doc.text
        return answer


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _seed(model: str) -> int:
    _, _, tail = model.partition(":")
    try:
        return int(tail or 0)
    except ValueError:
        raise ModelUnavailableError(f"{model!r}: the random test model is `random` or `random:SEED` (an integer)") from None


def random_model(seed: int):
    """A random-weight Llama over the default model's real tokenizer (CPU)."""
    from transformers import AutoTokenizer

    from gdg_lsp.backends import models
    from gdg_lsp.vocab import HFVocabulary

    models._offline()
    spec = models.resolve("default")
    converted = models.converted_dir(spec)
    try:
        if (converted / "tokenizer.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(spec.path.parent), gguf_file=spec.path.name)
    except Exception as err:
        raise ModelUnavailableError(f"cannot read the default model's tokenizer for the random model: {err}") from err
    return models.random_backend(HFVocabulary(tokenizer), seed=seed)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)
