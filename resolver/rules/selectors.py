"""Catalog selectors: which catalogs an OLM v1 ClusterExtension may resolve from.

A ClusterExtension's ``spec.source.catalog.selector`` is a Kubernetes label selector over
ClusterCatalogs. The cluster gives every ClusterCatalog the label
``olm.operatorframework.io/metadata.name`` with its own name (catalogd's webhook sets it and
overrides any other value), so a selector by that label picks one catalog by name;
:func:`catalog_labels` is that rule, applied wherever catalogs are matched so that a catalog
handed to the resolver without labels is still seen as the cluster would show it.

:class:`CatalogSelector` holds a selector as written (``matchLabels``, ``matchExpressions``, or
the string form ``kubectl -l`` takes);
:meth:`CatalogSelector.requirements` checks it with the API machinery's rules and texts
(``labels.NewRequirement``): an operator other than In/NotIn/Exists/DoesNotExist, an invalid
key or value, or a value count that does not fit the operator is a :class:`CatalogSelectorError`.
A missing selector and an empty one both select every catalog, as OLM v1 does. Used by
:mod:`resolver.profiles.olmv1_filter` and the conformance runner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

LABEL_CATALOG_NAME = "olm.operatorframework.io/metadata.name"
"""The label every ClusterCatalog carries, whose value is the catalog's name."""

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
"""The operators of a ``matchExpressions`` entry (``metav1.LabelSelectorOperator``)."""


class CatalogSelectorError(ValueError):
    """A label selector the API server would refuse (the text is the API machinery's)."""


def catalog_labels(name: str, labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """The labels a ClusterCatalog called ``name`` carries on the cluster: its own labels plus
    the name label, whose value is always the catalog's name."""
    return {**(labels or {}), LABEL_CATALOG_NAME: name}


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One requirement: ``key`` compared by ``operator`` (``In``, ``NotIn``, ``Exists``,
    ``DoesNotExist``, or ``Equals`` for a ``matchLabels`` entry) with ``values``."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` meet this requirement (a checked one)."""
        present = self.key in labels
        if self.operator in ("In", "Equals"):
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True, slots=True)
class CatalogSelector:
    """A label selector over catalogs, as a ClusterExtension writes it (unchecked)."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[LabelRequirement, ...] = ()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> CatalogSelector:
        """The selector of a ``metav1.LabelSelector`` mapping (``matchLabels``,
        ``matchExpressions``); raise :class:`CatalogSelectorError` when its shape is wrong."""
        labels = spec.get("matchLabels") or {}
        if not isinstance(labels, Mapping):
            raise CatalogSelectorError("matchLabels must be a map of label keys to values")
        expressions = spec.get("matchExpressions") or []
        if not isinstance(expressions, Sequence) or isinstance(expressions, str):
            raise CatalogSelectorError("matchExpressions must be a list")
        parsed = []
        for i, e in enumerate(expressions):
            if not isinstance(e, Mapping) or "key" not in e or "operator" not in e:
                raise CatalogSelectorError(f"matchExpressions[{i}] must have a key and an operator")
            values = e.get("values") or []
            if not isinstance(values, Sequence) or isinstance(values, str):
                raise CatalogSelectorError(f"matchExpressions[{i}].values must be a list")
            parsed.append(
                LabelRequirement(str(e["key"]), str(e["operator"]), tuple(str(v) for v in values))
            )
        return cls(
            tuple(sorted((str(k), str(v)) for k, v in labels.items())),
            tuple(parsed),
        )

    @classmethod
    def from_text(cls, text: str) -> CatalogSelector:
        """The selector of a label selector string as ``kubectl -l`` takes it (``k=v``,
        ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``, comma-separated);
        raise :class:`CatalogSelectorError` when it cannot be read."""
        found: list[LabelRequirement] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TEXT_REQUIREMENT.match(text, pos)
            if m is None or not m["key"]:
                raise CatalogSelectorError(f"unable to parse requirement at {text[pos:]!r}")
            key = m["key"]
            if m["not"]:
                if m["op"] or m["set"]:
                    raise CatalogSelectorError(f"unable to parse requirement at {text[pos:]!r}")
                found.append(LabelRequirement(key, "DoesNotExist"))
            elif m["op"] in ("=", "=="):
                found.append(LabelRequirement(key, "In", (m["value"],)))
            elif m["op"] == "!=":
                found.append(LabelRequirement(key, "NotIn", (m["value"],)))
            elif m["set"]:
                values = tuple(v.strip() for v in m["values"].split(",") if v.strip())
                found.append(LabelRequirement(key, "In" if m["set"] == "in" else "NotIn", values))
            else:
                found.append(LabelRequirement(key, "Exists"))
            pos = m.end()
        return cls((), tuple(found))

    def requirements(self) -> list[LabelRequirement]:
        """The checked requirements, ``matchLabels`` first (by key), then ``matchExpressions``
        in order; raise :class:`CatalogSelectorError` with the first one the API server refuses."""
        result = [LabelRequirement(k, "Equals", (v,)) for k, v in self.match_labels]
        for e in self.match_expressions:
            if e.operator not in OPERATORS:
                raise CatalogSelectorError(f'"{e.operator}" is not a valid label selector operator')
            result.append(e)
        for req in result:
            problems = _requirement_problems(req)
            if problems:
                raise CatalogSelectorError(
                    problems[0] if len(problems) == 1 else _aggregate(problems)
                )
        return result

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a catalog with ``labels`` is selected (an empty selector selects all)."""
        return all(r.matches(labels) for r in self.requirements())


