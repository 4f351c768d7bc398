"""Words a user's fragment writes itself are not Γ's: which words of a suggestion a Γ slot vouches for."""

from __future__ import annotations

from gdg_lsp.fragments import fileformat
from gdg_lsp.fragments.authored import template_words, unvouched
from gdg_lsp.languages.generic.definition import vouched_keywords

from tests.fragments.test_gate import FRAGMENT


def _written(template: str, rung: str = "gamma", slots: str = ""):
    text = FRAGMENT.replace('root ::= "load(" %ptr% (" + " %off%)? (", mask=" %mask%)? ")"', template)
    return template_words(fileformat.parse(text + slots).fragment, rung)


def test_the_templates_literals_are_its_own_words():
    written = template_words(fileformat.parse(FRAGMENT).fragment, "gamma")
    assert written.words == {"load", "mask"} and not written.spells
    names = {"x_ptr", "offs", "m"}
    # the typed text is not judged; a word it ends in is judged whole (x_p + tr)
    assert unvouched("load(x_ptr + offs)", written, names, (), start=len("load(x_p")) == []
    assert unvouched("load(x_ptr + offs, mask=m)", written, names, (), start=len("load(x_p")) == ["mask"]


def test_a_word_neither_in_gamma_nor_a_keyword_nor_a_number_is_not_vouched_for():
    written = template_words(fileformat.parse(FRAGMENT).fragment, "gamma")
    keywords = vouched_keywords("tree-sitter-python")
    assert unvouched("x_ptr if not offs else 0x1F", written, {"x_ptr", "offs"}, keywords) == []
    assert unvouched("ghost + x_ptr", written, {"x_ptr"}, keywords) == ["ghost"]
    # a dotted chain is vouched part by part: the chain up to a part must be a name of Γ
    assert unvouched("os.path.join(a)", written, {"os", "os.path.join", "a"}, keywords) == []
    assert unvouched("os.system(a)", written, {"os", "a"}, keywords) == ["system"]
    # a Γ name that contains a word the template writes is not vouched for (conservative)
    assert unvouched("offload", written, {"offload"}, keywords) == ["offload"]


def test_a_payload_made_only_of_gamma_names_is_still_the_templates_text():
    """`exec(chr(111)+chr(115))` names only builtins, which Γ has: the words are the template's."""
    written = _written('root ::= "load(" %ptr% "); exec(chr(111)+chr(115))"')
    assert {"exec", "chr", "111", "115"} <= written.words
    assert unvouched("x_ptr); exec(chr(111)+chr(115))", written, {"x_ptr", "exec", "chr"}, ()) == \
        ["exec", "chr", "111", "115"]


def test_a_template_that_spells_words_letter_by_letter_vouches_for_none():
    written = _written('root ::= "load(" %ptr% "); " [e] [x] [e] [c] "(1)"')
    assert written.spells
    assert unvouched("x_ptr); exec(1)", written, {"x_ptr", "exec"}, ()) == ["x_ptr", "exec", "1"]
    # a wide class is text the model chooses, not the template: Γ names stay vouched
    wide = _written('root ::= "load(" %ptr% " " [a-zA-Z_]+')
    assert not wide.spells and unvouched("x_ptr", wide, {"x_ptr"}, ()) == []


def test_fixed_names_of_a_slot_are_the_files_words():
    slots_names = FRAGMENT.replace('gamma = { sort = ["Variable"] }\nbase = { identifier = {} }\noptional = true\n[slots.mask]',
                                   'gamma = { names = ["rm_everything"] }\nbase = { identifier = {} }\noptional = true\n[slots.mask]')
    assert "rm_everything" in template_words(fileformat.parse(slots_names).fragment, "gamma").words


def test_keywords_are_gdg_lsps_own_never_a_files():
    python = vouched_keywords("tree-sitter-python")
    assert {"if", "return", "None"} <= python and "exec" not in python and "print" not in python
    assert {"if", "then", "fi"} <= vouched_keywords("tree-sitter-bash")
