"""End to end over stdio with pytest-lsp and the real default model.

A real file from the corpus is opened with one statement line emptied; the
server's suggestion for that line is put back into the file, which is then
judged by Python's own tools: it must compile and pyflakes must find no
undefined name on that line. The server's Γ plays no part in the judgement.

The questions are asked once the model is ready: on a slow CI machine the first
load converts the model and may take most of a minute, and a request made before
that would only measure the start (tests/lsp/test_warm_start.py does that).
"""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from gdg_lsp.languages.python.bench import pyflakes_undefined

# the server is started once for the module: the tests must share its event loop
pytestmark = pytest.mark.asyncio(loop_scope="module")

HOLES = [  # (file, 1-based line of a statement inside a function)
    ("bisect.py", 50),
    ("fnmatch.py", 34),
    ("genericpath.py", 45),
    ("linecache.py", 30),
    ("glob.py", 62),
]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "gdg_lsp", "--stdio"]),
    scope="module",
)
async def client(lsp_client: LanguageClient):
    ready = asyncio.Event()
    lsp_client.gdg_suggestions = []  # the gdg/suggestion notifications, for the reasons of empty answers

    @lsp_client.feature("gdg/status")
    def status(params):
        if params.state in ("ready", "failed"):
            ready.set()

    @lsp_client.feature("gdg/suggestion")
    def suggestion(params):
        lsp_client.gdg_suggestions.append(params)

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16])),
        # every suggestion the model makes is judged here: one the show threshold would hide
        # names nothing either, and would only shrink the sample (tests/unit/test_show_threshold.py)
        initialization_options={"gdg": {"maxTokens": 40, "timeoutMs": 60000, "showThreshold": "off"}},
    ))
    await asyncio.wait_for(ready.wait(), 900)
    yield
    await lsp_client.shutdown_session()


async def _suggest(client: LanguageClient, corpus, name: str, line: int) -> tuple[list[str], str]:
    original = (corpus / "python" / "Lib" / name).read_text(encoding="utf-8").split("\n")
    target = original[line - 1]
    indent = target[: len(target) - len(target.lstrip())]
    assert target.strip() and not target.rstrip().endswith(":"), "pick a simple statement"
    lines = list(original)
    lines[line - 1] = indent
    uri = f"file:///corpus/{name}"
    client.gdg_suggestions.clear()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text="\n".join(lines))))
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri),
        position=types.Position(line - 1, len(indent)),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
    ))
    assert result is not None
    suggestion = result.items[0].insert_text if result.items else ""
    return lines, suggestion


@pytest.mark.slow
async def test_suggestions_at_statement_starts_name_only_what_exists(client: LanguageClient, corpus):
    """Every suggestion, put back in its file, compiles and names nothing undefined
    (by pyflakes); and the model does suggest something at most of these holes."""
    made, empty = 0, []
    for name, line in HOLES:
        lines, suggestion = await _suggest(client, corpus, name, line)
        if not suggestion:  # an empty answer names nothing; the count below keeps this honest
            said = client.gdg_suggestions[-1] if client.gdg_suggestions else None
            empty.append((name, "no gdg/suggestion: the budget ran out before decoding" if said is None else
                          {key: getattr(said, key, None) for key in ("stopReason", "reason", "tokens")}))
            continue
        made += 1
        assert "\n" not in suggestion and suggestion == suggestion.lstrip(), repr(suggestion)
        indent = lines[line - 1]
        block = "\n" + indent + "    pass" if suggestion.rstrip().endswith(":") else ""
        lines[line - 1] = indent + suggestion + block
        filled = "\n".join(lines)
        compile(filled, name, "exec")  # Python itself must accept the file
        assert [n for at, n in pyflakes_undefined(filled) if at == line] == [], (name, suggestion)
    assert made >= len(HOLES) - 1, f"only {made} of {len(HOLES)} holes got a suggestion; empty: {empty}"
