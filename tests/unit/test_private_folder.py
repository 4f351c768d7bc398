"""The folders whose entries the server trusts are its user's alone (gdg_lsp/private_folder.py)."""

from __future__ import annotations

import os
import stat

import pytest

from gdg_lsp.private_folder import NotPrivate, private_folder, why_not_private


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_missing_folder_and_its_missing_parents_are_created_0700(tmp_path):
    old = os.umask(0o022)
    try:
        folder = private_folder(tmp_path / "cache" / "gdg-lsp" / "models")
    finally:
        os.umask(old)
    assert folder.is_dir()
    for made in (tmp_path / "cache", tmp_path / "cache" / "gdg-lsp", folder):
        assert _mode(made) == 0o700, made
    assert private_folder(folder) == folder  # and it passes its own check


def test_a_folder_others_may_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o775)
    with pytest.raises(NotPrivate, match="other users"):
        private_folder(shared)
    os.chmod(shared, 0o755)  # readable by others is no danger: nobody else can plant an entry
    assert private_folder(shared) == shared


def test_a_link_is_refused_where_it_points_to(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.symlink(elsewhere, tmp_path / "cache")
    with pytest.raises(NotPrivate, match="symbolic link"):
        private_folder(tmp_path / "cache")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotPrivate, match="not a folder"):
        private_folder(tmp_path / "file")


def test_entries_are_judged_by_the_same_rules(tmp_path):
    entry = tmp_path / "entry"
    entry.write_text("x")
    os.chmod(entry, 0o644)
    assert why_not_private(entry) is None
    assert why_not_private(tmp_path / "missing") is None
    os.chmod(entry, 0o666)
    assert "chmod go-w" in why_not_private(entry)
    os.symlink(entry, tmp_path / "link")
    assert "symbolic link" in why_not_private(tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    assert "neither a folder nor a regular file" in why_not_private(tmp_path / "fifo")


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a folder to another user")
def test_a_folder_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 12345, 12345)
    with pytest.raises(NotPrivate, match="belongs to user id 12345"):
        private_folder(theirs)
