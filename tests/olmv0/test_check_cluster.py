"""``pivoter adopt --check`` and ``--backup`` against the real OLM v0 (and pivoter's OLM v1 CRDs):
the verdict on an operator OLM v0 installed (Adoptable), one whose OperatorGroup picks its
namespaces with a selector (Refused), ClusterExtensions with and without an installed bundle
recorded (Adoptable, Refused) and one of the same package as a Subscription (Conflict); then the
backup of a real adoption and the verdicts after it (Adopted; a ClusterExtension of the adopted
package in Conflict with the adoption).

The first test runs no pivoter controller: the ClusterExtensions stay as the test writes them,
as operator-controller would have. The second runs them in this process (the ``env`` fixture of
tests/inputs, OLM v1's APIs only read) to adopt for real. The command runs as a user runs it, in
a subprocess.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.apis import olmv1
from pivoter.apis.resources import CLUSTER_EXTENSIONS, RESOLUTIONS
from pivoter.kube import Kube, NotFound
from pivoter.olmv0.mapping import resolution_name
from tests.cluster import TestCluster, session_labels, unique_name
from tests.inputs.conftest import Env
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_adopt_cluster import NAMESPACES, PIVOTER, _pivoter_catalog
from tests.olmv0.test_adopt_cluster import _adopt as adopt_command
from tests.olmv1.conftest import olmv1_crds
from tests.registry_v1.helpers import bundle

__all__ = ["olmv1_crds"]  # the OLM v1 CRDs, applied for this module

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.slow, pytest.mark.timeout(600)]


def _check(cluster: TestCluster, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    """``pivoter adopt --check ... -o json``: the exit code, the entries and stderr."""
    done = subprocess.run(
        [PIVOTER, "adopt", "--check", "-o", "json", "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    entries = json.loads(done.stdout)["check"] if done.stdout else []
    return done.returncode, entries, done.stderr


def _one(entries: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [e for e in entries if (e["kind"], e["name"]) == (kind, name)]
    return found


def _namespace(kube: Kube, **labels: str) -> str:
    name = unique_name("olm")
    kube.create(
        NAMESPACES,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {**session_labels(), **labels}},
        },
    )
    return name


def _extension(kube: Kube, package: str, *, installed: str = "") -> str:
    """A ClusterExtension for ``package`` (``installed``: the bundle operator-controller
    recorded in its status, as it does once it installed it)."""
    name = unique_name("ce")
    kube.create(
        CLUSTER_EXTENSIONS,
        {
            "apiVersion": olmv1.API_VERSION,
            "kind": "ClusterExtension",
            "metadata": {
                "name": name,
                "labels": session_labels(),
                "annotations": {"pivoter.io/adopt-existing": "true"} if installed else {},
            },
            "spec": {
                "namespace": "default",
                "serviceAccount": {"name": "installer"},
                "source": {"sourceType": "Catalog", "catalog": {"packageName": package}},
            },
        },
    )
    if installed:
        kube.patch_status(
            CLUSTER_EXTENSIONS,
            name,
            {"install": {"bundle": {"name": installed, "version": "1.0.0"}}},
        )
    return name


def _table(cluster: TestCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PIVOTER, "adopt", "--check", "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_verdicts_and_backup_on_real_olm_and_cluster_extensions(
    *,
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    olmv1_crds: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    kube = olm.kube
    aqua = read_bundle(bundle("aqua"))
    address = olm_catalog([aqua])
    # Installed by OLM v0 in its own namespace: adoptable.
    own = _namespace(kube)
    olm.operator_group(own, [own])
    olm.subscription(own, aqua.package, aqua.channels[0], olm.catalog_source(own, address))
    # The same operator under an OperatorGroup that picks its namespaces by label: refused.
    label = unique_name("pick")
    picked = _namespace(kube, pick=label)
    olm.operator_group(picked, None, selector={"matchLabels": {"pick": label}})
    olm.subscription(picked, aqua.package, aqua.channels[0], olm.catalog_source(picked, address))
    csv = olm.wait_installed(own, aqua.package)

    code, entries, err = _check(cluster, "--subscription", f"{own}/{aqua.package}")
    assert code == 0, err
    (adoptable,) = entries
    assert adoptable["verdict"] == "Adoptable", adoptable
    assert (adoptable["installed"], adoptable["reasons"]) == (csv, [])
    assert adoptable["resolution"] == resolution_name(own, aqua.package)
    assert any("checked at the adoption's Planning step" in n for n in adoptable["notes"])

    code, entries, err = _check(cluster, "--olm-namespace", picked)
    assert code == 3, err
    (refused,) = entries
    assert refused["verdict"] == "Refused"
    assert any("picks its target namespaces with a label selector" in r for r in refused["reasons"])

    # --backup with --dry-run writes OLM v0's objects and changes nothing.
    backups = tmp_path / "backups"
    dry = adopt_command(
        cluster, "--subscription", f"{own}/{aqua.package}", "--dry-run", "--backup", str(backups)
    )
    assert dry.returncode == 0, dry.stderr
    written = backups / f"{own}-{aqua.package}.yaml"
    assert f"backed up Subscription {own}/{aqua.package} to {written}" in dry.stderr
    documents = list(yaml.safe_load_all(written.read_text()))
    kinds = [d["kind"] for d in documents]
    assert kinds[:3] == ["Subscription", "OperatorGroup", "ClusterServiceVersion"]
    assert kinds[3:], "the Subscription's InstallPlans are backed up"
    assert set(kinds[3:]) == {"InstallPlan"}, kinds
    assert documents[2]["metadata"]["name"] == csv
    assert documents[2]["status"]["phase"] == "Succeeded"
    assert not [d for d in documents if "managedFields" in d["metadata"]]
    # A DIR whose file cannot be written stops the adoption before any change.
    blocked = tmp_path / "blocked"
    (blocked / f"{own}-{aqua.package}.yaml").mkdir(parents=True)
    stopped = adopt_command(
        cluster, "--subscription", f"{own}/{aqua.package}", "--backup", str(blocked)
    )
    assert stopped.returncode == 1
    assert "cannot write the backup" in stopped.stderr
    assert "nothing was changed" in stopped.stderr
    with pytest.raises(NotFound):
        kube.get(RESOLUTIONS, resolution_name(own, aqua.package))
    kube.get(SUBSCRIPTIONS, aqua.package, own)

    # ClusterExtensions: installed by operator-controller (adoptable on pivoter's CRDs), never
    # installed (refused), and one installed of the package OLM v0 installed (a conflict for
    # the Subscription: two installers of one package).
    installed = _extension(kube, "kube-green", installed="kube-green.v1.0.0")
    bare = _extension(kube, "cert-manager")
    twin = _extension(kube, aqua.package, installed=f"{aqua.package}.v1.0.0")
    code, entries, err = _check(cluster, "--all")
    assert code == 3, err
    conflict = _one(entries, "Subscription", f"{own}/{aqua.package}")
    assert conflict["verdict"] == "Conflict", conflict
    assert conflict["reasons"][0].startswith(
        f"ClusterExtension/{twin} installs package {aqua.package} already"
    )
    assert _one(entries, "Subscription", f"{picked}/{aqua.package}")["verdict"] == "Conflict"
    adoptable_ce = _one(entries, "ClusterExtension", installed)
    assert adoptable_ce["verdict"] == "Adoptable", adoptable_ce
    assert adoptable_ce["installed"] == "kube-green.v1.0.0 (1.0.0)"
    refused_ce = _one(entries, "ClusterExtension", bare)
    assert refused_ce["verdict"] == "Refused"
    assert any("recorded no installed bundle" in r for r in refused_ce["reasons"])
    assert any("pivoter.io/adopt-existing" in r for r in refused_ce["reasons"])
    table = _table(cluster, "--all")
    assert table.returncode == 3
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["VERDICT", "KIND", "NAME", "PACKAGE", "INSTALLED"]
    assert any(line.split()[:3] == ["Refused", "ClusterExtension", bare] for line in lines)

    for name in (installed, bare, twin):
        kube.delete(CLUSTER_EXTENSIONS, name)
    kube.delete(SUBSCRIPTIONS, aqua.package, own)
    kube.delete(CSVS, csv, own)
    for namespace in (own, picked):
        kube.delete(NAMESPACES, namespace)


def test_check_after_a_real_adoption_with_backup(
    *,
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    olmv1_crds: list[dict[str, Any]],
    env: Env,
    tmp_path: Path,
) -> None:
    aqua = read_bundle(bundle("aqua"))
    own = _namespace(env.kube)
    olm.operator_group(own, [own])
    olm.subscription(
        own, aqua.package, aqua.channels[0], olm.catalog_source(own, olm_catalog([aqua]))
    )
    csv = olm.wait_installed(own, aqua.package)
    _pivoter_catalog(env, [aqua])
    backups = tmp_path / "backups"
    done = adopt_command(
        cluster,
        "--subscription",
        f"{own}/{aqua.package}",
        "--backup",
        str(backups),
        "--timeout",
        "300",
    )
    env.created.append((RESOLUTIONS, resolution_name(own, aqua.package)))
    assert done.returncode == 0, done.stderr + done.stdout
    (sub, *_) = yaml.safe_load_all((backups / f"{own}-{aqua.package}.yaml").read_text())
    assert (sub["kind"], sub["status"]["installedCSV"]) == ("Subscription", csv)

    code, entries, err = _check(cluster, "--subscription", f"{own}/{aqua.package}")
    assert code == 0, err
    (adopted,) = entries
    assert adopted["verdict"] == "Adopted", adopted
    assert adopted["installed"] == csv
    # A ClusterExtension operator-controller installed of the package pivoter adopted conflicts.
    twin = _extension(env.kube, aqua.package, installed=f"{aqua.package}.v1.0.0")
    code, entries, err = _check(cluster, "--all")
    assert code == 3, err
    assert _one(entries, "Subscription", f"{own}/{aqua.package}")["verdict"] == "Adopted"
    conflict = _one(entries, "ClusterExtension", twin)
    assert conflict["verdict"] == "Conflict"
    assert conflict["reasons"][0].startswith(
        f"Resolution/{resolution_name(own, aqua.package)} installs package {aqua.package}"
    )
    env.kube.delete(CLUSTER_EXTENSIONS, twin)
