"""The input globs of ``gdg.jq.inputs``: what they match, how links are followed, when a walk is redone."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gdg_lsp import stamps
from gdg_lsp.boundary import Boundary
from gdg_lsp.languages.jq import inputs
from gdg_lsp.settings import JqInput, JqSettings, LimitsSettings, Settings


def _files(root: Path, pattern: str, *more: Path) -> list[str]:
    walk = inputs.glob_walk(root, pattern, Boundary.of([root, *more]))
    return [p.relative_to(root).as_posix() if p.is_relative_to(root) else os.fspath(p) for p in walk.files]


def _tree(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")


def test_globs_match_as_path_glob_does(tmp_path: Path):
    _tree(tmp_path, "a.json", "b.txt", ".hidden.json", "data/x.json", "data/deep/y.json", "data/deep/er/z.json",
          "other/w.json")
    (tmp_path / "data" / "folder.json").mkdir()  # a folder is never an input
    for pattern in ("*.json", "data/*.json", "data/*/*.json", "data/**/*.json", "**/*.json", "data/deep/y.json",
                    "*/deep/*.json", "data/d?ep/*.json", "data/[a-d]*/*.json", "./data//x.json", "**"):
        expected = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern) if p.is_file())
        assert _files(tmp_path, pattern) == expected, pattern


def test_links_are_followed_only_to_folders_inside_the_boundary(tmp_path: Path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    _tree(root, "real/a.json")
    _tree(outside, "b.json")
    (root / "inside").symlink_to(root / "real", target_is_directory=True)
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "real" / "loop").symlink_to(root, target_is_directory=True)
    # a real folder reached two ways is read once, by the first way in name order
    assert _files(root, "*/*.json") == ["inside/a.json"]
    assert _files(root, "out/*.json") == [] and _files(root, "../outside/*.json") == []
    # a folder the user configured is inside the boundary: a link to it is followed
    assert _files(root, "out/*.json", outside) == ["out/b.json"]
    # the loop back to the workspace is walked once per step of the glob, not once per link
    assert _files(root, "*/*/*/a.json") == ["inside/loop/inside/a.json"]


def test_an_absolute_glob_inside_the_workspace_is_walked_and_one_outside_is_a_problem(tmp_path: Path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    _tree(root, "samples/o.json")
    _tree(outside, "s.json")
    assert _files(root, f"{root}/samples/*.json") == ["samples/o.json"]
    walk = inputs.glob_walk(root, f"{outside}/*.json", Boundary.of([root]))
    assert walk.files == () and "outside the workspace folders" in walk.problem
    settings = Settings(jq=JqSettings([JqInput("*.jq", f"{outside}/*.json"), JqInput("*.jq", "*.json")]))
    assert inputs.problems([root], settings) == [walk.problem]


def test_an_absolute_filter_glob_matches_the_document_path(tmp_path: Path):
    _tree(tmp_path, "filters/f.jq", "samples/o.json")
    settings = Settings(jq=JqSettings([JqInput(f"{tmp_path}/filters/*.jq", "samples/*.json")]))
    assert inputs.input_files(tmp_path / "filters" / "f.jq", ".", [tmp_path], settings) == [
        tmp_path / "samples" / "o.json"]


def test_a_walk_is_redone_only_when_a_folder_it_looked_into_changes(tmp_path: Path, monkeypatch):
    _tree(tmp_path, "data/a/x.json")
    time.sleep(stamps.RACY_S)  # a folder changed within the file system's time step is listed again
    listed = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or real_scandir(path))
    assert _files(tmp_path, "data/*/*.json") == ["data/a/x.json"]
    assert listed and _files(tmp_path, "data/*/*.json") == ["data/a/x.json"]
    before = len(listed)
    assert _files(tmp_path, "data/*/*.json") == ["data/a/x.json"] and len(listed) == before
    _tree(tmp_path, "data/b/y.json")  # a new folder in data/: data/ changed
    assert _files(tmp_path, "data/*/*.json") == ["data/a/x.json", "data/b/y.json"]
    _tree(tmp_path, "data/a/z.json")  # a new file in data/a/
    assert _files(tmp_path, "data/*/*.json") == ["data/a/x.json", "data/a/z.json", "data/b/y.json"]


def test_the_caps_stop_the_walk_and_name_them(tmp_path: Path):
    _tree(tmp_path, *(f"m{n:02d}.json" for n in range(9)))
    few = Settings(limits=LimitsSettings(glob_matches=5, glob_folders=3))
    walk = inputs.glob_walk(tmp_path, "*.json", Boundary.of([tmp_path]), few)
    assert len(walk.files) == 5 and "more than 5 files" in walk.problem and "gdg.limits.globMatches" in walk.problem
    assert len(inputs.glob_walk(tmp_path, "*.json", Boundary.of([tmp_path])).files) == 9  # the default bound
    _tree(tmp_path, *(f"d{n}/x.json" for n in range(6)))
    walk = inputs.glob_walk(tmp_path, "d*/x.json", Boundary.of([tmp_path]), few)
    assert len(walk.files) < 6 and "more than 3 folders" in walk.problem and "gdg.limits.globFolders" in walk.problem


def test_folders_nested_deeper_than_python_recurses_are_walked(tmp_path: Path):
    deep = tmp_path
    for _ in range(400):
        deep = deep / "d"
        deep.mkdir()
    (deep / "bottom.json").write_text("{}")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(250)  # a walk that recursed per folder would fail here
    try:
        walk = inputs.glob_walk(tmp_path, "**/bottom.json", Boundary.of([tmp_path]))
    finally:
        sys.setrecursionlimit(limit)
    assert [p.name for p in walk.files] == ["bottom.json"]
