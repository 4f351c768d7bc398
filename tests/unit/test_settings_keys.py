"""The settings keys are derived from the settings type: every field that declares it changes a
suggestion (``settings.SUGGESTION``) stops a suggestion made under another value from being served
again, and no other field does; the model's and the slots' keys likewise (``settings.LOADS``)."""

from __future__ import annotations

import typing

import attrs
import pytest

from gdg_lsp import settings as settings_module
from gdg_lsp.documents import Snapshot
from gdg_lsp.languages.base import WorkspaceContext
from gdg_lsp.languages.python.analyzer import PythonAnalyzer, parse
from gdg_lsp.service.suggestion_reuse import SuggestionReuse
from gdg_lsp.settings import (
    LOADS,
    SUGGESTION,
    FragmentClaim,
    JqInput,
    Settings,
    SqlSource,
    marked_paths,
    model_key,
    slots_key,
    suggestion_key,
)

TEXT = "def f(alpha, beta):\n    total = \n"
CURSOR = TEXT.index("= ") + 2


def _leaves(kind: type = Settings, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every setting of the type as a path, sections looked into."""
    found = []
    types = typing.get_type_hints(kind)
    for field in attrs.fields(kind):
        if attrs.has(types[field.name]):
            found += _leaves(types[field.name], (*prefix, field.name))
        else:
            found.append((*prefix, field.name))
    return found


def _covered(path: tuple[str, ...], marked: list[tuple[str, ...]]) -> bool:
    return any(path[: len(mark)] == mark for mark in marked)


def _other_values(kind: type, value: object) -> list[object]:
    """Values of a setting's type other than ``value`` (the first that validates is used)."""
    origin = typing.get_origin(kind)
    if kind is bool:
        return [not value]
    if kind is int:
        return [value + 1, value - 1]
    if kind is str:
        return ["cpu", "cuda", "lean", "none", "syntax", "xgrammar", "llguidance", "never", "always", "plain",
                "llamacpp", "gbnf", "lark", "remote", "local", "postgres", "server", "client", "off", "1.0", "other"]
    if origin is list:
        (item,) = typing.get_args(kind)
        samples = {str: "extra", SqlSource: SqlSource(name="billing", ddl=["schema.sql"]),
                   JqInput: JqInput("filters/*.jq", "samples/*.json"),
                   FragmentClaim: FragmentClaim("triton", "python", ["import triton"])}
        return [[*value, samples[item]]]
    raise AssertionError(f"no other value for a setting of type {kind}")


def _changed(settings: Settings, path: tuple[str, ...]) -> Settings:
    """``settings`` with the setting at ``path`` given another valid value."""
    holder_kind, holder = Settings, settings
    for name in path[:-1]:
        holder_kind = typing.get_type_hints(holder_kind)[name]
        holder = getattr(holder, name)
    kind = typing.get_type_hints(holder_kind)[path[-1]]
    if attrs.has(kind):  # a whole section marked: change its first leaf
        first = _leaves(kind)[0]
        return _changed(settings, (*path, *first))
    current = getattr(holder, path[-1])
    for value in _other_values(kind, current):
        if value == current:
            continue
        try:
            return settings_module._set(settings, path, value)
        except (ValueError, TypeError):
            continue
    raise AssertionError(f"no other valid value for {'.'.join(path)}")


def _shown(reuse: SuggestionReuse, settings: Settings) -> Snapshot:
    snapshot = Snapshot("file:///k.py", "python", 1, TEXT, parse(TEXT.encode()))
    hole = PythonAnalyzer().hole_at(snapshot, CURSOR, WorkspaceContext())
    reuse.remember(snapshot, CURSOR, CURSOR, "alpha + beta", settings, hole)
    return snapshot


SUGGESTION_PATHS = marked_paths(SUGGESTION)
OTHER_PATHS = [path for path in _leaves() if not _covered(path, SUGGESTION_PATHS)]


def test_the_settings_that_issue_32_found_missing_are_marked():
    for name in ("definitions", "suffix", "candidates", "grammar_engine", "model", "constraint", "max_tokens",
                 "timeout_ms", "context_tokens"):
        assert (name,) in SUGGESTION_PATHS, name
    assert len(SUGGESTION_PATHS) >= 20 and OTHER_PATHS  # both kinds exist: the test below means something


def _shown_then_changed(path: tuple[str, ...]) -> tuple[SuggestionReuse, Snapshot, Settings, Settings]:
    """A suggestion shown under the default settings: (the reuse, its snapshot, those settings, the
    settings with ``path`` changed)."""
    reuse = SuggestionReuse()
    base = Settings()
    return reuse, _shown(reuse, base), base, _changed(base, path)


@pytest.mark.parametrize("path", SUGGESTION_PATHS, ids=".".join)
def test_toggling_a_setting_that_changes_a_suggestion_stops_its_reuse(path):
    reuse, snapshot, base, changed = _shown_then_changed(path)
    assert suggestion_key(changed) != suggestion_key(base)
    assert reuse.candidate(snapshot, CURSOR, changed) is None  # a repeated ask decodes again
    assert reuse.candidate(snapshot, CURSOR, base) is not None  # and back at the old value it is served
    typed = Snapshot("file:///k.py", "python", 2, TEXT[:CURSOR] + "al" + TEXT[CURSOR:])
    assert reuse.candidate(typed, CURSOR + 2, changed) is None  # nor typed through


@pytest.mark.parametrize("path", OTHER_PATHS, ids=".".join)
def test_a_setting_that_changes_no_suggestion_keeps_its_reuse(path):
    reuse, snapshot, _, changed = _shown_then_changed(path)
    assert reuse.candidate(snapshot, CURSOR, changed) is not None


def test_the_model_and_slot_keys_are_the_marked_fields():
    assert set(marked_paths(LOADS, "model")) >= {("model",), ("device",), ("engine",), ("threads",), ("backend",),
                                                 ("remote",)}
    assert set(marked_paths(LOADS, "slots")) == {("batch_size",), ("context_tokens",), ("max_tokens",)}
    base = Settings()
    for path in marked_paths(LOADS, "model"):
        assert model_key(_changed(base, path)) != model_key(base), path
    for path in marked_paths(LOADS, "slots"):
        assert slots_key(_changed(base, path)) != slots_key(base), path
    assert model_key(_changed(base, ("constraint",))) == model_key(base)
    assert slots_key(_changed(base, ("constraint",))) == slots_key(base)


def test_a_key_is_made_once_per_settings_object():
    base = Settings()
    assert suggestion_key(base) is suggestion_key(base)
    assert suggestion_key(Settings()) == suggestion_key(base)
    hash(suggestion_key(Settings(sql=settings_module.SqlSettings(sources=[SqlSource(name="a", ddl=["x.sql"])]))))
