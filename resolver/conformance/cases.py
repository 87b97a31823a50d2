"""Reading conformance cases: the shared YAML schema turned into model objects and inputs.

A case's inline catalog entries (one per bundle and channel) become
:class:`~resolver.catalog.model.Catalog` objects, its ``installed``/``request`` items become
:class:`~resolver.rules.inputs.Installed`/:class:`~resolver.rules.inputs.PackageRequest`, and
its solver-level ``variables`` become :class:`~resolver.sat.Variable`. Used by
:mod:`resolver.conformance.runner`.

A field the schema lists but a case leaves out takes the value the schema implies: the
defaults it states (version ``0.0.0``, priority 0, available, no channel), an entry's
``package`` when the case names one package only (at the ``successors`` and ``channel_order``
levels every entry is one package, so a case naming none gets a placeholder), an OLM v0
Subscription's name ``<package>-<channel>`` (the upstream test helpers' name, which every case
uses). Each catalog carries the labels the cluster gives it (the ClusterCatalog name label of
:func:`resolver.rules.selectors.catalog_labels`). A field that is needed and implied by nothing
is a :class:`CaseError` naming the case and the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resolver.catalog.model import (
    PROP_CONSTRAINT,
    PROP_DEPRECATED,
    PROP_GVK,
    PROP_GVK_REQUIRED,
    PROP_LABEL,
    PROP_LABEL_REQUIRED,
    PROP_PACKAGE,
    PROP_PACKAGE_REQUIRED,
    SCHEMA_BUNDLE,
    Bundle,
    Catalog,
    Channel,
    ChannelEntry,
    Deprecation,
    DeprecationEntry,
    Package,
    Property,
)
from resolver.profiles import NAMES as PROFILE_NAMES
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest, ResolutionInput
from resolver.rules.selectors import CatalogSelector, CatalogSelectorError, catalog_labels
from resolver.sat import AtMost, ConflictsWith, Dependency, Mandatory, Or, Prohibited, Variable
from resolver.sat.constraints import Constraint

Case = Mapping[str, Any]

ENGINES = (*PROFILE_NAMES, "deppy")
"""Engines a case may name (``deppy`` exists at solver level only)."""
LEVELS = ("solver", "resolver", "channel_order", "successors")
OUTCOMES = ("ok", "unsat", "error")
ONE_PACKAGE_LEVELS = ("successors", "channel_order")
"""Levels whose entries all belong to one package."""
PLACEHOLDER_PACKAGE = "package"
"""The package of a one-package case that names none (any name gives the same answer)."""
OLMV0_ENGINES = ("olm-v0",)


class CaseError(ValueError):
    """A malformed case: a field that is missing or of the wrong shape, named with its path."""

    def __init__(self, case_id: str, field: str, problem: str) -> None:
        self.case_id = case_id
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def case_id(case: Any, index: int) -> str:
    """The case's ``id``, or its place in the file when it has none."""
    if isinstance(case, Mapping) and isinstance(case.get("id"), str | int) and case["id"] != "":
        return str(case["id"])
    return f"cases[{index}]"


@dataclass(frozen=True, slots=True)
class CaseFields:
    """One mapping of a case, with the path to it, read field by field (see :class:`CaseError`)."""

    case: str
    path: str
    data: Mapping[str, Any]

    def where(self, key: str) -> str:
        """The path of ``key`` in the case."""
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, problem: str) -> CaseError:
        """A :class:`CaseError` about ``key``."""
        return CaseError(self.case, self.where(key), problem)

    def has(self, key: str) -> bool:
        """Whether ``key`` is given (null and "" count as left out)."""
        return self.data.get(key) not in (None, "")

    def text(self, key: str, default: str = "") -> str:
        """A scalar field as text (``default`` when left out)."""
        value = self.data.get(key)
        if value is None or value == "":
            return default
        if isinstance(value, Mapping | list):
            raise self.error(key, "must be a single value, not a list or map")
        return str(value)

    def required(self, key: str, implied: str | None = None) -> str:
        """A scalar field that must be given, unless ``implied`` supplies it."""
        value = self.text(key)
        if value:
            return value
        if implied:
            return implied
        raise self.error(key, "is required")

    def integer(self, key: str, default: int) -> int:
        """An integer field."""
        value = self.data.get(key)
        if value is None or value == "":
            return default
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise self.error(key, f"must be an integer, not {value!r}")
        try:
            return int(value)
        except ValueError:
            raise self.error(key, f"must be an integer, not {value!r}") from None

    def items(self, key: str) -> list[Any]:
        """A list field (empty when left out)."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(key, "must be a list")
        return value

    def strings(self, key: str) -> list[str]:
        """A list of scalars as text."""
        result = []
        for i, item in enumerate(self.items(key)):
            if isinstance(item, Mapping | list) or item is None:
                raise self.error(f"{key}[{i}]", "must be a single value")
            result.append(str(item))
        return result

    def maps(self, key: str) -> list[CaseFields]:
        """A list of mappings, each with its path."""
        result = []
        for i, item in enumerate(self.items(key)):
            if not isinstance(item, Mapping):
                raise self.error(f"{key}[{i}]", "must be a map")
            result.append(CaseFields(self.case, f"{self.where(key)}[{i}]", item))
        return result

    def mapping(self, key: str) -> Mapping[str, Any]:
        """A map field (empty when left out)."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(key, "must be a map")
        return value


