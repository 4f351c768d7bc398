"""Code actions where Γ is open, each naming what would close it.

- A jq filter whose input is unknown (its fields are open; the ``jq.no-input`` diagnostic):
  one quick fix per JSON file of its folder, writing ``# gdg: input=<file>`` at the top of the
  document (or replacing the comment that names a file that is not there); the same choices
  as source actions of kind ``source.gdg.jqInput``, listed when a request asks for that kind.
- A command whose program is on PATH but not in ``gdg.shell.tools`` (its options are open):
  "Add <tool> to gdg.shell.tools". The setting chooses which programs the server runs, so it
  is the user's alone (settings.USER_ONLY): the action never edits a settings file. Its command,
  ``gdg.showSettingToAdd``, answers the setting's name and the list with the tool added, as
  JSON an editor may open the user settings with, and says the same in a message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lsprotocol import types

from gdg_lsp.documents import uri_to_path
from gdg_lsp.languages.jq import inputs as jq_inputs
from gdg_lsp.languages.jq.analyzer import input_choices
from gdg_lsp.server.handlers import handles
from gdg_lsp.settings import DEFAULT_SHELL_TOOLS

JQ_INPUT_KIND = "source.gdg.jqInput"
SHOW_SETTING = "gdg.showSettingToAdd"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}\Z")
"""A program's name as a command line writes it (no path, no blank): what the command accepts."""


def _wanted(only: list[str] | None, kind: str) -> bool:
    return not only or any(not k or kind == k or kind.startswith(f"{k}.") for k in only)


def actions(ls, doc, params: types.CodeActionParams) -> list[types.CodeAction]:
    analyzer = ls.session.analyzer_of(doc)
    name = getattr(analyzer, "name", None)
    if name == "jq":
        return _jq_actions(ls, doc, params)
    if name == "shell":
        return _tool_actions(ls, doc, params, analyzer)
    return []


# -- jq: name the input --------------------------------------------------------------------------


def _input_edit(doc, file: str, encoding) -> types.TextEdit:
    """Replace the ``# gdg: input=`` the document has (it names no file that is there), or insert
    one at the top (after a ``#!`` line)."""
    written = f"# gdg: input={file}"
    found = jq_inputs.INPUT_COMMENT.search(doc.text)
    if found is not None:
        start, end = doc.position_at(found.start(), encoding), doc.position_at(found.end(), encoding)
        return types.TextEdit(types.Range(types.Position(*start), types.Position(*end)), written)
    if not doc.text.startswith("#!"):
        return types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)), written + "\n")
    if "\n" in doc.text:
        return types.TextEdit(types.Range(types.Position(1, 0), types.Position(1, 0)), written + "\n")
    end = types.Position(*doc.position_at(len(doc.text), encoding))
    return types.TextEdit(types.Range(end, end), "\n" + written)


def _jq_actions(ls, doc, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    # the source actions only when asked for by kind (else every menu would list the folder)
    source_wanted = bool(only) and any(k and (JQ_INPUT_KIND == k or JQ_INPUT_KIND.startswith(f"{k}.")) for k in only)
    about = [d for d in params.context.diagnostics if d.source == "gdg-lsp" and d.code == "jq.no-input"]
    fix_wanted = _wanted(only, types.CodeActionKind.QuickFix.value) and bool(about)
    if not (source_wanted or fix_wanted):
        return []
    session = ls.session
    analyzer = session.analyzer_of(doc)
    workspace = session.workspace_for(doc.uri)
    if analyzer.program(doc, workspace).sample is not None:
        return []  # the input is known by now (the diagnostic is stale)
    found = []
    for file in input_choices(uri_to_path(doc.uri), workspace.roots):
        edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            edits=[_input_edit(doc, file, session.encoding)])])
        if fix_wanted:
            found.append(types.CodeAction(title=f"Read the input from {file} (# gdg: input={file})",
                                          kind=types.CodeActionKind.QuickFix, diagnostics=about, edit=edit))
        if source_wanted:
            found.append(types.CodeAction(title=f"Name the jq input: {file}", kind=JQ_INPUT_KIND, edit=edit))
    return found


# -- shell: a program gdg.shell.tools does not list ------------------------------------------------


def _tool_actions(ls, doc, params: types.CodeActionParams, analyzer) -> list[types.CodeAction]:
    if not _wanted(params.context.only, types.CodeActionKind.QuickFix.value):
        return []
    session = ls.session
    start = params.range.start
    offset = doc.offset_at(start.line, start.character, session.encoding)
    tool = analyzer.unlisted_tool(doc, offset, session.workspace_for(doc.uri))
    if tool is None or not _TOOL_NAME.match(tool):
        return []
    title = f"Add {tool} to gdg.shell.tools (your user settings): its subcommands and options are open"
    return [types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix,
                             command=types.Command(title=title, command=SHOW_SETTING,
                                                   arguments=[{"setting": "gdg.shell.tools", "add": tool}]))]


def setting_to_add(tools: list[str], tool: str) -> dict[str, Any]:
    """What ``gdg.showSettingToAdd`` answers: the setting, its value with ``tool`` added, that value
    as the JSON line of a user settings file, and the sentence shown."""
    value = [*tools, tool] if tool not in tools else list(tools)
    line = f'"gdg.shell.tools": {json.dumps(value)}'
    lua = "{ " + ", ".join(json.dumps(t) for t in value) + " }"
    message = (f"gdg.shell.tools is a user setting (a workspace never chooses which programs gdg-lsp runs). "
               f"To let gdg-lsp read `{tool} --help`, add to your user settings.json: {line} "
               f"(Neovim: require('gdg_lsp').setup{{ settings = {{ gdg = {{ shell = {{ tools = {lua} }} }} }} }}).")
    return {"setting": "gdg.shell.tools", "value": value, "json": line, "message": message}


def register(server) -> None:
    @server.command(SHOW_SETTING)
    @handles("show setting")
    def show_setting(ls, given: Any) -> dict[str, Any] | None:
        tool = given.get("add") if isinstance(given, dict) else None
        if not isinstance(tool, str) or not _TOOL_NAME.match(tool) or given.get("setting") != "gdg.shell.tools":
            ls.session.show("gdg.showSettingToAdd: expected {setting: 'gdg.shell.tools', add: '<program>'}",
                            types.MessageType.Warning)
            return None
        configured = getattr(getattr(ls.session.settings, "shell", None), "tools", None)
        current = list(DEFAULT_SHELL_TOOLS if configured is None else configured)
        answer = setting_to_add(current, tool)
        ls.session.show(answer["message"])
        return answer
