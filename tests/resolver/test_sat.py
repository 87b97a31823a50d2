"""The generic SAT engine: compilation, minimal explanations, exact optimisation, OLM's search."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.profiles import solve_variables
from resolver.sat import (
    AtMost,
    ConflictsWith,
    Dependency,
    Engine,
    Mandatory,
    NotSatisfiable,
    Objective,
    Or,
    ProblemError,
    Prohibited,
    Variable,
)
from resolver.sat.constraints import Constraint


def v(vid: str, *constraints: Constraint) -> Variable:
    return Variable(vid, tuple(constraints))


# ------------------------------------------------------------------ an independent checker


def holds(variables: list[Variable], chosen: set[str]) -> bool:
    """Whether ``chosen`` satisfies every constraint, evaluated directly (no solver)."""
    for var in variables:
        on = var.id in chosen
        for c in var.constraints:
            if isinstance(c, Mandatory) and not on:
                return False
            if isinstance(c, Prohibited) and on:
                return False
            if isinstance(c, Dependency) and on and not set(c.ids) & chosen:
                return False
            if isinstance(c, ConflictsWith) and on and c.id in chosen:
                return False
            if isinstance(c, AtMost) and len(set(c.ids) & chosen) > c.n:
                return False
            if isinstance(c, Or):
                left = (not on) if c.negate_subject else on
                right = (c.id not in chosen) if c.negate_operand else (c.id in chosen)
                if not (left or right):
                    return False
    return True


def all_models(variables: list[Variable]) -> list[set[str]]:
    ids = [x.id for x in variables]
    return [
        set(combo)
        for r in range(len(ids) + 1)
        for combo in itertools.combinations(ids, r)
        if holds(variables, set(combo))
    ]


@st.composite
def problems(draw: st.DrawFn) -> list[Variable]:
    """Random problems shaped like OLM's solver benchmark, small enough to enumerate."""
    n = draw(st.integers(1, 7))
    ids = [f"v{i}" for i in range(n)]
    variables = []
    for vid in ids:
        cs: list[Constraint] = []
        if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
            cs.append(Mandatory())
        if draw(st.integers(0, 6)) == 0:
            cs.append(Dependency(tuple(draw(st.lists(st.sampled_from(ids), max_size=3)))))
        if draw(st.integers(0, 9)) == 0:
            cs.append(ConflictsWith(draw(st.sampled_from(ids))))
        if draw(st.integers(0, 14)) == 0:
            cs.append(Prohibited())
        if draw(st.integers(0, 14)) == 0:
            cs.append(AtMost(draw(st.integers(0, 2)), tuple(draw(st.lists(st.sampled_from(ids))))))
        variables.append(Variable(vid, tuple(cs)))
    return variables


# ------------------------------------------------------------------ examples


def test_mandatory_and_prohibited_explained_by_both() -> None:
    with Engine([v("a", Mandatory(), Prohibited())]) as engine, pytest.raises(NotSatisfiable) as e:
        engine.check()
    assert str(e.value) == "constraints not satisfiable: a is mandatory, a is prohibited"


def test_explanation_drops_irrelevant_constraints() -> None:
    # x and y are mandatory and at most one may be chosen; c's constraints play no part.
    variables = [
        v("a", Mandatory(), Dependency(("x", "y")), AtMost(1, ("x", "y"))),
        v("x", Mandatory()),
        v("y", Mandatory()),
        v("c", Mandatory(), Dependency(("x",))),
    ]
    with Engine(variables) as engine, pytest.raises(NotSatisfiable) as e:
        engine.check()
    assert [str(c) for c in e.value.constraints] == [
        "a permits at most 1 of x, y",
        "x is mandatory",
        "y is mandatory",
    ]


def test_reasons_replace_generic_text() -> None:
    variables = [v("a", Mandatory("package a is requested"), Dependency((), "no bundle of a"))]
    with Engine(variables) as engine, pytest.raises(NotSatisfiable) as e:
        engine.check()
    assert e.value.message("\n") == (
        "constraints not satisfiable:\npackage a is requested\nno bundle of a"
    )


