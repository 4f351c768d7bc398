"""Users' fragment files: found, read, checked, gated, and put to use one file at a time.

Where they come from:

- ``.gdg/fragments/`` in each workspace folder (scope ``workspace``): data the
  workspace brings. Read only inside the workspace folder (a link pointing out
  is refused, ``boundary.py``), at most ``MAX_FILES`` files of
  ``fileformat.MAX_FILE_BYTES`` each; nothing in them is run, imported or
  unpickled, and the tree-sitter grammar a file names is one of gdg-lsp's
  allow-list, imported only from the environment's own site-packages
  (languages/generic/definition.py);
- ``gdg.fragments.paths`` (scope ``user``): files or folders the user named in
  their own settings (VS Code takes the setting from user settings only).

Each file is parsed (fileformat), its ``[new_language]`` checked and
registered (languages/registry.py), and its fragment gated on its
``[[examples]]`` (fragments/gate.py, with the engine the decoder uses). Only a
fragment whose gate passed is put in ``fragments.store.USER``; every problem is
kept as a ``Problem`` located in the file, which the server publishes as a
diagnostic on the file. A change to one file reloads that file alone (and,
when it defines a language, re-registers that language).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gdg_lsp import boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GdgError
from gdg_lsp.fragments import fileformat, gate, store
from gdg_lsp.fragments.fileformat import FragmentFile, FragmentFileError
from gdg_lsp.fragments.manifest import builtin_languages
from gdg_lsp.languages import registry
from gdg_lsp.languages.generic import definition as definitions

log = logging.getLogger(__name__)

FOLDER = Path(".gdg") / "fragments"
MAX_FILES = 200
GENERIC_ANALYZER = "gdg_lsp.languages.generic.analyzer:GenericAnalyzer"
GENERIC_BENCH = "gdg_lsp.languages.generic.bench"


@dataclass(frozen=True)
class Problem:
    message: str
    line: int = 0  # 1-based; 0: the whole file
    column: int = 0
    severity: str = "error"


@dataclass
class FileState:
    path: Path
    scope: str  # workspace | user
    state: str = "failed"  # active | failed
    problems: list[Problem] = field(default_factory=list)
    file: FragmentFile | None = None
    definition: definitions.Definition | None = None
    report: gate.GateReport | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    text: str = ""
    """The text the file was read as (problems are located in it)."""

    @property
    def key(self) -> str:
        return str(self.path)


class FragmentLibrary:
    """The fragment files of one session (``close`` forgets them all)."""

    def __init__(self, user_store: store.UserFragments | None = None, min_rejection: float = 0.99) -> None:
        self.store = user_store or store.USER
        self.min_rejection = min_rejection
        self.files: dict[str, FileState] = {}
        self.roots: list[Path] = []
        self.paths: list[Path] = []
        self._lock = threading.RLock()
        self._registered: set[str] = set()
        self._verdicts: BoundedCache[tuple[str, str, tuple[str, ...]], gate.GateReport] = BoundedCache(
            "fragments.gate-verdicts", 512)
        """(file digest, language, keywords) -> the gate's report: the same bytes are judged once a
        session (a re-sync, a reload of a language's other files, a file changed back)."""

    # -- finding files -----------------------------------------------------------------------

    def discover(self, roots: Sequence[Path], paths: Sequence[str | Path]) -> list[tuple[Path, str]]:
        found: list[tuple[Path, str]] = []
        for root in roots:
            folder = Path(root) / FOLDER
            if folder.is_dir():
                found += [(p, "workspace") for p in sorted(folder.rglob("*.toml"))[:MAX_FILES]]
        for entry in paths:
            path = Path(entry).expanduser()
            if path.is_dir():
                found += [(p, "user") for p in sorted(path.rglob("*.toml"))[:MAX_FILES]]
            else:
                found.append((path, "user"))
        return found[:MAX_FILES]

    def scope_of(self, path: Path) -> str | None:
        """``workspace`` / ``user`` for a path this library reads, None for any other."""
        real = boundary.real(path)
        for root in self.roots:
            if real.is_relative_to(boundary.real(Path(root) / FOLDER)):
                return "workspace"
        for entry in self.paths:
            named = boundary.real(entry)
            if real == named or real.is_relative_to(named):
                return "user"
        return None

    # -- loading -------------------------------------------------------------------------------

    def sync(self, roots: Sequence[Path], paths: Sequence[str | Path]) -> list[FileState]:
        """Read every fragment file of ``roots`` and ``paths`` (files gone are dropped);
        returns the state of every file seen now or before (for publishing)."""
        with self._lock:
            self.roots = [Path(r) for r in roots]
            self.paths = [Path(p).expanduser() for p in paths]
            found = self.discover(self.roots, self.paths)
            keys = {str(p) for p, _ in found}
            gone = [FileState(state.path, state.scope, "gone") for k, state in self.files.items() if k not in keys]
            for key in list(self.files):
                self.store.drop(key)
            states = [self._read(path, scope) for path, scope in found]
            self.files = {s.key: s for s in states}
            for state in states:  # after every file is read: a language may be defined in a later one
                self._fragment(state)
            self._register_languages()
            return [*states, *gone]

    def reload(self, path: Path) -> list[FileState]:
        """One file changed, appeared or went: that file is read again alone (other files of a
        language it defines are re-checked only when that definition changed)."""
        with self._lock:
            key = str(path)
            scope = self.scope_of(path)
            if scope is None:
                return []
            before = self.files.pop(key, None)
            self.store.drop(key)
            old = before.definition if before is not None else None
            if not path.exists():
                changed = [FileState(path, scope, "gone")]
                new = None
            else:
                state = self._read(path, scope)
                self.files[key] = state
                self._fragment(state)
                changed = [state]
                new = state.definition
            if old != new:
                for name in {d.name for d in (old, new) if d is not None}:
                    changed += self._recheck_language(name, skip=key)
            self._register_languages()
            return changed

    def close(self) -> None:
        with self._lock:
            for key in list(self.files):
                self.store.drop(key)
            self.files.clear()
            for name in list(self._registered):
                registry.unregister(name)
            self._registered.clear()

    def _recheck_language(self, language: str, skip: str) -> list[FileState]:
        out = []
        for key, state in list(self.files.items()):
            if key != skip and state.file is not None and state.file.language == language:
                fresh = self._read(state.path, state.scope)
                self.files[key] = fresh
                self._fragment(fresh)
                out.append(fresh)
        return out

    def _read(self, path: Path, scope: str) -> FileState:
        state = FileState(path, scope)
        began = time.perf_counter()
        try:
            if scope == "workspace" and not boundary.Boundary.of(self.roots).allows(path):
                raise boundary.Refused(f"{path} lies outside the workspace folders (a link?): not read")
            data = boundary.read_bounded(path, fileformat.MAX_FILE_BYTES)
            text = state.text = data.decode("utf-8")
        except boundary.Refused as err:
            state.problems.append(Problem(str(err)))
            return state
        except UnicodeDecodeError as err:
            state.problems.append(Problem(f"not UTF-8 text ({err.reason} at byte {err.start})"))
            return state
        try:
            state.file = fileformat.parse(text, str(path))
        except FragmentFileError as err:
            state.problems.append(Problem(err.message, err.line, err.column))
            return state
        finally:
            state.seconds["read"] = time.perf_counter() - began
        table = state.file.language_table
        if table is not None:
            try:
                state.definition = definitions.from_table(
                    fileformat.thaw(table), state.file.language, str(path), registry.builtin_names() | set(builtin_languages()),
                    registry.builtin_extensions())
            except definitions.DefinitionError as err:
                state.problems.append(Problem(str(err), _line_in_section(text, "new_language", err.key)))
                state.file = None
        return state

    def _fragment(self, state: FileState) -> None:
        """Checks that need the other files (language, name), then the gate."""
        self.store.drop(state.key)
        ff = state.file
        if ff is None:
            state.state = "failed"
            return
        text = state.text
        language = ff.language
        if language in builtin_languages() or language in registry.builtin_names():
            state.problems.append(Problem(
                f"{language} is a built-in language: its analyzer chooses its fragments. To open a fragment "
                f"with a trigger in {language} files, define a new language that claims them "
                f"([new_language] claims = {{ language = \"{language}\", contains = [...] }}; docs/fragments.md)",
                _line(text, r"^\s*language\s*=")))
            state.state = "failed"
            return
        definer = self._definer(language)
        if definer is None:
            state.problems.append(Problem(f"language {language!r} is not known: add a [new_language] table "
                                          "(here or in another fragment file of that language)",
                                          _line(text, r"^\s*language\s*=")))
            state.state = "failed"
            return
        if state.definition is not None and state.definition != definer.definition:
            state.problems.append(Problem(f"[new_language] {language} differs from its definition in {definer.path}",
                                          _line(text, r"^\s*\[new_language\]")))
            state.state = "failed"
            return
        owner = self.store.owner(language, ff.name)
        if owner is not None and owner != state.key:
            state.problems.append(Problem(f"fragment {language}/{ff.name} is already defined by {owner}",
                                          _line(text, r"^\s*name\s*=")))
            state.state = "failed"
            return
        if not ff.examples:
            state.problems.append(Problem("the gate needs at least one [[examples]] entry (a positive with its Γ)"))
            state.state = "failed"
            return
        began = time.perf_counter()
        keywords = tuple(definer.definition.keywords)
        verdict_key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), language, keywords)
        try:
            report = self._verdicts.get(verdict_key)
            if report is None:
                positives = [gate.example_positive(e, ff.hole.triggers, f"example {i + 1}")
                             for i, e in enumerate(ff.examples)]
                from gdg_lsp.grammar.fragment_engine import byte_engine  # torch and the engines: on first gate

                report = self._verdicts.put(verdict_key, gate.run(ff.fragment, positives, byte_engine(),
                                                                  keywords=keywords, min_rejection=self.min_rejection))
        except GdgError as err:  # an engine refusal or a slot spec the instantiation cannot use
            state.problems.append(Problem(f"the gate could not run: {err}"))
            state.state = "failed"
            return
        finally:
            state.seconds["gate"] = time.perf_counter() - began
        state.report = report
        if not report.passed:
            state.problems.append(Problem(f"not loaded: the gate failed: {report.why_not()}",
                                          _line(text, r"^\s*\[\[examples\]\]")))
            state.state = "failed"
            return
        self.store.put(state.key, ff.fragment)
        state.state = "active"

    def _definer(self, language: str) -> FileState | None:
        """The file whose [new_language] defines ``language`` (the first by path)."""
        candidates = sorted((s for s in self.files.values()
                             if s.definition is not None and s.definition.name == language), key=lambda s: s.key)
        return candidates[0] if candidates else None

    def _register_languages(self) -> None:
        """(Re-)register each language a file defines, with the triggers of its active fragments."""
        defined: dict[str, FileState] = {}
        for state in sorted(self.files.values(), key=lambda s: s.key):
            if state.definition is not None and state.definition.name not in defined:
                defined[state.definition.name] = state
        for name in list(self._registered - set(defined)):
            registry.unregister(name)
            self._registered.discard(name)
        for name, state in defined.items():
            triggers = tuple(
                definitions.Trigger(text, fragment.name, fragment.anchor)
                for fragment in self.store.fragments(name).values()
                for text in self._triggers(name, fragment.name))
            definition = state.definition.with_triggers(triggers)
            current = next((s for s in registry.registered() if s.name == name), None)
            if current is not None and current.definition == definition and current.definition.triggers == triggers:
                continue
            try:
                registry.register(language_spec(definition))
                self._registered.add(name)
            except ValueError as err:
                state.problems.append(Problem(f"cannot add language {name}: {err}",
                                              _line(state.text, r"^\s*\[new_language\]")))

    def _triggers(self, language: str, name: str) -> tuple[str, ...]:
        for state in self.files.values():
            if state.state == "active" and state.file is not None and state.file.language == language \
                    and state.file.name == name:
                return state.file.hole.triggers
        return ()

    def active(self) -> list[FileState]:
        return [s for s in self.files.values() if s.state == "active"]


