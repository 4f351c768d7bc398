"""The Neovim plugin's own inline client (the 0.11 path) against the in-process fake server of
nvim_fake_lsp.lua: the steady ghost, partial accept and the accept protocol's messages, the
manners around the popup menu, <Tab>, snippets and the highlight, the manual trigger, snooze and
per-language switches (issue 30). Each script runs its steps in one headless Neovim and writes
its checks; these tests assert them and the figures it measured.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.editors.test_neovim import PLUGIN, _env, _nvim

HERE = Path(__file__).parent


def _run(tmp_path: Path, script: str, **extra: str) -> dict:
    result_path = tmp_path / "result.json"
    proc = subprocess.run(
        [_nvim(), "--headless", "--clean", "-c", f"luafile {HERE / script}"],
        env=_env(tmp_path, GDG_PLUGIN=str(PLUGIN), GDG_RESULT=str(result_path), **extra),
        cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert result_path.exists(), f"nvim exited {proc.returncode}: {proc.stderr}"
    result = json.loads(result_path.read_text())
    assert result.get("error") is None, result
    failed = [c for c in result["checks"] if not c["ok"]]
    assert failed == [], failed
    return result


def test_typing_what_the_ghost_shows_keeps_it_in_every_frame(tmp_path):
    result = _run(tmp_path, "nvim_ghost_steady.lua")
    frames = result["frames"]
    assert frames["keys"] == 9 and frames["checked"] >= frames["keys"], frames  # a frame per key at least
    assert frames["without_ghost"] == 0, frames
    assert frames["wrong_rest"] == 0, frames
    assert frames["stale_ghost"] == 0, frames  # the mismatching key's frame shows none
    assert frames["max_ms_after_key"] <= 16, frames
    assert len(result["checks"]) >= 12


def test_a_word_or_a_line_is_accepted_and_the_server_hears_it_in_utf16(tmp_path):
    result = _run(tmp_path, "nvim_partial_accept.lua")
    assert len(result["checks"]) >= 20
    assert result["lines"] == ["x = 1", 's = naïve("😀", v)', "return s"]


def test_no_ghost_over_the_menu_tab_is_the_users_snooze_progress_and_quitting(tmp_path):
    marker = tmp_path / "exit-heard"
    result = _run(tmp_path, "nvim_inline_manners.lua", GDG_EXIT_MARKER=str(marker))
    assert len(result["checks"]) >= 20
    # :qa! waited for the answer to shutdown (300 ms in the fake) and sent exit
    assert marker.read_text().strip() == "exit"


def test_manual_trigger_asks_only_on_the_key_and_tab_is_the_snippet_jump(tmp_path):
    result = _run(tmp_path, "nvim_inline_manual.lua")
    assert len(result["checks"]) >= 7


def test_unguaranteed_marks_why_stats_and_alternatives_on_their_way(tmp_path):
    result = _run(tmp_path, "nvim_marks_alternatives.lua")
    assert len(result["checks"]) >= 22
