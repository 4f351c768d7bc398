"""TemplateInductor on small fixtures: reference positions, the ladder, and the gate on its output."""

from __future__ import annotations

from gdg_lsp.fragments import fileformat, gate, induce
from gdg_lsp.fragments.instantiate import instantiate
from gdg_lsp.grammar.fragment_engine import byte_engine

from tests.fragments.helpers import gamma, site

PTR = ("Parameter", {"kind": "pointer"})
INT = ("Parameter", {"kind": "int"})


def _sites():
    g1 = gamma(x_ptr=PTR, n=INT, offs="Variable", mask="Variable", i="Loop")
    g2 = gamma(y_ptr=PTR, m=INT, offsets="Variable", keep="Variable", j="Loop")
    g3 = gamma(z_ptr=PTR, k=INT, idx="Variable", ok="Variable", t="Loop")
    return [
        site("tl.load(x_ptr + offs, mask=mask)", g1, "tl.load(", "a.py"),
        site("tl.load(y_ptr + offsets, mask=keep)", g2, "tl.load(", "b.py"),
        site("tl.load(z_ptr + idx, mask=ok, other=0.0)", g3, "tl.load(", "c.py"),
        site("tl.load(x_ptr + offs)", g1, "tl.load(", "a.py"),
    ]


def _induced():
    options = induce.Options("demo", "load", "call:tl.load(", ("tl.load(",))
    return induce.induce(_sites(), induce.PYTHON_SYNTAX, options)


def test_bound_names_become_slots_and_keyword_names_do_not():
    ind = _induced()
    contexts = {f"{p}.{f}" for p, f in ind.reference_contexts}
    assert "keyword_argument.name" not in contexts
    assert "keyword_argument.value" in contexts
    assert "binary_operator.left" in contexts
    template = ind.file.template
    assert '"tl.load("' in template and "mask=" in template
    assert "%ref_" in template
    assert "x_ptr" not in template and "offs" not in template  # names are slots, never literals
    assert not ind.unresolved


def test_the_ladder_nests_and_pin_is_the_names_the_corpus_used():
    ind = _induced()
    for slot in ind.file.fragment.slots.values():
        pin, ctx, g = (slot.per_rung[r] for r in ("pin", "ctx", "gamma"))
        assert set(g["sort"]) >= set(ctx["sort"])
        assert {k: v for k, v in pin.items() if k != "among"} == ctx
        assert "identifier" in slot.per_rung["base"]
    pointer = next(s for s in ind.file.fragment.slots.values()
                   if set(s.per_rung["pin"].get("among", ())) == {"x_ptr", "y_ptr", "z_ptr"})
    # every file's pointers are `kind = pointer`: the attribute generalizes and narrows Parameter
    assert pointer.per_rung["ctx"].get("kind") == ["pointer"]


def test_each_rung_accepts_every_region_and_rejects_a_ghost():
    ind = _induced()
    engine = byte_engine()
    for s in ind.sites:
        for rung in ("pin", "ctx", "gamma"):
            compiled = engine.compile(instantiate(ind.file.fragment, rung, s.gamma, {}).text)
            assert engine.full_match(compiled, s.text), (rung, s.text)
            assert not engine.full_match(compiled, s.text.replace("_ptr", "_ghost", 1)), (rung, s.text)


def test_an_unresolved_name_is_reported_and_not_a_positive():
    sites = _sites()
    sites.append(site("tl.load(w_ptr + offs)", gamma(offs="Variable"), "tl.load(", "d.py"))
    ind = induce.induce(sites, induce.PYTHON_SYNTAX, induce.Options("demo", "load", "call:tl.load("))
    assert ind.unresolved == {4: ["w_ptr"]}
    assert 4 not in ind.positives


def test_the_induced_file_round_trips_and_its_examples_pass_the_gate():
    ind = _induced()
    text = fileformat.dumps(ind.file)
    again = fileformat.parse(text)
    assert again.fragment.rules == ind.file.fragment.rules
    assert again.fragment.slots.keys() == ind.file.fragment.slots.keys()
    positives = [gate.example_positive(e, again.hole.triggers) for e in again.examples]
    report = gate.run(again.fragment, positives, byte_engine(), keywords=induce.PYTHON_SYNTAX.keywords)
    assert report.passed, report.lines()
    assert report.negatives > 0


class _Always:
    def __init__(self, value):
        self.value = value
        self.asked = 0

    def score(self, candidates):
        self.asked += len(candidates)
        return [self.value] * len(candidates)


def test_the_proposer_decides_merges_and_the_gate_still_judges_them():
    sites = _sites() + [site("tl.load(x_ptr)", gamma(x_ptr=PTR), "tl.load(", "e.py")]
    options = induce.Options("demo", "load", "call:tl.load(")
    never = induce.induce(sites, induce.PYTHON_SYNTAX, options, _Always(0.0))
    always = _Always(1.0)
    merged = induce.induce(sites, induce.PYTHON_SYNTAX, options, always)
    assert always.asked > 0
    assert len(merged.clusters) == 1 < len(never.clusters)
    for ind in (never, merged):
        positives = [gate.Positive(s.text, s.gamma, {}, tuple((r.start, r.end, r.name) for r in ind.references(i)))
                     for i, s in enumerate(ind.sites)]
        assert gate.run(ind.file.fragment, positives, byte_engine()).accepted == len(sites)


def test_a_rule_left_recursing_into_itself_counts_as_empty():
    """Once an optional slot is empty, `a ::= a " + " b` derives nothing: the instantiation drops it
    (else the engine would accept its prefixes and the decoder reach a dead end)."""
    import pytest

    from gdg_lsp.errors import GrammarError
    from gdg_lsp.fragments import ebnf

    rules = {"root": ebnf.Seq((ebnf.Lit("f("), ebnf.Ref("a"), ebnf.Lit(")"))),
             "a": ebnf.Alt((ebnf.Seq((ebnf.Ref("a"), ebnf.Lit("+"))), ebnf.Ref("gamma_set_0")))}
    assert set(ebnf.prune_empty_rules(rules)) == {"root", "a"}
    rules["a"] = ebnf.Seq((ebnf.Ref("a"), ebnf.Lit("+")))
    with pytest.raises(GrammarError):
        ebnf.prune_empty_rules(rules)
    rules["root"] = ebnf.Alt((ebnf.Lit("f()"), ebnf.Ref("a")))
    assert set(ebnf.prune_empty_rules(rules)) == {"root"}
