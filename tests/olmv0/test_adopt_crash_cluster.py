"""The adoption controller (``pivoter run --adopt-olmv0``) SIGKILLed at each step of an
adoption, restarted, and converging: the operator adopted, every object it had kept (same uid),
owned by pivoter's child alone, and OLM v0's Subscription and CSV gone.

The daemon runs as a subprocess (through :mod:`tests.e2e.hooked`) with the test hook
``PIVOTER_TEST_PAUSE_ADOPTION_AT=<step>``
(the adoption blocks right after recording that step); the test waits until the Resolution shows
the step, kills the daemon, starts it again without the hook and waits for ``Adopted``. Each step
adopts a different real bundle (their CRDs are cluster-wide, so each is installed once).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import NotFound
from pivoter.olmv0 import handover
from pivoter.olmv0.adoptrequests import ANNOTATION_ADOPT
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, resolution_name
from pivoter.olmv0.resources import LABEL_OWNER
from tests.cluster import TestCluster, wait_for
from tests.e2e import hooked
from tests.e2e.daemon import Daemon
from tests.inputs.conftest import Env
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_adopt_cluster import (
    CLUSTER,
    NAMESPACED,
    NAMESPACES,
    _adopt,
    _cluster_scoped,
    _namespace,
    _pivoter_catalog,
    _uids,
)
from tests.registry_v1.helpers import bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(900)]

# One bundle per step (OwnNamespace, AllNamespaces, and one with webhooks and certificates).
STEPS = [
    (handover.PLANNING, "aqua", ["aqua"]),
    (handover.INSTALLING, "bpfman-operator", None),
    (handover.RELEASING, "kube-green", None),
]


@pytest.fixture
def daemon(cluster: TestCluster, content: Env, tmp_path: Path) -> Iterator[Daemon]:
    """A ``pivoter run --adopt-olmv0`` subprocess (not started) on the test's namespace."""
    process = Daemon(
        cluster.kubeconfig,
        namespace=content.namespace,
        store_dir=tmp_path / "daemon-store",
        log=tmp_path / "daemon.log",
        webhook=False,
        extra_args=["--adopt-olmv0"],
        hooked=True,
    )
    yield process
    process.stop()


def _start_paused(daemon: Daemon, step: str) -> None:
    daemon.stop()
    daemon.start(env={hooked.PAUSE_ADOPTION_AT: step})


def test_sigkill_at_every_adoption_step_converges(
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    content: Env,
    daemon: Daemon,
) -> None:
    env = content
    bundles = {package: read_bundle(bundle(package)) for _, package, _ in STEPS}
    address = olm_catalog(list(bundles.values()))
    _pivoter_catalog(env, list(bundles.values()))
    for step, package, own in STEPS:
        b = bundles[package]
        namespace = _namespace(env)
        source = olm.catalog_source(namespace, address)
        olm.operator_group(namespace, [namespace] if own else None)
        olm.subscription(namespace, b.package, b.channels[0], source)
        csv = olm.wait_installed(namespace, b.package)
        crds = _cluster_scoped(b)
        before = _uids(env, namespace, crds)
        name = resolution_name(namespace, b.package)

        _start_paused(daemon, step)
        env.kube.merge_patch(
            SUBSCRIPTIONS,
            b.package,
            {"metadata": {"annotations": {ANNOTATION_ADOPT: "true"}}},
            namespace,
        )

        def at(expected: str = step, res: str = name) -> bool:
            try:
                obj = env.kube.get(RESOLUTIONS, res)
            except NotFound:
                return False
            return (obj["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION) == expected

        wait_for(at, timeout=180, what=f"the adoption of {package} held in {step}")
        os.kill(daemon.pid, signal.SIGKILL)
        assert daemon.process is not None
        daemon.process.wait(10)
        daemon.start()
        wait_for(
            lambda res=name: at(handover.ADOPTED, res),
            timeout=300,
            what=f"the adoption of {package} to finish after a SIGKILL in {step}",
            detail=daemon.tail,
        )
        env.created.append((RESOLUTIONS, name))
        for resource, obj in ((SUBSCRIPTIONS, b.package), (CSVS, csv)):
            with pytest.raises(NotFound):
                env.kube.get(resource, obj, namespace)
        (child,) = env.children(name).values()
        inventory = {
            (r["kind"], f"{r['namespace']}/{r['name']}" if r["namespace"] else r["name"])
            for r in child["status"]["inventory"]
        }
        after = _uids(env, namespace, crds)
        kept = {k: v for k, v in before.items() if k in inventory}
        assert kept
        assert {k: after.get(k) for k in kept} == kept, f"{package}: re-created objects"
        for kind, where in inventory:
            resource = next(r for r in [*NAMESPACED, *CLUSTER] if r.kind == kind)
            ns, _, obj_name = where.rpartition("/")
            obj = env.kube.get(resource, obj_name, ns or None)
            labels = obj["metadata"].get("labels") or {}
            assert labels.get("core.rukpak.io/owner-name") == child["metadata"]["name"], where
            assert LABEL_OWNER not in labels, where
    env.cleanup()


def test_an_adoption_stopped_past_its_point_of_no_return_is_handed_back(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    content: Env,
    daemon: Daemon,
) -> None:
    """An adoption that will not go on after OLM v0 let go (here held at Installing, as a
    failed pivot would leave it) is given back with ``pivoter adopt --undo``: the handover stops,
    OLM v0's Subscription is there again and its CSV runs the operator, nothing of pivoter is
    left, and the Deployment was never re-created."""
    env = content
    b = read_bundle(bundle("aqua"))
    address = olm_catalog([b])
    _pivoter_catalog(env, [b])
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, address)
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, b.package, b.channels[0], source)
    csv = olm.wait_installed(namespace, b.package)
    deployments = env.kube.resource("apps/v1", "Deployment")
    before = env.kube.get(deployments, "aqua-operator", namespace)["metadata"]["uid"]
    name = resolution_name(namespace, b.package)
    _start_paused(daemon, handover.INSTALLING)
    env.kube.merge_patch(
        SUBSCRIPTIONS,
        b.package,
        {"metadata": {"annotations": {ANNOTATION_ADOPT: "true"}}},
        namespace,
    )

    def held() -> bool:
        try:
            res = env.kube.get(RESOLUTIONS, name)
        except NotFound:
            return False
        step = (res["metadata"].get("annotations") or {}).get(ANNOTATION_ADOPTION)
        return step == handover.INSTALLING

    wait_for(held, timeout=180, what="the adoption held at Installing")
    handed = _adopt(
        cluster, "--subscription", f"{namespace}/{b.package}", "--undo", "--timeout", "300"
    )
    assert handed.returncode == 0, handed.stderr + handed.stdout
    assert env.kube.get(SUBSCRIPTIONS, b.package, namespace)
    assert env.kube.get(CSVS, csv, namespace)["status"]["phase"] == "Succeeded"
    with pytest.raises(NotFound):
        env.kube.get(RESOLUTIONS, name)
    assert env.children(name) == {}
    assert env.kube.get(deployments, "aqua-operator", namespace)["metadata"]["uid"] == before
    daemon.stop()
    env.kube.delete(NAMESPACES, namespace)
