"""The hard gate: a fragment between its corpus positives and mined ghosts.

A fragment is used only when, compiled by the engine the decoder masks with
(passed in as ``Engine``: grammar/fragment_engine.py), it

- compiles at every rung it offers;
- accepts every positive (a region of real code, with the Γ its analyzer
  sees there) at its loosest guaranteed rung (``gamma``, or the loosest of
  ``ctx``/``pin`` it offers; a fragment with only ``base`` at ``base``);
- rejects at least ``min_rejection`` of the mined negatives, each a positive
  with one reference replaced:

  ``other-scope``: by a name bound in another positive's Γ but not in this
  one (a name from another function or file); ``near-miss``: by a misspelling
  of it that Γ lacks; these must be rejected at every guaranteed rung that
  accepts the positive. ``wrong-sort``: by a name this Γ has, of a sort no
  positive of the fragment references (a loop variable where buffers go);
  it must be rejected at the tightest rung that accepts the positive;
- and, when a token engine is given, has free_bits that never rise as the
  ladder tightens (base ≥ gamma ≥ ctx ≥ pin on each positive every rung accepts).

The same gate runs on induced fragments (``gdg-lsp induce``), hand-written ones
(``gdg-lsp gate FILE --corpus ...``) and users' fragment files when they are
loaded (their ``[[examples]]`` are the positives).

A fragment whose language takes over another language's documents (a claim the user
granted: Triton's of Python files) is also judged against held-out code of that other
language (``against_language``), whatever its own examples say: real code at its trigger
must fit it (at least ``MIN_REGIONS_ACCEPTED`` of the regions that start there), and the
language's other lines written after the trigger must not (at most ``MAX_LINES_ACCEPTED``).
A template of literals, whose only positive is its own text, fits none of the real regions;
one that lets anything follow its trigger accepts the other lines.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gdg_lsp.errors import GammaEmptyError, GrammarError
from gdg_lsp.fragments.fileformat import Example
from gdg_lsp.fragments.instantiate import instantiate
from gdg_lsp.fragments.model import RUNGS, Fragment
from gdg_lsp.fragments.policy import choose
from gdg_lsp.gamma import Binding, Gamma

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
KINDS = ("other-scope", "near-miss", "wrong-sort")
MIN_REGIONS_ACCEPTED = 0.5
MAX_LINES_ACCEPTED = 0.02


class Engine(Protocol):
    def compile(self, text: str) -> Any: ...

    def accepts(self, compiled: Any, text: str) -> bool: ...

    def full_match(self, compiled: Any, text: str) -> bool: ...

    def free_bits(self, compiled: Any, text: str) -> float | None: ...


@dataclass(frozen=True)
class Positive:
    text: str
    gamma: Gamma
    context: Mapping[str, Any] = field(default_factory=dict)
    references: tuple[tuple[int, int, str], ...] = ()
    """(start, end, name) of each reference position in ``text``."""
    where: str = ""


@dataclass(frozen=True)
class Negative:
    text: str
    kind: str
    positive: int
    name: str
    replacement: str


@dataclass
class GateReport:
    fragment: str = ""
    positives: int = 0
    accepted: int = 0
    failures: list[str] = field(default_factory=list)
    negatives: int = 0
    rejected: int = 0
    leaks: list[str] = field(default_factory=list)
    by_kind: dict[str, list[int]] = field(default_factory=dict)
    rungs: dict[str, list[int]] = field(default_factory=dict)
    """rung -> [positives it accepts, positives it could be instantiated for]."""
    compile_errors: list[str] = field(default_factory=list)
    free_bits: dict[str, float] = field(default_factory=dict)
    free_bits_positives: int = 0
    monotone: bool | None = None
    min_rejection: float = 0.99

    @property
    def rejection_rate(self) -> float:
        return self.rejected / self.negatives if self.negatives else 1.0

    @property
    def passed(self) -> bool:
        return (not self.compile_errors and self.positives > 0 and self.accepted == self.positives
                and self.rejection_rate >= self.min_rejection and self.monotone is not False)

    def why_not(self) -> str:
        """One sentence for a diagnostic: the first reason the gate failed."""
        if self.compile_errors:
            return f"does not compile: {self.compile_errors[0]}"
        if self.positives == 0:
            return "has no positive to check (add an [[examples]] entry)"
        if self.accepted < self.positives:
            return f"rejects {self.positives - self.accepted} of {self.positives} positives, e.g. {self.failures[0]}"
        if self.rejection_rate < self.min_rejection:
            return (f"accepts {self.negatives - self.rejected} of {self.negatives} mined ghosts "
                    f"(rejects {self.rejection_rate:.1%}), e.g. {self.leaks[0]}")
        if self.monotone is False:
            return f"free_bits rise as the ladder tightens: {self.free_bits}"
        return "passed"

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed, "positives": self.positives, "accepted": self.accepted,
                               "negatives": self.negatives, "rejected": self.rejected}
        for kind, (mined, rejected) in sorted(self.by_kind.items()):
            out[kind.replace("-", "_")] = f"{rejected}/{mined}"
        out["rungs"] = {rung: f"{a}/{n}" for rung, (a, n) in self.rungs.items()}
        if self.free_bits:
            out["free_bits"] = {rung: round(bits, 2) for rung, bits in self.free_bits.items()}
            out["monotone"] = bool(self.monotone)
        return out

    def lines(self) -> list[str]:
        lines = [f"gate {'PASSED' if self.passed else 'FAILED'} for {self.fragment}: "
                 f"positives {self.accepted}/{self.positives} accepted, "
                 f"mined negatives {self.rejected}/{self.negatives} rejected ({self.rejection_rate:.1%})"]
        for kind in KINDS:
            if kind in self.by_kind:
                mined, rejected = self.by_kind[kind]
                lines.append(f"  {kind}: {rejected}/{mined} rejected")
        for rung in RUNGS:
            if rung in self.rungs:
                accepted, total = self.rungs[rung]
                lines.append(f"  rung {rung}: accepts {accepted}/{total} positives")
        if self.free_bits:
            ladder = "  ".join(f"{rung} {self.free_bits[rung]:.1f}" for rung in reversed(RUNGS) if rung in self.free_bits)
            lines.append(f"  free_bits per positive ({self.free_bits_positives} positives): {ladder}"
                         f" ({'monotone' if self.monotone else 'NOT monotone'})")
        lines += [f"  compile error: {e}" for e in self.compile_errors[:5]]
        lines += [f"  rejected positive: {f}" for f in self.failures[:10]]
        lines += [f"  accepted negative: {leak}" for leak in self.leaks[:10]]
        return lines


# -- positives from a fragment file's examples -----------------------------------------------


def example_positive(example: Example, triggers: Sequence[str] = (), where: str = "") -> Positive:
    """A file's example as a positive: its Γ is the names it lists; a reference is any whole
    identifier of the text that Γ has, outside the trigger and not a keyword argument's name."""
    bindings = [Binding(name, str(attrs.get("sort")), {k: v for k, v in attrs.items() if k != "sort"})
                for name, attrs in example.gamma.items()]
    gamma = Gamma(bindings)
    skip = 0
    for trigger in triggers:
        if example.text.startswith(trigger):
            skip = max(skip, len(trigger))
    refs = []
    for m in re.finditer(r"(?<![\w.])([A-Za-z_]\w*)(?!\w)", example.text):
        if m.start() < skip or m.group(1) not in example.gamma:
            continue
        if re.match(r"\s*=(?!=)", example.text[m.end():]):
            continue  # name=value: a keyword argument's name
        refs.append((m.start(), m.end(), m.group(1)))
    return Positive(example.text, gamma, dict(example.context), tuple(refs), where)


