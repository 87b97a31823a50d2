"""``pivoter adopt`` against the real OLM v0: a real bundle installed by a Subscription is taken
over in place (same uids, no Deployment rollout), OLM v0 lets go (Subscription, InstallPlans and
CSV gone, nothing left carrying its owner marks), and the next catalog version reaches the
operator as a pivoter pivot. Refusals are shown on real OLM v0 objects too.

The pivoter controllers run in this process (the ``env`` fixture of tests/inputs); the
command runs as ``pivoter adopt`` does for a user, in a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import NotFound, Resource
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, resolution_name
from pivoter.olmv0.resources import INSTALL_PLANS, LABEL_OWNER
from tests.catalogs.conftest import CatalogServer
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.inputs.conftest import Env, is_
from tests.olmv0.content import BundleDir, new_version, push_bundle, read_bundle, write_fbc
from tests.olmv0.differences import field_differences
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_differential_cluster import MODES, bundles, stubs
from tests.registry_v1.helpers import bundle

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
__all__ = ["bundles", "stubs"]  # module fixtures shared with the differential
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
KINDS = {r.kind: r for r in [*NAMESPACED, *CLUSTER]}


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
            # (olm-x-2 is a prefix of olm-x-21: the name's next part starts after a dash)
            if mine or (labels.get("core.rukpak.io/owner-name") or "").startswith(
                f"olmv0-{namespace}-"
            ):
                uids[(resource.kind, meta["name"])] = meta["uid"]
    return uids


def _created_at(obj: dict[str, Any]) -> str:
    """An object's creationTimestamp (RFC 3339 UTC, so strings order as times)."""
    return str(obj["metadata"]["creationTimestamp"])


def _written_by_pivoter_alone(obj: dict[str, Any]) -> bool:
    """Whether pivoter created ``obj``: every field manager is pivoter's, and pivoter's apply
    is as old as the object (an object OLM v0 created and pivoter then took over whole can lose
    OLM v0's entry, but pivoter's apply came later than the creation)."""
    fields = obj["metadata"].get("managedFields") or []
    managers = [str(m.get("manager", "")) for m in fields]
    created = obj["metadata"].get("creationTimestamp")
    applied_at_creation = any(
        str(m.get("manager", "")).startswith("pivoter")
        and m.get("operation") == "Apply"
        and m.get("time") == created
        for m in fields
    )
    return all(m.startswith("pivoter") for m in managers) and applied_at_creation


def _get(env: Env, kind: str, where: str) -> dict[str, Any]:
    """The object ``where`` (``namespace/name`` or ``name``) of ``kind``."""
    namespace, _, name = where.rpartition("/")
    return env.kube.get(KINDS[kind], name, namespace or None)


def _cluster_scoped(b: BundleDir) -> list[str]:
    """Names of the bundle's cluster-scoped manifests (CRDs, ClusterRoles, ...)."""
    kinds = {r.kind for r in CLUSTER}
    return [o["metadata"]["name"] for o in b.manifests() if o["kind"] in kinds]


def _wait_settled(env: Env, namespace: str, crds: list[str]) -> None:
    """Wait until OLM v0 stopped changing what it made (it may update a Deployment again a
    moment after the CSV succeeded, and lift Roles to ClusterRoles at a later sync): the same
    generations, ReplicaSets and objects over five seconds."""
    previous: list[Any] = []

    def still() -> bool:
        now = [
            sorted(
                (d["metadata"]["name"], d["metadata"]["generation"])
                for d in env.kube.list(DEPLOYMENTS, namespace)[0]
            ),
            _replica_sets(env, namespace),
            _uids(env, namespace, crds),
        ]
        same = now == previous
        previous[:] = now
        return same

    wait_for(
        still, timeout=120, interval=5.0, what=f"OLM v0's Deployments in {namespace} to settle"
    )


def _replica_sets(env: Env, namespace: str) -> dict[str, str]:
    return {
        r["metadata"]["name"]: r["metadata"]["uid"]
        for r in env.kube.list(REPLICA_SETS, namespace)[0]
    }


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


@dataclass
class Adoption:
    """One real bundle installed by OLM v0 in its own namespace, and what it was before."""

    bundle: BundleDir
    namespace: str = ""
    csv: str = ""
    before: dict[tuple[str, str], str] = field(default_factory=dict)
    deployments: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, str] = field(default_factory=dict)
    replica_sets: dict[str, str] = field(default_factory=dict)

    @property
    def resolution(self) -> str:
        """The Resolution adopting it."""
        return resolution_name(self.namespace, self.bundle.package)


def _in_parallel(items: list[Adoption], work: Callable[[Adoption], None]) -> None:
    with ThreadPoolExecutor(max_workers=len(items)) as pool:
        for future in [pool.submit(work, item) for item in items]:
            future.result()


def _deployments(env: Env, namespace: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in env.kube.list(DEPLOYMENTS, namespace)[0]}


