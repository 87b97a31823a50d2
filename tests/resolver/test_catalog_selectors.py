"""Catalog selectors (resolver.rules.selectors): the API machinery's matching and refusals, and
the name label every ClusterCatalog carries."""

from __future__ import annotations

import pytest

from resolver.rules.selectors import (
    LABEL_CATALOG_NAME,
    CatalogSelector,
    CatalogSelectorError,
    catalog_labels,
)


def selector(**spec: object) -> CatalogSelector:
    return CatalogSelector.from_spec(spec)


def test_a_catalog_always_carries_its_name_label_whatever_it_was_given() -> None:
    assert catalog_labels("b") == {LABEL_CATALOG_NAME: "b"}
    assert catalog_labels("b", {LABEL_CATALOG_NAME: "a", "tier": "gold"}) == {
        LABEL_CATALOG_NAME: "b",
        "tier": "gold",
    }


@pytest.mark.parametrize(
    ("spec", "selected"),
    [
        ({}, {"a", "b", "c"}),
        ({"matchLabels": {LABEL_CATALOG_NAME: "b"}}, {"b"}),
        ({"matchLabels": {"tier": "gold"}}, {"a", "c"}),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "x"]}]},
            {"a", "c"},
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}, {"b"}),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"a", "c"}),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"b"}),
        (
            {
                "matchLabels": {"tier": "gold"},
                "matchExpressions": [
                    {"key": LABEL_CATALOG_NAME, "operator": "NotIn", "values": ["a"]}
                ],
            },
            {"c"},
        ),
    ],
)
def test_selectors_pick_catalogs_by_their_cluster_labels(
    spec: dict[str, object], selected: set[str]
) -> None:
    labels = {"a": {"tier": "gold"}, "b": {}, "c": {"tier": "gold"}}
    sel = CatalogSelector.from_spec(spec)
    assert {n for n, own in labels.items() if sel.matches(catalog_labels(n, own))} == selected


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (
            {"matchExpressions": [{"key": "name", "operator": "bad", "values": ["v"]}]},
            '"bad" is not a valid label selector operator',
        ),
        (
            {"matchLabels": {"": "value"}},
            'key: Invalid value: "": name part must be non-empty; name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
            "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {"matchLabels": {"name": "&value"}},
            'values[0][name]: Invalid value: "&value": a valid label must be an empty string or '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
            "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In"}]},
            "values: Invalid value: []string(nil): "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["x"]}]},
            'values: Invalid value: []string{"x"}: '
            "values set must be empty for exists and does not exist",
        ),
        (
            {"matchLabels": {"Example.com/tier": "gold"}},
            'key: Invalid value: "Example.com/tier": prefix part a lowercase RFC 1123 subdomain',
        ),
    ],
)
def test_selectors_the_api_server_refuses_say_why_in_its_words(
    spec: dict[str, object], text: str
) -> None:
    sel = CatalogSelector.from_spec(spec)
    with pytest.raises(CatalogSelectorError) as err:
        sel.requirements()
    assert str(err.value).startswith(text)


def test_several_problems_of_one_requirement_are_listed_together() -> None:
    sel = selector(matchExpressions=[{"key": "", "operator": "In"}])
    with pytest.raises(CatalogSelectorError) as err:
        sel.requirements()
    text = str(err.value)
    assert text.startswith('[key: Invalid value: "": name part must be non-empty')
    assert ", values: Invalid value: []string(nil): for 'in', 'notin'" in text
    assert text.endswith("]")


@pytest.mark.parametrize(
    "spec",
    [
        {"matchLabels": ["a"]},
        {"matchExpressions": {"key": "a"}},
        {"matchExpressions": [{"key": "a"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]},
    ],
)
def test_a_selector_of_the_wrong_shape_is_refused_when_read(spec: dict[str, object]) -> None:
    with pytest.raises(CatalogSelectorError):
        CatalogSelector.from_spec(spec)


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        (f"{LABEL_CATALOG_NAME}=b", {"b"}),
        ("tier==gold", {"a", "c"}),
        ("tier!=gold", {"b"}),
        (f"tier in (gold, x), {LABEL_CATALOG_NAME} notin (a)", {"c"}),
        ("tier", {"a", "c"}),
        ("!tier", {"b"}),
        ("", {"a", "b", "c"}),
    ],
)
def test_the_string_form_selects_as_the_map_form(text: str, selected: set[str]) -> None:
    labels = {"a": {"tier": "gold"}, "b": {}, "c": {"tier": "gold"}}
    sel = CatalogSelector.from_text(text)
    assert {n for n, own in labels.items() if sel.matches(catalog_labels(n, own))} == selected


@pytest.mark.parametrize("text", ["=b", "a in b", "!a=b", "a,,b"])
def test_a_string_that_is_no_selector_is_refused(text: str) -> None:
    with pytest.raises(CatalogSelectorError, match="unable to parse requirement"):
        CatalogSelector.from_text(text)