def fields(case: Case, index: int = 0) -> CaseFields:
    """The top-level fields of ``case``."""
    cid = case_id(case, index)
    if not isinstance(case, Mapping):
        raise CaseError(cid, "case", "must be a map")
    return CaseFields(cid, "", case)


def validate(case: Case, index: int = 0) -> CaseFields:
    """Check what every case needs (id, engine, level, expect.outcome); return its fields."""
    top = fields(case, index)
    top.required("id")
    engine = top.required("engine")
    if engine not in ENGINES:
        raise top.error("engine", f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    level = top.required("level")
    if level not in LEVELS:
        raise top.error("level", f"unknown level {level!r} (known: {', '.join(LEVELS)})")
    if engine == "deppy" and level != "solver":
        raise top.error("engine", "deppy cases are solver-level only")
    if not isinstance(case.get("expect"), Mapping):
        raise top.error("expect", "is required (a map with an outcome)")
    expect = CaseFields(top.case, "expect", case["expect"])
    outcome = expect.required("outcome")
    if outcome not in OUTCOMES:
        raise expect.error("outcome", f"must be one of {', '.join(OUTCOMES)}, not {outcome!r}")
    for key in ("selected", "order", "allowed", "error_contains"):
        expect.strings(key)
    return top


def implied_package(case: Case, index: int = 0) -> str:
    """The package a case's entries belong to when they leave it out: the only package the case
    names, a placeholder for a one-package level naming none, else "" (not implied)."""
    top = fields(case, index)
    named: set[str] = set()
    for catalog in top.maps("catalogs"):
        named.update(e.text("package") for e in catalog.maps("entries"))
    named.update(e.text("package") for e in top.maps("entries"))
    named.update(i.text("package") for i in top.maps("installed"))
    named.update(r.text("package") for r in top.maps("request"))
    named.discard("")
    if len(named) == 1:
        return next(iter(named))
    if not named and top.text("level") in ONE_PACKAGE_LEVELS:
        return PLACEHOLDER_PACKAGE
    return ""


def _gvk(item: CaseFields, key: str, i: int, text: str) -> dict[str, str]:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts[1:]):
        raise item.error(f"{key}[{i}]", f"must be group/version/Kind, not {text!r}")
    return {"group": parts[0], "version": parts[1], "kind": parts[2]}


def properties(item: CaseFields, package: str) -> tuple[Property, ...]:
    """The bundle properties an entry or installed item describes."""
    props = [
        Property(PROP_PACKAGE, {"packageName": package, "version": item.text("version", "0.0.0")})
    ]
    props += [
        Property(PROP_GVK, _gvk(item, "provides", i, g))
        for i, g in enumerate(item.strings("provides"))
    ]
    props += [
        Property(PROP_GVK_REQUIRED, _gvk(item, "requires", i, g))
        for i, g in enumerate(item.strings("requires"))
    ]
    for req in item.maps("requires_packages"):
        props.append(
            Property(
                PROP_PACKAGE_REQUIRED,
                {"packageName": req.required("package"), "versionRange": req.text("range")},
            )
        )
    # OLM v0 label dependencies: olm.label.required is met by a bundle with that olm.label.
    props += [Property(PROP_LABEL_REQUIRED, {"label": x}) for x in item.strings("requires_labels")]
    props += [Property(PROP_LABEL, {"label": x}) for x in item.strings("labels")]
    if "constraint" in item.data:
        props.append(Property(PROP_CONSTRAINT, item.data["constraint"]))
    if item.data.get("deprecated"):
        props.append(Property(PROP_DEPRECATED, {}))
    return tuple(props)


