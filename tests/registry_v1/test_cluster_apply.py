"""Converted real bundles applied for real: kube-green (webhooks) and mercury-operator
(SingleNamespace) server-side-applied with provisioners.apply into the control plane. The objects
exist, the webhook configuration trusts the generated CA, the Service maps the webhook port to the
pods' port, and a second conversion that reads the Secret back keeps the certificate.
No pods need to run here (Deployments are only created), so no simulated nodes are used."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from provisioners.apply.applier import CRD_POLICY_DELETE, Applier, Owner
from provisioners.apply.kubeapi import KubeAPI, NotFound
from provisioners.formats.registry_v1 import RegistryV1
from provisioners.formats.registry_v1.webhooks import secret_name, service_name
from tests.cluster import TestCluster, session_labels, unique_name
from tests.registry_v1.helpers import bundle

pytestmark = pytest.mark.cluster


@pytest.fixture
def api(cluster: TestCluster) -> Iterator[KubeAPI]:
    api_client = cluster.api_client()
    yield KubeAPI(api_client)
    api_client.close()


def _get(api: KubeAPI, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    resource = api.resource(obj["apiVersion"], obj["kind"])
    ns = namespace if resource.namespaced else ""
    body: dict[str, Any] = api.request("GET", resource.path(ns, obj["metadata"]["name"]))
    return body


def _labelled(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Cluster-scoped objects carry the session label so a crashed run is swept."""
    for obj in objects:
        obj["metadata"].setdefault("labels", {}).update(session_labels())
    return objects


def test_two_converted_bundles_apply_and_the_webhook_trusts_its_ca(
    api: KubeAPI, namespace: str
) -> None:
    def lookup(ns: str, name: str) -> dict[str, Any] | None:
        try:
            secret: dict[str, Any] = api.request("GET", f"/api/v1/namespaces/{ns}/secrets/{name}")
        except NotFound:
            return None
        return secret

    fmt = RegistryV1(secret_lookup=lookup)
    green = fmt.convert_bundle(bundle("kube-green"), {"installNamespace": namespace})
    mercury = fmt.convert_bundle(
        bundle("mercury-operator"),
        {"installNamespace": namespace, "watchNamespace": "default"},
    )
    assert mercury.install.mode == "SingleNamespace"
    applied = []
    appliers = [
        (Applier(api, Owner("BundleDeployment", unique_name("green"))), green),
        (Applier(api, Owner("BundleDeployment", unique_name("mercury"))), mercury),
    ]
    try:
        for applier, conversion in appliers:
            _labelled(conversion.objects)
            result = applier.apply(conversion.objects)
            applied.append((applier, result.applied))
            assert len(result.applied) == len(conversion.objects)
        for _, conversion in appliers:
            for obj in conversion.objects:
                live = _get(api, obj, namespace)
                assert live["metadata"]["name"] == obj["metadata"]["name"]

        deployment = "kube-green-controller-manager"
        ca_bundle = green.certificates[deployment].certificate.ca_bundle
        webhook = _get(
            api,
            next(o for o in green.objects if o["kind"] == "ValidatingWebhookConfiguration"),
            namespace,
        )
        client = webhook["webhooks"][0]["clientConfig"]
        assert base64.b64decode(client["caBundle"]) == ca_bundle
        assert client["service"] == {
            "namespace": namespace,
            "name": service_name(deployment),
            "path": "/validate-kube-green-com-v1alpha1-sleepinfo",
            "port": 443,
        }
        service = api.request(
            "GET", f"/api/v1/namespaces/{namespace}/services/{service_name(deployment)}"
        )
        assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(443, 9443)]
        live_deployment = api.request(
            "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{deployment}"
        )
        pod_labels = live_deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert any(
            port.get("containerPort") == 9443
            for container in live_deployment["spec"]["template"]["spec"]["containers"]
            for port in container.get("ports", [])
        )
        secret = lookup(namespace, secret_name(deployment))
        assert secret is not None
        assert base64.b64decode(secret["data"]["ca.crt"]) == ca_bundle

        # Converting again reads the Secret back: same certificate, nothing to change.
        again = fmt.convert_bundle(bundle("kube-green"), {"installNamespace": namespace})
        assert not again.certificates[deployment].rotated
        assert _labelled(again.objects) == green.objects
        assert (
            again.certificates[deployment].certificate == green.certificates[deployment].certificate
        )
    finally:
        # Uninstall as a BundleDeployment deletion does: prune everything it applied.
        for applier, refs in applied:
            applier.prune(refs, [], crd_policy=CRD_POLICY_DELETE)
