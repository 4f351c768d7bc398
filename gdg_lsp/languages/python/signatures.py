"""Keyword names of callables, read statically: what ``f(name=...)`` may say.

From a function's parameters (tree-sitter for the document, ``ast`` for installed code):
positional-or-keyword and keyword-only parameters are keyword names (positional-only
ones and a method's first parameter are not); ``**kwargs`` takes any keyword, so the
names are unknown (None). A decorator other than the few known to keep the signature
(``staticmethod``, ``functools.cache``...) may change it: unknown too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

SIGNATURE_KEEPING = frozenset({"staticmethod", "classmethod", "abstractmethod", "abc.abstractmethod", "cache",
                               "functools.cache", "lru_cache", "functools.lru_cache", "final", "typing.final",
                               "override", "typing.override", "typing_extensions.override", "overload",
                               "typing.overload", "typing_extensions.overload", "abc.abstractclassmethod",
                               "abc.abstractstaticmethod"})
"""Decorators that leave a function's signature as written (any other one may change it)."""


def keywords_of(params: Iterable[tuple[str, str]], drop_first: bool) -> tuple[str, ...] | None:
    """Keyword names from ``(name, kind)`` parameters in order, kind one of ``positional``,
    ``posonly``, ``keyword``, ``*args``, ``**kwargs``; None when ``**kwargs`` takes any."""
    names: list[str] = []
    for index, (name, kind) in enumerate(params):
        if drop_first and index == 0 and kind in ("positional", "posonly"):
            continue
        if kind == "**kwargs":
            return None
        if kind in ("positional", "keyword"):
            names.append(name)
    return tuple(sorted(set(names)))


def merge_keywords(found: Iterable[tuple[str, ...] | None]) -> tuple[str, ...] | None:
    """Overloads of one function: any keyword of any of them (None if one is unknown)."""
    out: set[str] = set()
    for keywords in found:
        if keywords is None:
            return None
        out.update(keywords)
    return tuple(sorted(out))


def ast_dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Subscript):
        return ast_dotted(expr.value)
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute) and (head := ast_dotted(expr.value)) is not None:
        return f"{head}.{expr.attr}"
    return None


def ast_keywords(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> tuple[str, ...] | None:
    args = fn.args
    params = [(a.arg, "posonly") for a in args.posonlyargs] + [(a.arg, "positional") for a in args.args]
    if args.vararg is not None:
        params.append((args.vararg.arg, "*args"))
    params += [(a.arg, "keyword") for a in args.kwonlyargs]
    if args.kwarg is not None:
        params.append((args.kwarg.arg, "**kwargs"))
    decorators = {ast_dotted(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list}
    return keywords_of(params, method and "staticmethod" not in decorators)


def ast_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[str, ...]:
    return tuple(d for d in (ast_dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d)


def text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def tree_dotted(node: Any) -> str | None:
    if node is None:
        return None
    if node.type == "subscript":
        return tree_dotted(node.child_by_field_name("value"))
    if node.type == "generic_type":  # tree-sitter reads `Generic[T]` in a class header as a type
        return tree_dotted(node.named_children[0]) if node.named_children else None
    if node.type == "identifier":
        return text(node)
    if node.type == "attribute":
        head = tree_dotted(node.child_by_field_name("object"))
        attr = node.child_by_field_name("attribute")
        return f"{head}.{text(attr)}" if head and attr is not None else None
    return None


def parameter_parts(p: Any) -> tuple[str | None, Any, Any, Any]:
    """One node of a tree-sitter ``parameters`` list as ``(splat, name, annotation, default)``:
    ``splat`` is ``"*args"``/``"**kwargs"`` or None, the others nodes or None (the scope
    builder and the signature reader read parameters the same way)."""
    splat = ident = annotation = default = None
    if p.type == "identifier":
        ident = p
    elif p.type in ("default_parameter", "typed_default_parameter"):
        ident = p.child_by_field_name("name")
        annotation = p.child_by_field_name("type")
        default = p.child_by_field_name("value")
    elif p.type == "typed_parameter":
        annotation = p.child_by_field_name("type")
        for child in p.named_children:
            if child.type == "identifier":
                ident = child
            elif child.type in ("list_splat_pattern", "dictionary_splat_pattern"):
                splat = "*args" if child.type == "list_splat_pattern" else "**kwargs"
                ident = next((c for c in child.named_children if c.type == "identifier"), None)
    elif p.type in ("list_splat_pattern", "dictionary_splat_pattern"):
        splat = "*args" if p.type == "list_splat_pattern" else "**kwargs"
        ident = next((c for c in p.named_children if c.type == "identifier"), None)
    return splat, ident, annotation, default


def tree_parameters(params: Any) -> list[tuple[str, str]]:
    """``(name, kind)`` of a tree-sitter ``parameters`` node, in order."""
    out: list[tuple[str, str]] = []
    keyword_only = False
    for p in params.named_children if params is not None else ():
        if p.type == "keyword_separator":
            keyword_only = True
            continue
        if p.type == "positional_separator":
            out = [(n, "posonly" if k == "positional" else k) for n, k in out]
            continue
        splat, ident, _, _ = parameter_parts(p)
        kind = splat or ("keyword" if keyword_only else "positional")
        if kind == "*args":
            keyword_only = True
        if ident is not None or kind in ("*args", "**kwargs"):
            out.append((text(ident) if ident is not None else "", kind))
    return out


def tree_decorators(node: Any) -> tuple[str, ...]:
    """Decorators of a tree-sitter function or class definition (its ``decorated_definition`` parent's)."""
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    found = []
    for child in parent.named_children:
        if child.type == "decorator" and child.named_children:
            expr = child.named_children[0]
            if expr.type == "call":
                expr = expr.child_by_field_name("function")
            if (name := tree_dotted(expr)) is not None:
                found.append(name)
    return tuple(found)


def function_keywords(fn: Any, method: bool) -> tuple[str, ...] | None:
    """Keyword names of a tree-sitter ``function_definition`` (None: unknown)."""
    decorators = tree_decorators(fn)
    if any(d not in SIGNATURE_KEEPING for d in decorators):
        return None
    return keywords_of(tree_parameters(fn.child_by_field_name("parameters")), method and "staticmethod" not in decorators)
