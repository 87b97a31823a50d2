"""The registry+v1 differential: each real bundle, in each install mode it supports, installed
once by OLM v0 (Subscription + OperatorGroup) and once by pivoter (a BundleDeployment), and what
each left on the cluster compared object by object.

Every difference must be one docs/registry-v1.md explains ("Compared with OLM v0"; the entries
of tests/olmv0/differences.py): a new one fails the test with the list. Bundles run side by side
in rounds (one install mode per bundle per round: an operator's CRDs are cluster-wide, so one
bundle is installed once at a time); within a round, OLM's installs are read back and removed
before pivoter's start. CRDs the bundles require but no bundle provides (strimzi's and camel's
for mercury, RabbitmqCluster for the topology operator) and the monitoring CRDs are stubbed for
the module, so both installers see the same cluster.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pivoter.kube import Kube, NotFound, Resource
from provisioners.apply.applier import Applier, Owner
from tests.cluster import TestCluster, session_labels, unique_name
from tests.drift.running import Pivoter, running_pivoter
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.differences import DOCUMENTED, Difference, compare, undocumented
from tests.olmv0.peer import CSVS, INSTALL_PLANS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.snapshot import Install, cluster_names, index, take
from tests.polling import wait_for
from tests.registry_v1.helpers import real_bundles
from tests.registry_v1_cluster.aggregated import APISERVICES, serve_service, write_bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(900)]

ALL, OWN, SINGLE, MULTI = "AllNamespaces", "OwnNamespace", "SingleNamespace", "MultiNamespace"
# The modes each bundle supports (tests/registry_v1/test_real_bundles.py checks them against the
# CSVs), split into rounds: round n installs the n-th mode of every bundle that has one.
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
ROUNDS = [
    [(package, modes[n]) for package, modes in MODES.items() if len(modes) > n] for n in range(4)
]
# The Windows machine config operator's CSV pins it to control-plane nodes: the simulated node
# carries that role's label for this module. (A Subscription's spec.config.nodeSelector would
# do too, but OLM v0 only applies it once the Subscription names the CSV as installed, a race
# it can lose for minutes.)
MASTER_LABEL = "node-role.kubernetes.io/master"
NODES = Resource("v1", "Node", "nodes", False)
CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
NAMESPACES = Resource("v1", "Namespace", "namespaces", False)
STUBS = [
    ("monitoring.coreos.com", "servicemonitors", "ServiceMonitor", "v1"),
    ("monitoring.coreos.com", "prometheusrules", "PrometheusRule", "v1"),
    ("kafka.strimzi.io", "kafkas", "Kafka", "v1beta2"),
    ("kafka.strimzi.io", "kafkatopics", "KafkaTopic", "v1beta2"),
    ("kafka.strimzi.io", "kafkausers", "KafkaUser", "v1beta2"),
    ("camel.apache.org", "integrations", "Integration", "v1"),
    ("rabbitmq.com", "rabbitmqclusters", "RabbitmqCluster", "v1beta1"),
]
REPORT = "PIVOTER_OLMV0_DIFF_REPORT"
"""Set to a file path to write every difference found (documented or not) as JSON lines."""
Serve = Callable[[Kube, "Case"], contextlib.AbstractContextManager[object]]
"""Something that answers for an install's aggregated API server while the block runs (OLM v0
succeeds, and pivoter is Healthy, only once the APIServices are Available)."""


def _stub_crd(group: str, plural: str, kind: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": session_labels()},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "singular": kind.lower()},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def stubs(olm: OlmV0) -> Iterator[None]:
    """The stub CRDs and the control-plane label on the nodes, removed after the module (other
    tests rely on the monitoring kinds being absent)."""
    objects = [_stub_crd(*s) for s in STUBS]
    Applier(olm.api, Owner("Test", "olmv0-stubs")).apply(objects)
    nodes = [n["metadata"]["name"] for n in olm.kube.list(NODES)[0]]
    for node in nodes:
        olm.kube.merge_patch(NODES, node, {"metadata": {"labels": {MASTER_LABEL: ""}}})
    try:
        yield
    finally:
        for node in nodes:
            olm.kube.merge_patch(NODES, node, {"metadata": {"labels": {MASTER_LABEL: None}}})
        for obj in objects:
            with contextlib.suppress(NotFound):
                olm.kube.delete(CRDS, obj["metadata"]["name"])
        for obj in objects:
            _wait_gone(olm.kube, CRDS, obj["metadata"]["name"])


@pytest.fixture(scope="module")
def bundles() -> dict[str, BundleDir]:
    """The ten real bundles, read."""
    return {package: read_bundle(root) for package, root in real_bundles().items()}


def _wait_gone(kube: Kube, resource: Resource, name: str, namespace: str | None = None) -> None:
    def gone() -> bool:
        try:
            kube.get(resource, name, namespace)
        except NotFound:
            return True
        return False

    wait_for(gone, timeout=240, what=f"{resource.kind} {name} to be deleted")


def _delete_until_gone_for_good(
    kube: Kube, resource: Resource, names: list[str], quiet: float = 10.0
) -> None:
    """Delete cluster-scoped objects until none of them has come back for ``quiet`` seconds:
    an InstallPlan sync of OLM v0's catalog operator already under way when its InstallPlan
    was deleted creates the bundle's CRDs again (seen in CI: pivoter's install of the same
    bundle then found a CRD nobody manages)."""
    last_seen = [time.monotonic()]

    def gone_for_good() -> bool:
        present = set(names) & {str(o["metadata"]["name"]) for o in kube.list(resource)[0]}
        for name in present:
            with contextlib.suppress(NotFound):
                kube.delete(resource, name)
        if present:
            last_seen[0] = time.monotonic()
        return time.monotonic() - last_seen[0] >= quiet

    wait_for(gone_for_good, timeout=240, interval=0.5, what=f"{names} to stay deleted")


def _delete_installs_until_gone_for_good(
    kube: Kube, namespaces: list[str], quiet: float = 5.0
) -> None:
    """Delete the Subscriptions, InstallPlans and CSVs of ``namespaces`` (in that order) until
    none of them has been there for ``quiet`` seconds. Deleting them once is not enough: the
    catalog operator re-resolves a namespace when its CSV goes, and when its informer still
    holds the Subscription just deleted, it makes a new InstallPlan that creates the CSV (and
    the CRDs) again under the same name, which no one deletes then (CI waited 240 s for
    ``aqua-operator.v6.5.5`` to be deleted in round1). A CSV waiting on OLM v0's
    ``operators.coreos.com/csv-cleanup`` finalizer counts as there until it is gone."""
    last_seen = [time.monotonic()]
    seen: list[str] = []

    def gone_for_good() -> bool:
        present: list[str] = []
        for resource in (SUBSCRIPTIONS, INSTALL_PLANS, CSVS):
            for namespace in namespaces:
                for obj in kube.list(resource, namespace)[0]:
                    meta = obj["metadata"]
                    if (meta.get("labels") or {}).get("olm.copiedFrom"):
                        continue  # OLM v0 removes the copies with their CSV
                    present.append(f"{resource.kind} {namespace}/{meta['name']}")
                    if not meta.get("deletionTimestamp"):
                        with contextlib.suppress(NotFound):
                            kube.delete(resource, meta["name"], namespace)
        seen[:] = present
        if present:
            last_seen[0] = time.monotonic()
        return time.monotonic() - last_seen[0] >= quiet

    wait_for(
        gone_for_good,
        timeout=240,
        interval=0.5,
        what=f"OLM v0's installs in {namespaces} to stay deleted",
        detail=lambda: seen,
    )


@dataclass
class Case:
    """One bundle in one install mode, installed by one installer."""

    bundle: BundleDir
    mode: str
    namespace: str = ""
    targets: list[str] = field(default_factory=list)
    placeholders: dict[str, str] = field(default_factory=dict)

    def prepare(self, kube: Kube) -> None:
        """Create the install namespace (and the mode's other target namespaces)."""
        self.namespace = unique_name("dif")
        count = {SINGLE: 1, MULTI: 2}.get(self.mode, 0)
        self.targets = [unique_name("tgt") for _ in range(count)]
        for name in [self.namespace, *self.targets]:
            kube.create(
                NAMESPACES,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": session_labels()},
                },
            )
        self.placeholders = {self.namespace: "INSTALL-NS"}
        for i, target in enumerate(self.targets):
            self.placeholders[target] = f"TARGET-NS-{i}"

    def target_list(self) -> list[str] | None:
        """The OperatorGroup's targetNamespaces (None: all namespaces)."""
        if self.mode == ALL:
            return None
        if self.mode == OWN:
            return [self.namespace]
        return list(self.targets)

    def install(self, markers: tuple[list[str], list[str]], owner_values: list[str]) -> Install:
        """What :func:`take` needs to read this case back (``markers``: exact names and
        substrings, :func:`_markers`)."""
        return Install(
            self.namespace,
            list(self.targets),
            names=markers[0],
            markers=markers[1],
            owner_values=owner_values,
            placeholders=self.placeholders,
        )

    def remove_namespaces(self, kube: Kube) -> None:
        """Delete the case's namespaces (not waited for: their names are never reused)."""
        for name in [self.namespace, *self.targets]:
            with contextlib.suppress(NotFound):
                kube.delete(NAMESPACES, name)


