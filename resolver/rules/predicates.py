"""Dependency predicates: what a bundle's requirement properties ask of another bundle.

One requirement property (``olm.package.required``, ``olm.gvk.required``, ``olm.label.required``,
``olm.constraint``)
becomes one :class:`Predicate` over a *single* candidate bundle, as in OLM v0 (``all`` means one
bundle satisfying every sub-constraint, not several bundles). ``olm.constraint`` supports
``gvk``, ``package``, ``all``, ``any``, ``not`` and ``cel`` (evaluated with cel-python: the
environment has the ``properties`` list and ``semver_compare(a, b)``). Texts follow OLM v0's
``cache/predicates.go`` wording so explanations read the same. Used by every profile in
:mod:`resolver.profiles`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from resolver.catalog.model import (
    GVK,
    PROP_CONSTRAINT,
    PROP_GVK_REQUIRED,
    PROP_LABEL,
    PROP_LABEL_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    Bundle,
    Property,
)
from resolver.versions import RangeSyntaxError, VersionRange, parse_range, parse_version

CONSTRAINT_LIMIT = 128 * 1024
"""OLM v0's size limit of one ``olm.constraint`` value, in bytes of JSON."""


class PredicateError(ValueError):
    """A requirement property that cannot be turned into a predicate (bad range, bad CEL)."""


@dataclass(frozen=True, slots=True)
class Predicate:
    """A test on one candidate bundle, with the text OLM prints for it."""

    text: str
    test: Callable[[Bundle], bool]
    failure_message: str = ""
    kind: str = ""
    package: str = ""
    gvk: GVK | None = None

    def __call__(self, bundle: Bundle) -> bool:
        return self.test(bundle)


def gvk_predicate(gvk: GVK) -> Predicate:
    """A bundle that provides ``gvk``."""
    return Predicate(
        f"providing an API with group: {gvk.group}, version: {gvk.version}, kind: {gvk.kind}",
        lambda b: gvk in b.provided_apis,
        kind="gvk",
        gvk=gvk,
    )


def package_predicate(package: str, version_range: str) -> Predicate:
    """A bundle of ``package`` whose version is in the blang ``version_range``."""
    try:
        rng = parse_range(version_range, "blang") if version_range else None
    except RangeSyntaxError as err:
        raise PredicateError(str(err)) from None
    return Predicate(
        f"with package: {package} and with version in range: {version_range}",
        lambda b: b.package == package and _in_range(rng, b.version),
        kind="package",
        package=package,
    )


def label_predicate(label: str) -> Predicate:
    """A bundle with the ``olm.label`` property ``label`` (OLM v0's label dependencies)."""

    def has_label(bundle: Bundle) -> bool:
        return any(
            p.type == PROP_LABEL and isinstance(p.value, dict) and p.value.get("label") == label
            for p in bundle.properties
        )

    return Predicate(f"with label: {label}", has_label, kind="label")


def _in_range(rng: VersionRange | None, version: str) -> bool:
    if rng is None:
        return True
    try:
        return rng.contains(parse_version(version))
    except ValueError:
        return False


def requirements(bundle: Bundle) -> Iterator[Predicate]:
    """Yield one predicate per requirement property of ``bundle``, in property order."""
    for prop in bundle.properties:
        if prop.type == PROP_PACKAGE_REQUIRED and isinstance(prop.value, dict):
            yield package_predicate(
                str(prop.value.get("packageName", "")), str(prop.value.get("versionRange", ""))
            )
        elif prop.type == PROP_GVK_REQUIRED and isinstance(prop.value, dict):
            yield gvk_predicate(
                GVK(
                    str(prop.value.get("group", "")),
                    str(prop.value.get("version", "")),
                    str(prop.value.get("kind", "")),
                )
            )
        elif prop.type == PROP_LABEL_REQUIRED and isinstance(prop.value, dict):
            yield label_predicate(str(prop.value.get("label", "")))
        elif prop.type == PROP_CONSTRAINT:
            yield constraint_predicate(prop.value)


def has_requirements(bundle: Bundle) -> str:
    """Return the first requirement property type of ``bundle`` ("" when it has none)."""
    for prop in bundle.properties:
        if prop.type in (
            PROP_PACKAGE_REQUIRED,
            PROP_GVK_REQUIRED,
            PROP_LABEL_REQUIRED,
            PROP_CONSTRAINT,
        ):
            return prop.type
    return ""


_CONSTRAINT_KEYS = {"failureMessage", "gvk", "package", "all", "any", "not", "cel"}


def constraint_predicate(value: Any) -> Predicate:
    """Turn an ``olm.constraint`` value into a predicate (unknown fields are an error)."""
    if len(json.dumps(value)) > CONSTRAINT_LIMIT:
        raise PredicateError("olm.constraint value exceeds the 128 KiB limit")
    if not isinstance(value, dict):
        raise PredicateError("olm.constraint value must be an object")
    pred = _constraint(value)
    message = str(value.get("failureMessage", ""))
    return Predicate(
        pred.text,
        pred.test,
        failure_message=message,
        kind=pred.kind,
        package=pred.package,
        gvk=pred.gvk,
    )


def _constraint(value: dict[str, Any]) -> Predicate:
    unknown = sorted(set(value) - _CONSTRAINT_KEYS)
    if unknown:
        raise PredicateError(f'json: unknown field "{unknown[0]}"')
    if "gvk" in value:
        g = value["gvk"]
        return gvk_predicate(
            GVK(str(g.get("group", "")), str(g.get("version", "")), str(g.get("kind", "")))
        )
    if "package" in value:
        p = value["package"]
        return package_predicate(str(p.get("packageName", "")), str(p.get("versionRange", "")))
    if "cel" in value:
        rule = str(value["cel"].get("rule", ""))
        test = _cel_test(rule)
        message = str(value.get("failureMessage", ""))
        return Predicate(f'with constraint: "{rule}" and message: "{message}"', test, kind="cel")
    for key, joiner in (("all", " and "), ("any", " or "), ("not", " and not ")):
        if key in value:
            subs = [_constraint(c) for c in value[key].get("constraints", [])]
            if not subs:
                raise PredicateError(f"olm.constraint {key!r} has no constraints")
            return _compound(key, joiner, subs)
    raise PredicateError("olm.constraint has no constraint (gvk, package, all, any, not, cel)")


def _compound(key: str, joiner: str, subs: list[Predicate]) -> Predicate:
    text = joiner.join(s.text for s in subs)

    def every(b: Bundle) -> bool:
        return all(p(b) for p in subs)

    def some(b: Bundle) -> bool:
        return any(p(b) for p in subs)

    def none(b: Bundle) -> bool:
        return not any(p(b) for p in subs)

    test = {"all": every, "any": some}.get(key, none)
    return Predicate(text, test, kind=key)


def _cel_test(rule: str) -> Callable[[Bundle], bool]:
    from resolver.rules.cel import CelRuleError, compile_rule  # the CEL library, when needed

    try:
        test_properties = compile_rule(rule)
    except CelRuleError as err:
        raise PredicateError(str(err)) from None

    def test(bundle: Bundle) -> bool:
        return test_properties([_prop_json(p) for p in bundle.properties])

    return test


def _prop_json(prop: Property) -> dict[str, Any]:
    return {"type": prop.type, "value": prop.value}


def package_of(bundle: Bundle) -> str:
    """The package name a bundle declares in ``olm.package`` (falls back to its package)."""
    value = bundle.prop(PROP_PACKAGE)
    if isinstance(value, dict) and value.get("packageName"):
        return str(value["packageName"])
    return bundle.package
