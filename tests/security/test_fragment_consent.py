"""A workspace's fragment files are loaded only with the user's consent, and that consent is the user's.

Through a live server in this process, with the workspace folder as its root:

- without consent the files are listed, never read, each gets one diagnostic saying how to
  allow them, and the editor is asked once (Load / Not now / Never for this folder);
- "Load" and "Never" are remembered for the folder in the user's state folder (a 0700
  folder, a 0600 file: ``GDG_LSP_STATE_DIR`` here), so a second server does not ask again;
- a consent file planted in the state folder (writable by others, a link, in a folder others
  can write) is not believed: the server asks, loads nothing, and says why;
- a consented fragment's own words are never labelled guaranteed: only its Γ slots are.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gdg_lsp.bench.inprocess import InProcessServer
from gdg_lsp.fragments import store
from gdg_lsp.languages import registry
from gdg_lsp.server.fragment_consent import FILE_NAME

FOLDER = Path(".gdg") / "fragments"
NO_MODEL = {"model": "/nonexistent/model.gguf"}
LANGUAGE = '''
[new_language]
syntax = "python"
extensions = [".lit"]
'''


def _fragment(name: str, template: str, example: str) -> str:
    """A fragment of `lit` opened by `NAME(`, with one Γ slot `v` (a Variable)."""
    return f'''
language = "lit"
name = "{name}"
rungs = ["gamma", "base"]
template = \'\'\'
root ::= {template}
\'\'\'
[hole]
kind = "call:{name}("
trigger = ["{name}("]
[slots.v]
gamma = {{ sort = ["Variable"] }}
base = {{ identifier = {{}} }}
[[examples]]
text = "{example}"
gamma = {{ value = {{ sort = "Variable" }}, n = {{ sort = "Parameter" }} }}
'''


EMIT = _fragment("emit", '"emit(" %v% ", \'rm -rf ~\')"', "emit(value, 'rm -rf ~')") + LANGUAGE
"""Its template writes words of its own (`rm -rf ~`) after the slot."""
CALL = _fragment("call", '"call(" %v% ")"', "call(value)")
"""Only a Γ slot and punctuation."""


@pytest.fixture
def state(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("GDG_LSP_STATE_DIR", str(folder))
    yield folder
    for spec in list(registry.registered()):
        registry.unregister(spec.name)
    store.USER.clear()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "cloned"
    (root / FOLDER).mkdir(parents=True)
    (root / FOLDER / "emit.toml").write_text(EMIT, encoding="utf-8")
    (root / FOLDER / "call.toml").write_text(CALL, encoding="utf-8")
    return root


def _diagnostics_of(path: Path):
    uri = path.resolve().as_uri()
    return lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri


def _loaded(path: Path):
    """The file's diagnostics cleared: it was read, gated and installed."""
    said = _diagnostics_of(path)
    return lambda m: said(m) and m["params"]["diagnostics"] == []


def _question(m: dict) -> bool:
    return m.get("method") == "window/showMessageRequest"


async def _answer(server: InProcessServer, title: str) -> dict:
    asked = await server.wait_for(_question, 30)
    server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"title": title}})
    return asked


def _server(workspace: Path, options: dict | None = None) -> InProcessServer:
    return InProcessServer(dev=True, initialization_options={**NO_MODEL, **(options or {})},
                           root_uri=workspace.as_uri())


async def test_the_files_are_not_read_until_the_user_says_load_which_is_remembered(workspace: Path, state: Path):
    emit = workspace / FOLDER / "emit.toml"
    async with _server(workspace) as server:
        told = await server.wait_for(_diagnostics_of(emit), 30)
        [problem] = told["params"]["diagnostics"]
        assert problem["severity"] == 3 and "gdg.fragments.trustedFolders" in problem["message"]
        asked = await server.wait_for(_question, 30)
        assert str(workspace) in asked["params"]["message"] and "2 gdg-lsp fragment files" in asked["params"]["message"]
        assert [a["title"] for a in asked["params"]["actions"]] == ["Load", "Not now", "Never for this folder"]
        assert server.server.session.fragments.files == {} and "lit" not in registry.names()

        await _answer(server, "Load")
        await server.wait_for(_loaded(emit), 30)
        assert "lit" in registry.names() and set(store.USER.fragments("lit")) == {"emit", "call"}

    memory = state / FILE_NAME
    assert stat.S_IMODE(state.stat().st_mode) == 0o700 and stat.S_IMODE(memory.stat().st_mode) == 0o600
    assert json.loads(memory.read_text())["folders"] == {os.path.realpath(workspace): "load"}
    for spec in list(registry.registered()):
        registry.unregister(spec.name)
    store.USER.clear()

    async with _server(workspace) as again:  # the next session: loaded at once, nothing asked
        await again.wait_for(_loaded(emit), 30)
        await again.settle(0.2)
        assert not any(_question(m) for m in again.messages)


