"""``ast.parse`` for code that runs on several threads.

CPython 3.11's ``ast`` module converts a parse tree to Python objects with a
recursion counter kept in module state, not per thread (python/cpython#106905).
When two analysis threads parse at once and the interpreter switches between
them mid-conversion, one of them fails with ``SystemError: AST constructor
recursion depth mismatch`` -- a spurious error on valid code. Every parse in
gdg-lsp goes through :func:`parse`, which holds one lock for the conversion;
parses are short (milliseconds for a module), so the lock costs nothing a user
could notice.
"""

from __future__ import annotations

import ast
import threading
import warnings

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)``, one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)


def parses(source: str | bytes) -> bool:
    """Whether CPython reads ``source``: its parser (warnings about odd escapes silenced: the
    answer is all that is wanted), and the refusals its compiler makes of a parsed tree that
    the tree itself shows (a keyword argument given twice, a parameter named twice). Read only,
    like ``parse``: nothing is compiled to code."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return not any(_named_twice(node) for node in ast.walk(tree))


def _named_twice(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        names = [k.arg for k in node.keywords if k.arg is not None]
    elif isinstance(node, ast.arguments):
        names = [a.arg for a in (*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg)
                 if a is not None]
    else:
        return False
    return len(names) != len(set(names))
