"""Users' fragment files: found, read, checked, gated, and put to use one file at a time.

Where they come from:

- ``.gdg/fragments/`` in each workspace folder (scope ``workspace``): data the
  workspace brings, read only for the folders the user consented to (the caller
  passes those as ``roots``: server/fragment_consent.py); the others' files are at
  most listed (``workspace_files``), never read. Read only inside the workspace
  folder (a link pointing out is refused, ``boundary.py``), at most ``MAX_FILES``
  files of ``fileformat.MAX_FILE_BYTES`` each; nothing in them is run, imported or
  unpickled, and the tree-sitter grammar a file names is one of gdg-lsp's
  allow-list, imported only from the environment's own site-packages
  (languages/generic/definition.py);
- ``gdg.fragments.paths`` (scope ``user``): files or folders the user named in
  their own settings (VS Code takes the setting from user settings only).

A language a file teaches opens in files of its own suffixes or language id. It
takes over documents of another language (``claims``) only as the user's
``gdg.fragments.claims`` grants it (markers from that setting), or by the claim a
user-scope file writes; a workspace file's own ``claims`` is refused. Every
fragment of a claiming language is also gated on held-out code of the claimed
language (service/heldout.py, ``gate.against_language``).

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
import itertools
import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gdg_lsp import boundary
from gdg_lsp.caches import BoundedCache
from gdg_lsp.errors import GdgError
from gdg_lsp.fragments import fileformat, gate, store
from gdg_lsp.fragments.authored import template_words, unvouched
from gdg_lsp.fragments.fileformat import FragmentFile, FragmentFileError
from gdg_lsp.fragments.manifest import builtin_languages
from gdg_lsp.languages import registry
from gdg_lsp.languages.generic import definition as definitions
from gdg_lsp.settings import FragmentClaim

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
    claimed: gate.LanguageReport | None = None
    """The gate against held-out code of the language it claims (a claiming language only)."""
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
        self.claims: tuple[FragmentClaim, ...] = ()
        self._lock = threading.RLock()
        self._registered: set[str] = set()
        self._verdicts: BoundedCache[tuple[str, str, tuple[str, ...]], gate.GateReport] = BoundedCache(
            "fragments.gate-verdicts", 512)
        """(file digest, language, keywords) -> the gate's report: the same bytes are judged once a
        session (a re-sync, a reload of a language's other files, a file changed back)."""
        self._claim_verdicts: BoundedCache[tuple[Any, ...], gate.LanguageReport] = BoundedCache(
            "fragments.claim-verdicts", 128)
        """(file digest, definition, claim's corpus) -> the gate against the claimed language's code."""

    # -- finding files -----------------------------------------------------------------------

    def discover(self, roots: Sequence[Path], paths: Sequence[str | Path]) -> list[tuple[Path, str]]:
        found: list[tuple[Path, str]] = [(p, "workspace") for root in roots for p in workspace_files(root)]
        for entry in paths:
            path = Path(entry).expanduser()
            if path.is_dir():
                found += [(p, "user") for p in sorted(itertools.islice(path.rglob("*.toml"), MAX_FILES))]
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

    def sync(self, roots: Sequence[Path], paths: Sequence[str | Path],
             claims: Sequence[FragmentClaim] = ()) -> list[FileState]:
        """Read every fragment file of ``roots`` (the workspace folders the user consented to)
        and ``paths`` (files gone are dropped), with the claims the user granted; returns the
        state of every file seen now or before (for publishing)."""
        with self._lock:
            self.roots = [Path(r) for r in roots]
            self.paths = [Path(p).expanduser() for p in paths]
            self.claims = tuple(claims)
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
            claimed = self._claimed(state.definition, scope)
            if isinstance(claimed, str):
                state.problems.append(Problem(claimed, _line_in_section(text, "new_language", "claims")))
                state.definition, state.file = None, None
            else:
                state.definition = claimed
        return state

    def _claimed(self, definition: definitions.Definition, scope: str) -> definitions.Definition | str:
        """The definition with the claim the user granted for it (``gdg.fragments.claims``), or
        without one; the problem when a workspace file claims documents itself."""
        grant = next((c for c in self.claims if c.language == definition.name), None)
        if grant is not None:
            if grant.claims not in registry.names():
                return f"gdg.fragments.claims lets {definition.name} claim {grant.claims!r}, a language gdg-lsp does not have"
            return replace(definition, claims=(grant.claims, tuple(grant.contains)))
        if definition.claims is None or scope != "workspace":
            return definition
        target, markers = definition.claims
        grant = json.dumps([{"language": definition.name, "claims": target, "contains": list(markers[:3])}])
        return (f"a workspace's fragment file cannot claim {target} documents (claims = {{ language = "
                f"\"{target}\", ... }}): what a file teaches opens in files of its own suffix (extensions = "
                f"[\".x\"]) or language id {definition.name!r}. To let {definition.name} take over {target} "
                f"documents that contain a marker (the file asks for these; the markers are yours to choose), "
                f"grant it in your user settings: \"gdg.fragments.claims\": {grant} (docs/fragments.md)")

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
                f"with a trigger in {language} files, define a new language ([new_language]) and let it claim "
                f"them in your user settings (gdg.fragments.claims; docs/fragments.md)",
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
        if definer.definition.claims is not None:
            state.claimed = self._against_claimed(ff, definer.definition, verdict_key[0], state)
            if not state.claimed.passed:
                state.problems.append(Problem(f"not loaded: {language} claims {definer.definition.claims[0]} "
                                              f"documents, and {state.claimed.why_not()}",
                                              _line(text, r"^\s*template\s*=")))
                state.state = "failed"
                return
        self.store.put(state.key, ff.fragment)
        state.state = "active"

    def _against_claimed(self, ff: FragmentFile, definition: definitions.Definition, digest: str,
                         state: FileState) -> gate.LanguageReport:
        """The gate against held-out code of the language ``definition`` claims (cached by bytes)."""
        target = definition.claims[0]
        corpus = next((c.corpus for c in self.claims if c.language == definition.name), "")
        key = (digest, definition, definition.claims, corpus)
        report = self._claim_verdicts.get(key)
        if report is not None:
            return report
        began = time.perf_counter()
        from gdg_lsp.grammar.fragment_engine import byte_engine
        from gdg_lsp.service import heldout

        try:
            code = heldout.read(target, corpus)
        except ValueError as err:
            return gate.LanguageReport(target, corpus, problem=str(err))  # not cached: the folder may appear
        regions, lines = heldout.probes(code, definition, ff.hole.triggers)
        try:
            report = gate.against_language(ff.fragment, regions, lines, byte_engine(), target, code.source,
                                            ff.hole.triggers)
        finally:
            state.seconds["claim-gate"] = time.perf_counter() - began
        return self._claim_verdicts.put(key, report)

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
            if not triggers and definition.claims is not None:
                definition = replace(definition, claims=None)  # no fragment of it loaded: the documents stay theirs
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


@dataclass(frozen=True)
class Authored:
    """The words of a suggestion that a user's fragment file wrote itself, not Γ (fragments/authored.py)."""

    file: str
    words: tuple[str, ...]

    def summary(self) -> dict[str, Any]:
        return {"file": self.file, "words": list(self.words)}



def authored_sentence(summary: Mapping[str, Any]) -> str:
    """What explain says of an ``Authored.summary()``."""
    words = summary["words"]
    shown = ", ".join(words[:8]) + (" …" if len(words) > 8 else "")
    return (f"names from Γ; the fragment's own text ({shown}) comes from {summary['file']}" if words
            else f"names from Γ; the fragment comes from {summary['file']}")


def authored(hole: Any, statements: Sequence[Any]) -> Authored | None:
    """What a user's fragment wrote into the decoded ``statements`` (``StatementTrace``: text,
    fragment, rung, declared) of ``hole``; None when none was decoded under a fragment from a file."""
    language = hole.language
    users = [s for s in statements if s.fragment and s.rung and store.USER.owner(language, s.fragment)]
    if not users:
        return None
    spec = registry.spec(language)
    definition = spec.definition if isinstance(spec.definition, definitions.Definition) else None
    keywords = definitions.vouched_keywords(definition.tree_sitter) if definition is not None else frozenset()
    names = set(hole.gamma.visible()) | {name for s in statements for name in s.declared}
    owner, words = None, []
    for statement in users:
        fragment = store.USER.fragments(language).get(statement.fragment)
        if fragment is None:
            continue
        owner = owner or store.USER.owner(language, statement.fragment)
        written = template_words(fragment, statement.rung)
        typed = hole.typed if statement.index == 0 else ""  # the first statement continues the typed text
        words += [w for w in unvouched(typed + statement.text, written, names, keywords, len(typed))
                  if w not in words]
    return Authored(owner, tuple(words)) if owner is not None else None


def template_text(language: str, name: str, rung: str | None, typed: str) -> Authored | None:
    """The words a user's fragment may write itself at ``rung`` (beyond the language's keywords
    and the text already typed), with its file; None for gdg-lsp's own fragments."""
    path = store.USER.owner(language, name)
    fragment = store.USER.fragments(language).get(name) if path else None
    if fragment is None or rung is None:
        return None
    spec = registry.spec(language)
    keywords = definitions.vouched_keywords(spec.definition.tree_sitter) \
        if isinstance(spec.definition, definitions.Definition) else frozenset()
    typed_words = set(re.findall(r"\w+", typed))
    written = template_words(fragment, rung)
    return Authored(path, tuple(sorted(w for w in written.words if w not in keywords and w not in typed_words))
                    + (("(spelled by character classes)",) if written.spells else ()))


def workspace_files(root: Path) -> list[Path]:
    """The fragment files of a workspace folder's ``.gdg/fragments/``, listed, not read: at most
    ``MAX_FILES`` of them, the listing itself stopped there (the workspace decides how many it holds)."""
    folder = Path(root) / FOLDER
    return sorted(itertools.islice(folder.rglob("*.toml"), MAX_FILES)) if folder.is_dir() else []


def language_spec(definition: definitions.Definition) -> registry.LanguageSpec:
    """The registry entry of a language a fragment file teaches (claims by plain substring)."""
    claims = None
    if definition.claims is not None:
        markers = definition.claims[1]
        claims = (definition.claims[0], lambda text: any(m in text for m in markers))
    return registry.LanguageSpec(definition.name, GENERIC_ANALYZER, definition.extensions, claims=claims,
                                 bench=GENERIC_BENCH, definition=definition)


def _line(text: str, pattern: str) -> int:
    m = re.search(pattern.replace(r"^\s*", r"^[ \t]*"), text, re.MULTILINE)  # not from an empty line above
    return text.count("\n", 0, m.start()) + 1 if m else 0


def _line_in_section(text: str, section: str, key: str) -> int:
    """The line of ``key = ...`` inside ``[section]`` (or of the section's header)."""
    head = re.search(rf"^[ \t]*\[{re.escape(section)}\]", text, re.MULTILINE)
    if head is None:
        return 0
    if key:
        m = re.compile(rf"^[ \t]*{re.escape(key)}\s*=", re.MULTILINE).search(text, head.end())
        if m:
            return text.count("\n", 0, m.start()) + 1
    return text.count("\n", 0, head.start()) + 1
