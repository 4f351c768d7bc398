"""Anti-unification on small fixtures: what regions share stays, the rest becomes variation points."""

from __future__ import annotations

from gdg_lsp.fragments.antiunify import PLit, PNode, PVar, align, generalize, similarity

from tests.fragments.helpers import python_call


def _groups(pattern: PNode):
    return pattern.groups[0].items[0].pattern  # call -> its first child


def test_a_region_renders_back_to_its_text_with_blanks_normalized():
    term = python_call("f(a,\n      b)  # c")
    assert term.render() == "f(a, b)"


def test_identical_regions_generalize_to_themselves_but_names_stay_variables():
    g = generalize([(0, python_call("f(a, 1)")), (1, python_call("f(a, 1)"))])
    assert isinstance(g.pattern, PNode) and g.pattern.type == "call"
    # identifiers are always variation points (a name may be a reference), literals are shared
    names = [v for v in g.variables if all(t.type == "identifier" for _, t in v.values)]
    assert {t.text for v in names for _, t in v.values} == {"f", "a"}
    assert not any(all(t.type == "integer" for _, t in v.values) for v in g.variables)


def test_a_missing_argument_becomes_an_optional_group_not_a_variable():
    """Hedge LGG: f(a) and f(a, b) give f(a, b?), not f(X)."""
    g = generalize([(0, python_call("f(a)")), (1, python_call("f(a, b)"))])
    args = g.pattern.groups[-1].items[0].pattern  # the argument_list
    assert isinstance(args, PNode) and args.type == "argument_list"
    optional = [grp for grp in args.groups if grp.optional]
    assert len(optional) == 1
    # the comma and `b` always occur together: one optional group, present only in region 1
    assert [type(i.pattern) for i in optional[0].items] == [PLit, PVar]
    assert all(i.regions == {1} for i in optional[0].items)


def test_different_values_at_one_place_are_one_variable_with_every_region_value():
    g = generalize([(0, python_call("f(x + 1)")), (1, python_call("f(y * 2)")), (2, python_call("f(z)"))])
    args = g.pattern.groups[-1].items[0].pattern
    inner = [i.pattern for grp in args.groups for i in grp.items if isinstance(i.pattern, PVar)]
    assert len(inner) == 1
    assert sorted(t.render() for _, t in inner[0].values) == ["x + 1", "y * 2", "z"]


def test_the_typed_prefix_is_literal_even_where_it_is_made_of_names():
    a = python_call("tl.load(p)", prefix="tl.load(")
    b = python_call("tl.load(q)", prefix="tl.load(")
    g = generalize([(0, a), (1, b)])
    values = {t.text for v in g.variables for _, t in v.values}
    assert "tl" not in values and "load" not in values  # fixed: replayed, never a slot
    assert values == {"p", "q"}


def test_alignment_matches_keyword_arguments_by_name_not_by_position():
    a = python_call("f(x, mask=m)").children[1].children
    b = python_call("f(x, other=o, mask=m)").children[1].children
    columns = align([(0, a), (1, b)])
    mask_columns = [c for c in columns if any(t.render().startswith("mask") for t in c.values())]
    assert len(mask_columns) == 1 and set(mask_columns[0]) == {0, 1}


def test_similarity_is_one_for_equal_and_zero_for_disjoint_sequences():
    assert similarity(["a", "b"], ["a", "b"]) == 1.0
    assert similarity(["a"], ["b"]) == 0.0
    assert 0 < similarity(["a", "b", "c"], ["a", "c"]) < 1
