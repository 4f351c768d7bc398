from gdg_lsp.settings import Settings, from_json, to_json


def test_camel_case_section_and_nested_values():
    s, problems = from_json({"gdg": {"constraint": "syntax", "maxTokens": 12, "sql": {"connections": ["postgresql://db"]}}})
    assert problems == []
    assert s.constraint == "syntax" and s.max_tokens == 12 and s.sql.connections == ["postgresql://db"]


def test_bad_values_are_reported_and_replaced_one_by_one():
    s, problems = from_json({"constraint": "strict", "maxLines": 3, "nope": 1, "timeoutMs": "soon"})
    assert s.constraint == "scope" and s.max_lines == 3 and s.timeout_ms == Settings().timeout_ms
    assert any("gdg.constraint" in p for p in problems)
    assert any("unknown setting gdg.nope" in p for p in problems)
    assert any("gdg.timeoutMs" in p for p in problems)


def test_non_object_settings_are_rejected_with_a_message():
    s, problems = from_json(["not", "an", "object"])
    assert s == Settings() and problems


def test_round_trip_to_json():
    s = Settings(constraint="none", max_tokens=7)
    again, problems = from_json(to_json(s))
    assert again == s and problems == []


def test_grammar_engine_values_are_the_engines():
    from gdg_lsp.grammar import dialects, engine
    from gdg_lsp.settings import GRAMMAR_ENGINES, REMOTE_DIALECTS

    assert set(GRAMMAR_ENGINES) == {"auto", *engine.ENGINES}
    assert engine.resolve("auto") == engine.DEFAULT in engine.ENGINES
    assert set(REMOTE_DIALECTS) == {"auto", *dialects.DIALECTS}
    settings, problems = from_json({"grammarEngine": "tree-sitter"})
    assert settings.grammar_engine == "auto" and problems
