"""Requirement properties as predicates: package, GVK, olm.constraint (all/any/not/cel)."""

from __future__ import annotations

import pytest

from resolver.catalog.model import (
    PROP_CONSTRAINT,
    PROP_GVK,
    PROP_LABEL,
    PROP_LABEL_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    Bundle,
    Property,
)
from resolver.rules.predicates import (
    PredicateError,
    constraint_predicate,
    has_requirements,
    requirements,
)


def bundle(pkg: str, version: str, *gvks: tuple[str, str, str]) -> Bundle:
    props = [Property(PROP_PACKAGE, {"packageName": pkg, "version": version})]
    props += [Property(PROP_GVK, {"group": g, "version": v, "kind": k}) for g, v, k in gvks]
    return Bundle(pkg, f"{pkg}.v{version}", properties=tuple(props))


FOO_101 = bundle("foo", "1.0.1", ("g1", "v1", "K1"), ("g2", "v2", "K2"))
FOO_200 = bundle("foo", "2.0.0", ("g2", "v2", "K2"))
BAR = bundle("bar", "1.0.1")


def test_package_required_uses_blang_ranges_and_a_bare_version_is_exact() -> None:
    b = Bundle(
        "x",
        "x.v1",
        properties=(
            Property(PROP_PACKAGE_REQUIRED, {"packageName": "foo", "versionRange": "1.0.1"}),
        ),
    )
    [pred] = list(requirements(b))
    assert pred(FOO_101)
    assert not pred(FOO_200)
    assert not pred(BAR)
    assert pred.text == "with package: foo and with version in range: 1.0.1"
    assert has_requirements(b) == PROP_PACKAGE_REQUIRED
    assert has_requirements(FOO_101) == ""


def test_compound_constraints_are_over_one_bundle() -> None:
    both = constraint_predicate(
        {
            "all": {
                "constraints": [
                    {"gvk": {"group": "g1", "version": "v1", "kind": "K1"}},
                    {"gvk": {"group": "g2", "version": "v2", "kind": "K2"}},
                ]
            }
        }
    )
    assert both(FOO_101)
    assert not both(FOO_200)
    either = constraint_predicate(
        {
            "any": {
                "constraints": [
                    {"gvk": {"group": "g1", "version": "v1", "kind": "K1"}},
                    {"package": {"packageName": "bar", "versionRange": ">=1.0.0"}},
                ]
            }
        }
    )
    assert either(FOO_101)
    assert either(BAR)
    assert not either(FOO_200)
    neither = constraint_predicate(
        {"not": {"constraints": [{"package": {"packageName": "foo", "versionRange": ">=2.0.0"}}]}}
    )
    assert neither(FOO_101)
    assert not neither(FOO_200)


def test_cel_rules_see_properties_and_semver_compare() -> None:
    pred = constraint_predicate(
        {
            "failureMessage": "needs foo 1.0.1",
            "cel": {
                "rule": "properties.exists(p, p.type == 'olm.package' && "
                "p.value.packageName == 'foo' && semver_compare(p.value.version, '1.0.1') == 0)"
            },
        }
    )
    assert pred(FOO_101)
    assert not pred(FOO_200)
    assert pred.failure_message == "needs foo 1.0.1"
    assert pred.text.startswith('with constraint: "properties.exists(')


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"unknown": {}}, 'json: unknown field "unknown"'),
        ({"failureMessage": "x"}, "has no constraint"),
        ({"all": {"constraints": []}}, "has no constraints"),
        ({"cel": {"rule": "properties.exists(p,"}}, "invalid CEL rule"),
        ({"package": {"packageName": "a", "versionRange": ">=zz"}}, "zz"),
        ("not an object", "must be an object"),
        ({"cel": {"rule": "'" + "x" * (130 * 1024) + "'"}}, "128 KiB"),
    ],
)
def test_bad_constraints_are_errors(value: object, message: str) -> None:
    with pytest.raises(PredicateError, match=message):
        constraint_predicate(value)


def test_cel_rule_that_errors_on_a_bundle_does_not_match_it() -> None:
    pred = constraint_predicate({"cel": {"rule": "properties[5].value == 1"}})
    assert not pred(FOO_101)


def test_requirements_in_property_order() -> None:
    b = Bundle(
        "x",
        "x.v1",
        properties=(
            Property(PROP_CONSTRAINT, {"gvk": {"group": "g1", "version": "v1", "kind": "K1"}}),
            Property(PROP_PACKAGE_REQUIRED, {"packageName": "bar", "versionRange": ">=1.0.0"}),
        ),
    )
    assert [p.kind for p in requirements(b)] == ["gvk", "package"]


def test_label_required_matches_bundles_with_that_olm_label() -> None:
    needs = Bundle("x", "x.v1", properties=(Property(PROP_LABEL_REQUIRED, {"label": "tier=gold"}),))
    labelled = Bundle(
        "y",
        "y.v1",
        properties=(
            Property(PROP_PACKAGE, {"packageName": "y", "version": "1.0.0"}),
            Property(PROP_LABEL, {"label": "tier=gold"}),
        ),
    )
    [pred] = list(requirements(needs))
    assert pred(labelled)
    assert not pred(BAR)
    assert pred.text == "with label: tier=gold"
    assert has_requirements(needs) == PROP_LABEL_REQUIRED