# -- mining ---------------------------------------------------------------------------------


def _pick(candidates: Sequence[str], key: str, count: int) -> list[str]:
    """``count`` candidates chosen deterministically (by a hash of ``key``), all distinct."""
    if not candidates:
        return []
    start = zlib.crc32(key.encode("utf-8", "surrogatepass")) % len(candidates)
    rotated = [*candidates[start:], *candidates[:start]]
    return rotated[:count]


def near_misses(name: str) -> list[str]:
    """Misspellings of ``name``: one letter dropped, doubled, two swapped, a suffix, the case of the first."""
    out = []
    if len(name) > 1:
        out.append(name[:-1])
    mid = len(name) // 2
    out.append(name[:mid] + name[mid] + name[mid:])
    if len(name) > 2:
        out.append(name[: mid - 1] + name[mid] + name[mid - 1] + name[mid + 1:])
    out.append(name + "_")
    out.append(name[0].swapcase() + name[1:])
    return [n for n in dict.fromkeys(out) if n != name and _IDENTIFIER.match(n)]


def mine(positives: Sequence[Positive], keywords: Iterable[str] = (), near: int = 2) -> list[Negative]:
    """The negatives for ``positives`` (see the module docstring), at most four per reference."""
    banned = set(keywords)
    referenced = sorted({name for p in positives for _, _, name in p.references})
    everywhere = sorted({n for p in positives for n in p.gamma.visible() if _IDENTIFIER.match(n)} - banned)
    ref_sorts = {b.sort for p in positives for _, _, name in p.references if (b := p.gamma.lookup(name))}
    out: list[Negative] = []
    for index, positive in enumerate(positives):
        visible = positive.gamma.visible()
        elsewhere = [n for n in referenced if n not in visible and n not in banned] or \
                    [n for n in everywhere if n not in visible]
        wrong = sorted(n for n, b in visible.items() if b.sort not in ref_sorts and _IDENTIFIER.match(n)
                       and n not in banned)
        for number, (start, end, name) in enumerate(positive.references):
            key = f"{index}:{number}:{name}"

            def swap(new: str, kind: str) -> None:
                out.append(Negative(positive.text[:start] + new + positive.text[end:], kind, index, name, new))

            for new in _pick(elsewhere, key, 1):
                swap(new, "other-scope")
            for new in [n for n in near_misses(name) if n not in visible and n not in banned][:near]:
                swap(new, "near-miss")
            for new in _pick(wrong, key, 1):
                swap(new, "wrong-sort")
    return out


