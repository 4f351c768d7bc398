"""gdg.limits: each bound a user setting whose default is the constant of the module that applies it."""

from __future__ import annotations

from gdg_lsp import documents, folder_walk
from gdg_lsp.backends import remote
from gdg_lsp.languages.p4 import workspace as p4_workspace
from gdg_lsp.languages.python import imports
from gdg_lsp.languages.shell import git_state, package_scripts
from gdg_lsp.settings import LimitsSettings, Settings, from_json, limits_of, user_only_keys


def test_every_default_is_the_constant_of_the_module_that_applies_it():
    limits = LimitsSettings()
    assert (limits.glob_folders, limits.glob_matches) == (folder_walk.MAX_FOLDERS, folder_walk.MAX_MATCHES)
    assert (limits.refs, limits.ref_folders, limits.packed_refs_bytes) == (
        git_state.MAX_REFS, git_state.MAX_REF_FOLDERS, git_state.MAX_PACKED_REFS)
    assert limits.scripts == package_scripts.MAX_SCRIPTS
    assert limits.include_bytes == p4_workspace.MAX_INCLUDE_BYTES
    assert limits.source_bytes == imports.MAX_SOURCE_BYTES
    assert limits.remote_response_bytes == remote.MAX_RESPONSE_BYTES
    assert limits.analysed_chars == documents.MAX_ANALYSED_CHARS


def test_a_bad_bound_is_reported_and_replaced_by_its_default():
    settings, problems = from_json({"gdg": {"limits": {"refs": 0, "globMatches": "5", "scripts": 40}}})
    assert settings.limits.refs == LimitsSettings().refs and settings.limits.glob_matches == LimitsSettings().glob_matches
    assert settings.limits.scripts == 40
    assert len(problems) == 2 and any("gdg.limits.refs" in p for p in problems)
    assert any("gdg.limits.globMatches" in p for p in problems)


def test_every_bound_is_the_users_alone():
    assert {f"limits.{key}" for key in ("globFolders", "globMatches", "refs", "refFolders", "packedRefsBytes",
                                        "scripts", "includeBytes", "sourceBytes", "remoteResponseBytes",
                                        "analysedChars")} <= set(user_only_keys())
    assert limits_of(None) == LimitsSettings() and limits_of(Settings()) == LimitsSettings()
