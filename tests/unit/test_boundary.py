import os

from gdg_lsp.boundary import Boundary


def test_files_under_an_allowed_folder_are_readable(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "a.sql").write_text("")
    boundary = Boundary.of([workspace])
    assert boundary.allows(workspace / "sub" / "a.sql")
    assert boundary.allows(workspace / "sub" / ".." / "sub" / "a.sql")
    assert not boundary.allows(tmp_path / "outside.sql")
    assert not boundary.allows(workspace / ".." / "outside.sql")
    assert not boundary.allows(tmp_path / "ws-sibling" / "a.sql")  # a prefix of the name is not a parent


def test_a_symlink_is_judged_by_its_target(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.sql").write_text("CREATE TABLE secret (x int);")
    os.symlink(outside / "secret.sql", workspace / "schema.sql")
    os.symlink(outside, workspace / "linked")
    (workspace / "inner.sql").write_text("")
    os.symlink(workspace / "inner.sql", workspace / "alias.sql")
    boundary = Boundary.of([workspace])
    assert not boundary.allows(workspace / "schema.sql")
    assert not boundary.allows(workspace / "linked" / "secret.sql")
    assert "outside" in boundary.why_not(workspace / "schema.sql")
    assert boundary.allows(workspace / "alias.sql")
    assert Boundary.of([workspace], [outside]).allows(workspace / "schema.sql")  # a configured folder
