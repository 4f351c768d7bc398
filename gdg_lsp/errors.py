"""Errors that cross module boundaries.

Every message is written for the person who sees it (an editor user or a CLI
user): it says what happened and, where there is one, the fix.
"""

from __future__ import annotations


class GdgError(Exception):
    """Base class; ``str(err)`` is a user-facing message."""


class GammaEmptyError(GdgError):
    """A slot's query over Γ answered with no names, so the rung cannot be instantiated."""

    def __init__(self, slot: str, query: object) -> None:
        super().__init__(f"slot %{slot}% has no candidates in Γ (query {query!r})")
        self.slot = slot
        self.query = query


class NestingLimitError(GdgError):
    """A frame push beyond the nesting cap (32 frames)."""


class UnknownLanguageError(GdgError):
    def __init__(self, language_id: str, uri: str | None = None) -> None:
        where = f" for {uri}" if uri else ""
        super().__init__(
            f"gdg-lsp has no analyzer for language {language_id!r}{where}; "
            "supported: python (more languages are listed by `gdg-lsp doctor`)"
        )
        self.language_id = language_id


class PositionError(GdgError):
    """A position that does not lie in the document."""


class DocumentNotOpenError(GdgError):
    def __init__(self, uri: str) -> None:
        super().__init__(f"document {uri} is not open (send textDocument/didOpen first)")
        self.uri = uri


class ModelUnavailableError(GdgError):
    """The configured model cannot be found or loaded; the message carries the fix."""


class GrammarError(GdgError):
    """A fragment could not be rendered or compiled."""
