"""``pivoter adopt --undo`` SIGKILLed at each step of the hand-back and run again, against the
real OLM v0: every run finds the interrupted undo and goes on from the step it recorded, and
the last one converges. The operator is OLM v0's again (its CSV Succeeded, the same Deployment
and ReplicaSets), and nothing of pivoter is left: no BundleDeployment, no Resolution, no object
carrying pivoter's owner labels. At every kill, no child BundleDeployment whose deletion would
uninstall the operator is left without its Resolution.

Each undo run is a process of its own: this module run as ``python -m
tests.olmv0.test_undo_crash_cluster STEP adopt ...`` is the real ``pivoter`` command line
(:func:`pivoter.cli.main.main`) with :func:`pivoter.olmv0.undo.step_hook` SIGKILLing the process
right after it recorded STEP (the product reads no test switch). Each operator's undo is killed
at every step in turn, each run resuming the one killed before it; three real bundles
(OwnNamespace, AllNamespaces, one with webhooks and certificates) are handed back side by side.
The Resolution controllers run in this process (the ``env`` fixture).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, RESOLUTIONS
from pivoter.controllers.uninstall import FINALIZER as UNINSTALL_FINALIZER
from pivoter.kube import NotFound
from pivoter.olmv0 import undo
from pivoter.olmv0.resources import LABEL_OWNER
from tests.cluster import TestCluster
from tests.inputs.conftest import Env
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_adopt_cluster import (
    CLUSTER,
    NAMESPACED,
    NAMESPACES,
    Adoption,
    _adopt,
    _cluster_scoped,
    _deployments,
    _in_parallel,
    _namespace,
    _pivoter_catalog,
    _pods,
    _replica_sets,
    _wait_settled,
)
from tests.registry_v1.helpers import bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.slow, pytest.mark.timeout(1500)]

PACKAGES = {"aqua": True, "bpfman-operator": False, "kube-green": False}
"""The bundles handed back, and whether each is installed OwnNamespace (else AllNamespaces)."""
STEPS = (undo.STOPPING, undo.DETACHING, undo.RETURNING, undo.CLEANING)
PIVOTER_LABELS = ("core.rukpak.io/owner-kind", "core.rukpak.io/owner-name")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _killed_undo(cluster: TestCluster, step: str, subscription: str) -> subprocess.Popen[str]:
    """``pivoter adopt --undo`` in a process that SIGKILLs itself once it recorded ``step``."""
    argv = [sys.executable, "-m", "tests.olmv0.test_undo_crash_cluster", step, "adopt"]
    argv += ["--kubeconfig", str(cluster.kubeconfig), "--subscription", subscription, "--undo"]
    return subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _resolution_gone_means_inert(env: Env, a: Adoption) -> None:
    """(b): once the Resolution is deleted (or being deleted), every child that installed the
    operator is inert: being deleted, without the uninstall finalizer."""
    try:
        res = env.kube.get(RESOLUTIONS, a.resolution)
    except NotFound:
        res = None
    if res is not None and not res["metadata"].get("deletionTimestamp"):
        return
    for bd in env.kube.list(BUNDLE_DEPLOYMENTS)[0]:
        meta = bd["metadata"]
        ours = (meta.get("labels") or {}).get(undo.LABEL_UNDO) == a.resolution
        if ours or meta["name"].startswith(a.resolution):
            assert meta.get("deletionTimestamp"), f"{meta['name']} still installs"
            assert UNINSTALL_FINALIZER not in (meta.get("finalizers") or []), meta["name"]


def _pivoter_labelled(env: Env, a: Adoption, inventory: list[dict[str, Any]]) -> list[str]:
    """What the adoption's children installed (and anything else in its namespace or labelled
    for them) that still carries pivoter's owner labels."""
    found = set()
    for resource in [*NAMESPACED, *CLUSTER]:
        where = a.namespace if resource.namespaced else None
        for obj in env.kube.list(resource, where)[0]:
            labels = obj["metadata"].get("labels") or {}
            mine = resource.namespaced or labels.get(PIVOTER_LABELS[1], "").startswith(a.resolution)
            if mine and any(k in labels for k in PIVOTER_LABELS):
                found.add(f"{resource.kind} {obj['metadata']['name']}")
    for ref in inventory:
        resource = env.kube.resource(ref["apiVersion"], ref["kind"])
        try:
            obj = env.kube.get(resource, ref["name"], ref.get("namespace") or None)
        except NotFound:
            continue
        if any(k in (obj["metadata"].get("labels") or {}) for k in PIVOTER_LABELS):
            found.add(f"{ref['kind']} {ref['name']}")
    return sorted(found)


