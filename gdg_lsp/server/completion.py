"""textDocument/completion: the names of Γ at the cursor (no model needed; on an analysis thread)."""

from __future__ import annotations

import logging

from lsprotocol import types

from gdg_lsp.languages.base import run_start
from gdg_lsp.server import problems
from gdg_lsp.server.handlers import handles

log = logging.getLogger(__name__)

MAX_ITEMS = 2000
KIND = {
    "Variable": types.CompletionItemKind.Variable,
    "Parameter": types.CompletionItemKind.Variable,
    "Function": types.CompletionItemKind.Function,
    "Class": types.CompletionItemKind.Class,
    "Module": types.CompletionItemKind.Module,
    "Import": types.CompletionItemKind.Reference,
    "Builtin": types.CompletionItemKind.Keyword,
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


def describe(binding) -> str:
    attrs = ", ".join(f"{k}={v}" for k, v in binding.attrs.items() if k not in ("scope",) and v not in (None, ""))
    return f"{binding.sort}" + (f" ({attrs})" if attrs else "")


def register(server) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(resolve_provider=False))
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
            gamma = analyzer.gamma_at(doc, offset, session.workspace)
        finally:
            problems.report(ls, doc.language_id)
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
            types.CompletionItem(label=label, kind=KIND.get(b.sort, types.CompletionItemKind.Text),
                                 detail=describe(b), sort_text=("1" if b.sort == "Builtin" else "0") + label)
            for b in gamma.bindings()
            if b.sort != "Member" and b.attrs.get("completion", True) is not False
            and (label := str(b.attrs.get("word", b.name))).lower().startswith(prefix.lower())
        ]
        return types.CompletionList(is_incomplete=len(items) > MAX_ITEMS, items=items[:MAX_ITEMS])
