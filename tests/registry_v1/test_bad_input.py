"""Broken bundles and configs, built in tmp_path from real bundles: each is refused with the file
and field named, as an error the BundleDeployment status can carry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from provisioners.formats import FormatError
from provisioners.formats.base import InvalidConfigError, NestedManifestsError
from provisioners.formats.registry_v1 import (
    InvalidBundleError,
    RegistryV1,
    UnsupportedBundleError,
)
from tests.registry_v1.helpers import bundle, copy_bundle, edit_csv, edit_yaml

FORMAT = RegistryV1()


def _webhook(csv: dict[str, Any]) -> dict[str, Any]:
    hook: dict[str, Any] = csv["spec"]["webhookdefinitions"][0]
    return hook


def test_csv_without_install_strategy(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(root, lambda csv: csv["spec"]["install"].pop("strategy"))
    with pytest.raises(InvalidBundleError, match=r"spec\.install\.strategy: is required") as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.install.strategy"
    assert "kube-green.clusterserviceversion.yaml" in str(err.value)


def test_csv_without_install_section(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(root, lambda csv: csv["spec"].pop("install"))
    with pytest.raises(InvalidBundleError, match=r"spec\.install: is required"):
        FORMAT.convert(root)


def test_unknown_install_strategy(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(root, lambda csv: csv["spec"]["install"].update(strategy="helm"))
    with pytest.raises(InvalidBundleError, match=r"spec\.install\.strategy: must be 'deployment'"):
        FORMAT.convert(root)


def test_duplicate_deployment_names(tmp_path: Path) -> None:
    root = copy_bundle("mercury-operator", tmp_path)

    def duplicate(csv: dict[str, Any]) -> None:
        deployments = csv["spec"]["install"]["spec"]["deployments"]
        deployments.append(dict(deployments[0]))

    edit_csv(root, duplicate)
    with pytest.raises(InvalidBundleError) as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.install.spec.deployments[1].name"
    assert "duplicate deployment name 'mercury-operator'" in str(err.value)
    assert "spec.install.spec.deployments[0]" in str(err.value)


def test_unknown_install_mode(tmp_path: Path) -> None:
    root = copy_bundle("mercury-operator", tmp_path)
    edit_csv(root, lambda csv: csv["spec"]["installModes"][1].update(type="EveryNamespace"))
    with pytest.raises(InvalidBundleError, match="unknown install mode 'EveryNamespace'") as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.installModes[1].type"


def test_no_supported_install_mode(tmp_path: Path) -> None:
    root = copy_bundle("mercury-operator", tmp_path)
    edit_csv(root, lambda csv: [m.update(supported=False) for m in csv["spec"]["installModes"]])
    with pytest.raises(InvalidBundleError, match="no install mode is supported"):
        FORMAT.convert(root)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda w: w.update(type="AuditWebhook"), "type", "unknown webhook type 'AuditWebhook'"),
        (lambda w: w.pop("generateName"), "generateName", "is required"),
        (lambda w: w.update(generateName="Not_A_Name"), "generateName", "not a valid DNS"),
        (lambda w: w.update(generateName="vsleepinfo"), "generateName", "fully qualified"),
        (lambda w: w.update(deploymentName="nope"), "deploymentName", "'nope'"),
        (lambda w: w.update(containerPort=70000), "containerPort", "between 1 and 65535"),
        (lambda w: w.update(webhookPath="validate"), "webhookPath", "must start with '/'"),
        (lambda w: w.update(admissionReviewVersions=[]), "admissionReviewVersions", "at least"),
        (lambda w: w.pop("sideEffects"), "sideEffects", "is required"),
        (lambda w: w.update(failurePolicy="Maybe"), "failurePolicy", "one of Fail, Ignore"),
        (lambda w: w.update(rules=[]), "rules", "at least one rule"),
        (lambda w: w.update(rules=[{"operations": ["CREATE"]}]), "rules[0].apiGroups", "required"),
        (lambda w: w.update(timeoutSeconds=90), "timeoutSeconds", "between 1 and 30"),
        (lambda w: w.update(rules="everything"), "rules", "must be a list"),
    ],
)
def test_malformed_webhook_definitions(
    tmp_path: Path, change: Any, field: str, message: str
) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(root, lambda csv: change(_webhook(csv)))
    with pytest.raises(InvalidBundleError) as err:
        FORMAT.convert(root)
    assert err.value.field == f"spec.webhookdefinitions[0].{field}"
    assert message in str(err.value)


def test_conversion_webhook_naming_a_missing_crd(tmp_path: Path) -> None:
    root = copy_bundle("kepler-operator", tmp_path)

    def change(csv: dict[str, Any]) -> None:
        for webhook in csv["spec"]["webhookdefinitions"]:
            if webhook["type"] == "ConversionWebhook":
                webhook["conversionCRDs"] = ["gadgets.example.com"]

    edit_csv(root, change)
    with pytest.raises(InvalidBundleError, match=r"'gadgets\.example\.com', which the bundle"):
        FORMAT.convert(root)


def test_conversion_webhook_without_crds(tmp_path: Path) -> None:
    root = copy_bundle("kepler-operator", tmp_path)
    edit_csv(root, lambda csv: _webhook(csv).pop("conversionCRDs"))
    with pytest.raises(InvalidBundleError, match="must name the CRDs it converts") as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.webhookdefinitions[0].conversionCRDs"


def test_two_ports_mapped_differently(tmp_path: Path) -> None:
    root = copy_bundle("rabbitmq-messaging-topology-operator", tmp_path)
    edit_csv(root, lambda csv: csv["spec"]["webhookdefinitions"][1].update(targetPort=9999))
    with pytest.raises(InvalidBundleError, match="already maps to targetPort 9443") as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.webhookdefinitions[1].targetPort"


def test_annotations_naming_another_media_type(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    key = "operators.operatorframework.io.bundle.mediatype.v1"
    edit_yaml(root / "metadata/annotations.yaml", lambda a: a["annotations"].update({key: "helm"}))
    with pytest.raises(InvalidBundleError) as err:
        FORMAT.convert(root)
    assert err.value.where == "metadata/annotations.yaml"
    assert err.value.field == f"annotations.{key}"
    assert "must be 'registry+v1', got 'helm'" in str(err.value)


def test_missing_package_annotation(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    key = "operators.operatorframework.io.bundle.package.v1"
    edit_yaml(root / "metadata/annotations.yaml", lambda a: a["annotations"].pop(key))
    with pytest.raises(InvalidBundleError, match=rf"annotations\.{key}: is required"):
        FORMAT.convert(root)


def test_plain_bundle_is_not_registry(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    (root / "metadata/annotations.yaml").unlink()
    with pytest.raises(InvalidBundleError, match="is this a plain"):
        FORMAT.convert(root)


def test_unsupported_kind_is_named(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    (root / "manifests/job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate}\nspec: {}\n"
    )
    with pytest.raises(UnsupportedBundleError, match="Job 'migrate' is not a kind") as err:
        FORMAT.convert(root)
    assert err.value.where == "manifests/job.yaml#1"


def test_an_apiservice_definition_without_its_deployment_names_the_field(tmp_path: Path) -> None:
    """APIServices are installed (tests/registry_v1/test_apiservices.py); one that names no
    deployment to serve it is refused with the field named."""
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(
        root,
        lambda csv: csv["spec"].update(
            apiservicedefinitions={
                "owned": [{"group": "metrics.example.com", "version": "v1", "kind": "M"}]
            }
        ),
    )
    with pytest.raises(InvalidBundleError, match=r"apiservicedefinitions\.owned\[0\]\.name"):
        FORMAT.convert(root)


def test_two_csvs(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    source = next(root.glob("manifests/*clusterserviceversion*"))
    (root / "manifests/zz-copy.yaml").write_text(source.read_text())
    with pytest.raises(InvalidBundleError, match="a second ClusterServiceVersion"):
        FORMAT.convert(root)


def test_owned_crd_missing_from_bundle(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    (root / "manifests/kube-green.com_sleepinfos.yaml").unlink()
    with pytest.raises(InvalidBundleError, match="does not contain it") as err:
        FORMAT.convert(root)
    assert err.value.field == "spec.customresourcedefinitions.owned[0].name"


def test_v1beta1_crd_is_refused(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_yaml(
        root / "manifests/kube-green.com_sleepinfos.yaml",
        lambda crd: crd.update(apiVersion="apiextensions.k8s.io/v1beta1"),
    )
    with pytest.raises(InvalidBundleError, match="rebuild the bundle with v1 CRDs"):
        FORMAT.convert(root)


def test_nested_manifests(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    (root / "manifests/extra").mkdir()
    with pytest.raises(NestedManifestsError):
        FORMAT.convert(root)


def test_generated_name_collision_with_a_manifest(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    (root / "manifests/clash.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: kube-green-controller-manager-service}\n"
    )
    with pytest.raises(InvalidBundleError, match=r"yields Service .* twice"):
        FORMAT.convert(root)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"targetNamespace": ["a"]}, "spec.config.targetNamespace: unknown key"),
        ({"installNamespace": "Not_Valid"}, "not a valid namespace name"),
        ({"targetNamespaces": "a"}, "spec.config.targetNamespaces: must be a list"),
        ({"targetNamespaces": ["a"], "watchNamespace": "a"}, "not both"),
        ({"targetNamespaces": ["a", "a"]}, "lists a namespace twice"),
        ({"deploymentConfig": {"replicas": 2}}, "deploymentConfig.replicas: unknown key"),
        ({"deploymentConfig": {"env": [{"value": "x"}]}}, r"env\[0\]\.name: is required"),
        ({"deploymentConfig": {"nodeSelector": {"a": 1}}}, "must map strings to strings"),
        ({"webhookCertificates": {"validity": "a year"}}, "not a duration"),
        (
            {"webhookCertificates": {"validity": "1h", "renewBefore": "2h"}},
            "must be shorter than validity",
        ),
    ],
)
def test_bad_config(config: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        FORMAT.convert(bundle("kube-green"), config)


def test_mode_the_csv_does_not_support() -> None:
    with pytest.raises(UnsupportedBundleError) as err:
        FORMAT.convert(bundle("kube-green"), {"watchNamespace": "team-a"})
    assert err.value.field == "spec.installModes"
    assert "install mode SingleNamespace" in str(err.value)
    assert "it supports AllNamespaces" in str(err.value)


def test_only_single_namespace_needs_targets(tmp_path: Path) -> None:
    root = copy_bundle("aqua", tmp_path)
    edit_csv(
        root,
        lambda csv: [
            m.update(supported=m["type"] == "SingleNamespace") for m in csv["spec"]["installModes"]
        ],
    )
    # A BundleDeployment must say which namespace it watches...
    with pytest.raises(UnsupportedBundleError, match=r"set spec\.config\.targetNamespaces"):
        FORMAT.convert(root, {})
    converted = FORMAT.convert(root, {"watchNamespace": "team-a"})
    assert converted.metadata["installMode"] == "SingleNamespace"
    # ... but the Bundle's format check (no config: no install yet) accepts the bundle.
    assert FORMAT.convert(root).metadata["installMode"] == "SingleNamespace"


def test_errors_are_format_errors(tmp_path: Path) -> None:
    root = copy_bundle("kube-green", tmp_path)
    edit_csv(root, lambda csv: csv["spec"]["install"].pop("strategy"))
    with pytest.raises(FormatError):
        FORMAT.convert(root)
