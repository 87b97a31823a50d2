"""The objects one BundleDeployment installs: its stored bundle converted by its class's format.

Called by the BundleDeployment controller (:mod:`pivoter.controllers.bundledeployment`) before
every apply and drift check. For ``registry+v1`` it passes a lookup of the live webhook
certificate Secrets (read with the BundleDeployment's own identity, so a service account never
learns more than it may read), which keeps valid certificates byte for byte and so makes the
output stable; objects of optional kinds (ServiceMonitor, PrometheusRule, console kinds...)
whose CRDs the cluster does not serve are left out with a note. For ``helm`` it passes the
cluster's version and API versions as the chart's capabilities and a reader for ``valuesFrom``
(same identity). Other formats convert as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pivoter.kube import Forbidden, KubeAPI, NotFound
from provisioners.formats import BundleFormat
from provisioners.formats.base import Hook
from provisioners.formats.helm import Capabilities, HelmFormat
from provisioners.formats.registry_v1 import RegistryV1

__all__ = ["BundleContent", "convert"]


@dataclass(frozen=True)
class BundleContent:
    """What to apply, and what the conversion decided on the way."""

    objects: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    """Human-readable facts for the ``Installed`` message (skipped kinds, ...)."""
    rotated: list[str] = field(default_factory=list)
    """Webhook certificates this conversion (re)issued, with the reason: a planned change."""
    hooks: list[Hook] = field(default_factory=list)
    """Objects run around an install or upgrade, not applied with ``objects`` (Helm hooks)."""


def convert(
    bundle_format: BundleFormat,
    root: Path,
    config: Mapping[str, Any],
    api: KubeAPI,
) -> BundleContent:
    """Convert the bundle at ``root``; raise the format's ``FormatError`` when it is invalid."""
    if isinstance(bundle_format, HelmFormat):
        return _render_chart(bundle_format, root, config, api)
    if not isinstance(bundle_format, RegistryV1):
        return BundleContent(objects=bundle_format.convert(root, config).objects)

    def lookup(namespace: str, name: str) -> Mapping[str, Any] | None:
        try:
            return api.request("GET", f"/api/v1/namespaces/{namespace}/secrets/{name}")
        except (NotFound, Forbidden):
            return None  # a new certificate is issued, as on a first install

    conversion = bundle_format.convert_bundle(root, config, lookup=lookup)
    objects, notes = _without_unserved_optional_kinds(
        conversion.objects, set(conversion.optional_kinds), api
    )
    rotated = [
        f"{deployment}: {plan.reason}"
        for deployment, plan in sorted(conversion.certificates.items())
        if plan.rotated
    ]
    return BundleContent(objects=objects, notes=notes + conversion.warnings, rotated=rotated)


def _without_unserved_optional_kinds(
    objects: list[dict[str, Any]], optional: set[str], api: KubeAPI
) -> tuple[list[dict[str, Any]], list[str]]:
    if not optional:
        return objects, []
    unserved: set[str] = set()
    for api_kind in optional:
        api_version, _, kind = api_kind.rpartition("/")
        try:
            api.resource(api_version, kind)
        except NotFound:
            unserved.add(api_kind)
    kept, notes = [], []
    for obj in objects:
        api_kind = f"{obj.get('apiVersion')}/{obj.get('kind')}"
        if api_kind in unserved:
            notes.append(
                f"skipped {obj['kind']} {obj['metadata']['name']}: {api_kind} is not served "
                "here (its CRD is not installed)"
            )
        else:
            kept.append(obj)
    return kept, notes


def cluster_capabilities(api: KubeAPI) -> Capabilities:
    """The API server's version and served group/versions, as ``helm template`` takes them."""
    version = str(api.request("GET", "/version").get("gitVersion") or "")
    group_versions = ["v1"]
    for group in api.request("GET", "/apis").get("groups") or []:
        group_versions += [str(v["groupVersion"]) for v in group.get("versions") or []]
    return Capabilities(kube_version=version, api_versions=tuple(sorted(set(group_versions))))


def _render_chart(
    helm: HelmFormat, root: Path, config: Mapping[str, Any], api: KubeAPI
) -> BundleContent:
    def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        plural = "configmaps" if kind == "ConfigMap" else "secrets"
        try:
            return api.request("GET", f"/api/v1/namespaces/{namespace}/{plural}/{name}")
        except (NotFound, Forbidden):
            return None

    capabilities = cluster_capabilities(api)
    rendered = replace(helm, capabilities=lambda: capabilities).render(root, config, lookup=lookup)
    meta = rendered.metadata
    note = f"chart {meta['chart']} {meta['chartVersion']} rendered as release {meta['release']}"
    return BundleContent(objects=rendered.objects, notes=[note], hooks=rendered.hooks)
