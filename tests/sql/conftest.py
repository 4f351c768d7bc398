"""Fixtures for the SQL tests: the corpus, real schema sources, a PostgreSQL server.

The grammars the tests load are the checkout's own ``grammars/`` (an editable
install made from another checkout would otherwise map ``gdg_lsp.grammars``
there).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("GDG_CORPUS", ROOT.parent / "shared" / "corpus")) / "sql"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/sql")


def _use_checkout_grammars() -> None:
    import gdg_lsp.grammars as installed

    wanted = ROOT / "grammars"
    if Path(installed.__file__).resolve().parent == wanted.resolve():
        return
    spec = importlib.util.spec_from_file_location(
        "gdg_lsp.grammars", wanted / "__init__.py", submodule_search_locations=[str(wanted)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["gdg_lsp.grammars"] = module
    spec.loader.exec_module(module)
    from gdg_lsp import fragments

    fragments.load_fragments.cache_clear()


_use_checkout_grammars()


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "questions.jsonl").is_file():
        pytest.fail(f"the SQL corpus is missing: expected {CORPUS}/questions.jsonl (set GDG_CORPUS)")
    return CORPUS


@pytest.fixture
def concert_workspace(corpus, tmp_path) -> Path:
    """A workspace folder with the concert_singer schema.sql (a copy: tests may touch it)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    shutil.copy(corpus / "schemas" / "concert_singer" / "schema.sql", folder / "schema.sql")
    return folder


# -- PostgreSQL ------------------------------------------------------------------------

_DSN_FILE = Path(os.environ.get("GDG_TEST_PG_DSN_FILE", "/tmp/gdg-test-pg.dsn"))


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """A DSN of a live server: $GDG_TEST_PG_DSN (set by `source .ci/setup.d/postgres.sh`),
    else one this session starts with the same script when PostgreSQL is installed."""
    dsn = os.environ.get("GDG_TEST_PG_DSN")
    if dsn:
        return dsn
    script = ROOT / ".ci" / "setup.d" / "postgres.sh"
    if not any(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.fail("no PostgreSQL server: run `source .ci/setup.d/postgres.sh` (installs Debian's postgresql, starts one)")
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        pytest.fail(f".ci/setup.d/postgres.sh failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]