def _markers(bundle: BundleDir, *generated: str) -> tuple[list[str], list[str]]:
    """The bundle's own cluster-scoped names (exact), and the prefixes of the names installers
    generate for it (the CSV's and Deployments' names, and ``generated``)."""
    names = [
        o["metadata"]["name"]
        for o in bundle.manifests()
        if o.get("kind") != "ClusterServiceVersion"
    ]
    deployments = [d["name"] for d in bundle.csv["spec"]["install"]["spec"]["deployments"]]
    return names, [*deployments, bundle.name, *generated]


def _apiservices(kube: Kube, bundle: BundleDir) -> list[dict[str, Any]]:
    """The APIServices the bundle's CSV owns, as they are now (``snapshot.take`` reads the
    kinds every real bundle installs; none of those owns an APIService)."""
    owned = (bundle.csv["spec"].get("apiservicedefinitions") or {}).get("owned") or []
    found: list[dict[str, Any]] = []
    for name in sorted({f"{d['version']}.{d['group']}" for d in owned}):
        with contextlib.suppress(NotFound):
            obj = kube.get(APISERVICES, name)
            found.append({**obj, "apiVersion": APISERVICES.api_version, "kind": "APIService"})
    return found


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the snapshot compares it: an APIService's CA bundle differs per run (the
    certificate Secret's keys are compared, and its caBundle is checked by the cluster tests)."""
    if obj.get("kind") != "APIService" or "caBundle" not in (obj.get("spec") or {}):
        return obj
    out = copy.deepcopy(obj)
    out["spec"]["caBundle"] = "<ca>"
    return out


