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

from gdg_lsp.server.handlers import param
from gdg_lsp.service import with_random_models

log = logging.getLogger(__name__)


def register(server) -> None:
    server.session.worker.resolve_model = with_random_models()

    @server.feature("gdg/documentText")
    def document_text(ls, params: Any) -> dict | None:
        document = param(params, "textDocument") or {}
        uri = param(document, "uri")
        if not isinstance(uri, str):
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams("gdg/documentText needs textDocument.uri")
        doc = ls.session.documents.find(uri)
        if doc is None:
            return None
        answer = {"version": doc.version, "length": len(doc.text), "sha256": text_digest(doc.text)}
        if param(params, "includeText"):
            answer["text"] = doc.text
        return answer


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
