"""gdg-lsp: inline code completion from a local model under decode-time grammars.

Every reference position in a suggestion is decoded under a grammar whose
alternatives are exactly the names in scope at that point (the environment Γ),
so a suggestion cannot name something that does not exist.
"""

__version__ = "0.1.0"
