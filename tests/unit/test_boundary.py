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


def test_read_refuses_what_is_outside_too_large_or_not_a_file(tmp_path):
    import pytest

    from gdg_lsp.boundary import Refused, TooLarge

    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "ok.p4").write_text("x" * 10)
    (outside / "secret.p4").write_text("secret")
    os.symlink(outside / "secret.p4", workspace / "link.p4")
    os.mkfifo(workspace / "fifo.p4")  # opening it for reading would block forever
    boundary = Boundary.of([workspace])
    assert boundary.read(workspace / "ok.p4", 10) == b"x" * 10
    with pytest.raises(TooLarge, match="over the limit of 9 bytes"):
        boundary.read(workspace / "ok.p4", 9)
    with pytest.raises(Refused, match="leads to .*outside"):
        boundary.read(workspace / "link.p4", 100)
    with pytest.raises(Refused, match="not a regular file"):
        boundary.read(workspace / "fifo.p4", 100)
    assert "not a regular file" in boundary.refusal(workspace / "fifo.p4", 100)
    assert boundary.refusal(workspace / "ok.p4", 10) is None
    assert "over the limit" in boundary.refusal(workspace / "ok.p4", 9)


def test_a_document_outside_the_workspace_brings_its_own_folder(tmp_path):
    from gdg_lsp.boundary import workspace_folders

    workspace = tmp_path / "ws"
    assert workspace_folders(workspace / "a" / "main.p4", [workspace]) == [workspace]
    assert workspace_folders(tmp_path / "elsewhere" / "x.p4", [workspace]) == [workspace, tmp_path / "elsewhere"]
    assert workspace_folders(None, [workspace]) == [workspace]
    assert workspace_folders(tmp_path / "x.py", []) == [tmp_path]


def test_text_and_head_are_read_like_the_bytes(tmp_path):
    import pytest

    from gdg_lsp.boundary import Refused, TooLarge

    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (workspace / "a.sql").write_bytes(b"caf\xc3\xa9 \xff" + b"x" * 100)
    (outside / "secret.json").write_text('{"token": 1}')
    os.symlink(outside / "secret.json", workspace / "link.json")
    os.mkfifo(workspace / "fifo.json")
    boundary = Boundary.of([workspace])
    assert boundary.read_text(workspace / "a.sql", 200).startswith("café \ufffd")  # undecodable: replaced
    with pytest.raises(TooLarge):
        boundary.read_text(workspace / "a.sql", 50)
    assert boundary.head(workspace / "a.sql", 4) == (b"caf\xc3", 107)  # any size: the first bytes
    assert boundary.head(workspace / "a.sql", 1000) == ((workspace / "a.sql").read_bytes(), 107)
    for path in (workspace / "link.json", workspace / "fifo.json", workspace / "missing.json"):
        for read in (lambda p: boundary.read_text(p, 100), lambda p: boundary.head(p, 100)):
            with pytest.raises(Refused):
                read(path)
