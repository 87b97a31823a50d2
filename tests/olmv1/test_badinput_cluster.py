"""Bad input to ClusterExtensions: the conditions say what is wrong, and nothing installed is lost.

Unknown package, a range nothing matches, a catalog that is unavailable (its mode, an image that
cannot be pulled, deleted), a second ClusterExtension for the same package, deletion while
installing; and operator-controller's ``recover.feature`` and ``uninstall.feature`` scenarios,
each named where it is mirrored.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, CLUSTER_EXTENSIONS
from pivoter.kube import NotFound
from pivoter.kube.events import EVENTS
from tests.olmv1.conftest import Olm, condition, reports
from tests.olmv1.content import Bundle, Package
from tests.olmv1.test_install_update_cluster import CE
from tests.polling import wait_for

pytestmark = pytest.mark.cluster

TEST = [Package("test", [Bundle("1.0.0"), Bundle("1.2.0", replaces="1.0.0")])]


def _configmap(olm: Olm) -> dict[str, object] | None:
    try:
        return olm.kube.get(
            olm.kube.resource("v1", "ConfigMap"),
            f"test-configmap-{olm.scenario}-test",
            olm.test_namespace,
        )
    except NotFound:
        return None


def _not_installed(olm: Olm, name: str = "") -> None:
    ce = olm.get(name)
    installed = condition(ce, "Installed")
    assert (installed["status"], installed["reason"]) == ("False", "Failed")
    assert installed["message"] == "No bundle installed"
    assert "install" not in ce["status"]
    bundle = condition(ce, "BundleDeprecated")
    assert (bundle["status"], bundle["reason"]) == ("Unknown", "Absent")
    assert condition(ce, "Deprecated")["reason"] == "DeprecationStatusUnknown"


def test_unknown_package(olm: Olm) -> None:
    """OLM v1's words: ``no bundles found for package "nope"``, Progressing True/Retrying."""
    olm.catalog("test", TEST)
    olm.apply(CE.replace("${PACKAGE:test}", "nope"))
    olm.reports(
        "Progressing", "True", "Retrying", 'no bundles found for package "nope"', exact=True
    )
    _not_installed(olm)


def test_version_range_matching_nothing(olm: Olm) -> None:
    olm.catalog("test", TEST)
    olm.apply(CE.rstrip("\n") + '\n      version: ">=9.0.0, <10"\n')
    olm.reports(
        "Progressing",
        "True",
        "Retrying",
        'no bundles found for package "test" matching version ">=9.0.0, <10"',
        exact=True,
    )
    _not_installed(olm)


def test_invalid_range_is_refused_by_the_api_server(olm: Olm) -> None:
    """Upstream's CEL rule on ``version`` (copied with the schema) refuses it at admission."""
    olm.catalog("test", TEST)
    with pytest.raises(Exception, match="invalid version expression"):
        olm.apply(CE.rstrip("\n") + "\n      version: not-a-range\n")