def _check_adopted(env: Env, a: Adoption) -> None:
    """OLM v0 let go; every object pivoter manages kept its uid, none was created; no rollout;
    one manager for each object."""
    for resource, obj in ((SUBSCRIPTIONS, a.bundle.package), (CSVS, a.csv)):
        with pytest.raises(NotFound):
            env.kube.get(resource, obj, a.namespace)
    assert env.kube.list(INSTALL_PLANS, a.namespace)[0] == []
    res = env.get(a.resolution)
    assert res["metadata"]["annotations"][ANNOTATION_ADOPTION] == "Adopted"
    assert "versionRange" not in res["spec"]["packages"][0]
    package = a.bundle.package
    after = _uids(env, a.namespace, _cluster_scoped(a.bundle))
    (child,) = env.children(a.resolution).values()
    inventory = {
        (ref["kind"], f"{ref['namespace']}/{ref['name']}" if ref["namespace"] else ref["name"])
        for ref in child["status"]["inventory"]
    }
    kept = {k: v for k, v in a.before.items() if k in inventory}
    assert kept, f"{package}: pivoter took over OLM v0's objects"
    assert {k: after.get(k) for k in kept} == kept, f"{package}: objects were re-created"
    # An object the snapshot did not see may still be OLM v0's: it lifts an AllNamespaces
    # install's RBAC on its own time, and makes a binding again when the takeover relabels the
    # one it had, sometimes after the adopting Resolution was created (CI failed twice on such a
    # ClusterRoleBinding, named by OLM's generateName). Created by the adoption means created
    # once the adopting Resolution existed, and written by no one but pivoter since.
    began = _created_at(res)
    created = sorted(
        k
        for k in inventory
        if k[0] in KINDS
        and k not in a.before
        and _created_at(_get(env, *k)) >= began
        and _written_by_pivoter_alone(_get(env, *k))
    )
    assert created == [], f"{package}: the adoption created objects OLM v0 had made: {created}"
    for name, deployment in _deployments(env, a.namespace).items():
        old = a.deployments[name]
        changed = field_differences(old["spec"], deployment["spec"])
        assert changed == [], f"{package}: Deployment {name}'s spec changed: {changed}"
        assert json.dumps(deployment["spec"]) == json.dumps(old["spec"]), f"{package}: reordered"
    # No rollout: the same ReplicaSets (no new pod-template-hash) and the same pods.
    assert _replica_sets(env, a.namespace) == a.replica_sets, f"{package}: a rollout started"
    assert _pods(env, a.namespace) == a.pods, f"{package}: pods were replaced"
    for kind, where in inventory:
        if kind not in KINDS:
            continue
        resource = KINDS[kind]
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
    ]
    assert leftovers == [], f"{package}: objects with no manager: {leftovers}"


def _next_patch(version: str) -> str:
    major, minor, patch = version.split("-", maxsplit=1)[0].split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def test_adopt_every_real_bundle_in_place_then_upgrade_it_with_a_pivot(
    *,
    cluster: TestCluster,
    olm: OlmV0,
    stubs: None,
    bundles: dict[str, BundleDir],
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
    tmp_path: Path,
) -> None:
    address = olm_catalog(list(bundles.values()))
    _pivoter_catalog(env, list(bundles.values()))
    adoptions = [Adoption(b) for b in bundles.values()]

    def install(a: Adoption) -> None:
        a.namespace = _namespace(env)
        own = MODES[a.bundle.package][0] == "OwnNamespace"
        olm.operator_group(a.namespace, [a.namespace] if own else None)
        source = olm.catalog_source(a.namespace, address)
        olm.subscription(a.namespace, a.bundle.package, a.bundle.channels[0], source)
        a.csv = olm.wait_installed(a.namespace, a.bundle.package, timeout=300)
        if not own:
            olm.wait_lifted(a.namespace, a.csv)
        _wait_settled(env, a.namespace, _cluster_scoped(a.bundle))
        a.before = _uids(env, a.namespace, _cluster_scoped(a.bundle))
        a.deployments = _deployments(env, a.namespace)
        a.pods = _pods(env, a.namespace)
        a.replica_sets = _replica_sets(env, a.namespace)
        assert a.pods, f"{a.bundle.package}: the operator's pods run on the simulated node"

    _in_parallel(adoptions, install)
    kube_green = next(a for a in adoptions if a.bundle.package == "kube-green")
    plan = _adopt(cluster, "--subscription", f"{kube_green.namespace}/kube-green", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert f"Resolution {kube_green.resolution}" in plan.stdout
    assert f"Deployment {kube_green.namespace}/kube-green-controller-manager" in plan.stdout

    def adopt(a: Adoption) -> None:
        sub = f"{a.namespace}/{a.bundle.package}"
        done = _adopt(cluster, "--subscription", sub, "--timeout", "300")
        env.created.append((RESOLUTIONS, a.resolution))  # uninstalled at the end
        assert done.returncode == 0, f"{a.bundle.package}: {done.stderr}{done.stdout}"

    _in_parallel(adoptions, adopt)
    for a in adoptions:
        _check_adopted(env, a)

    # The catalog gains a version of each: pivoter pivots to it (a rollout, as an upgrade is).
    newer = [
        new_version(
            a.bundle, _next_patch(a.bundle.version), tmp_path, env={"UPGRADED_BY": "pivoter"}
        )
        for a in adoptions
    ]
    _pivoter_catalog(env, [*bundles.values(), *newer])
    for a in adoptions:
        env.wait(
            a.resolution,
            lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
            what=f"the upgrade of {a.bundle.package} through a pivot",
            timeout=240,
        )
        for name, deployment in _deployments(env, a.namespace).items():
            containers = deployment["spec"]["template"]["spec"]["containers"]
            envs = [e for c in containers for e in c.get("env") or []]
            assert {"name": "UPGRADED_BY", "value": "pivoter"} in envs, (a.bundle.package, name)
            assert deployment["metadata"]["uid"] == a.deployments[name]["metadata"]["uid"]


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
    # The InstallPlan nobody approved is no reason of its own (OLM v0 does nothing with it).
    assert "InstallPlan" not in refused.stderr
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