def _label_map(spec: CaseFields, key: str) -> dict[str, str]:
    labels = spec.mapping(key)
    for k, v in labels.items():
        if isinstance(v, Mapping | list):
            raise spec.error(f"{key}.{k}", "must be a single value")
    return {str(k): "" if v is None else str(v) for k, v in labels.items()}


def catalog_source(spec: CaseFields, implied: str = "") -> CatalogInput:
    """Build one catalog of a case."""
    name = spec.required("name")
    defaults = spec.mapping("default_channels")
    packages: dict[str, Package] = {}
    channels: dict[tuple[str, str], list[ChannelEntry]] = {}
    bundles: dict[tuple[str, str], Bundle] = {}
    for e in spec.maps("entries"):
        pkg = e.required("package", implied)
        packages.setdefault(pkg, Package(name=pkg, default_channel=str(defaults.get(pkg, ""))))
        key = (pkg, e.required("bundle"))
        if key not in bundles:
            bundles[key] = Bundle(package=pkg, name=key[1], properties=properties(e, pkg))
        if e.has("channel"):
            channels.setdefault((pkg, e.text("channel")), []).append(
                ChannelEntry(
                    name=key[1],
                    replaces=e.text("replaces"),
                    skips=tuple(e.strings("skips")),
                    skip_range=e.text("skip_range"),
                )
            )
    deprecated = spec.strings("deprecations")
    deprecations = []
    for pkg in sorted(packages):
        names = [n for n in deprecated if (pkg, n) in bundles]
        if names:
            deprecations.append(
                Deprecation(
                    pkg,
                    tuple(DeprecationEntry(SCHEMA_BUNDLE, n, f"{n} is deprecated") for n in names),
                )
            )
    catalog = Catalog(
        name=name,
        packages=list(packages.values()),
        channels=[Channel(p, c, tuple(es)) for (p, c), es in channels.items()],
        bundles=list(bundles.values()),
        deprecations=deprecations,
    )
    available = spec.data.get("available", True)
    if not isinstance(available, bool):
        raise spec.error("available", f"must be true or false, not {available!r}")
    return CatalogInput(
        name=name,
        catalog=catalog,
        priority=spec.integer("priority", 0),
        namespace=spec.text("namespace"),
        available=available,
        labels=catalog_labels(name, _label_map(spec, "labels")),
    )


def installed(item: CaseFields) -> Installed:
    """Build one installed bundle of a case."""
    package = item.text("package")
    subscribed_by = item.data.get("subscribed_by")
    return Installed(
        name=item.required("bundle"),
        package=package,
        version=item.text("version", "0.0.0"),
        properties=properties(item, package),
        replaces=item.text("replaces"),
        phase=item.text("phase"),
        subscribed_by=None if subscribed_by is None else item.text("subscribed_by"),
    )


_SELECTOR_KEYS = {"matchLabels": "matchLabels", "matchExpressions": "matchExpressions"}
_SELECTOR_KEYS.update({"match_labels": "matchLabels", "match_expressions": "matchExpressions"})


def catalog_selector(item: CaseFields) -> CatalogSelector | None:
    """A request's ``catalog_selector``: a ``metav1.LabelSelector`` (``matchLabels``,
    ``matchExpressions``; snake_case accepted), a plain label map, or a selector string."""
    value = item.data.get("catalog_selector")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return CatalogSelector.from_text(value)
        except CatalogSelectorError as err:
            raise item.error("catalog_selector", str(err)) from None
    spec = item.mapping("catalog_selector")
    if spec and set(spec) <= set(_SELECTOR_KEYS):
        spec = {_SELECTOR_KEYS[k]: v for k, v in spec.items()}
    else:
        spec = {"matchLabels": _label_map(item, "catalog_selector")}
    try:
        return CatalogSelector.from_spec(spec)
    except CatalogSelectorError as err:
        raise item.error("catalog_selector", str(err)) from None


def request(item: CaseFields, engine: str = "", implied: str = "") -> PackageRequest:
    """Build one request (Subscription or ClusterExtension) of a case."""
    package = item.required("package", implied)
    channels = tuple(item.strings("channels"))
    if not channels and item.has("channel"):
        channels = (item.text("channel"),)
    name = item.text("name")
    if not name and engine in OLMV0_ENGINES:
        name = f"{package}-{channels[0] if channels else ''}"
    return PackageRequest(
        package=package,
        channels=channels,
        version_range=item.text("version_range"),
        upgrade_policy=item.text("upgrade_policy", "CatalogProvided"),
        name=name,
        catalog=item.text("catalog"),
        starting_bundle=item.text("starting_bundle"),
        installed_bundle=item.text("installed_bundle"),
        catalog_selector=catalog_selector(item),
    )


