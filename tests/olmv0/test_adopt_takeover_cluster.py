"""What an adoption from the real OLM v0 keeps, and what it checks before OLM v0 lets go
(issue 29).

* A Manual Subscription whose catalog moved on after the install (installed N; channel
  N -> N+1 -> N+2, where N+2 replaces only N+1), with OLM v0's upgrade InstallPlan to N+1
  waiting for an approval nobody gave: the adoption asks no approval, keeps N (no object
  re-created, no rollout), and the next revision is N+1 (the step OLM v0 takes), waiting for
  approval; approved, it installs N+1.
* A bundle whose image needs credentials nobody gave: the adoption pulls it before deleting
  anything, fails there, and OLM v0 still manages the operator (Subscription and CSV in place,
  the reason on the Subscription); with the credentials the same adoption succeeds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import Conflict, NotFound
from pivoter.olmv0.handover import ANNOTATION_FAILED
from pivoter.olmv0.mapping import resolution_name
from pivoter.olmv0.resources import INSTALL_PLANS
from tests.cluster import TestCluster, wait_for
from tests.inputs.conftest import Env, is_
from tests.inputs.test_registries_cluster import (
    GLOBAL,
    PASSWORD,
    Private,
    private,
    private_registry,
)
from tests.olmv0.content import BundleDir, new_version, read_bundle
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_adopt_cluster import (
    DEPLOYMENTS,
    NAMESPACES,
    _adopt,
    _namespace,
    _next_patch,
    _pivoter_catalog,
    _pods,
    _replica_sets,
    _wait_settled,
)
from tests.registry_v1.helpers import bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(900)]
__all__ = ["private", "private_registry"]  # the fixtures of tests/inputs/test_registries_cluster


def _moved_on(tmp_path: Path) -> tuple[BundleDir, BundleDir, BundleDir]:
    """aqua N, N+1 replacing N, N+2 replacing only N+1."""
    installed = read_bundle(bundle("aqua"))
    first = new_version(installed, _next_patch(installed.version), tmp_path / "a", env={"S": "1"})
    second = new_version(first, _next_patch(first.version), tmp_path / "b", env={"S": "2"})
    return installed, first, second


def _approve_until_installed(env: Env, olm: OlmV0, namespace: str, package: str, csv: str) -> None:
    """Approve the InstallPlans that install ``csv`` (a Manual Subscription's first install)
    until OLM v0 has installed it: OLM v0 may replace a plan it was still writing when the
    approval landed (its own update then conflicts and it makes a new one)."""

    def installed() -> bool:
        for p in env.kube.list(INSTALL_PLANS, namespace)[0]:
            spec = p.get("spec") or {}
            if csv in (spec.get("clusterServiceVersionNames") or []) and not spec.get("approved"):
                with contextlib.suppress(Conflict, NotFound):
                    env.kube.merge_patch(
                        INSTALL_PLANS,
                        p["metadata"]["name"],
                        {"spec": {"approved": True}},
                        namespace,
                    )
        sub = env.kube.get(SUBSCRIPTIONS, package, namespace)
        if (sub.get("status") or {}).get("installedCSV") != csv:
            return False
        try:
            found = env.kube.get(CSVS, csv, namespace)
        except NotFound:
            return False
        return bool((found.get("status") or {}).get("phase") == "Succeeded")

    wait_for(installed, timeout=180, interval=2.0, what=f"OLM v0 to install {csv}")


def test_a_manual_subscription_keeps_what_runs_and_steps_as_olm_v0_would(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    private: Private,
    tmp_path: Path,
) -> None:
    env = private.env
    installed, first, second = _moved_on(tmp_path)
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, olm_catalog([installed, first, second]))
    olm.operator_group(namespace, [namespace])
    olm.subscription(
        namespace,
        installed.package,
        installed.channels[0],
        source,
        installPlanApproval="Manual",
        startingCSV=installed.name,
    )
    # (not olm.wait_installed: it waits for every InstallPlan to finish, and the upgrade's waits)
    _approve_until_installed(env, olm, namespace, installed.package, installed.name)

    def upgrade_waits() -> bool:
        return any(
            first.name in ((p.get("spec") or {}).get("clusterServiceVersionNames") or [])
            and (p.get("status") or {}).get("phase") == "RequiresApproval"
            for p in env.kube.list(INSTALL_PLANS, namespace)[0]
        )

    wait_for(upgrade_waits, timeout=120, what=f"OLM v0's upgrade to {first.name} to wait")
    _wait_settled(env, namespace, [])
    deployment = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    replica_sets, pods = _replica_sets(env, namespace), _pods(env, namespace)

    private.secret(GLOBAL, PASSWORD)
    _pivoter_catalog(env, [installed, first, second])
    name = resolution_name(namespace, installed.package)
    adopted = _adopt(
        cluster, "--subscription", f"{namespace}/{installed.package}", "--timeout", "300"
    )
    env.created.append((RESOLUTIONS, name))
    assert adopted.returncode == 0, adopted.stderr + adopted.stdout
    assert "approve" not in adopted.stderr.lower()

    res = env.wait(
        name,
        lambda o: ((o.get("status") or {}).get("pendingPlan") or {}).get("revision") == 2,
        what="the next revision planned",
        timeout=120,
    )
    assert res["spec"]["approval"] == "Manual"
    assert res["status"]["activeRevision"] == 1
    assert [s["bundle"] for s in res["status"]["selection"]] == [first.name]
    changed = res["status"]["pendingPlan"]["changed"]
    assert [(c["fromVersion"], c["toVersion"]) for c in changed] == [
        (installed.version, first.version)
    ]
    assert is_(res, "Progressing", "False")
    (child,) = env.children(name).values()
    assert child["metadata"]["annotations"]["pivoter.io/version"] == installed.version
    now = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    assert now["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert _replica_sets(env, namespace) == replica_sets, "the adoption rolled the pods out"
    assert _pods(env, namespace) == pods

    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"approvedRevision": 2}})
    env.wait(
        name,
        lambda o: is_(o, "Installed", "True") and o["status"].get("activeRevision") == 2,
        what=f"the approved upgrade to {first.name}",
        timeout=240,
    )
    (child,) = env.children(name).values()
    assert child["metadata"]["annotations"]["pivoter.io/version"] == first.version
    # And the step after it waits for approval in turn (N+2 replaces N+1).
    res = env.wait(
        name,
        lambda o: ((o.get("status") or {}).get("pendingPlan") or {}).get("revision") == 3,
        what="the revision after the approved one planned",
    )
    changed = res["status"]["pendingPlan"]["changed"]
    assert [c["toVersion"] for c in changed] == [second.version]
    env.cleanup()
    env.kube.delete(NAMESPACES, namespace)


def test_a_bundle_that_cannot_be_pulled_is_refused_before_olm_v0_lets_go(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    private: Private,
) -> None:
    env = private.env
    aqua = read_bundle(bundle("aqua"))
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, olm_catalog([aqua]))
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, aqua.package, aqua.channels[0], source)
    olm.wait_installed(namespace, aqua.package)
    _pivoter_catalog(env, [aqua])  # its image is in the htpasswd registry; no credential yet
    name = resolution_name(namespace, aqua.package)
    refused = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--timeout", "300")
    assert refused.returncode == 1, refused.stderr + refused.stdout
    assert f"{aqua.name} cannot be taken over" in refused.stderr
    assert "OLM v0 still manages the operator" in refused.stderr
    # Nothing was changed: OLM v0's Subscription and CSV are there, the reason is on the
    # Subscription, and no Resolution or child is left.
    subscription = env.kube.get(SUBSCRIPTIONS, aqua.package, namespace)
    assert "cannot be taken over" in subscription["metadata"]["annotations"][ANNOTATION_FAILED]
    assert env.kube.get(CSVS, aqua.name, namespace)["status"]["phase"] == "Succeeded"
    with pytest.raises(NotFound):
        env.get(name)
    assert env.children(name) == {}

    private.secret(GLOBAL, PASSWORD)
    adopted = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--timeout", "300")
    env.created.append((RESOLUTIONS, name))
    assert adopted.returncode == 0, adopted.stderr + adopted.stdout
    with pytest.raises(NotFound):
        env.kube.get(SUBSCRIPTIONS, aqua.package, namespace)
    private.never_shown(env.get(name))
    env.cleanup()
    env.kube.delete(NAMESPACES, namespace)
