"""Reading conformance cases: the shared YAML schema turned into model objects and inputs.

A case's inline catalog entries (one per bundle and channel) become
:class:`~resolver.catalog.model.Catalog` objects, its ``installed``/``request`` items become
:class:`~resolver.rules.inputs.Installed`/:class:`~resolver.rules.inputs.PackageRequest`, and
its solver-level ``variables`` become :class:`~resolver.sat.Variable`. Used by
:mod:`resolver.conformance.runner`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from resolver.catalog.model import (
    PROP_CONSTRAINT,
    PROP_DEPRECATED,
    PROP_GVK,
    PROP_GVK_REQUIRED,
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
from resolver.rules.inputs import CatalogInput, Installed, PackageRequest, ResolutionInput
from resolver.sat import AtMost, ConflictsWith, Dependency, Mandatory, Or, Prohibited, Variable
from resolver.sat.constraints import Constraint

Case = Mapping[str, Any]


def _gvk(text: str) -> dict[str, str]:
    group, version, kind = text.split("/")
    return {"group": group, "version": version, "kind": kind}


def properties(item: Mapping[str, Any], package: str) -> tuple[Property, ...]:
    """The bundle properties an entry or installed item describes."""
    props = [
        Property(
            PROP_PACKAGE,
            {"packageName": package, "version": str(item.get("version", "0.0.0"))},
        )
    ]
    props += [Property(PROP_GVK, _gvk(g)) for g in item.get("provides", []) or []]
    props += [Property(PROP_GVK_REQUIRED, _gvk(g)) for g in item.get("requires", []) or []]
    for req in item.get("requires_packages", []) or []:
        props.append(
            Property(
                PROP_PACKAGE_REQUIRED,
                {"packageName": req["package"], "versionRange": str(req.get("range", ""))},
            )
        )
    if "constraint" in item:
        props.append(Property(PROP_CONSTRAINT, item["constraint"]))
    if item.get("deprecated"):
        props.append(Property(PROP_DEPRECATED, {}))
    return tuple(props)


def catalog_source(spec: Mapping[str, Any]) -> CatalogInput:
    """Build one catalog of a case."""
    name = str(spec["name"])
    entries: Sequence[Mapping[str, Any]] = spec.get("entries", []) or []
    defaults: Mapping[str, str] = spec.get("default_channels", {}) or {}
    packages: dict[str, Package] = {}
    channels: dict[tuple[str, str], list[ChannelEntry]] = {}
    bundles: dict[tuple[str, str], Bundle] = {}
    for e in entries:
        pkg = str(e["package"])
        packages.setdefault(pkg, Package(name=pkg, default_channel=defaults.get(pkg, "")))
        key = (pkg, str(e["bundle"]))
        if key not in bundles:
            bundles[key] = Bundle(package=pkg, name=key[1], properties=properties(e, pkg))
        if e.get("channel"):
            channels.setdefault((pkg, str(e["channel"])), []).append(
                ChannelEntry(
                    name=key[1],
                    replaces=str(e.get("replaces", "") or ""),
                    skips=tuple(str(s) for s in e.get("skips", []) or []),
                    skip_range=str(e.get("skip_range", "") or ""),
                )
            )
    deprecated = [str(b) for b in spec.get("deprecations", []) or []]
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
    return CatalogInput(
        name=name,
        catalog=catalog,
        priority=int(spec.get("priority", 0) or 0),
        namespace=str(spec.get("namespace", "") or ""),
        available=bool(spec.get("available", True)),
    )


def installed(item: Mapping[str, Any]) -> Installed:
    """Build one installed bundle of a case."""
    package = str(item.get("package", "") or "")
    return Installed(
        name=str(item["bundle"]),
        package=package,
        version=str(item.get("version", "0.0.0")),
        properties=properties(item, package),
        replaces=str(item.get("replaces", "") or ""),
        phase=str(item.get("phase", "") or ""),
        subscribed_by=item.get("subscribed_by"),
    )


def request(item: Mapping[str, Any]) -> PackageRequest:
    """Build one request (Subscription or ClusterExtension) of a case."""
    channels: tuple[str, ...] = ()
    if item.get("channels"):
        channels = tuple(str(c) for c in item["channels"])
    elif item.get("channel"):
        channels = (str(item["channel"]),)
    return PackageRequest(
        package=str(item["package"]),
        channels=channels,
        version_range=str(item.get("version_range", "") or ""),
        upgrade_policy=str(item.get("upgrade_policy", "CatalogProvided") or "CatalogProvided"),
        name=str(item.get("name", "") or ""),
        catalog=str(item.get("catalog", "") or ""),
        starting_bundle=str(item.get("starting_bundle", "") or ""),
        installed_bundle=str(item.get("installed_bundle", "") or ""),
    )


_EXCEPT = re.compile(r"every catalog entry except (?P<names>.+?) gets Prohibited\('(?P<msg>.*)'\)")
_WHITELIST = re.compile(r"whitelist (?P<names>.+)$")


def options(case: Case) -> dict[str, Any]:
    """Engine options of a case; ``system_constraints`` prose becomes a bundle allow-list."""
    opts: dict[str, Any] = dict(case.get("options", {}) or {})
    text = opts.pop("system_constraints", None)
    if isinstance(text, str):
        match = _EXCEPT.search(text) or _WHITELIST.search(text)
        if match is None:
            raise ValueError(f"unsupported system_constraints: {text!r}")
        names = re.split(r",\s*|\s+and\s+", match["names"].strip())
        opts["allowed_bundles"] = frozenset(n.strip() for n in names if n.strip())
        message = match.groupdict().get("msg") or "package: <pkg> is not white listed"
        opts["disallowed_reason"] = message.replace("<pkg>", "{package}")
    return opts


def resolution_input(case: Case) -> ResolutionInput:
    """The resolver-level input of a case."""
    return ResolutionInput(
        catalogs=[catalog_source(c) for c in case.get("catalogs", []) or []],
        requests=[request(r) for r in case.get("request", []) or []],
        installed=[installed(i) for i in case.get("installed", []) or []],
        options=options(case),
    )


def variables(case: Case) -> list[Variable]:
    """The solver-level variables of a case."""
    result = []
    for var in case.get("variables", []) or []:
        constraints: list[Constraint] = []
        for c in var.get("constraints", []) or []:
            if c == "mandatory":
                constraints.append(Mandatory())
            elif c == "prohibited":
                constraints.append(Prohibited())
            elif "dependency" in c:
                constraints.append(Dependency(tuple(str(i) for i in c["dependency"])))
            elif "conflict" in c:
                constraints.append(ConflictsWith(str(c["conflict"])))
            elif "at_most" in c:
                spec = c["at_most"]
                constraints.append(AtMost(int(spec["n"]), tuple(str(i) for i in spec["ids"])))
            elif "or" in c:
                spec = c["or"]
                constraints.append(
                    Or(
                        str(spec["id"]),
                        bool(spec.get("negate_subject")),
                        bool(spec.get("negate_operand")),
                    )
                )
            else:
                raise ValueError(f"unknown constraint {c!r}")
        result.append(Variable(str(var["id"]), tuple(constraints)))
    return result


def channel_entries(case: Case) -> tuple[str, str, list[ChannelEntry]]:
    """The package, channel and entries of a channel-order case."""
    entries = case.get("entries", []) or []
    package = next((str(e["package"]) for e in entries if e.get("package")), "package")
    channel = next((str(e["channel"]) for e in entries if e.get("channel")), "channel")
    return (
        package,
        channel,
        [
            ChannelEntry(
                name=str(e["bundle"]),
                replaces=str(e.get("replaces", "") or ""),
                skips=tuple(str(s) for s in e.get("skips", []) or []),
                skip_range=str(e.get("skip_range", "") or ""),
            )
            for e in entries
        ],
    )
