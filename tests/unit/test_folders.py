"""Workspace folders (server/folders.py): the folder holding a document, its context and settings,
and what a removed folder takes with it from the caches."""

from __future__ import annotations

import os
from pathlib import Path

from gdg_lsp import caches
from gdg_lsp.caches import BoundedCache
from gdg_lsp.server.folders import SERVER_WIDE, FolderWorkspace, folder_settings
from gdg_lsp.settings import LimitsSettings, PythonSettings, Settings


def test_a_document_is_analysed_in_the_innermost_folder_holding_it(tmp_path: Path):
    outer, inner, other = tmp_path / "mono", tmp_path / "mono" / "service", tmp_path / "other"
    for folder in (outer, inner, other):
        folder.mkdir(parents=True, exist_ok=True)
    workspace = FolderWorkspace([outer, inner, other], Settings())
    assert workspace.for_document((inner / "q.sql").as_uri()).roots == [inner]
    assert workspace.for_document((outer / "lib" / "q.sql").as_uri()).roots == [outer]
    assert workspace.for_document((other / "a.py").as_uri()).roots == [other]
    loose = workspace.for_document((tmp_path / "elsewhere.py").as_uri())
    assert loose is workspace and loose.roots == [outer, inner, other]  # outside every folder: the workspace's


def test_a_folder_reached_through_a_link_is_still_its_folder(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    workspace = FolderWorkspace([tmp_path / "link"], Settings())
    assert workspace.for_document((real / "a.py").as_uri()).roots == [tmp_path / "link"]


def test_a_folder_has_its_own_settings_and_the_others_the_global_ones(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    quiet = Settings(python=PythonSettings(member_warnings=False))
    workspace = FolderWorkspace([a, b], Settings(), folder_settings={a: quiet})
    assert workspace.for_document((a / "x.py").as_uri()).settings is quiet
    assert workspace.for_document((b / "x.py").as_uri()).settings == Settings()
    global_ = Settings(max_lines=3)
    workspace.settings = global_
    workspace.changed()
    assert workspace.for_document((b / "x.py").as_uri()).settings is global_


def test_a_folders_answer_keeps_the_user_only_and_the_server_wide_settings_of_the_user():
    user = Settings(model="smollm2-135m", threads=2, limits=LimitsSettings(refs=100))
    answer = {"model": "/repo/evil.gguf", "threads": 64, "maxLines": 4, "python": {"interpreter": "/repo/py"},
              "limits": {"refs": 10_000_000}, "constraint": "syntax"}
    settings, problems, ignored = folder_settings(answer, user)
    assert problems == []
    assert (settings.max_lines, settings.constraint) == (4, "syntax")  # the folder's own choices
    assert settings.model == "smollm2-135m" and settings.python.interpreter == "" and settings.limits.refs == 100
    assert all(getattr(settings, name) == getattr(user, name) for name in SERVER_WIDE)
    assert set(ignored) == {"gdg.model", "gdg.python.interpreter", "gdg.limits.refs"}


def test_a_removed_folder_leaves_nothing_in_the_caches(tmp_path: Path):
    gone, kept = tmp_path / "gone", tmp_path / "kept"
    gone.mkdir()
    kept.mkdir()
    cache: BoundedCache[tuple, int] = BoundedCache("test.folders", 16)
    cache.put((str(gone / "schema.sql"), 1), 1)
    cache.put(("digest", (gone / "a.py").as_uri()), 2)
    cache.put(((str(kept), str(gone)), "connections"), 3)  # names both: forgotten too
    cache.put((str(kept / "schema.sql"), 1), 4)
    cache.put((str(tmp_path / "gone-but-a-sibling" / "x"), 1), 5)
    assert caches.forget_paths([gone]) >= 3
    assert sorted(cache.values()) == [4, 5]
