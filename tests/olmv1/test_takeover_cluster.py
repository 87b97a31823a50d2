"""Taking over what operator-controller installed keeps exactly what runs (issue 29).

operator-controller installed ``test.1.0.0``; the catalog has moved on since (channel
1.0.0 -> 1.1.0 -> 1.2.0, where 1.2.0 replaces only 1.1.0). What it left is what the takeover
reads: the objects it applied (here applied with its field manager and owner labels, rendered
from the same bundle by the registry+v1 converter, as its own renderer does; the real
operator-controller cannot be built in CI, see docs/olm-v1.md) and the ClusterExtension's
``status.install.bundle``. pivoter's first revision is that bundle: it needs no approval even
under ``pivoter.io/approval: Manual``, re-creates no object and rolls out no pod; the next
revision is 1.1.0, the step OLM v1 takes from 1.0.0 (``CatalogProvided``), never 1.2.0.

Before the ClusterCatalog exists the extension cannot resolve; pivoter's status writes in that
time keep ``status.install`` as operator-controller recorded it (it is still installed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import CLUSTER_EXTENSIONS
from pivoter.kube.apply import apply
from provisioners.formats.registry_v1 import RegistryV1
from tests.cluster import wait_for
from tests.olmv1.conftest import Olm, condition
from tests.olmv1.content import Bundle, Package, bundle_files
from tests.olmv1.test_beyond_cluster import with_annotations
from tests.olmv1.test_install_update_cluster import CE

pytestmark = pytest.mark.cluster

MOVED_ON = [
    Package(
        "test",
        [
            Bundle("1.0.0"),
            Bundle("1.1.0", replaces="1.0.0"),
            Bundle("1.2.0", replaces="1.1.0"),
        ],
    )
]
OWNER_LABELS = {"olm.operatorframework.io/owner-kind": "ClusterExtension"}


def _install_as_operator_controller(olm: Olm, tmp_path: Path) -> list[dict[str, Any]]:
    """Apply bundle ``test.1.0.0`` as operator-controller would have (its field manager and
    owner labels); return the objects as stored."""
    root = tmp_path / "bundle"
    for path, text in bundle_files(olm.scenario, "test", MOVED_ON[0].bundles[0]).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    converted = RegistryV1().convert_bundle(root, {"installNamespace": olm.test_namespace})
    stored = []
    for obj in converted.objects:
        labels = {**OWNER_LABELS, "olm.operatorframework.io/owner-name": olm.name}
        obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        stored.append(apply(olm.kube, obj, field_manager="operator-controller", force=True))
    return stored


def _replica_sets(olm: Olm, deployment: dict[str, Any]) -> set[str]:
    uid = deployment["metadata"]["uid"]
    items, _ = olm.kube.list(olm.kube.resource("apps/v1", "ReplicaSet"), olm.test_namespace)
    return {
        rs["metadata"]["name"]
        for rs in items
        if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
    }


def test_a_takeover_keeps_the_installed_bundle_and_steps_from_it_as_olm_v1_would(
    olm: Olm, tmp_path: Path
) -> None:
    stored = _install_as_operator_controller(olm, tmp_path)
    deployments = olm.kube.resource("apps/v1", "Deployment")
    deployment = next(o for o in stored if o["kind"] == "Deployment")
    name = deployment["metadata"]["name"]
    before_rs = wait_for(
        lambda: _replica_sets(olm, olm.kube.get(deployments, name, olm.test_namespace)),
        timeout=60,
        what="the Deployment's ReplicaSet",
    )
    uids = {(o["kind"], o["metadata"]["name"]): o["metadata"]["uid"] for o in stored}

    # The extension as operator-controller left it, its catalog not there yet.
    olm.catalogs["test"] = f"test-catalog-{olm.scenario}"
    olm.apply(
        with_annotations(
            CE, **{"pivoter.io/adopt-existing": "true", "pivoter.io/approval": "Manual"}
        )
    )
    olm.wait(lambda o: (o.get("status") or {}).get("observedGeneration") == 1, what="a pass")
    olm.kube.patch_status(
        CLUSTER_EXTENSIONS,
        olm.name,
        {"install": {"bundle": {"name": "test.1.0.0", "version": "1.0.0"}}},
    )
    # pivoter's passes before the catalog serves keep what operator-controller recorded.
    olm.kube.merge_patch(
        CLUSTER_EXTENSIONS, olm.name, {"metadata": {"annotations": {"pivoter.io/retry-now": "1"}}}
    )
    kept = olm.wait(
        lambda o: condition(o, "Installed").get("status") == "True",
        what="Installed kept from the record",
    )
    assert kept["status"]["install"]["bundle"] == {"name": "test.1.0.0", "version": "1.0.0"}

    olm.catalog("test", MOVED_ON)
    # Revision 1 is the running bundle, installed without approval though approval is Manual;
    # revision 2 is 1.1.0 and waits for approval.
    waiting = olm.wait(
        lambda o: ((o.get("status") or {}).get("pendingPlan") or {}).get("revision") == 2,
        what="revision 2 planned",
        timeout=180,
    )
    assert waiting["status"]["install"]["bundle"] == {"name": "test.1.0.0", "version": "1.0.0"}
    assert waiting["status"]["activeRevision"] == 1
    plan = waiting["status"]["pendingPlan"]
    assert [(c["package"], c["toVersion"]) for c in plan["changed"]] == [("test", "1.1.0")]
    assert condition(waiting, "Progressing")["reason"] == "Blocked"

    after = olm.kube.get(deployments, name, olm.test_namespace)
    assert after["metadata"]["uid"] == deployment["metadata"]["uid"]
    assert _replica_sets(olm, after) == before_rs, "the takeover rolled the pods out"
    for (kind, obj_name), uid in uids.items():
        namespace = olm.test_namespace if kind not in CLUSTER_KINDS else None
        current = olm.kube.get(olm.kube.resource(_api(stored, kind), kind), obj_name, namespace)
        assert current["metadata"]["uid"] == uid, f"{kind} {obj_name} was re-created"

    olm.kube.merge_patch(
        CLUSTER_EXTENSIONS,
        olm.name,
        {"metadata": {"annotations": {"pivoter.io/approved-revision": "2"}}},
    )
    olm.bundle_installed("test.1.1.0", "1.1.0")


CLUSTER_KINDS = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


def _api(stored: list[dict[str, Any]], kind: str) -> str:
    return str(next(o["apiVersion"] for o in stored if o["kind"] == kind))
