"""The ``helm`` format: chart + values -> rendered objects, with hooks checked.

Config (a BundleDeployment's ``spec.config``): ``values`` (YAML string), ``valuesFrom``
(ConfigMaps/Secrets), ``releaseName`` (default: the chart's name) and ``installNamespace``
(``.Release.Namespace``, and the namespace of rendered objects that name none; default
``default``). Hooks (:mod:`.hooks`): install and upgrade hooks are returned apart from the
objects, for the BundleDeployment controller to run around the apply; test hooks are skipped;
delete and rollback hooks are refused with the reason (docs/helm.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provisioners.formats.base import (
    ConvertedBundle,
    EmptyBundleError,
    Hook,
    InvalidConfigError,
    InvalidManifestError,
)
from provisioners.formats.helm.chart import find_chart
from provisioners.formats.helm.hooks import UnsupportedHookError, hook_of
from provisioners.formats.helm.render import Capabilities, RenderLimits, render_chart
from provisioners.formats.helm.values import ObjectLookup, values_for
from provisioners.formats.manifests import ManifestLimits, parse_documents

__all__ = ["CONFIG_KEYS", "HelmFormat", "UnsupportedHookError"]

CONFIG_KEYS = frozenset({"values", "valuesFrom", "releaseName", "installNamespace"})


@dataclass(frozen=True)
class HelmFormat:
    """Renders a chart with ``helm template``; see the module docstring for config and hooks."""

    capabilities: Callable[[], Capabilities] | None = None
    """Called at each render for the cluster's version and APIs (the daemon sets it)."""
    limits: RenderLimits = field(default_factory=RenderLimits)
    name: str = "helm"

    def convert(self, root: Path, config: Mapping[str, Any] | None = None) -> ConvertedBundle:
        """Render the chart in ``root`` (values from the cluster are not available here)."""
        return self.render(root, config)

    def render(
        self,
        root: Path,
        config: Mapping[str, Any] | None = None,
        *,
        lookup: ObjectLookup | None = None,
    ) -> ConvertedBundle:
        """Render with ``lookup`` reading ``valuesFrom`` ConfigMaps and Secrets."""
        config = dict(config or {})
        unknown = sorted(set(config) - CONFIG_KEYS)
        if unknown:
            raise InvalidConfigError(
                f"unknown spec.config keys for a helm bundle: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(CONFIG_KEYS))})"
            )
        chart = find_chart(root)
        namespace = str(config.get("installNamespace") or "default")
        release = str(config.get("releaseName") or chart.name)
        values = values_for(config, namespace, lookup)
        rendered = render_chart(
            chart.path,
            release=release,
            namespace=namespace,
            values=values,
            capabilities=self.capabilities() if self.capabilities else None,
            limits=self.limits,
        )
        documents = parse_documents(
            rendered,
            f"chart {chart.name} {chart.version}",
            ManifestLimits(max_file_bytes=self.limits.max_output_bytes),
        )
        objects: list[dict[str, Any]] = []
        hooks: list[Hook] = []
        for doc in documents:
            checked = self._check(doc, namespace)
            hook = hook_of(checked)
            if hook is None:
                objects.append(checked)
            elif isinstance(hook, Hook):
                hooks.append(hook)
        if not objects:
            raise EmptyBundleError(f"chart {chart.name} {chart.version} renders no objects")
        return ConvertedBundle(
            hooks=hooks,
            format=self.name,
            objects=objects,
            metadata={
                "chart": chart.name,
                "chartVersion": chart.version,
                "release": release,
                "namespace": namespace,
            },
        )

    @staticmethod
    def _check(document: Any, namespace: str) -> dict[str, Any]:
        if not isinstance(document, dict) or not document.get("kind"):
            raise InvalidManifestError(
                f"the chart rendered something that is not an object: {document!r:.200}"
            )
        metadata = document.setdefault("metadata", {})
        name = metadata.get("name")
        if not name:
            raise InvalidManifestError(f"the chart rendered a {document['kind']} without a name")
        # Cluster-scoped kinds drop it again when applied (the applier asks discovery).
        metadata.setdefault("namespace", namespace)
        return document