async def test_not_now_loads_nothing_and_never_is_remembered(workspace: Path, state: Path):
    emit = workspace / FOLDER / "emit.toml"
    async with _server(workspace) as server:
        await _answer(server, "Not now")
        await server.settle(0.3)
        assert server.server.session.fragments.files == {} and not (state / FILE_NAME).exists()
    async with _server(workspace) as server:  # "Not now" holds for that session only: asked again
        await _answer(server, "Never for this folder")
        told = await server.wait_for(lambda m: _diagnostics_of(emit)(m) and "never" in json.dumps(m), 30)
        assert "gdg.fragments.trustedFolders" in told["params"]["diagnostics"][0]["message"]
    async with _server(workspace) as server:
        await server.wait_for(_diagnostics_of(emit), 30)
        await server.settle(0.3)
        assert not any(_question(m) for m in server.messages)
        assert server.server.session.fragments.files == {} and "lit" not in registry.names()


def _plant(state: Path, workspace: Path, how: str) -> None:
    state.mkdir(mode=0o700)
    body = json.dumps({"format": 1, "folders": {os.path.realpath(workspace): "load"}})
    if how == "a file others can write":
        (state / FILE_NAME).write_text(body)
        os.chmod(state / FILE_NAME, 0o666)
    elif how == "a link to a file elsewhere":
        elsewhere = state.parent / "elsewhere.json"
        elsewhere.write_text(body)
        (state / FILE_NAME).symlink_to(elsewhere)
    else:  # a folder others can write
        (state / FILE_NAME).write_text(body)
        os.chmod(state, 0o777)


@pytest.mark.parametrize("how", ["a file others can write", "a link to a file elsewhere",
                                 "a folder others can write"])
async def test_a_planted_consent_file_grants_nothing(workspace: Path, state: Path, how: str):
    _plant(state, workspace, how)
    async with _server(workspace) as server:
        await server.wait_for(_question, 30)  # asked, as if nothing were remembered
        warned = await server.wait_for(lambda m: m.get("method") == "window/showMessage"
                                       and "ignored" in m["params"]["message"], 30)
        assert FILE_NAME in warned["params"]["message"] or str(state) in warned["params"]["message"]
        assert server.server.session.fragments.files == {} and "lit" not in registry.names()


async def test_a_consented_fragments_own_words_are_never_labelled_guaranteed(workspace: Path, state: Path):
    options = {"model": "random:3", "maxTokens": 32, "maxLines": 1, "fragments": {"trustedFolders": [str(workspace)]}}
    async with InProcessServer(dev=True, initialization_options=options, root_uri=workspace.as_uri()) as server:
        await server.wait_for(_loaded(workspace / FOLDER / "emit.toml"), 60)
        assert not any(_question(m) for m in server.messages)  # the setting is consent: nothing asked
        assert await server.wait_model() == "ready"
        uri = (workspace / "job.lit").as_uri()

        async def ask(text: str) -> dict:
            server.open(uri, text, language_id="lit", version=len(text))
            line = text.count("\n")
            answer = await server.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": len(text.split("\n")[-1])},
                "context": {"triggerKind": 1}}, timeout=60)
            assert answer["result"]["items"], server.server.session.last_suggestion
            return server.server.session.last_suggestion

        forced = await ask("value = 1\nemit(")
        assert forced["text"] == "value, 'rm -rf ~')" and forced["rung"] == "gamma"
        assert not forced["guaranteed"]
        assert forced["fragmentText"] == {"file": str(workspace / FOLDER / "emit.toml"), "words": ["rm", "rf"]}
        slotted = await ask("value = 1\ncall(")  # only a Γ slot and punctuation: that is a guarantee
        assert slotted["text"] == "value)" and slotted["rung"] == "gamma"
        assert slotted["guaranteed"] and slotted["fragmentText"]["words"] == []


def test_an_answer_in_a_file_of_another_user_is_not_believed(tmp_path: Path, monkeypatch):
    """The memory itself: a file (or folder) whose owner is not the server's user grants nothing."""
    from gdg_lsp.server.fragment_consent import LOAD, ConsentMemory

    memory = ConsentMemory(tmp_path / "state")
    memory.remember(tmp_path / "ws", LOAD)
    assert memory.answer(tmp_path / "ws") == LOAD and memory.problem is None
    someone_else = os.getuid() + 1
    monkeypatch.setattr(os, "getuid", lambda: someone_else)  # as the file's owner is seen by another user
    assert memory.answer(tmp_path / "ws") is None
    assert "belongs to user id" in memory.problem