def test_input_errors() -> None:
    with pytest.raises(ProblemError, match="duplicate identifier 'a'"):
        Engine([v("a"), v("a")])
    with pytest.raises(ProblemError, match="variable 'z' referenced but not provided"):
        Engine([v("a", Dependency(("z",)))])


def test_preference_beats_minimality_in_olm_search() -> None:
    variables = [
        v("a", Mandatory(), Dependency(("x", "y"))),
        v("b", Mandatory(), Dependency(("y",))),
        v("x"),
        v("y"),
    ]
    assert solve_variables(variables) == ["a", "b", "x", "y"]


def test_lexicographic_objective_is_exact() -> None:
    # Level 1 wants few of {x, y}; level 2 wants z false. Search order would take x first.
    variables = [
        v("a", Mandatory(), Dependency(("x", "y"))),
        v("x", Dependency(("z",))),
        v("y", Dependency(("z", "w"))),
        v("z"),
        v("w"),
    ]
    with Engine(variables) as engine:
        engine.check()
        lit = engine.lit
        fixed = engine.optimize(
            [
                Objective("few", (lit("x"), lit("y"))),
                Objective("no z", (lit("z"),)),
            ]
        )
        assert engine.canonical_model(fixed) == ["a", "y", "w"]


def test_rank_literals_count_the_rank() -> None:
    variables = [v("a", Mandatory(), Dependency(("c0", "c1", "c2"))), v("c0"), v("c1"), v("c2")]
    variables.append(v("u", AtMost(1, ("c0", "c1", "c2"))))
    variables.append(v("c0b", Mandatory(), ConflictsWith("c0")))
    with Engine(variables) as engine:
        engine.check()
        ranks = engine.rank_literals([[engine.lit("c0")], [engine.lit("c1")], [engine.lit("c2")]])
        fixed = engine.optimize([Objective("rank", tuple(ranks))])
        assert "c1" in engine.canonical_model(fixed)
        assert sum(engine.value(r) for r in ranks) == 1


# ------------------------------------------------------------------ properties


@settings(max_examples=150, deadline=None)
@given(problems())
def test_answers_hold_and_unsat_means_no_model(variables: list[Variable]) -> None:
    models = all_models(variables)
    try:
        chosen = set(solve_variables(variables))
    except NotSatisfiable:
        assert models == []
        return
    assert holds(variables, chosen)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_explanations_are_minimal(variables: list[Variable]) -> None:
    if all_models(variables):
        return
    with Engine(variables) as engine, pytest.raises(NotSatisfiable) as e:
        engine.check()
    mus = e.value.constraints
    assert mus
    # The MUS alone is unsatisfiable...
    only = [
        Variable(x.id, tuple(a.constraint for a in mus if a.variable.id == x.id)) for x in variables
    ]
    assert all_models(only) == []
    # ...and dropping any one of its constraints makes it satisfiable.
    for dropped in mus:
        rest = [
            Variable(
                x.id,
                tuple(a.constraint for a in mus if a.variable.id == x.id and a is not dropped),
            )
            for x in variables
        ]
        assert all_models(rest), f"still unsatisfiable without {dropped}"


@settings(max_examples=150, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_optimum_matches_brute_force(variables: list[Variable], rnd: object) -> None:
    models = all_models(variables)
    if not models:
        return
    ids = [x.id for x in variables]
    level1 = ids[: len(ids) // 2]
    level2 = ids[len(ids) // 2 :]
    with Engine(variables) as engine:
        engine.check()
        fixed = engine.optimize(
            [
                Objective("first", tuple(engine.lit(i) for i in level1)),
                Objective("second", tuple(engine.lit(i) for i in level2)),
            ]
        )
        chosen = set(engine.canonical_model(fixed))
    best = min((len(m & set(level1)), len(m & set(level2))) for m in models)
    assert (len(chosen & set(level1)), len(chosen & set(level2))) == best
    assert holds(variables, chosen)