def test_unavailable_catalog_then_available(olm: Olm) -> None:
    """``availabilityMode: Unavailable``: the catalog is treated as absent (no bundle found); once
    Available again, the extension installs."""
    name = olm.catalog("test", TEST, availabilityMode="Unavailable")
    olm.wait(
        lambda o: reports(o, "Serving", "False", "UserSpecifiedUnavailable"),
        what="unavailable",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    olm.apply(CE)
    olm.reports("Progressing", "True", "Retrying", 'no bundles found for package "test"')
    _not_installed(olm)
    olm.kube.merge_patch(CLUSTER_CATALOGS, name, {"spec": {"availabilityMode": "Available"}})
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()


def test_catalog_made_unavailable_after_install_loses_nothing(olm: Olm) -> None:
    name = olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.kube.merge_patch(CLUSTER_CATALOGS, name, {"spec": {"availabilityMode": "Unavailable"}})
    ce = olm.reports("Progressing", "True", "Retrying", 'no bundles found for package "test"')
    assert condition(ce, "Installed")["status"] == "True"
    assert ce["status"]["install"]["bundle"] == {"name": "test.1.2.0", "version": "1.2.0"}
    assert _configmap(olm) is not None
    assert condition(ce, "Deprecated")["status"] == "Unknown"


def test_catalog_image_gone_after_install_keeps_serving(olm: Olm) -> None:
    """The catalog's image reference moves to one that cannot be pulled: the ClusterCatalog says
    so (Progressing True/Retrying) and keeps serving its last content, so the extension stays
    rolled out."""
    name = olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.kube.merge_patch(
        CLUSTER_CATALOGS,
        name,
        {"spec": {"source": {"image": {"ref": f"{olm.registry.host}/e2e/gone:v9"}}}},
    )
    catalog = olm.wait(
        lambda o: reports(o, "Progressing", "True", "Retrying"),
        what="Retrying",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    assert condition(catalog, "Serving")["status"] == "True"
    time.sleep(2)
    ce = olm.rolled_out()
    assert condition(ce, "Installed")["status"] == "True"


def test_second_extension_for_the_same_package(olm: Olm) -> None:
    """One package, one owner (upstream: the second fails on the objects the first owns): the
    second says which input installs the package; the first keeps it."""
    olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.apply(CE.replace("name: ${NAME}", "name: ${NAME}-dup"))
    dup = olm.reports(
        "Progressing", "True", "Retrying", f"ClusterExtension/{olm.name}", name=f"{olm.name}-dup"
    )
    assert condition(dup, "Installed")["status"] == "False"
    assert "package test" in condition(dup, "Progressing")["message"]
    first = olm.get()
    assert condition(first, "Installed")["status"] == "True"
    assert reports(first, "Progressing", "True", "Succeeded")
    # the second one's deletion removes nothing of the first
    olm.kube.delete(
        olm.kube.resource("olm.operatorframework.io/v1", "ClusterExtension"), f"{olm.name}-dup"
    )
    olm.extensions.remove(f"{olm.name}-dup")
    olm.wait(lambda o: True, what="exists")
    time.sleep(3)
    assert _configmap(olm) is not None
    assert condition(olm.get(), "Installed")["status"] == "True"


def test_deletion_while_installing(olm: Olm) -> None:
    """Deleted in the middle of its first pivot: it goes away with everything it had applied;
    another extension's objects stay. (Its Deployment never becomes available, so the pivot is
    still rolling out when the test looks: a quick install once ended before the test saw it.)"""
    never_ready = Package(
        "test", [Bundle("1.0.0", ready=False), Bundle("1.2.0", replaces="1.0.0", ready=False)]
    )
    olm.catalog("test", [never_ready, Package("other", [Bundle("1.0.0")])])
    other = CE.replace("name: ${NAME}", "name: ${NAME}-other").replace("${PACKAGE:test}", "other")
    olm.apply(other)
    olm.bundle_installed("other.1.0.0", "1.0.0", name=f"{olm.name}-other")
    olm.apply(CE)
    olm.wait(lambda o: reports(o, "Progressing", "True", "RollingOut"), what="rolling out")
    resource = olm.kube.resource("olm.operatorframework.io/v1", "ClusterExtension")
    olm.kube.delete(resource, olm.name)

    def gone() -> bool:
        try:
            olm.get()
        except NotFound:
            return True
        return False

    from tests.cluster import wait_for

    wait_for(gone, timeout=120, what="the ClusterExtension to go")
    olm.extensions.remove(olm.name)
    wait_for(lambda: _configmap(olm) is None, timeout=60, what="its ConfigMap to go")
    remaining = [
        bd["metadata"]["name"]
        for bd in olm.kube.list(olm.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"))[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
        == f"ClusterExtension/{olm.name}"
    ]
    assert remaining == []
    assert olm.kube.get(
        olm.kube.resource("v1", "ConfigMap"),
        f"test-configmap-{olm.scenario}-other",
        olm.test_namespace,
    )
    assert condition(olm.get(f"{olm.name}-other"), "Installed")["status"] == "True"


def test_uninstall_removes_the_constituent_resources(olm: Olm) -> None:
    """uninstall.feature: "Removing ClusterExtension triggers the extension uninstall, eventually
    removing all installed resources"."""
    olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    deployments = olm.kube.resource("apps/v1", "Deployment")
    crds = olm.kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    crd = f"testtests.e2e-{olm.scenario}.e2e.operatorframework.io"
    assert olm.kube.get(crds, crd)
    olm.delete_extensions()
    from tests.cluster import wait_for

    def removed() -> bool:
        for resource, name, ns in (
            (deployments, f"test-operator-{olm.scenario}-test", olm.test_namespace),
            (crds, crd, None),
        ):
            try:
                olm.kube.get(resource, name, ns)
            except NotFound:
                continue
            return False
        return _configmap(olm) is None

    wait_for(removed, timeout=90, what="the extension's resources to be removed")


def test_removed_resource_is_restored_even_after_catalog_deletion(olm: Olm) -> None:
    """recover.feature: "Restore removed resource" and "Auto-healing continues working after
    catalog deletion"."""
    olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.delete_catalogs()
    with contextlib.suppress(NotFound):
        olm.kube.delete(
            olm.kube.resource("v1", "ConfigMap"),
            f"test-configmap-{olm.scenario}-test",
            olm.test_namespace,
        )
    from tests.cluster import wait_for

    wait_for(lambda: _configmap(olm) is not None, timeout=60, what="the ConfigMap to be restored")
    assert condition(olm.get(), "Installed")["status"] == "True"


def test_spec_change_while_the_catalog_is_deleted(olm: Olm) -> None:
    """recover.feature: "Spec changes are allowed when catalog is unavailable"."""
    olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.delete_catalogs()
    ce = olm.apply(
        CE.replace(
            "  source:",
            "  install:\n    preflight:\n      crdUpgradeSafety:\n        enforcement: None\n"
            "  source:",
        )
    )
    generation = ce["metadata"]["generation"]
    ce = olm.wait(
        lambda o: (
            reports(o, "Progressing", "True", "Succeeded")
            and o["status"].get("observedGeneration") == generation
        ),
        what="the new generation reconciled",
    )
    assert condition(ce, "Installed")["status"] == "True"
    children = [
        bd
        for bd in olm.kube.list(olm.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"))[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
        == f"ClusterExtension/{olm.name}"
    ]
    assert [bd["spec"].get("preflight") for bd in children] == [
        {"crdUpgradeSafety": {"disabled": True}}
    ]


def test_install_after_the_target_namespace_appears(olm: Olm) -> None:
    """recover.feature: "Install ClusterExtension after target namespace becomes available"."""
    olm.catalog("test", TEST)
    missing = f"later-{olm.scenario}"
    olm.apply(CE.replace("${TEST_NAMESPACE}", missing))
    namespaces = olm.kube.resource("v1", "Namespace")
    try:
        olm.reports("Progressing", "True", "Retrying", "")
        olm.apply(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {missing}\n")
        olm.wait(lambda o: reports(o, "Installed", "True"), what="Installed", timeout=150)
        olm.rolled_out()
    finally:
        olm.delete_extensions()
        with contextlib.suppress(NotFound):
            olm.kube.delete(namespaces, missing)


def test_install_after_a_conflicting_resource_is_removed(olm: Olm) -> None:
    """recover.feature: "Install ClusterExtension after conflicting resource is removed"."""
    olm.catalog("test", TEST)
    deployment = f"test-operator-{olm.scenario}-test"
    olm.apply(
        f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {deployment}
  namespace: {olm.test_namespace}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {deployment}
  template:
    metadata:
      labels:
        app: {deployment}
    spec:
      containers:
      - name: busybox
        image: busybox:1.36
        command: ["sleep"]
        args: ["1000"]
"""
    )
    olm.apply(CE)
    ce = olm.reports("Progressing", "True", "Retrying", deployment)
    assert condition(ce, "Installed")["status"] == "False"
    olm.kube.delete(olm.kube.resource("apps/v1", "Deployment"), deployment, olm.test_namespace)
    olm.wait(lambda o: reports(o, "Installed", "True"), what="Installed", timeout=150)
    olm.rolled_out()


def test_an_annotation_pivoter_cannot_read_changes_nothing_and_deletion_keeps_what_runs(
    olm: Olm,
) -> None:
    """``pivoter.io/approval: manual`` (no schema checks an annotation): the extension's view
    refuses it, a Warning Event names it and nothing installed changes; deleting the extension
    then keeps what it installed (its BundleDeployment is orphaned, not uninstalled: what the
    object asked for is unknown)."""
    olm.catalog("test", TEST)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    children = _children(olm)
    assert len(children) == 1
    patch = {"metadata": {"annotations": {"pivoter.io/approval": "manual"}}}
    olm.kube.merge_patch(CLUSTER_EXTENSIONS, olm.name, patch)

    def refused() -> list[dict[str, object]] | None:
        items, _ = olm.kube.list(EVENTS, "default")
        found = [
            e
            for e in items
            if (e.get("regarding") or {}).get("name") == olm.name
            and e.get("reason") == "InvalidSpec"
        ]
        return found or None

    (event, *_) = wait_for(refused, timeout=60, what="the InvalidSpec Event")
    assert "metadata.annotations[pivoter.io/approval]" in str(event.get("note"))
    assert condition(olm.get(), "Installed")["status"] == "True"

    olm.kube.delete(CLUSTER_EXTENSIONS, olm.name)
    wait_for(lambda: _gone(olm), timeout=60, what="the ClusterExtension deleted")
    name = children[0]
    kept = olm.kube.get(BUNDLE_DEPLOYMENTS, name)
    assert not kept["metadata"].get("ownerReferences")
    assert "pivoter.io/input" not in (kept["metadata"].get("annotations") or {})
    olm.kube.merge_patch(BUNDLE_DEPLOYMENTS, name, {"metadata": {"finalizers": None}})
    olm.kube.delete(BUNDLE_DEPLOYMENTS, name)


def _children(olm: Olm) -> list[str]:
    items, _ = olm.kube.list(BUNDLE_DEPLOYMENTS)
    owner = f"ClusterExtension/{olm.name}"
    return [
        str(bd["metadata"]["name"])
        for bd in items
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input") == owner
    ]


def _gone(olm: Olm) -> bool:
    try:
        olm.get()
    except NotFound:
        return True
    return False
