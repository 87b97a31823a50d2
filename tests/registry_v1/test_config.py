"""spec.config for registry+v1: install namespace defaults, install modes and Deployment overrides
with OLM Subscription-config semantics."""

from __future__ import annotations

from typing import Any

from provisioners.formats.registry_v1 import RegistryV1
from provisioners.formats.registry_v1.names import bounded_name
from tests.registry_v1.helpers import bundle

FORMAT = RegistryV1()


def _deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "Deployment")


def test_install_namespace_defaults() -> None:
    # The CSV's suggested namespace, else <package>-system.
    assert FORMAT.convert(bundle("dbaas-operator")).metadata["installNamespace"] == (
        "openshift-dbaas-operator"
    )
    assert FORMAT.convert(bundle("kube-green")).metadata["installNamespace"] == (
        "kube-green-system"
    )


def test_own_namespace_is_the_default_when_all_namespaces_is_not_supported() -> None:
    converted = FORMAT.convert(bundle("aqua"), {"installNamespace": "aqua"})
    assert converted.metadata["installMode"] == "OwnNamespace"
    annotations = _deployment(converted.objects)["spec"]["template"]["metadata"]["annotations"]
    assert annotations["olm.targetNamespaces"] == "aqua"


def test_multi_namespace_roles_in_each_target_and_the_install_namespace() -> None:
    converted = FORMAT.convert_bundle(
        bundle("mercury-operator"),
        {"installNamespace": "ops", "targetNamespaces": ["b", "a"]},
    )
    assert converted.install.mode == "MultiNamespace"
    roles = sorted(o["metadata"]["namespace"] for o in converted.objects if o["kind"] == "Role")
    assert roles == ["a", "b", "ops"]
    annotations = _deployment(converted.objects)["spec"]["template"]["metadata"]["annotations"]
    assert annotations["olm.targetNamespaces"] == "b,a"


def test_all_namespaces_turns_permissions_into_cluster_roles_reading_namespaces() -> None:
    objects = FORMAT.convert(bundle("mercury-operator"), {"installNamespace": "ops"}).objects
    assert not [o for o in objects if o["kind"] == "Role"]
    role = next(
        o
        for o in objects
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith("-mercury-operator")
    )
    assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]} in (
        role["rules"]
    )


def test_deployment_overrides() -> None:
    config = {
        "deploymentConfig": {
            "env": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}],
            "envFrom": [{"configMapRef": {"name": "extra"}}],
            "resources": {"limits": {"memory": "256Mi"}},
            "nodeSelector": {"node-role.kubernetes.io/infra": ""},
            "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
            "volumes": [{"name": "extra", "emptyDir": {}}],
            "volumeMounts": [{"name": "extra", "mountPath": "/extra"}],
            "annotations": {"team": "platform"},
        }
    }
    deployment = _deployment(FORMAT.convert(bundle("kube-green"), config).objects)
    pod = deployment["spec"]["template"]["spec"]
    for container in pod["containers"]:
        assert {"name": "HTTP_PROXY", "value": "http://proxy:3128"} in container["env"]
        assert container["envFrom"] == [{"configMapRef": {"name": "extra"}}]
        assert container["resources"] == {"limits": {"memory": "256Mi"}}
        assert {"name": "extra", "mountPath": "/extra"} in container["volumeMounts"]
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/infra": ""}
    assert pod["tolerations"][-1]["key"] == "infra"
    assert "nodeAffinity" in pod["affinity"]
    assert {"name": "extra", "emptyDir": {}} in pod["volumes"]
    assert deployment["metadata"]["annotations"]["team"] == "platform"
    assert deployment["spec"]["template"]["metadata"]["annotations"]["team"] == "platform"


def test_env_override_replaces_a_variable_of_the_same_name() -> None:
    base = _deployment(FORMAT.convert(bundle("aqua")).objects)
    container = base["spec"]["template"]["spec"]["containers"][0]
    name = container["env"][0]["name"]
    config = {"deploymentConfig": {"env": [{"name": name, "value": "override"}]}}
    changed = _deployment(FORMAT.convert(bundle("aqua"), config).objects)
    env = changed["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e for e in env if e["name"] == name] == [{"name": name, "value": "override"}]
    assert len(env) == len(container["env"])


def test_bounded_names() -> None:
    short = bounded_name("csv", "sa")
    assert short == "csv-sa"
    long_a = bounded_name("x" * 60, "account-a")
    long_b = bounded_name("x" * 60, "account-b")
    assert len(long_a) == len(long_b) == 63
    assert long_a != long_b
    assert bounded_name("x" * 60, "account-a") == long_a
    assert bounded_name("9lives", "service", label=True).startswith("x-")
