"""Each of the ten real bundles converts, in every install mode it supports, and everything its CSV
declares (deployments, permissions, cluster permissions, service accounts, webhooks, CRDs) and
every other manifest is accounted for in the output. Found by walking the CSV, not by counts."""

from __future__ import annotations

import base64
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from provisioners.formats import format_for
from provisioners.formats.registry_v1 import RegistryV1, UnsupportedBundleError
from provisioners.formats.registry_v1.webhooks import (
    APISERVICE_CERT_PATH,
    WEBHOOK_CERT_PATH,
    secret_name,
    service_name,
)
from tests.registry_v1.helpers import load_csv, manifests, real_bundles

FORMAT = RegistryV1()
INSTALL_NS = "operators"
ALL, OWN, SINGLE, MULTI = "AllNamespaces", "OwnNamespace", "SingleNamespace", "MultiNamespace"
# The install modes each real bundle's CSV supports, written out so that collection reads no
# bundle (tests/data/bundles); test_the_ten_real_bundles_are_there checks them against the CSVs.
MODES: dict[str, tuple[str, ...]] = {
    "aqua": (OWN, SINGLE),
    "aws-neuron-operator": (ALL,),
    "bpfman-operator": (ALL,),
    "cluster-aas-operator": (ALL,),
    "community-windows-machine-config-operator": (OWN,),
    "dbaas-operator": (ALL,),
    "kepler-operator": (ALL,),
    "kube-green": (ALL,),
    "mercury-operator": (ALL, OWN, SINGLE, MULTI),
    "rabbitmq-messaging-topology-operator": (ALL, OWN, SINGLE, MULTI),
}


@cache
def _bundles() -> dict[str, Path]:
    """The real bundles, read on first use (not at collection)."""
    return real_bundles()


def test_the_ten_real_bundles_are_there() -> None:
    assert len(_bundles()) == 10
    declared = {
        name: tuple(mode for mode, _ in _configs(load_csv(root)))
        for name, root in _bundles().items()
    }
    assert declared == MODES