def _in_parallel(cases: list[Case], work: Callable[[Case], None]) -> None:
    errors: list[BaseException] = []

    def run(case: Case) -> None:
        try:
            work(case)
        except BaseException as exc:  # re-raised in the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in cases]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _by_olm(
    olm: OlmV0, address: str, cases: list[Case], serve: Serve | None = None
) -> dict[str, dict[tuple[str, str, str], dict[str, Any]]]:
    """Install every case with OLM v0, read each back, then remove it; return the snapshots.
    ``serve`` runs from the Subscription's creation until the removal is done."""
    before = cluster_names(olm.kube)
    snapshots: dict[str, Any] = {}
    serving = contextlib.ExitStack()

    def install(case: Case) -> None:
        case.prepare(olm.kube)
        source = olm.catalog_source(case.namespace, address)
        og = olm.operator_group(case.namespace, case.target_list())
        case.placeholders[og] = "OPERATOR-GROUP"
        olm.subscription(case.namespace, case.bundle.package, case.bundle.channels[0], source)
        if serve is not None:
            serving.enter_context(serve(olm.kube, case))
        olm.wait_installed(case.namespace, case.bundle.package, timeout=300)
        # The provided-API ClusterRoles and copied CSVs come a moment after Succeeded.
        olm.wait_csv(
            case.namespace,
            case.bundle.name,
            lambda c: bool((c.get("status") or {}).get("phase") == "Succeeded"),
            what="the CSV to stay Succeeded",
        )
        if case.mode == ALL:
            olm.wait_lifted(case.namespace, case.bundle.name)
        objects = take(
            olm.kube,
            case.install(_markers(case.bundle, f"olm.og.{og}."), [case.namespace]),
            before,
        )
        objects += _apiservices(olm.kube, case.bundle)
        snapshots[case.bundle.package] = index(map(_comparable, objects), case.placeholders)
        elsewhere = {case.namespace, *case.targets}
        leftovers[case.bundle.package] = [
            o for o in objects if o["metadata"].get("namespace") not in elsewhere
        ]

    leftovers: dict[str, list[dict[str, Any]]] = {}
    with serving:
        try:
            _in_parallel(cases, install)
        finally:
            _uninstall_olm(olm, [case for case in cases if case.namespace], leftovers)
    return snapshots