def _generated_rbac(env: Env, a: Adoption) -> dict[str, int]:
    """How many RBAC objects OLM v0 generated from the CSV's permissions it owns, by kind."""
    counts = {}
    for resource in [r for r in [*NAMESPACED, *CLUSTER] if r.kind in undo.RBAC_KINDS]:
        where = a.namespace if resource.namespaced else None
        selector = f"{LABEL_OWNER}={a.csv},{undo.LABEL_PERMISSIONS_HASH}"
        counts[resource.kind] = len(env.kube.list(resource, where, label_selector=selector)[0])
    return counts


def _olm_marked(obj: dict[str, Any]) -> bool:
    meta = obj["metadata"]
    owners = meta.get("ownerReferences") or []
    return LABEL_OWNER in (meta.get("labels") or {}) or any(
        o.get("kind") == "ClusterServiceVersion" for o in owners
    )


class _Timeline(logging.Handler):
    """The daemon's log lines and the test's steps, timed: what an unmarked object's report
    carries, so that a failure says who wrote it and when."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.note(f"{record.name}: {record.getMessage()}", record.created)

    def note(self, text: str, at: float | None = None) -> None:
        stamp = dt.datetime.fromtimestamp(at or time.time(), dt.UTC)
        self.lines.append(f"{stamp:%H:%M:%S.%f} {text}")

    def about(self, fragment: str, limit: int = 40) -> list[str]:
        return [line for line in self.lines if fragment in line][-limit:]


@pytest.fixture
def timeline() -> Iterator[_Timeline]:
    handler = _Timeline()
    logger = logging.getLogger("pivoter")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_sigkill_at_every_undo_step_converges(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
    timeline: _Timeline,
) -> None:
    bundles = {package: read_bundle(bundle(package)) for package in PACKAGES}
    address = olm_catalog(list(bundles.values()))
    _pivoter_catalog(env, list(bundles.values()))
    adoptions = [Adoption(b) for b in bundles.values()]
    inventories: dict[str, list[dict[str, Any]]] = {}
    generated_before: dict[str, dict[str, int]] = {}
    report: dict[str, dict[str, Any]] = {}

    def install_and_adopt(a: Adoption) -> None:
        a.namespace = _namespace(env)
        own = PACKAGES[a.bundle.package]
        olm.operator_group(a.namespace, [a.namespace] if own else None)
        source = olm.catalog_source(a.namespace, address)
        olm.subscription(a.namespace, a.bundle.package, a.bundle.channels[0], source)
        a.csv = olm.wait_installed(a.namespace, a.bundle.package, timeout=300)
        if not own:
            olm.wait_lifted(a.namespace, a.csv)
        _wait_settled(env, a.namespace, _cluster_scoped(a.bundle))
        a.deployments = _deployments(env, a.namespace)
        a.replica_sets = _replica_sets(env, a.namespace)
        a.pods = _pods(env, a.namespace)
        generated_before[a.bundle.package] = _generated_rbac(env, a)
        sub = f"{a.namespace}/{a.bundle.package}"
        done = _adopt(cluster, "--subscription", sub, "--timeout", "300")
        assert done.returncode == 0, f"{a.bundle.package}: {done.stderr}{done.stdout}"
        (child,) = env.children(a.resolution).values()
        inventories[a.bundle.package] = child["status"]["inventory"]

    _in_parallel(adoptions, install_and_adopt)

    def hand_back(a: Adoption) -> None:
        sub = f"{a.namespace}/{a.bundle.package}"
        for step in STEPS:
            process = _killed_undo(cluster, step, sub)
            out, err = process.communicate(timeout=400)
            timeline.note(f"test: the undo of {sub} ({a.resolution}) killed at {step}")
            assert process.returncode == -signal.SIGKILL, f"{sub} at {step}: {err}{out}"
            (target,) = undo.undo_targets(env.kube, a.namespace, a.bundle.package)
            assert target.step == step, f"{sub}: killed at {step}, found {target}"
            assert target.starting_csv == a.csv
            _resolution_gone_means_inert(env, a)
        done = _adopt(cluster, "--subscription", sub, "--undo", "--timeout", "300")
        timeline.note(f"test: the undo of {sub} ({a.resolution}) returned {done.returncode}")
        assert done.returncode == 0, f"{sub}: {done.stderr}{done.stdout}"
        assert f"handed back: Subscription {sub} runs CSV {a.csv} again" in done.stdout

    _in_parallel(adoptions, hand_back)

    for a in adoptions:
        package = a.bundle.package
        assert olm.wait_installed(a.namespace, package) == a.csv
        _wait_settled(env, a.namespace, _cluster_scoped(a.bundle))
        with pytest.raises(NotFound):
            env.kube.get(RESOLUTIONS, a.resolution)
        left = [
            bd["metadata"]["name"]
            for bd in env.kube.list(BUNDLE_DEPLOYMENTS)[0]
            if bd["metadata"]["name"].startswith(a.resolution)
            # Another test's hand-back on the same control plane is not this one's leftover.
            or (bd["metadata"].get("labels") or {}).get(undo.LABEL_UNDO) == a.resolution
        ]
        assert left == [], f"{package}: BundleDeployments left: {left}"
        assert _pivoter_labelled(env, a, inventories[package]) == [], package
        assert undo.undo_targets(env.kube, a.namespace) == []
        now = _deployments(env, a.namespace)
        for name, deployment in now.items():
            assert deployment["metadata"]["uid"] == a.deployments[name]["metadata"]["uid"], name
            assert deployment["metadata"]["labels"][LABEL_OWNER] == a.csv, name
        # Owned by OLM v0 alone: what pivoter had installed and still exists carries its marks
        # (CRDs are OLM v0's through the InstallPlan, never labelled).
        unmarked = []
        for ref in inventories[package]:
            if ref["kind"] == "CustomResourceDefinition":
                continue
            resource = env.kube.resource(ref["apiVersion"], ref["kind"])
            try:
                obj = env.kube.get(resource, ref["name"], ref.get("namespace") or None)
            except NotFound:
                continue
            if not _olm_marked(obj):
                writers = [
                    f"{m.get('manager')}:{m.get('operation')}@{m.get('time')}"
                    for m in obj["metadata"].get("managedFields") or []
                ]
                owners = obj["metadata"].get("ownerReferences")
                unmarked.append(f"{ref['kind']} {ref['name']} (written by {writers}; {owners})")
                unmarked += timeline.about(a.resolution)
        generated = _generated_rbac(env, a)
        report[package] = {
            "generatedRbac": generated == generated_before[package] or generated,
            "replicaSetsKept": _replica_sets(env, a.namespace) == a.replica_sets,
            "podsKept": _pods(env, a.namespace) == a.pods,
            "newReplicaSets": sorted(set(_replica_sets(env, a.namespace)) - set(a.replica_sets)),
            "notMarkedByOlm": unmarked,
        }
    print(f"undo measurements: {report}")
    for package, measured in report.items():
        assert measured["replicaSetsKept"], f"{package}: a rollout: {measured}"
        assert measured["notMarkedByOlm"] == [], f"{package}: objects nobody manages: {measured}"
        assert measured["generatedRbac"] is True, f"{package}: generated RBAC twice: {measured}"
    for a in adoptions:
        olm.kube.delete(SUBSCRIPTIONS, a.bundle.package, a.namespace)
        olm.kube.delete(CSVS, a.csv, a.namespace)
        env.kube.delete(NAMESPACES, a.namespace)


def _main(argv: list[str]) -> int:
    """``pivoter ARGV[1:]``, SIGKILLed right after the undo recorded step ``ARGV[0]``."""
    from pivoter.cli.main import main

    step = argv[0]

    def stop(recorded: str) -> None:
        if recorded == step:
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    with undo.step_hook(stop):
        return main(argv[1:])


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