def _configs(csv: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    modes = {m["type"] for m in csv["spec"]["installModes"] if m["supported"]}
    configs: list[tuple[str, dict[str, Any]]] = []
    base = {"installNamespace": INSTALL_NS}
    if "AllNamespaces" in modes:
        configs.append(("AllNamespaces", {**base, "targetNamespaces": []}))
    if "OwnNamespace" in modes:
        configs.append(("OwnNamespace", {**base, "targetNamespaces": [INSTALL_NS]}))
    if "SingleNamespace" in modes:
        configs.append(("SingleNamespace", {**base, "watchNamespace": "team-a"}))
    if "MultiNamespace" in modes:
        configs.append(("MultiNamespace", {**base, "targetNamespaces": ["team-a", "team-b"]}))
    return configs


CASES = [
    pytest.param(name, mode, id=f"{name}-{mode}") for name, modes in MODES.items() for mode in modes
]


def _index(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects
    }


def _bound_rules(
    objects: list[dict[str, Any]], account: str, namespace: str, *, cluster: bool
) -> list[dict[str, Any]]:
    """Rules granted to ``account`` by bindings of the wanted scope in the output."""
    index = _index(objects)
    binding_kind = "ClusterRoleBinding" if cluster else "RoleBinding"
    rules: list[dict[str, Any]] = []
    for obj in objects:
        if obj["kind"] != binding_kind:
            continue
        if not any(
            s.get("kind") == "ServiceAccount"
            and s.get("name") == account
            and s.get("namespace") == INSTALL_NS
            for s in obj.get("subjects", [])
        ):
            continue
        if not cluster and obj["metadata"]["namespace"] != namespace:
            continue
        ref = obj["roleRef"]
        role_ns = "" if ref["kind"] == "ClusterRole" else obj["metadata"]["namespace"]
        role = index.get((ref["kind"], role_ns, ref["name"]))
        if role is not None:
            rules.extend(role.get("rules", []))
    return rules


def _has_deployment_with_cert(deployment: dict[str, Any], secret: str) -> bool:
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for container in pod["containers"]:
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        for path in (WEBHOOK_CERT_PATH, APISERVICE_CERT_PATH):
            volume = volumes.get(mounts.get(path, ""))
            if volume is None or volume["secret"]["secretName"] != secret:
                return False
    return True


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_everything_the_csv_declares_is_accounted_for(name: str, mode: str) -> None:
    root: Path = _bundles()[name]
    csv = load_csv(root)
    config = dict(_configs(csv))[mode]
    spec = csv["spec"]
    has_conversion = any(
        w["type"] == "ConversionWebhook" for w in spec.get("webhookdefinitions") or []
    )
    if has_conversion and mode != "AllNamespaces":
        with pytest.raises(UnsupportedBundleError, match="needs install mode AllNamespaces"):
            FORMAT.convert_bundle(root, config)
        return
    conversion = FORMAT.convert_bundle(root, config)
    assert conversion.install.mode == mode
    objects = conversion.objects
    index = _index(objects)
    targets = list(conversion.install.target_namespaces)
    strategy = spec["install"]["spec"]

    # Deployments, with the CSV annotations and olm.targetNamespaces on the pod template.
    for entry in strategy["deployments"]:
        deployment = index[("Deployment", INSTALL_NS, entry["name"])]
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["olm.targetNamespaces"] == ",".join(targets)
        for key, value in (csv["metadata"].get("annotations") or {}).items():
            assert key in annotations, key
            assert annotations[key] == value or not isinstance(value, str)
        assert deployment["spec"]["selector"] == entry["spec"]["selector"]

    # Service accounts named anywhere exist (generated or shipped by the bundle).
    accounts = {
        d["spec"]["template"]["spec"].get("serviceAccountName", "default")
        for d in strategy["deployments"]
    }
    accounts |= {p["serviceAccountName"] for p in strategy.get("permissions") or []}
    accounts |= {p["serviceAccountName"] for p in strategy.get("clusterPermissions") or []}
    for account in accounts - {"default"}:
        assert ("ServiceAccount", INSTALL_NS, account) in index, account

    # Namespaced permissions: in every target and the install namespace, or cluster-wide.
    for permission in strategy.get("permissions") or []:
        account = permission["serviceAccountName"]
        if mode == "AllNamespaces":
            granted = _bound_rules(objects, account, "", cluster=True)
            assert all(rule in granted for rule in permission["rules"]), account
        else:
            for namespace in {INSTALL_NS, *targets}:
                granted = _bound_rules(objects, account, namespace, cluster=False)
                assert all(rule in granted for rule in permission["rules"]), (account, namespace)
    for permission in strategy.get("clusterPermissions") or []:
        granted = _bound_rules(objects, permission["serviceAccountName"], "", cluster=True)
        assert all(rule in granted for rule in permission["rules"])

    # Every manifest: CRDs unchanged but for conversion, other kinds passed through.
    for manifest in manifests(root):
        kind, manifest_name = manifest["kind"], manifest["metadata"]["name"]
        if kind == "ClusterServiceVersion":
            continue
        namespaced = ("", INSTALL_NS)
        found = [index.get((kind, ns, manifest_name)) for ns in namespaced]
        assert any(found), (kind, manifest_name)
    for owned in spec.get("customresourcedefinitions", {}).get("owned") or []:
        assert ("CustomResourceDefinition", "", owned["name"]) in index

    # Webhooks: Service on the right port selecting the pods, CA injected, cert mounted.
    for webhook in spec.get("webhookdefinitions") or []:
        deployment_name = webhook["deploymentName"]
        deployment = index[("Deployment", INSTALL_NS, deployment_name)]
        service = index[("Service", INSTALL_NS, service_name(deployment_name))]
        secret = index[("Secret", INSTALL_NS, secret_name(deployment_name))]
        ca_bundle = secret["data"]["ca.crt"]
        assert base64.b64decode(ca_bundle).startswith(b"-----BEGIN CERTIFICATE-----")
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        port = webhook.get("containerPort", 443)
        assert {
            "name": str(port),
            "port": port,
            "protocol": "TCP",
            "targetPort": webhook.get("targetPort", port),
        } in service["spec"]["ports"]
        assert _has_deployment_with_cert(deployment, secret["metadata"]["name"])
        expected_client = {
            "service": {
                "namespace": INSTALL_NS,
                "name": service["metadata"]["name"],
                "path": webhook.get("webhookPath", "/"),
                "port": port,
            },
            "caBundle": ca_bundle,
        }
        if webhook["type"] == "ConversionWebhook":
            for crd_name in webhook["conversionCRDs"]:
                crd = index[("CustomResourceDefinition", "", crd_name)]
                assert crd["spec"]["conversion"]["strategy"] == "Webhook"
                assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == expected_client
            continue
        kind = (
            "ValidatingWebhookConfiguration"
            if webhook["type"] == "ValidatingAdmissionWebhook"
            else "MutatingWebhookConfiguration"
        )
        entries = [
            entry
            for obj in objects
            if obj["kind"] == kind
            for entry in obj["webhooks"]
            if entry["name"] == webhook["generateName"]
        ]
        assert len(entries) == 1, webhook["generateName"]
        entry = entries[0]
        assert entry["clientConfig"] == expected_client
        assert entry["rules"] == webhook["rules"]
        assert entry["sideEffects"] == webhook["sideEffects"]
        if mode == "AllNamespaces":
            assert "namespaceSelector" not in entry
        else:
            assert entry["namespaceSelector"]["matchExpressions"][0]["values"] == sorted(targets)


@pytest.mark.parametrize("name", sorted(MODES))
def test_registered_format_converts_with_defaults(name: str) -> None:
    converted = format_for("registry+v1").convert(_bundles()[name])
    assert converted.format == "registry+v1"
    assert converted.metadata["package"] == name
    kinds = {o["kind"] for o in converted.objects}
    assert "Deployment" in kinds
    assert "ClusterServiceVersion" not in kinds