def _uninstall_olm(olm: OlmV0, cases: list[Case], leftovers: dict[str, list[Any]]) -> None:
    """Remove what OLM installed: its uninstall (deleting the CSV) leaves the bundle's own
    cluster-scoped objects, the CRDs and its RoleBindings in kube-system behind, so they are
    deleted here (``leftovers``: by package, everything outside the case's namespaces)."""
    _delete_installs_until_gone_for_good(olm.kube, [case.namespace for case in cases])
    crds = [
        str(obj["metadata"]["name"])
        for case in cases
        for obj in case.bundle.manifests()
        if obj.get("kind") == "CustomResourceDefinition"
    ]
    _delete_until_gone_for_good(olm.kube, CRDS, crds)
    for case in cases:
        case.remove_namespaces(olm.kube)
    cluster_scoped = [o for case in cases for o in leftovers.get(case.bundle.package, [])]
    for obj in cluster_scoped:
        resource = olm.kube.resource(obj["apiVersion"], obj["kind"])
        with contextlib.suppress(NotFound):
            olm.kube.delete(resource, obj["metadata"]["name"], obj["metadata"].get("namespace"))
    for obj in cluster_scoped:
        resource = olm.kube.resource(obj["apiVersion"], obj["kind"])
        _wait_gone(olm.kube, resource, obj["metadata"]["name"], obj["metadata"].get("namespace"))


def _by_pivoter(
    pivoter: Pivoter, cases: list[Case], serve: Serve | None = None
) -> dict[str, dict[tuple[str, str, str], dict[str, Any]]]:
    """Install every case with a BundleDeployment, read each back, then remove it. ``serve``
    runs from the BundleDeployment's creation until the removal is done."""
    before = cluster_names(pivoter.kube)
    snapshots: dict[str, Any] = {}
    names: dict[str, str] = {}
    serving = contextlib.ExitStack()

    def install(case: Case) -> None:
        case.prepare(pivoter.kube)
        name = unique_name("dif")
        names[case.bundle.package] = name
        case.placeholders[name] = "BUNDLE-DEPLOYMENT"
        config: dict[str, Any] = {"installNamespace": case.namespace}
        targets = case.target_list()
        config["targetNamespaces"] = [] if targets is None else targets
        sources = pivoter.registry_bundle(unique_name(case.bundle.package[:20]), case.bundle.root)
        pivoter.bundle_deployment(
            name,
            sources,
            provisioner="core-rukpak-io-registry",
            config=config,
            crdDeletionPolicy="Delete",
        )
        if serve is not None:
            serving.enter_context(serve(pivoter.kube, case))
        pivoter.wait(name, "Healthy", "True", timeout=300)
        objects = take(pivoter.kube, case.install(_markers(case.bundle), [name]), before)
        objects += _apiservices(pivoter.kube, case.bundle)
        snapshots[case.bundle.package] = index(map(_comparable, objects), case.placeholders)

    with serving:
        try:
            _in_parallel(cases, install)
        finally:
            pivoter.delete_all()
            for case in cases:
                case.remove_namespaces(pivoter.kube)
    return snapshots