_EXCEPT = re.compile(r"every catalog entry except (?P<names>.+?) gets Prohibited\('(?P<msg>.*)'\)")
_WHITELIST = re.compile(r"whitelist (?P<names>.+)$")


def options(case: Case, index: int = 0) -> dict[str, Any]:
    """Engine options of a case; ``system_constraints`` prose becomes a bundle allow-list."""
    top = fields(case, index)
    opts: dict[str, Any] = dict(top.mapping("options"))
    text = opts.pop("system_constraints", None)
    if isinstance(text, str):
        match = _EXCEPT.search(text) or _WHITELIST.search(text)
        if match is None:
            raise CaseError(
                top.case,
                "options.system_constraints",
                f"unsupported text {text!r} (expected 'every catalog entry except A and B gets "
                "Prohibited('MESSAGE')' or 'whitelist A, B')",
            )
        names = re.split(r",\s*|\s+and\s+", match["names"].strip())
        opts["allowed_bundles"] = frozenset(n.strip() for n in names if n.strip())
        message = match.groupdict().get("msg") or "package: <pkg> is not white listed"
        opts["disallowed_reason"] = message.replace("<pkg>", "{package}")
    elif text is not None:
        raise CaseError(top.case, "options.system_constraints", "must be text")
    return opts


def resolution_input(case: Case, index: int = 0) -> ResolutionInput:
    """The resolver-level input of a case."""
    top = fields(case, index)
    implied = implied_package(case, index)
    engine = top.text("engine")
    return ResolutionInput(
        catalogs=[catalog_source(c, implied) for c in top.maps("catalogs")],
        requests=[request(r, engine, implied) for r in top.maps("request")],
        installed=[installed(i) for i in top.maps("installed")],
        options=options(case, index),
    )


def variables(case: Case, index: int = 0) -> list[Variable]:
    """The solver-level variables of a case."""
    top = fields(case, index)
    result = []
    for var in top.maps("variables"):
        constraints: list[Constraint] = []
        for i, c in enumerate(var.items("constraints")):
            where = f"constraints[{i}]"
            if c == "mandatory":
                constraints.append(Mandatory())
            elif c == "prohibited":
                constraints.append(Prohibited())
            elif isinstance(c, Mapping) and "dependency" in c:
                constraints.append(Dependency(tuple(str(x) for x in c["dependency"] or ())))
            elif isinstance(c, Mapping) and "conflict" in c:
                constraints.append(ConflictsWith(str(c["conflict"])))
            elif isinstance(c, Mapping) and "at_most" in c:
                spec = CaseFields(top.case, var.where(f"{where}.at_most"), c["at_most"] or {})
                constraints.append(AtMost(spec.integer("n", 1), tuple(spec.strings("ids"))))
            elif isinstance(c, Mapping) and "or" in c:
                spec = CaseFields(top.case, var.where(f"{where}.or"), c["or"] or {})
                constraints.append(
                    Or(
                        spec.required("id"),
                        bool(spec.data.get("negate_subject")),
                        bool(spec.data.get("negate_operand")),
                    )
                )
            else:
                raise var.error(where, f"unknown constraint {c!r}")
        result.append(Variable(var.required("id"), tuple(constraints)))
    return result


def channel_entries(case: Case, index: int = 0) -> tuple[str, str, list[ChannelEntry]]:
    """The package, channel and entries of a channel-order case."""
    top = fields(case, index)
    entries = top.maps("entries")
    package = implied_package(case, index) or next(
        (e.text("package") for e in entries if e.has("package")), PLACEHOLDER_PACKAGE
    )
    channel = next((e.text("channel") for e in entries if e.has("channel")), "channel")
    return (
        package,
        channel,
        [
            ChannelEntry(
                name=e.required("bundle"),
                replaces=e.text("replaces"),
                skips=tuple(e.strings("skips")),
                skip_range=e.text("skip_range"),
            )
            for e in entries
        ],
    )


def successors_input(case: Case, index: int = 0) -> ResolutionInput:
    """The input of a successors case: one package's catalogs and its one installed bundle."""
    inp = resolution_input(case, index)
    if not inp.installed:
        raise CaseError(
            case_id(case, index), "installed", "a successors case needs the installed bundle"
        )
    return inp


__all__ = [
    "ENGINES",
    "LEVELS",
    "Case",
    "CaseError",
    "CaseFields",
    "case_id",
    "catalog_selector",
    "catalog_source",
    "channel_entries",
    "implied_package",
    "installed",
    "options",
    "properties",
    "request",
    "resolution_input",
    "successors_input",
    "validate",
    "variables",
]
