"""Parsing Python on several analysis threads at once never fails on valid code.

CPython 3.11 keeps the ast conversion's recursion counter in module state: a thread
switch in the middle of one conversion (a garbage collection running a finalizer
that releases the interpreter lock) lets another thread's parse reset it, and valid
code fails with ``SystemError: AST constructor recursion depth mismatch``. The
stress below made bare ``ast.parse`` fail in every trial on 3.11.7; ``python_ast``
serialises the conversions.
"""

from __future__ import annotations

import gc
import re
import threading
import time
import typing
from pathlib import Path

from gdg_lsp import python_ast


class _ReleasesTheLock:
    """Cyclic garbage whose finalizer lets another thread run (as finalizers of real
    objects -- files, sockets, native handles -- do)."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0)


def test_parses_on_many_threads_with_collections_in_between_all_succeed():
    source = open(typing.__file__, encoding="utf-8").read()
    failures: list[BaseException] = []

    def parse_repeatedly() -> None:
        for _ in range(12):
            for _ in range(300):  # left for the collector that runs during the next conversion
                _ReleasesTheLock()
            try:
                tree = python_ast.parse(source, filename=typing.__file__)
                assert any(getattr(node, "name", None) == "TypeVar" for node in tree.body)
            except BaseException as err:  # noqa: BLE001 -- every failure is the finding
                failures.append(err)

    before = gc.get_threshold()
    gc.set_threshold(3000)
    try:
        threads = [threading.Thread(target=parse_repeatedly) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*before)
    assert not failures, failures[:3]


def test_the_package_parses_python_only_through_the_lock():
    package = Path(python_ast.__file__).parent
    bare = [f"{path.relative_to(package.parent)}:{number}"
            for path in sorted(package.rglob("*.py")) if path.name != "python_ast.py"
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"(?<![\w.])ast\.parse\(", line)]
    assert not bare, f"parse through gdg_lsp.python_ast (see its docstring): {bare}"
