"""``gdg-lsp bench costs``: what workspace data an attacker picks can make one request cost.

A cloned repository chooses how many refs, scripts and JSON files there are, how
large a document is and how links are laid out. Each such cost is bounded by the
server (docs/RELIABILITY.md, "Bounded costs"); each case here builds the hostile
workspace in a scratch folder of this process, measures the cost as a user pays it
and prints the figure beside its target, so a bound is measured, not assumed.

A case is a function ``(scratch: Path, quick: bool) -> list[Figure]`` registered with
``@case("name")`` in one of ``CASE_MODULES`` (each area keeps its cases beside the
code they measure the cost of; ``quick`` shrinks the workload for tests).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

CASE_MODULES: tuple[str, ...] = ("gdg_lsp.bench.costs_workspace", "gdg_lsp.bench.costs_edits", "gdg_lsp.bench.costs_shell", "gdg_lsp.bench.costs_freshness")
"""Modules that register cases (imported on demand)."""


@dataclass(frozen=True)
class Figure:
    case: str
    what: str
    value: float
    unit: str
    target: float | None = None
    """The bound the value is held to (same unit), or None for a figure shown for context."""

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.value <= self.target


Case = Callable[[Path, bool], list[Figure]]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(function: Case) -> Case:
        CASES[name] = function
        return function

    return register


def load_cases() -> dict[str, Case]:
    for module in CASE_MODULES:
        importlib.import_module(module)
    return dict(CASES)


def run(names: list[str] | None = None, quick: bool = False) -> list[Figure]:
    cases = load_cases()
    unknown = sorted(set(names or ()) - set(cases))
    if unknown:
        raise SystemExit(f"unknown cost case(s): {', '.join(unknown)} (known: {', '.join(sorted(cases))})")
    figures: list[Figure] = []
    for name in names or sorted(cases):
        scratch = Path(tempfile.mkdtemp(prefix=f"gdg-costs-{name}-"))
        try:
            figures += cases[name](scratch, quick)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return figures


def report(figures: list[Figure]) -> str:
    lines = [f"gdg-lsp bench costs on {platform.processor() or platform.machine()} "
             f"(Python {platform.python_version()})",
             f"{'case':<14} {'what':<58} {'value':>12}  {'target':>12}  met"]
    for f in figures:
        target = "" if f.target is None else f"≤ {f.target:,.1f} {f.unit}"
        met = "" if f.met is None else ("yes" if f.met else "NO")
        lines.append(f"{f.case:<14} {f.what:<58} {f.value:>9,.1f} {f.unit:<2}  {target:>12}  {met}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="gdg-lsp bench costs", description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--quick", action="store_true", help="smaller workloads (what the tests run)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    figures = run([n for n in args.only.split(",") if n] or None, quick=args.quick)
    print(report(figures))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=2))
    missed = [f for f in figures if f.met is False]
    if missed:
        print(f"{len(missed)} figure(s) over their target", file=sys.stderr)
    return 0