# -- the gate -------------------------------------------------------------------------------


def run(fragment: Fragment, positives: Sequence[Positive], engine: Engine, *,
        negatives: Sequence[Negative] | None = None, keywords: Iterable[str] = (),
        min_rejection: float = 0.99, free_bits_engine: Engine | None = None) -> GateReport:
    """Judge ``fragment`` (see the module docstring). ``negatives`` default to ``mine(positives)``."""
    report = GateReport(fragment=f"{fragment.language}/{fragment.name}", min_rejection=min_rejection)
    negatives = mine(positives, keywords) if negatives is None else negatives
    guaranteed = [r for r in fragment.rungs if r != "base"]
    loosest = guaranteed[-1] if guaranteed else "base"
    compiled_at: dict[tuple[int, str], Any] = {}
    accepted_at: dict[int, list[str]] = {}
    texts: dict[tuple[int, str], str] = {}
    seen_errors: set[str] = set()

    def grammar(index: int, rung: str) -> Any:
        key = (index, rung)
        if key not in compiled_at:
            positive = positives[index]
            try:
                text = instantiate(fragment, rung, positive.gamma, positive.context).text
            except (GammaEmptyError, GrammarError):
                compiled_at[key] = None  # the rung has nothing here: π would climb
                return None
            texts[key] = text
            try:
                compiled_at[key] = engine.compile(text)
            except GrammarError as err:
                compiled_at[key] = None
                message = f"rung {rung}: {err}"
                if message not in seen_errors:
                    seen_errors.add(message)
                    report.compile_errors.append(message)
        return compiled_at[key]

    for index, positive in enumerate(positives):
        report.positives += 1
        accepted = []
        for rung in fragment.rungs:
            compiled = grammar(index, rung)
            counts = report.rungs.setdefault(rung, [0, 0])
            if compiled is None:
                continue
            counts[1] += 1
            if engine.full_match(compiled, positive.text):
                counts[0] += 1
                accepted.append(rung)
        accepted_at[index] = accepted
        if loosest in accepted:
            report.accepted += 1
        else:
            report.failures.append(f"{positive.where or index}: {positive.text!r} (rung {loosest})")

    for negative in negatives:
        accepted = [r for r in accepted_at.get(negative.positive, []) if r != "base"]
        if not accepted:
            continue
        targets = accepted[:1] if negative.kind == "wrong-sort" else accepted
        counts = report.by_kind.setdefault(negative.kind, [0, 0])
        report.negatives += 1
        counts[0] += 1
        leaked = [r for r in targets if engine.full_match(grammar(negative.positive, r), negative.text)]
        if leaked:
            where = positives[negative.positive].where or negative.positive
            report.leaks.append(f"{where}: {negative.kind} {negative.name} -> {negative.replacement}: "
                                f"{negative.text!r} accepted at {', '.join(leaked)}")
        else:
            report.rejected += 1
            counts[1] += 1

    if free_bits_engine is not None:
        _free_bits(fragment, positives, accepted_at, texts, free_bits_engine, report)
    return report


