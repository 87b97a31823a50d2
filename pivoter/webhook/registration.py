"""The ValidatingWebhookConfiguration that routes admission to pivoter's webhook server.

``configuration`` builds it for a client config that is either a URL (the daemon outside the
cluster, for development and tests) or a Service (in-cluster); the CA bundle is injected. The
daemon applies it at start with server-side apply, so a rotated certificate updates it in place.
Every input kind of :data:`pivoter.apis.inputs.INPUT_KINDS` gets a webhook named
``v<plural>.<group>`` (ClusterExtensions only when pivoter serves them).
"""

from __future__ import annotations

import base64
from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.inputs import CLUSTER_EXTENSION, INPUT_KINDS
from pivoter.webhook.server import PATHS

__all__ = ["NAME", "configuration"]

NAME = "pivoter-validating-webhooks"


def _client(path: str, url: str, service: tuple[str, str, int] | None) -> dict[str, Any]:
    if service is not None:
        namespace, name, port = service
        return {"service": {"namespace": namespace, "name": name, "path": path, "port": port}}
    return {"url": url.rstrip("/") + path}


def configuration(
    *,
    ca_bundle: bytes,
    system_namespace: str,
    url: str = "",
    service: tuple[str, str, int] | None = None,
    cluster_extensions: bool = False,
) -> dict[str, Any]:
    """The webhook configuration for ``url`` or ``service`` (namespace, name, port);
    ``cluster_extensions``: also OLM v1's ClusterExtensions (only when pivoter serves them: OLM
    v1's own controller keeps its own trust model)."""
    if not url and service is None:
        raise ValueError("the webhooks need a URL or a Service to reach the server")
    ca = base64.b64encode(ca_bundle).decode()

    def webhook(name: str, path: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "clientConfig": {**_client(path, url, service), "caBundle": ca},
            "rules": rules,
            **extra,
        }

    def rule(
        group: str, resource: str, operations: list[str], scope: str, version: str = ""
    ) -> dict[str, Any]:
        return {
            "apiGroups": [group],
            "apiVersions": [version or ("v1" if not group else rukpak.VERSION)],
            "resources": [resource],
            "operations": operations,
            "scope": scope,
        }

    inputs = []
    for kind in INPUT_KINDS:
        if kind is CLUSTER_EXTENSION and not cluster_extensions:
            continue
        resource = kind.resource
        group, _, version = resource.api_version.rpartition("/")
        scope = "Namespaced" if resource.namespaced else "Cluster"
        inputs.append(
            webhook(
                f"v{resource.plural}.{group}",
                PATHS[resource.plural],
                [rule(group, resource.plural, ["CREATE", "UPDATE"], scope, version)],
            )
        )
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME},
        "webhooks": [
            webhook(
                "vbundles.core.rukpak.io",
                PATHS["bundles"],
                [rule(rukpak.GROUP, "bundles", ["CREATE", "UPDATE"], "Cluster")],
            ),
            webhook(
                "vbundledeployments.core.rukpak.io",
                PATHS["bundledeployments"],
                [rule(rukpak.GROUP, "bundledeployments", ["CREATE", "UPDATE"], "Cluster")],
            ),
            *inputs,
            webhook(
                "vconfigmaps.core.rukpak.io",
                PATHS["configmaps"],
                [rule("", "configmaps", ["CREATE", "DELETE"], "Namespaced")],
                namespaceSelector={
                    "matchLabels": {"kubernetes.io/metadata.name": system_namespace}
                },
            ),
        ],
    }
