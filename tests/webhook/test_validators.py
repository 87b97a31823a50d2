"""The admission validators' decisions, on AdmissionReviews as the API server sends them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from pivoter.apis.inputs import (
    CLUSTER_EXTENSION,
    INPUT_KINDS,
    PLATFORM_OPERATOR,
    RESOLUTION,
    InputKind,
)
from pivoter.webhook.bundledeployments import validate_bundle_deployment
from pivoter.webhook.bundles import IMMUTABLE_MESSAGE, validate_bundle
from pivoter.webhook.configmaps import validate_config_map
from pivoter.webhook.inputs import validate_input
from pivoter.webhook.registration import configuration
from pivoter.webhook.review import Request, respond
from pivoter.webhook.server import PATHS


def _review(
    operation: str,
    kind: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    user: str = "alice",
) -> Request:
    return Request.from_review(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "operation": operation,
                "kind": {"group": "core.rukpak.io", "version": "v1alpha1", "kind": kind},
                "name": (obj.get("metadata") or {}).get("name", ""),
                "object": obj,
                "oldObject": old,
                "userInfo": {"username": user, "groups": ["devs"]},
            },
        }
    )


def _bundle(source: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "b"},
        "spec": {"provisionerClassName": "core-rukpak-io-plain", "source": source},
    }


def _nobody(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
    """An access check that allows nothing (so a test fails where one is asked for)."""
    return False, "no RBAC rule allows it"


IMAGE = {"type": "image", "image": {"ref": "registry/repo:v1"}}
CONFIG_MAPS = {
    "frozen": {"metadata": {"name": "frozen"}, "immutable": True},
    "mutable": {"metadata": {"name": "mutable"}},
}


def _read(name: str) -> Mapping[str, Any] | None:
    return CONFIG_MAPS.get(name)


def test_bundle_spec_is_immutable() -> None:
    old = _bundle(IMAGE)
    new = _bundle({"type": "image", "image": {"ref": "registry/repo:v2"}})
    verdict = validate_bundle(_review("UPDATE", "Bundle", new, old), _read, _nobody)
    assert not verdict.allowed
    assert verdict.message == IMMUTABLE_MESSAGE
    labelled = {**old, "metadata": {"name": "b", "labels": {"x": "y"}}}
    assert validate_bundle(_review("UPDATE", "Bundle", labelled, old), _read, _nobody).allowed


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ({"type": "git", "image": {"ref": "r"}}, "set exactly spec.source.git"),
        ({"type": "ftp"}, "'ftp' is not one of"),
        (
            {"type": "git", "git": {"repository": "r", "directory": "../up", "ref": {"tag": "t"}}},
            "must stay inside",
        ),
        ({"type": "configMaps", "configMaps": []}, "at least one ConfigMap"),
        (
            {"type": "configMaps", "configMaps": [{"configMap": {"name": "mutable"}}]},
            "is not immutable",
        ),
        (
            {"type": "configMaps", "configMaps": [{"configMap": {"name": "absent"}}]},
            "not found",
        ),
        (
            {"type": "configMaps", "configMaps": [{"configMap": {"name": "frozen"}, "path": "/a"}]},
            "leaves the bundle root",
        ),
    ],
)
def test_bad_sources_are_denied(source: dict[str, Any], fragment: str) -> None:
    verdict = validate_bundle(_review("CREATE", "Bundle", _bundle(source)), _read, _nobody)
    assert not verdict.allowed
    assert fragment in verdict.message


def test_good_sources_are_allowed() -> None:
    frozen = {"type": "configMaps", "configMaps": [{"configMap": {"name": "frozen"}, "path": "m"}]}
    for source in (IMAGE, frozen):
        assert validate_bundle(_review("CREATE", "Bundle", _bundle(source)), _read, _nobody).allowed


def test_config_map_in_use() -> None:
    def users(name: str) -> list[str]:
        return ["b2", "b1"] if name == "used" else []

    cm = {"metadata": {"name": "used"}}
    delete = validate_config_map(_review("DELETE", "ConfigMap", cm), users)
    assert not delete.allowed
    assert "in use by Bundle(s) b1, b2" in delete.message
    create = validate_config_map(_review("CREATE", "ConfigMap", cm), users)
    assert not create.allowed
    assert "must be immutable" in create.message
    assert validate_config_map(
        _review("CREATE", "ConfigMap", {**cm, "immutable": True}), users
    ).allowed
    assert validate_config_map(
        _review("DELETE", "ConfigMap", {"metadata": {"name": "free"}}), users
    ).allowed


def _bd(spec_extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "bd"},
        "spec": {"provisionerClassName": "core-rukpak-io-plain", "template": {}, **spec_extra},
    }


def test_bundle_deployment_needs_impersonation_or_everything() -> None:
    asked: list[dict[str, str]] = []

    def can(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        asked.append(dict(attributes))
        return (attributes.get("verb") == "impersonate" and attributes["name"] == "ok"), ""

    with_ok = _bd({"serviceAccount": {"name": "ok", "namespace": "ns"}})
    assert validate_bundle_deployment(_review("CREATE", "BundleDeployment", with_ok), can).allowed
    assert asked[-1] == {
        "verb": "impersonate",
        "group": "",
        "resource": "serviceaccounts",
        "namespace": "ns",
        "name": "ok",
    }
    with_other = _bd({"serviceAccount": {"name": "admin", "namespace": "ns"}})
    verdict = validate_bundle_deployment(_review("CREATE", "BundleDeployment", with_other), can)
    assert not verdict.allowed
    assert "may not impersonate service account ns/admin" in verdict.message
    bare = validate_bundle_deployment(_review("CREATE", "BundleDeployment", _bd({})), can)
    assert not bare.allowed
    assert asked[-1] == {"verb": "*", "group": "*", "resource": "*"}
    # A metadata-only update asks nothing.
    count = len(asked)
    same = validate_bundle_deployment(_review("UPDATE", "BundleDeployment", _bd({}), _bd({})), can)
    assert same.allowed
    assert len(asked) == count


PULL_ACCOUNT = "pivoter.io/pull-service-account"


def test_a_pull_service_account_needs_impersonation_on_bundles_and_templates() -> None:
    """The annotation offers an account's imagePullSecrets to a registry, and the content pulled
    is then served: only a user who may impersonate the account may name it."""
    asked: list[dict[str, str]] = []

    def can(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        asked.append(dict(attributes))
        return (attributes.get("verb") == "impersonate" and attributes["name"] == "ok"), ""

    bundle = _bundle(IMAGE)
    bundle["metadata"]["annotations"] = {PULL_ACCOUNT: "ns/admin"}
    verdict = validate_bundle(_review("CREATE", "Bundle", bundle), _read, can)
    assert not verdict.allowed
    assert "may not impersonate service account ns/admin" in verdict.message
    assert PULL_ACCOUNT in verdict.message
    bundle["metadata"]["annotations"] = {PULL_ACCOUNT: "ns/ok"}
    assert validate_bundle(_review("CREATE", "Bundle", bundle), _read, can).allowed
    assert asked[-1]["name"] == "ok"
    assert asked[-1]["namespace"] == "ns"
    # Changing the annotation of an existing Bundle is checked too; keeping it is not.
    changed = {**bundle, "metadata": {"name": "b", "annotations": {PULL_ACCOUNT: "ns/admin"}}}
    assert not validate_bundle(_review("UPDATE", "Bundle", changed, bundle), _read, can).allowed
    count = len(asked)
    assert validate_bundle(_review("UPDATE", "Bundle", bundle, bundle), _read, can).allowed
    assert len(asked) == count
    # A template that names the account spec.serviceAccount names asks once; another account
    # in the template is checked on its own.
    template = {"metadata": {"annotations": {PULL_ACCOUNT: "ns/ok"}}}
    same = _bd({"serviceAccount": {"name": "ok", "namespace": "ns"}, "template": template})
    assert validate_bundle_deployment(_review("CREATE", "BundleDeployment", same), can).allowed
    other = {"metadata": {"annotations": {PULL_ACCOUNT: "ns/admin"}}}
    sneaky = _bd({"serviceAccount": {"name": "ok", "namespace": "ns"}, "template": other})
    verdict = validate_bundle_deployment(_review("CREATE", "BundleDeployment", sneaky), can)
    assert not verdict.allowed
    assert "ns/admin" in verdict.message


def test_response_shape() -> None:
    from pivoter.webhook.review import deny

    answer = respond("u-9", deny("no"))
    assert answer["response"] == {
        "uid": "u-9",
        "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": "no"},
    }
    with pytest.raises(ValueError, match="AdmissionReview"):
        Request.from_review({"kind": "Pod"})


def _spec(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "x"}, "spec": spec}


@pytest.mark.parametrize(
    ("kind", "with_account", "bare"),
    [
        (
            RESOLUTION,
            {"packages": [{"name": "p"}], "serviceAccount": {"name": "ok", "namespace": "ns"}},
            {"packages": [{"name": "p"}]},
        ),
        (
            CLUSTER_EXTENSION,
            {"namespace": "ns", "serviceAccount": {"name": "ok"}, "source": {}},
            {"namespace": "ns", "source": {}},
        ),
    ],
)
def test_inputs_need_impersonation_or_everything(
    kind: InputKind, with_account: dict[str, Any], bare: dict[str, Any]
) -> None:
    asked: list[dict[str, str]] = []

    def can(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        asked.append(dict(attributes))
        return (attributes.get("verb") == "impersonate" and attributes["name"] == "ok"), ""

    assert validate_input(kind, _review("CREATE", kind.kind, _spec(with_account)), can).allowed
    assert asked[-1] == {
        "verb": "impersonate",
        "group": "",
        "resource": "serviceaccounts",
        "namespace": "ns",
        "name": "ok",
    }
    other = json.loads(json.dumps(with_account))
    other["serviceAccount"]["name"] = "admin"
    verdict = validate_input(
        kind, _review("UPDATE", kind.kind, _spec(other), _spec(with_account)), can
    )
    assert not verdict.allowed
    assert "may not impersonate service account ns/admin" in verdict.message
    denied = validate_input(kind, _review("CREATE", kind.kind, _spec(bare)), can)
    assert not denied.allowed
    assert f"may not create a {kind.kind} without spec.serviceAccount" in denied.message
    assert asked[-1] == {"verb": "*", "group": "*", "resource": "*"}
    count = len(asked)  # a metadata- or status-only update asks nothing
    assert validate_input(kind, _review("UPDATE", kind.kind, _spec(bare), _spec(bare)), can).allowed
    assert len(asked) == count


def test_a_platform_operator_installs_as_pivoter_so_only_an_all_powerful_user_may_write_one() -> (
    None
):
    def everything(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        return attributes == {"verb": "*", "group": "*", "resource": "*"}, ""

    def nothing(request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        return False, "no RBAC rule allows it"

    operator = _spec({"package": {"name": "p"}})
    assert validate_input(
        PLATFORM_OPERATOR, _review("CREATE", "PlatformOperator", operator), everything
    ).allowed
    verdict = validate_input(
        PLATFORM_OPERATOR, _review("CREATE", "PlatformOperator", operator), nothing
    )
    assert not verdict.allowed
    assert verdict.message.startswith("alice may not create a PlatformOperator: it would install")
    assert "use a Resolution naming a service account" in verdict.message
    assert verdict.message.endswith("(no RBAC rule allows it)")


@pytest.mark.parametrize("cluster_extensions", [False, True])
def test_every_input_kind_has_a_path_and_a_webhook(cluster_extensions: bool) -> None:
    """The paths and webhooks come from pivoter.apis.inputs, under the names docs/security.md
    gives; ClusterExtensions are admitted only when pivoter serves them."""
    assert {PATHS[k.resource.plural] for k in INPUT_KINDS} == {
        "/validate-resolutions",
        "/validate-platformoperators",
        "/validate-clusterextensions",
    }
    config = configuration(
        ca_bundle=b"ca",
        system_namespace="pivoter-system",
        url="https://pivoter.example:9443",
        cluster_extensions=cluster_extensions,
    )
    hooks = {w["name"]: w for w in config["webhooks"]}
    expected = {
        "vresolutions.pivoter.io": ("pivoter.io", "v1alpha1", "resolutions"),
        "vplatformoperators.platform.openshift.io": (
            "platform.openshift.io",
            "v1alpha1",
            "platformoperators",
        ),
    }
    if cluster_extensions:
        expected["vclusterextensions.olm.operatorframework.io"] = (
            "olm.operatorframework.io",
            "v1",
            "clusterextensions",
        )
    # The others: Bundles, BundleDeployments and ConfigMaps (rukpak's).
    inputs = {n: w for n, w in hooks.items() if not n.endswith(".core.rukpak.io")}
    assert set(inputs) == set(expected)
    for name, (group, version, plural) in expected.items():
        (rule,) = inputs[name]["rules"]
        assert (rule["apiGroups"], rule["apiVersions"], rule["resources"]) == (
            [group],
            [version],
            [plural],
        )
        assert rule["operations"] == ["CREATE", "UPDATE"]
        assert (
            inputs[name]["clientConfig"]["url"] == f"https://pivoter.example:9443/validate-{plural}"
        )