def language_spec(definition: definitions.Definition) -> registry.LanguageSpec:
    """The registry entry of a language a fragment file teaches (claims by plain substring)."""
    claims = None
    if definition.claims is not None:
        markers = definition.claims[1]
        claims = (definition.claims[0], lambda text: any(m in text for m in markers))
    return registry.LanguageSpec(definition.name, GENERIC_ANALYZER, definition.extensions, claims=claims,
                                 bench=GENERIC_BENCH, definition=definition)


def _line(text: str, pattern: str) -> int:
    import re

    m = re.search(pattern.replace(r"^\s*", r"^[ \t]*"), text, re.MULTILINE)  # not from an empty line above
    return text.count("\n", 0, m.start()) + 1 if m else 0


def _line_in_section(text: str, section: str, key: str) -> int:
    """The line of ``key = ...`` inside ``[section]`` (or of the section's header)."""
    import re

    head = re.search(rf"^[ \t]*\[{re.escape(section)}\]", text, re.MULTILINE)
    if head is None:
        return 0
    if key:
        m = re.compile(rf"^[ \t]*{re.escape(key)}\s*=", re.MULTILINE).search(text, head.end())
        if m:
            return text.count("\n", 0, m.start()) + 1
    return text.count("\n", 0, head.start()) + 1
