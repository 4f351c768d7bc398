"""The raw stdio client lives in the package (``gdg-lsp bench stress`` uses it too)."""

from gdg_lsp.bench.lsp_client import StdioClient

__all__ = ["StdioClient"]