_TEXT_REQUIREMENT = re.compile(
    r"\s*(?P<not>!)?\s*(?P<key>[^\s=!,()]+)\s*"
    r"(?:(?P<op>==|=|!=)\s*(?P<value>[^\s,()]*)|\s(?P<set>in|notin)\s*\((?P<values>[^)]*)\))?"
    r"\s*(?:,|$)"
)

# The API machinery's validation texts (k8s.io/apimachinery/pkg/util/validation).
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_VALUE_FMT = f"({_QNAME_FMT})?"
_VALUE = re.compile(f"^{_VALUE_FMT}$")
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS1123_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123 = re.compile(f"^{_DNS1123_FMT}$")
_DNS1123_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _key_problems(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not _DNS1123.match(prefix):
                errors.append(
                    "prefix part " + _regex_error(_DNS1123_MSG, _DNS1123_FMT, "example.com")
                )
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QNAME.match(name):
        errors.append(
            "name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def _value_problems(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _VALUE.match(value):
        errors.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _go_strings(values: Sequence[str]) -> str:
    if not values:
        return "[]string(nil)"
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _requirement_problems(req: LabelRequirement) -> list[str]:
    """Every problem ``labels.NewRequirement`` reports, in its order and words."""
    problems = []
    key_errors = _key_problems(req.key)
    if key_errors:
        problems.append(f'key: Invalid value: "{req.key}": {"; ".join(key_errors)}')
    count = len(req.values)
    if req.operator in ("In", "NotIn") and count == 0:
        problems.append(
            f"values: Invalid value: {_go_strings(req.values)}: "
            "for 'in', 'notin' operators, values set can't be empty"
        )
    elif req.operator == "Equals" and count != 1:
        problems.append(
            f"values: Invalid value: {_go_strings(req.values)}: "
            "exact-match compatibility requires one single value"
        )
    elif req.operator in ("Exists", "DoesNotExist") and count != 0:
        problems.append(
            f"values: Invalid value: {_go_strings(req.values)}: "
            "values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(req.values):
        value_errors = _value_problems(value)
        if value_errors:
            problems.append(
                f'values[{i}][{req.key}]: Invalid value: "{value}": {"; ".join(value_errors)}'
            )
    return problems


def _aggregate(problems: Sequence[str]) -> str:
    """Several errors in one text, as ``utilerrors.NewAggregate`` prints them."""
    return "[" + ", ".join(problems) + "]"
