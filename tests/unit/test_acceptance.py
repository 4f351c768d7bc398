"""Acceptance statistics (issue 30 item 3): the tracker's counts on a scripted run, exactly; the
store in the user's state folder (private, written whole, a planted or corrupt file ignored and
replaced); ``gdg-lsp stats``."""

from __future__ import annotations

import json
import os
import stat

import pytest

from gdg_lsp import cli
from gdg_lsp.private_folder import NotPrivate
from gdg_lsp.service import acceptance
from gdg_lsp.service.acceptance import Table, Tracker, code_points, retained
from gdg_lsp.service.acceptance_store import FILE_NAME, AcceptanceStore

KEY = ("python", "smollm2")


class Script:
    """A document and a tracker, edited as an editor would (the tracker sees each edit)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tracker = Tracker()
        self.now = 0.0

    def text_of(self, uri, start, end):
        return self.text[start:end]

    def edit(self, start: int, end: int, new: str) -> None:
        self.text = self.text[:start] + new + self.text[end:]
        self.tracker.edited("u", [(start, end, new)])

    def serve(self, at: int, *items: tuple[str, str], offset: int = 0) -> None:
        self.tracker.served("u", KEY, at, [(item_id, text, offset, 0) for item_id, text in items])

    def counts(self) -> dict[str, int]:
        return self.tracker.counts.total()


def test_a_scripted_run_is_counted_exactly():
    s = Script("x = \n" + " " * 40 + "\n")
    # A: shown, two characters typed through, its rest served again (same id), a word accepted,
    # then the rest accepted
    s.serve(4, ("A", "alpha + beta"), ("A2", "alpha - beta"))
    assert s.tracker.shown("A") and not s.tracker.shown("unknown")
    s.edit(4, 4, "a")
    s.edit(5, 5, "l")
    s.serve(6, ("A", "alpha + beta"), offset=2)  # the rest "pha + beta": A2 is no longer served
    s.edit(6, 6, "pha ")  # the editor inserts the word, then says so
    assert s.tracker.partially_accepted("A", "pha + beta", 4, 2, s.now)
    s.edit(10, 10, "+ beta")
    assert s.tracker.accepted("A", 6, s.now)
    assert s.text.startswith("x = alpha + beta\n")
    # B: shown, then the user types something else
    s.serve(17, ("B", "gamma"))
    s.tracker.shown("B")
    s.edit(17, 17, "q")
    # C and D: alternatives, C shown; an answer elsewhere ends C; D was never drawn
    s.serve(30, ("C", "one"), ("D", "two"))
    s.tracker.shown("C")
    s.serve(40, ("F", "zz"))
    # F: typed through to its end by the user, then an answer elsewhere
    s.tracker.shown("F")
    s.edit(40, 40, "z")
    s.edit(41, 41, "z")
    s.serve(50, ("G", "🙂 ok"))
    # G: one emoji accepted (two UTF-16 units), then the document moves on
    s.tracker.shown("G")
    s.edit(50, 50, "🙂")
    assert s.tracker.partially_accepted("G", "🙂 ok", 2, 0, s.now)
    s.serve(55)  # an answer with nothing to show

    assert s.counts() == {**s.counts(), "shown": 5, "accepted": 1, "partiallyAccepted": 1, "dismissed": 2,
                          "typedThrough": 1, "charsAccepted": 4 + 6 + 1, "charsChecked30s": 0}
    assert s.tracker.counts.rows.keys() == {KEY}

    # the user edits the accepted text: "beta" becomes "b", and a line is put in front of it all
    at = s.text.index("beta")
    s.edit(at + 1, at + 4, "")
    s.edit(0, 0, "# head\n")
    assert s.tracker.due(29.0, s.text_of) == 30.0  # nothing due yet: the next check is at 30 s
    s.now = 30.0
    assert s.tracker.due(30.0, s.text_of) == 120.0
    counts = s.counts()
    assert counts["charsChecked30s"] == 11 and counts["charsRetained30s"] == 11 - 3
    s.edit(0, len(s.text), "")  # everything deleted
    s.tracker.due(200.0, s.text_of)
    counts = s.counts()
    assert counts["charsChecked2m"] == 11 and counts["charsRetained2m"] == 0
    assert s.tracker.pending() == {"items": 0, "checks": 0, "unmeasured": 0}


def test_an_accept_said_before_the_showing_counts_the_showing_too():
    tracker = Tracker()
    tracker.served("u", KEY, 0, [("A", "abc", 0, 0)])
    tracker.accepted("A", 0, 0.0)
    assert tracker.counts.total()["shown"] == 1 and tracker.counts.total()["accepted"] == 1
    tracker.shown("A")  # said late: still one showing
    assert tracker.counts.total()["shown"] == 1


def test_an_item_served_again_after_it_seemed_dismissed_is_not_dismissed():
    tracker = Tracker()
    tracker.served("u", KEY, 0, [("A", "abc", 0, 0)])
    tracker.shown("A")
    tracker.served("u", KEY, 9, [])
    assert tracker.counts.total()["dismissed"] == 1
    tracker.served("u", KEY, 0, [("A", "abc", 0, 0)])  # the same suggestion again (the user undid the edit)
    assert tracker.counts.total()["dismissed"] == 0 and tracker.counts.total()["shown"] == 1


def test_closing_ends_items_and_counts_accepted_ranges_as_they_stand():
    s = Script("    \n")
    s.serve(4, ("A", "return x"))
    s.tracker.shown("A")
    s.edit(4, 4, "return x")
    s.tracker.accepted("A", 0, 0.0)
    s.tracker.closed("u", s.text_of)
    counts = s.counts()
    assert counts["charsChecked30s"] == counts["charsChecked2m"] == 8
    assert counts["charsRetained30s"] == counts["charsRetained2m"] == 8


def test_what_is_remembered_is_bounded(monkeypatch):
    monkeypatch.setattr(acceptance, "MAX_ITEMS", 4)
    monkeypatch.setattr(acceptance, "MAX_CHECKS", 2)
    tracker = Tracker()
    for index in range(10):
        uri = f"u{index}"
        tracker.served(uri, KEY, 0, [(f"i{index}", "abc", 0, 0)])
        tracker.shown(f"i{index}")
        if index % 2:
            tracker.accepted(f"i{index}", 0, 0.0)
    assert len(tracker._items) == 4 and len(tracker._checks) == 2 and tracker.unmeasured == 3
    counts = tracker.counts.total()
    assert counts["shown"] == 10 and counts["accepted"] == 5 and counts["dismissed"] == 3  # 6 unaccepted, 2 live


def test_utf16_lengths_and_the_retained_measure():
    assert code_points("a🙂b", 1) == 1 and code_points("a🙂b", 2) == 1 and code_points("a🙂b", 3) == 2
    assert code_points("abc", 99) == 3
    assert retained("return x", "return x") == 8 and retained("return x", "return  y") == 7
    assert retained("abc", "") == 0


# -- the store ---------------------------------------------------------------------------


def _table(**counts) -> Table:
    return Table({KEY: counts})


def test_the_store_adds_each_session_and_is_private(tmp_path):
    folder = tmp_path / "state"
    store = AcceptanceStore(folder)
    assert store.read().rows == {} and store.problem is None
    store.add(_table(shown=3, accepted=1))
    store.add(_table(shown=2, dismissed=2))
    assert store.read().total()["shown"] == 5 and store.read().total()["dismissed"] == 2
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / FILE_NAME).st_mode) == 0o600
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]  # written whole, renamed into place


@pytest.mark.parametrize("plant", ["others-may-write", "link", "corrupt", "wrong-shape", "negative", "huge"])
def test_a_planted_or_corrupt_file_is_ignored_and_replaced(tmp_path, plant):
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = folder / FILE_NAME
    planted = json.dumps({"format": 1, "rows": [{"language": "python", "model": "m", "shown": 10**6}]})
    target = tmp_path / "elsewhere.json"
    target.write_text(planted)
    if plant == "others-may-write":
        path.write_text(planted)
        os.chmod(path, 0o666)
    elif plant == "link":
        path.symlink_to(target)
    elif plant == "corrupt":
        path.write_text("{not json")
    elif plant == "wrong-shape":
        path.write_text(json.dumps({"format": 1, "rows": {"python": 1}}))
    elif plant == "negative":
        path.write_text(json.dumps({"format": 1, "rows": [{"language": "python", "model": "m", "shown": -5}]}))
    else:
        path.write_text(" " * (300 * 1024))
    store = AcceptanceStore(folder)
    assert store.read().rows == {} and store.problem and "ignored" in store.problem
    kept = store.add(_table(shown=1))
    assert kept.total()["shown"] == 1 and store.read().total()["shown"] == 1 and store.problem is None
    assert not path.is_symlink() and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    assert target.read_text() == planted  # a link's target is never written


def test_a_folder_others_may_write_keeps_nothing(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with pytest.raises(NotPrivate):
        AcceptanceStore(folder).add(_table(shown=1))
    assert not (folder / FILE_NAME).exists()


def test_gdg_lsp_stats_prints_the_store(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GDG_LSP_STATE_DIR", str(tmp_path / "state"))
    assert cli.main(["stats"]) == 0
    assert "no suggestions counted yet" in capsys.readouterr().out
    AcceptanceStore().add(Table({KEY: {"shown": 4, "accepted": 2, "dismissed": 1, "partiallyAccepted": 1,
                                       "charsAccepted": 30, "charsChecked30s": 30, "charsRetained30s": 27},
                                 ("sql", "smollm2"): {"shown": 1, "dismissed": 1}}))
    assert cli.main(["stats"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["language", "model", "shown", "accepted", "partly", "dismissed", "typed", "chars",
                              "kept", "30s", "kept", "2m"]
    assert out[1].split() == ["python", "smollm2", "4", "2", "1", "1", "0", "30", "27/30", "(90%)", "-"]
    assert out[2].split() == ["sql", "smollm2", "1", "0", "0", "1", "0", "0", "-", "-"]
    assert out[3].split()[:3] == ["all", "5", "2"]
    assert cli.main(["stats", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["all"]["shown"] == 5 and [r["language"] for r in data["rows"]] == ["python", "sql"]
    (tmp_path / "state" / FILE_NAME).write_text("{broken")
    assert cli.main(["stats"]) == 1
    assert "ignored" in capsys.readouterr().err
