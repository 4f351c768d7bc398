"""textDocument/completion: the names of Γ at the cursor (no model needed; on an analysis thread).

Items are the name as label, its kind, and a one-line detail (``describe``: ``function (values)``,
``from collections import Counter``); after a dot (a trigger character) the receiver's members.
The language's keywords its grammar allows at the cursor follow Γ's names (``service/keywords.py``):
a suggest list without ``return`` hid the ghost ``return ...`` in VS Code.
"""

from __future__ import annotations

import logging
import re

from lsprotocol import types

from gdg_lsp.languages.base import run_start
from gdg_lsp.server import problems
from gdg_lsp.server.handlers import handles
from gdg_lsp.service.keywords import allowed_keywords

log = logging.getLogger(__name__)

MAX_ITEMS = 2000
KIND = {
    "Variable": types.CompletionItemKind.Variable,
    "Parameter": types.CompletionItemKind.Variable,
    "Function": types.CompletionItemKind.Function,
    "Class": types.CompletionItemKind.Class,
    "Module": types.CompletionItemKind.Module,
    "Import": types.CompletionItemKind.Reference,
    "Table": types.CompletionItemKind.Class,
    "Column": types.CompletionItemKind.Field,
    "Field": types.CompletionItemKind.Field,
    "Buffer": types.CompletionItemKind.Variable,
    "ApiMember": types.CompletionItemKind.Method,
    "Action": types.CompletionItemKind.Function,
    "ParserState": types.CompletionItemKind.EnumMember,
}


MEMBER_KIND = {
    "module": types.CompletionItemKind.Module,
    "class": types.CompletionItemKind.Class,
    "function": types.CompletionItemKind.Method,
    "variable": types.CompletionItemKind.Field,
}
BUILTIN_KIND = {
    "function": types.CompletionItemKind.Function,
    "class": types.CompletionItemKind.Class,
    "exception": types.CompletionItemKind.Class,
    "constant": types.CompletionItemKind.Constant,
    "module": types.CompletionItemKind.Module,
}
"""A builtin by what it is (``Keyword`` is for the keywords listed after Γ's names)."""


def kind_of(binding) -> types.CompletionItemKind:
    if binding.sort == "Builtin":
        return BUILTIN_KIND.get(str(binding.attrs.get("kind")), types.CompletionItemKind.Function)
    return KIND.get(binding.sort, types.CompletionItemKind.Text)


MAX_DETAIL = 80
"""Characters of an item's detail line, at most."""
TRIGGER_CHARACTERS = ["."]
"""After a dot the receiver's members are listed: the editor asks without waiting for a letter."""


def describe(binding) -> str:
    """One line for an item: what the name is (its sort in words) and the one fact that tells
    most (a signature, where it was imported from, its type or table), never the analyzer's internals."""
    sort = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", binding.sort).lower()  # MakeTarget -> make target
    attrs = binding.attrs
    if isinstance(attrs.get("signature"), str):
        detail = f"{'async ' if attrs.get('is_async') else ''}{sort} {attrs['signature']}"
    elif attrs.get("imported") and attrs.get("module"):
        detail = f"{sort}: from {attrs['module']} import {attrs['imported']}"
    elif binding.sort == "Module" and attrs.get("module"):
        detail = f"module {attrs['module']}"
    elif attrs.get("type"):
        detail = f"{sort}: {attrs['type']}"
    elif attrs.get("table"):
        detail = f"{sort} of {attrs['table']}"
    elif binding.sort in ("Builtin", "Member") and isinstance(attrs.get("kind"), str):
        detail = f"{sort} {attrs['kind']}"
    else:
        detail = sort
    detail = " ".join(str(detail).split())
    return detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 1] + "…"


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(resolve_provider=False, trigger_characters=TRIGGER_CHARACTERS))
    @handles("completion", empty=lambda: types.CompletionList(is_incomplete=False, items=[]), background=True,
             moved=lambda: types.CompletionList(is_incomplete=True, items=[]))
    def completion(ls, params: types.CompletionParams, doc) -> types.CompletionList:
        session = ls.session
        empty = types.CompletionList(is_incomplete=False, items=[])
        found = session.locate_in(doc, params.position.line, params.position.character)
        if found is None:
            return empty
        analyzer, offset = found
        text = doc.text
        start = run_start(text, offset)
        prefix = text[start:offset]
        receiver = None
        if start > 0 and text[start - 1] == ".":
            receiver = analyzer.receiver_before(text, start - 1)
            if receiver is None and start > 1 and (text[start - 2].isalnum() or text[start - 2] in "_)]"):
                return empty  # an attribute of a value that is not a plain (dotted) name
            # a dot after nothing name-like (jq's `.field`, `| .`): Γ's names, as anywhere
        try:
            gamma = analyzer.gamma_at(doc, offset, session.workspace_for(doc.uri))
        finally:
            problems.report(ls, doc.language_id, doc.uri)
        if receiver is not None and receiver.kind == "fields":
            children = gamma.bindings("Field", parent=receiver.name)
            if children or text[start - 2] in ")]":  # after `.items[].`: the fields below it
                items = [types.CompletionItem(label=str(b.attrs["key"]), kind=types.CompletionItemKind.Field,
                                              detail=describe(b), sort_text="0" + str(b.attrs["key"]))
                         for b in children
                         if b.attrs.get("ident") and str(b.attrs["key"]).lower().startswith(prefix.lower())]
                return types.CompletionList(is_incomplete=len(items) > MAX_ITEMS, items=items[:MAX_ITEMS])
        elif receiver is not None:  # after `json.`: the receiver's members, when Γ knows them
            member = len(receiver.name) + 1
            items = [
                types.CompletionItem(label=b.name[member:], kind=MEMBER_KIND.get(
                    str(b.attrs.get("kind")), types.CompletionItemKind.Field), detail=describe(b),
                    sort_text=("1" if b.name[member:].startswith("_") else "0") + b.name)
                for b in gamma.bindings("Member", receiver=receiver.name)
                if b.name[member:].lower().startswith(prefix.lower())
            ]
            return types.CompletionList(is_incomplete=len(items) > MAX_ITEMS, items=items[:MAX_ITEMS])
        # attr `word`: how the name is written at the cursor when Γ qualifies it (shell:
        # `main` of refs/heads/main); attr `completion=False`: not a name to write (a source)
        items = [
            types.CompletionItem(label=label, kind=kind_of(b), detail=describe(b),
                                 sort_text=("1" if b.sort == "Builtin" else "0") + label)
            for b in gamma.bindings()
            if b.sort != "Member" and b.attrs.get("completion", True) is not False
            and (label := str(b.attrs.get("word", b.name))).lower().startswith(prefix.lower())
        ]
        if receiver is None and not text[start - 1 : start] == "." and len(items) < MAX_ITEMS:
            # the keywords the grammar allows here, after Γ's names (sort text "2")
            listed = {item.label for item in items}
            items += [types.CompletionItem(label=word, kind=types.CompletionItemKind.Keyword, detail="keyword",
                                           sort_text="2" + word)
                      for word in allowed_keywords(analyzer, doc, offset, prefix, session.workspace_for(doc.uri))
                      if word not in listed]
        return types.CompletionList(is_incomplete=len(items) > MAX_ITEMS, items=items[:MAX_ITEMS])