@pytest.fixture
def pivoter(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers running through a Manager (``namespace``: its system
    namespace, where the bundles' ConfigMaps live)."""
    with running_pivoter(
        cluster.kubeconfig, tmp_path / "store", namespace, session_labels()
    ) as running:
        yield running


def _report(mode_round: int, package: str, mode: str, differences: list[Difference]) -> None:
    path = os.environ.get(REPORT)
    if not path:
        return
    with Path(path).open("a") as out:
        for d in differences:
            row = {"round": mode_round, "package": package, "mode": mode, **d.__dict__}
            out.write(json.dumps(row) + "\n")


@pytest.mark.parametrize("mode_round", range(len(ROUNDS)), ids=[f"round{n}" for n in range(4)])
def test_olm_and_pivoter_leave_the_same_objects(
    mode_round: int,
    *,
    olm: OlmV0,
    stubs: None,
    bundles: dict[str, BundleDir],
    olm_catalog: Callable[[list[BundleDir]], str],
    pivoter: Pivoter,
) -> None:
    address = olm_catalog(list(bundles.values()))
    olm_cases = [Case(bundles[p], mode) for p, mode in ROUNDS[mode_round]]
    by_olm = _by_olm(olm, address, olm_cases)
    piv_cases = [Case(bundles[p], mode) for p, mode in ROUNDS[mode_round]]
    by_pivoter = _by_pivoter(pivoter, piv_cases)
    problems: list[str] = []
    for package, mode in ROUNDS[mode_round]:
        assert by_olm[package], f"OLM left nothing for {package}"
        assert by_pivoter[package], f"pivoter left nothing for {package}"
        differences = compare(by_olm[package], by_pivoter[package])
        _report(mode_round, package, mode, differences)
        problems += [f"{package} ({mode}): {d}" for d in undocumented(differences)]
    assert DOCUMENTED is not None
    assert not problems, "differences docs/registry-v1.md does not explain:\n" + "\n".join(problems)


def test_olm_and_pivoter_leave_the_same_objects_for_an_owned_apiservice(
    *,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    pivoter: Pivoter,
    tmp_path: Path,
) -> None:
    """A bundle whose CSV owns an APIService (generated: no real bundle here owns one): the
    APIService, the Service, the certificate Secret and the delegated-authentication bindings
    compare as the real bundles' objects do. Each installer's operator pod is answered for by a
    stand-in aggregated API server (tests/registry_v1_cluster/aggregated.py) at the address
    kwok gave it, with the certificate that installer issued."""
    deployment = unique_name("wardle")
    group = f"{unique_name('wardle')}.pivoter.test"
    wardle = read_bundle(write_bundle(tmp_path / "bundle", deployment=deployment, group=group))

    def serve(kube: Kube, case: Case) -> contextlib.AbstractContextManager[object]:
        return serve_service(
            kube,
            namespace=case.namespace,
            deployment=deployment,
            group=group,
            workdir=tmp_path / f"stand-in-{case.namespace}",
        )

    by_olm = _by_olm(olm, olm_catalog([wardle]), [Case(wardle, OWN)], serve)
    by_pivoter = _by_pivoter(pivoter, [Case(wardle, OWN)], serve)
    olm_side, piv_side = by_olm[wardle.package], by_pivoter[wardle.package]
    for kind in ("APIService", "Service", "Secret", "ClusterRoleBinding", "RoleBinding"):
        assert [k for k in olm_side if k[0] == kind], f"OLM v0 left no {kind}"
        assert [k for k in piv_side if k[0] == kind], f"pivoter left no {kind}"
    differences = compare(olm_side, piv_side)
    _report(len(ROUNDS), wardle.package, OWN, differences)
    problems = [str(d) for d in undocumented(differences)]
    assert not problems, "differences docs/registry-v1.md does not explain:\n" + "\n".join(problems)