def _free_bits(fragment: Fragment, positives: Sequence[Positive], accepted_at: Mapping[int, list[str]],
               texts: Mapping[tuple[int, str], str], engine: Engine, report: GateReport) -> None:
    """Mean free_bits per rung over the positives every rung accepts; monotone pointwise."""
    totals = {rung: 0.0 for rung in fragment.rungs}
    counted = 0
    monotone = True
    for index, positive in enumerate(positives):
        if set(accepted_at.get(index, [])) != set(fragment.rungs):
            continue
        bits = {}
        for rung in fragment.rungs:
            value = engine.free_bits(engine.compile(texts[(index, rung)]), positive.text)
            if value is None:
                break
            bits[rung] = value
        if len(bits) != len(fragment.rungs):
            continue
        counted += 1
        for rung, value in bits.items():
            totals[rung] += value
        ordered = [bits[r] for r in RUNGS if r in bits]  # tightest first
        monotone &= all(a <= b + 1e-6 for a, b in zip(ordered, ordered[1:]))
    if counted:
        report.free_bits = {rung: totals[rung] / counted for rung in fragment.rungs}
        report.free_bits_positives = counted
        report.monotone = monotone


# -- against the claimed language's own code --------------------------------------------------


@dataclass
class LanguageReport:
    """A claiming fragment against held-out code of the language it claims (``against_language``)."""

    language: str
    source: str
    rung: str = ""
    """The rung π chose at the first probe."""
    regions: int = 0
    accepted: int = 0
    rejected_regions: list[str] = field(default_factory=list)
    lines: int = 0
    lines_accepted: int = 0
    accepted_lines: list[str] = field(default_factory=list)
    problem: str = ""
    """Why there was nothing to judge against (no held-out code of the language)."""

    @property
    def passed(self) -> bool:
        return (not self.problem and self.accepted >= math.ceil(self.regions * MIN_REGIONS_ACCEPTED)
                and self.lines_accepted <= self.lines * MAX_LINES_ACCEPTED)

    def why_not(self) -> str:
        if self.problem:
            return self.problem
        if self.accepted < math.ceil(self.regions * MIN_REGIONS_ACCEPTED):
            return (f"against held-out {self.language} ({self.source}) it accepts {self.accepted} of the "
                    f"{self.regions} regions that start at its trigger, e.g. it rejects {self.rejected_regions[0]}: "
                    f"a fragment that claims {self.language} documents must describe the "
                    f"code written there")
        if self.lines_accepted > self.lines * MAX_LINES_ACCEPTED:
            return (f"against held-out {self.language} ({self.source}) it accepts {self.lines_accepted} of "
                    f"{self.lines} other lines written after its trigger, e.g. {self.accepted_lines[0]}: "
                    f"it lets arbitrary {self.language} code through")
        return "passed"

    def summary(self) -> dict[str, Any]:
        return {"passed": self.passed, "language": self.language, "source": self.source, "rung": self.rung,
                "regions": f"{self.accepted}/{self.regions}", "other_lines": f"{self.lines_accepted}/{self.lines}"}


def against_language(fragment: Fragment, regions: Sequence[Positive], lines: Sequence[Positive], engine: Engine,
                     language: str, source: str, triggers: Sequence[str]) -> LanguageReport:
    """Judge ``fragment`` on ``regions`` (real code that starts at its trigger, to be accepted)
    and ``lines`` (other real lines after its trigger, to be rejected), each with the Γ a hole
    there has: each at the rung π would choose there once its trigger (one of ``triggers``) is typed,
    which is what the model would be let write (a loose rung that fits real code does not
    excuse a tight one that forces other text)."""
    report = LanguageReport(language, source)
    chosen: dict[str, Any] = {}

    def accepts(probe: Positive) -> bool:
        typed = max((t for t in triggers if probe.text.startswith(t)), key=len, default="")
        choice = choose(fragment, probe.gamma, probe.context, typed, "scope", _compiler(engine, chosen),
                        engine.accepts)
        if choice.rung is None:
            return False  # no rung fits the trigger here: the fragment is not used
        report.rung = report.rung or choice.rung
        return engine.full_match(choice.compiled, probe.text)

    for region in regions:
        report.regions += 1
        if accepts(region):
            report.accepted += 1
        elif len(report.rejected_regions) < 5:
            report.rejected_regions.append(f"{region.text!r} ({region.where})")
    for line in lines:
        report.lines += 1
        if accepts(line):
            report.lines_accepted += 1
            if len(report.accepted_lines) < 5:
                report.accepted_lines.append(f"{line.text!r} ({line.where})")
    return report


def _compiler(engine: Engine, compiled: dict[str, Any]):
    def compile_grammar(grammar: Any) -> Any:
        if grammar.text not in compiled:
            compiled[grammar.text] = engine.compile(grammar.text)  # a GrammarError: π tries the next rung
        return compiled[grammar.text]

    return compile_grammar
