"""``pivoter install``'s manifests: every object at the command's version, the image set where
deploy/ names it, OLM v1's CRDs only when asked, a registries.conf mounted into the daemon; and
``install --dry-run`` printing them without a cluster."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from pivoter.cli.install import release
from pivoter.install.manifests import (
    LABEL_VERSION,
    REGISTRIES_CONFIG_MAP,
    default_image,
    image_tag,
    render,
)
from tests.clirun import pivoter


def _by_kind(objects: tuple[dict, ...], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def test_every_object_carries_the_version_and_the_image_is_set() -> None:
    manifests = render("1.2.3", "mirror.example/pivoter@sha256:" + "a" * 64)
    for obj in manifests.all():
        assert obj["metadata"]["labels"][LABEL_VERSION] == "1.2.3", obj["metadata"]["name"]
    workloads = _by_kind(manifests.components, "Deployment") + _by_kind(manifests.components, "Job")
    assert len(workloads) == 2
    for workload in workloads:
        template = workload["spec"]["template"]
        assert template["metadata"]["labels"][LABEL_VERSION] == "1.2.3"
        assert {c["image"] for c in template["spec"]["containers"]} == {manifests.image}
    # A selector never carries the version: it is immutable and would break every upgrade.
    for obj in manifests.components:
        selector = (obj.get("spec") or {}).get("selector") or {}
        assert LABEL_VERSION not in json.dumps(selector)


def test_crds_come_first_and_olm_v1_only_when_asked() -> None:
    plain = render("1.0.0")
    groups = {crd["spec"]["group"] for crd in plain.crds}
    assert "olm.operatorframework.io" not in groups
    assert {"core.rukpak.io", "pivoter.io", "platform.openshift.io"} <= groups
    served = render("1.0.0", olmv1_apis=True)
    names = {crd["metadata"]["name"] for crd in served.crds}
    assert {
        "clusterextensions.olm.operatorframework.io",
        "clustercatalogs.olm.operatorframework.io",
    } <= names
    assert [o["kind"] for o in served.all()][: len(served.crds)] == [
        "CustomResourceDefinition"
    ] * len(served.crds)
    assert plain.components[0]["kind"] == "Namespace"


def test_a_development_version_makes_a_valid_tag_and_label() -> None:
    version = "0.1.1.dev4+g9d2b4ce.d20261129"
    assert image_tag(version) == "0.1.1.dev4-g9d2b4ce.d20261129"
    assert default_image(version) == "ghcr.io/pivoter/pivoter:0.1.1.dev4-g9d2b4ce.d20261129"
    manifests = render(version)
    label = manifests.components[0]["metadata"]["labels"][LABEL_VERSION]
    assert label == image_tag(version)
    assert len(label) <= 63


def test_a_registries_conf_is_mounted_into_the_daemon() -> None:
    text = '[[registry]]\nlocation = "mirror.internal:5000"\ninsecure = true\n'
    manifests = render("1.0.0", registries_conf=text)
    config_map = next(
        o for o in manifests.components if o["metadata"]["name"] == REGISTRIES_CONFIG_MAP
    )
    assert config_map["data"]["registries.conf"] == text
    deployment = _by_kind(manifests.components, "Deployment")[0]
    kinds = [o["kind"] for o in manifests.components]
    assert kinds.index("ConfigMap") < kinds.index("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert {"name": "registries", "configMap": {"name": REGISTRIES_CONFIG_MAP}} in pod["volumes"]
    container = pod["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert f"--registries-conf={mounts['registries']}/registries.conf" in container["args"]
    assert not any(o["metadata"]["name"] == REGISTRIES_CONFIG_MAP for o in render("1.0.0").all())


@pytest.mark.parametrize(
    ("older", "newer"),
    [("0.1.0", "0.1.1.dev3+gabc"), ("0.9.9", "0.10.0"), ("v1.2.3", "1.3.0"), ("unknown", "0.1.0")],
)
def test_release_numbers_order_versions(older: str, newer: str) -> None:
    assert release(older) < release(newer)


def test_install_dry_run_prints_the_manifests_without_a_cluster(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "none")}
    printed = pivoter("install", "--dry-run", "--image", "registry.internal/pivoter:1", env=env)
    assert printed.returncode == 0, printed.stderr
    objects = [o for o in yaml.safe_load_all(printed.stdout) if o]
    kinds = {o["kind"] for o in objects}
    assert {"CustomResourceDefinition", "Namespace", "Deployment", "Job", "ClusterRole"} <= kinds
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.internal/pivoter:1"
    )
    as_json = pivoter("install", "--dry-run", "-o", "json", env=env)
    assert json.loads(as_json.stdout)["kind"] == "List"
    assert len(json.loads(as_json.stdout)["items"]) == len(objects)
