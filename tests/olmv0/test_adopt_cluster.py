"""``pivoter adopt`` against the real OLM v0: a real bundle installed by a Subscription is taken
over in place (same uids, no Deployment rollout), OLM v0 lets go (Subscription, InstallPlans and
CSV gone, nothing left carrying its owner marks), and the next catalog version reaches the
operator as a pivoter pivot. Refusals are shown on real OLM v0 objects too.

The pivoter controllers run in this process (the ``env`` fixture of tests/resolutions); the
command runs as ``pivoter adopt`` does for a user, in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pivoter.kube import NotFound, Resource
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, resolution_name
from pivoter.olmv0.resources import INSTALL_PLANS, LABEL_OWNER
from pivoter.resolutions import RESOLUTIONS
from tests.catalogs.conftest import CatalogServer
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.olmv0.content import BundleDir, new_version, push_bundle, read_bundle, write_fbc
from tests.olmv0.differences import field_differences
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.registry_v1.helpers import bundle
from tests.resolutions.conftest import Env, is_

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(600)]

PIVOTER = str(Path(sys.executable).parent / "pivoter")
NAMESPACES = Resource("v1", "Namespace", "namespaces", False)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", True)
REPLICA_SETS = Resource("apps/v1", "ReplicaSet", "replicasets", True)
PODS = Resource("v1", "Pod", "pods", True)
NAMESPACED = [
    DEPLOYMENTS,
    Resource("v1", "Service", "services", True),
    Resource("v1", "Secret", "secrets", True),
    Resource("v1", "ConfigMap", "configmaps", True),
    Resource("v1", "ServiceAccount", "serviceaccounts", True),
    Resource("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
]
CLUSTER = [
    Resource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    Resource("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Resource(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
    Resource(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
    ),
]


def _namespace(env: Env) -> str:
    name = unique_name("olm")
    env.kube.create(
        NAMESPACES,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": session_labels()},
        },
    )
    return name


def _uids(env: Env, namespace: str, crds: list[str]) -> dict[tuple[str, str], str]:
    """uid of every object OLM v0 (or anyone) keeps in ``namespace``, and of the cluster-scoped
    objects that carry OLM v0's owner label for it or are the bundle's own (``crds``: the names
    of the bundle's cluster-scoped manifests)."""
    uids: dict[tuple[str, str], str] = {}
    for resource in NAMESPACED:
        for obj in env.kube.list(resource, namespace)[0]:
            uids[(resource.kind, f"{namespace}/{obj['metadata']['name']}")] = obj["metadata"]["uid"]
    for resource in CLUSTER:
        for obj in env.kube.list(resource)[0]:
            meta = obj["metadata"]
            labels = meta.get("labels") or {}
            mine = labels.get("olm.owner.namespace") == namespace or meta["name"] in crds
            if mine or (labels.get("core.rukpak.io/owner-name") or "").startswith(
                "olmv0-" + namespace
            ):
                uids[(resource.kind, meta["name"])] = meta["uid"]
    return uids


def _cluster_scoped(b: BundleDir) -> list[str]:
    """Names of the bundle's cluster-scoped manifests (CRDs, ClusterRoles, ...)."""
    kinds = {r.kind for r in CLUSTER}
    return [o["metadata"]["name"] for o in b.manifests() if o["kind"] in kinds]


def _pods(env: Env, namespace: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in env.kube.list(PODS, namespace)[0]}


def _adopt(cluster: TestCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PIVOTER, "adopt", "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )


def _pivoter_catalog(env: Env, bundles: list[BundleDir], *, priority: int = 10) -> str:
    """Push the bundles and serve them to pivoter (a Catalog over ``pivoter catalog serve``)."""
    pusher = env.publisher.pusher
    images = {b.name: push_bundle(pusher, env.publisher.registry_host, b) for b in bundles}
    write_fbc(env.publisher.directory, bundles, images=images)
    if env.server is None:
        env.server = CatalogServer(env.publisher.directory)
        return env.catalog(priority=priority)
    time.sleep(1.1)  # the catalog server notices changes at one-second resolution
    return ""


def test_adopt_kube_green_in_place_then_upgrade_it_with_a_pivot(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
    tmp_path: Path,
) -> None:
    green = read_bundle(bundle("kube-green"))
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, olm_catalog([green]))
    olm.operator_group(namespace, None)
    olm.subscription(namespace, green.package, "alpha", source)
    csv = olm.wait_installed(namespace, green.package)
    _pivoter_catalog(env, [green])
    crds = _cluster_scoped(green)
    before = _uids(env, namespace, crds)
    deployment = env.kube.get(DEPLOYMENTS, "kube-green-controller-manager", namespace)
    pods = _pods(env, namespace)
    assert pods, "the operator's pod runs on the simulated node"

    plan = _adopt(cluster, "--subscription", f"{namespace}/{green.package}", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert f"Resolution {resolution_name(namespace, green.package)}" in plan.stdout
    assert "Deployment " + f"{namespace}/kube-green-controller-manager" in plan.stdout

    adopted = _adopt(cluster, "--subscription", f"{namespace}/{green.package}", "--timeout", "300")
    assert adopted.returncode == 0, adopted.stderr + adopted.stdout
    name = resolution_name(namespace, green.package)
    env.created.append((RESOLUTIONS, name))  # uninstalled at the end, while the controllers run
    res = env.get(name)
    assert res["metadata"]["annotations"][ANNOTATION_ADOPTION] == "Adopted"
    assert "versionRange" not in res["spec"]["packages"][0]
    # OLM v0 let go.
    for resource, obj in ((SUBSCRIPTIONS, green.package), (CSVS, csv)):
        with pytest.raises(NotFound):
            env.kube.get(resource, obj, namespace)
    assert env.kube.list(INSTALL_PLANS, namespace)[0] == []
    # Nothing was re-created: every object pivoter manages now that existed before has its uid.
    after = _uids(env, namespace, crds)
    (child,) = env.children(name).values()
    inventory = {
        (ref["kind"], f"{ref['namespace']}/{ref['name']}" if ref["namespace"] else ref["name"])
        for ref in child["status"]["inventory"]
    }
    kept = {k: v for k, v in before.items() if k in inventory}
    assert kept, "pivoter took over OLM v0's objects"
    assert {k: after.get(k) for k in kept} == kept
    created = sorted(k for k in inventory if k not in before)
    assert created == [], f"the adoption created objects OLM v0 had made: {created}"
    # No rollout: same Deployment generation and template, same ReplicaSet, same pods.
    now = env.kube.get(DEPLOYMENTS, "kube-green-controller-manager", namespace)
    changed = field_differences(deployment["spec"], now["spec"])
    assert changed == [], f"the Deployment's spec changed: {changed}"
    assert json.dumps(now["spec"]) == json.dumps(deployment["spec"]), "reordered"
    assert now["metadata"]["generation"] == deployment["metadata"]["generation"]
    assert _pods(env, namespace) == pods
    # Every object has one manager: pivoter's child; nothing carries OLM v0's owner marks.
    for kind, where in inventory:
        resource = next(r for r in [*NAMESPACED, *CLUSTER] if r.kind == kind)
        ns, _, obj_name = where.rpartition("/")
        obj = env.kube.get(resource, obj_name, ns or None)
        labels = obj["metadata"].get("labels") or {}
        assert labels.get("core.rukpak.io/owner-name") == child["metadata"]["name"], where
        assert LABEL_OWNER not in labels, where
        owners = obj["metadata"].get("ownerReferences") or []
        assert not [o for o in owners if o["kind"] == "ClusterServiceVersion"], where
    # Besides pivoter's, only what every namespace has and the OperatorGroup's own roles (the
    # OperatorGroup stays: it is the user's, and other Subscriptions may use it).
    leftovers = [
        k
        for k in after
        if k not in inventory
        and k[1].rpartition("/")[2] not in ("kube-root-ca.crt", "default")
        and not k[1].startswith("olm.og.")
        and k[0] != "Secret"
    ]
    assert leftovers == []

    # The catalog gains a version: pivoter pivots to it (a rollout, as an upgrade is).
    newer = new_version(green, "0.6.1", tmp_path, env={"UPGRADED_BY": "pivoter"})
    _pivoter_catalog(env, [green, newer])
    env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
        what="the upgrade to 0.6.1 through a pivot",
        timeout=180,
    )
    upgraded = env.kube.get(DEPLOYMENTS, "kube-green-controller-manager", namespace)
    envs = [
        e for c in upgraded["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []
    ]
    assert {"name": "UPGRADED_BY", "value": "pivoter"} in envs
    assert upgraded["metadata"]["uid"] == deployment["metadata"]["uid"]
    env.kube.delete(NAMESPACES, namespace)


def test_refusals_on_real_olm_objects(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
) -> None:
    green = read_bundle(bundle("kube-green"))
    address = olm_catalog([green, read_bundle(bundle("aqua"))])
    # A Manual Subscription: its InstallPlan waits for approval.
    manual = _namespace(env)
    source = olm.catalog_source(manual, address)
    olm.operator_group(manual, None)
    olm.subscription(manual, green.package, "alpha", source, installPlanApproval="Manual")

    def pending() -> bool:
        plans = env.kube.list(INSTALL_PLANS, manual)[0]
        return any((p.get("status") or {}).get("phase") == "RequiresApproval" for p in plans)

    wait_for(pending, timeout=120, what="an InstallPlan awaiting approval")
    refused = _adopt(cluster, "--subscription", f"{manual}/{green.package}", "--dry-run")
    assert refused.returncode == 3
    assert (
        f"refused: Subscription {manual}/{green.package} has no installed CSV yet" in refused.stderr
    )
    assert (
        "is awaiting approval: OLM v0 is in the middle of an install or upgrade" in refused.stderr
    )
    # A CSV OLM v0 failed: aqua does not support AllNamespaces.
    aqua = read_bundle(bundle("aqua"))
    failed = _namespace(env)
    olm.operator_group(failed, None)
    olm.subscription(failed, aqua.package, aqua.channels[0], olm.catalog_source(failed, address))
    olm.wait_csv(
        failed,
        aqua.name,
        lambda c: (c.get("status") or {}).get("phase") == "Failed",
        what="OLM v0 to fail aqua in an AllNamespaces OperatorGroup",
    )
    refused = _adopt(cluster, "--subscription", f"{failed}/{aqua.package}")
    assert refused.returncode == 3
    assert (
        f"refused: CSV {aqua.name} is in phase Failed (UnsupportedOperatorGroup" in refused.stderr
    )
    assert "pivoter would take over a broken install" in refused.stderr
    assert "which CSV aqua-operator.v6.5.5 does not support" in refused.stderr
    with pytest.raises(NotFound):
        env.get(resolution_name(failed, aqua.package))
    # Two OperatorGroups (OLM v0 stops there too), and a selector-based one.
    two = _namespace(env)
    olm.operator_group(two, None)
    olm.operator_group(two, None)
    olm.subscription(two, green.package, "alpha", olm.catalog_source(two, address))
    refused = _adopt(cluster, "--olm-namespace", two, "--dry-run")
    assert refused.returncode == 3
    assert f"namespace {two} has 2 OperatorGroups" in refused.stderr
    nothing = _adopt(cluster, "--olm-namespace", _namespace(env), "--dry-run")
    assert nothing.returncode == 3
    assert "has no Subscription to adopt" in nothing.stderr
    for ns in (manual, two, failed):
        env.kube.delete(NAMESPACES, ns)
    assert not env.kube.list(RESOLUTIONS, label_selector="olmv0.pivoter.io/namespace")[0] or all(
        r["metadata"]["labels"]["olmv0.pivoter.io/namespace"] not in (manual, two)
        for r in env.kube.list(RESOLUTIONS, label_selector="olmv0.pivoter.io/namespace")[0]
    )


def test_undo_hands_an_adopted_operator_back_to_olm(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
) -> None:
    aqua = read_bundle(bundle("aqua"))
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, olm_catalog([aqua]))
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, aqua.package, aqua.channels[0], source)
    csv = olm.wait_installed(namespace, aqua.package)
    _pivoter_catalog(env, [aqua])
    deployment = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    adopted = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--timeout", "300")
    assert adopted.returncode == 0, adopted.stderr
    name = resolution_name(namespace, aqua.package)

    back = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--undo")
    assert back.returncode == 0, back.stderr + back.stdout
    assert (
        f"handed back: Subscription {namespace}/{aqua.package} runs CSV {csv} again" in back.stdout
    )
    with pytest.raises(NotFound):
        env.get(name)
    sub = env.kube.get(SUBSCRIPTIONS, aqua.package, namespace)
    assert sub["spec"]["startingCSV"] == csv
    assert olm.wait_installed(namespace, aqua.package) == csv
    # OLM v0 took the running Deployment back: the same object, labelled by OLM v0 again.
    now = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    assert now["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert now["metadata"]["labels"][LABEL_OWNER] == csv
    assert "core.rukpak.io/owner-name" not in now["metadata"]["labels"]
    again = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--undo")
    assert again.returncode == 3
    assert "nothing adopted from OLM v0" in again.stderr
    olm.kube.delete(SUBSCRIPTIONS, aqua.package, namespace)
    olm.kube.delete(CSVS, csv, namespace)
    env.kube.delete(NAMESPACES, namespace)
