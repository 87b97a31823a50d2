"""Label selectors matched locally as the API server matches them (pure)."""

from __future__ import annotations

import pytest

from pivoter.kube.selectors import parse

LABELS = {"app": "web", "tier": "front", "pivoter.io/input-kind": "resolution"}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("missing", False),
        ("app in (web, db)", True),
        ("app in (db)", False),
        ("app notin (db,cache)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("missing in (web)", False),
        ("app=web,tier=front", True),
        ("app=web,tier in (back)", False),
        ("pivoter.io/input-kind=resolution, app in (web,db), !missing", True),
    ],
)
def test_matches_as_the_api_server(text: str, selected: bool) -> None:
    assert parse(text).matches(LABELS) is selected


def test_an_empty_value_is_a_value() -> None:
    assert parse("app=").matches({"app": ""})
    assert not parse("app=").matches(LABELS)


@pytest.mark.parametrize("text", ["a in (x", "=x", "a b", "a in x"])
def test_what_it_cannot_read_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"parse|valid"):
        parse(text)


@pytest.mark.parametrize(
    ("narrow", "wide", "implied"),
    [
        ("k=resolution,n=x", "k", True),
        ("k=resolution,n=x", "k=resolution", True),
        ("k=resolution", "k=resolution,n=x", False),
        ("k in (a,b)", "k", True),
        ("k in (a,b)", "k in (a,b,c)", True),
        ("k in (a,d)", "k in (a,b,c)", False),
        ("k=a", "k!=b", True),
        ("k=a", "k!=a", False),
        ("!k", "k!=a", True),
        ("k notin (a,b)", "k!=a", True),
        ("k!=a", "k notin (a,b)", False),
        ("", "k", False),
        ("k", "", True),
        ("!k", "k", False),
    ],
)
def test_implies(narrow: str, wide: str, implied: bool) -> None:
    assert parse(narrow).implies(parse(wide)) is implied
    if implied:  # what it implies, it never contradicts
        for labels in ({"k": "a", "n": "x"}, {"k": "resolution", "n": "x"}, {}, {"k": "b"}):
            if parse(narrow).matches(labels):
                assert parse(wide).matches(labels)
