"""ClusterExtensions installed and updated through pivoter, mirroring operator-controller's e2e
scenarios (``test/e2e/features/install.feature`` and ``update.feature``) with the same
expectations: the same manifests (with upstream's scenario variables), the same conditions and
reasons, the same messages where upstream checks them, the same installed bundle. The catalogs
and bundles are built per scenario as upstream's suite builds them (``tests/olmv1/content.py``).
Each test names the scenario it mirrors.
"""

from __future__ import annotations

import pytest

from pivoter.apis.resources import CLUSTER_CATALOGS
from tests.cluster import session_labels
from tests.olmv1.conftest import Olm, condition, reports
from tests.olmv1.content import Bundle, Package

pytestmark = pytest.mark.cluster

CE = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: ${NAME}
spec:
  namespace: ${TEST_NAMESPACE}
  source:
    sourceType: Catalog
    catalog:
      packageName: ${PACKAGE:test}
      selector:
        matchLabels:
          "olm.operatorframework.io/metadata.name": ${CATALOG:test}
"""

UPDATE_CATALOG = [
    Package(
        "test",
        [
            Bundle("1.0.0", ("alpha", "beta")),
            Bundle("1.0.1", ("beta",), "1.0.0"),
            Bundle("1.0.2", ("alpha",), "1.0.0"),
            Bundle("1.0.4", ("beta",)),
            Bundle("1.2.0", ("beta",), "1.0.1"),
        ],
    )
]
"""update.feature's Background catalog (1.0.2 is its BadImage bundle: a bad image still runs on
the simulated node, so it is an ordinary bundle here)."""


def with_version(version: str, policy: str = "") -> str:
    """The scenario's ClusterExtension pinned to ``version`` (optionally with a policy)."""
    extra = f"\n      upgradeConstraintPolicy: {policy}" if policy else ""
    return CE.rstrip("\n") + f"\n      version: {version}{extra}\n"


def test_install_latest_available_version(olm: Olm) -> None:
    """install.feature: "Install latest available version"."""
    olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    olm.apply(CE)
    olm.rolled_out()
    ce = olm.available()
    olm.bundle_installed("test.1.2.0", "1.2.0")
    assert condition(ce, "Installed")["reason"] == "Succeeded"
    assert condition(ce, "Installed")["message"].startswith("Installed bundle ")
    assert condition(ce, "Progressing")["message"] == "Desired state reached"
    # resource "configmap/test-configmap-${SCENARIO_ID}" and the Deployment are installed
    configmaps = olm.kube.resource("v1", "ConfigMap")
    deployments = olm.kube.resource("apps/v1", "Deployment")
    assert olm.kube.get(configmaps, f"test-configmap-{olm.scenario}-test", olm.test_namespace)
    assert olm.kube.get(deployments, f"test-operator-{olm.scenario}-test", olm.test_namespace)
    # The deprecation conditions: catalog data available, nothing deprecated.
    for type_, message in (
        ("Deprecated", "not deprecated"),
        ("PackageDeprecated", "package not deprecated"),
        ("ChannelDeprecated", "channel not deprecated"),
        ("BundleDeprecated", "bundle not deprecated"),
    ):
        c = condition(ce, type_)
        assert (c["status"], c["reason"], c["message"]) == ("False", "NotDeprecated", message)
    # kubectl get clusterextension's columns read these fields
    assert ce["status"]["install"]["bundle"] == {"name": "test.1.2.0", "version": "1.2.0"}


def test_same_package_in_two_catalogs_of_the_same_priority(olm: Olm) -> None:
    """install.feature: "Report that bundle cannot be installed when it exists in multiple
    catalogs with same priority" (no selector: every ClusterCatalog)."""
    olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    olm.catalog("extra", [Package("test", [Bundle("1.2.0")])])
    for name in olm.catalogs.values():
        olm.wait(
            lambda o: reports(o, "Serving", "True"),
            what="Serving",
            name=name,
            resource=CLUSTER_CATALOGS,
        )
    olm.apply(
        """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: ${NAME}
spec:
  namespace: ${TEST_NAMESPACE}
  source:
    sourceType: Catalog
    catalog:
      packageName: ${PACKAGE:test}
"""
    )
    ce = olm.reports(
        "Progressing",
        "True",
        "Retrying",
        'found bundles for package "test" in multiple catalogs with the same priority',
    )
    assert condition(ce, "Installed")["reason"] == "Failed"
    assert condition(ce, "Installed")["message"] == "No bundle installed"
    assert "install" not in ce["status"]


def test_single_namespace_operator_needs_watch_namespace(olm: Olm) -> None:
    """install.feature: "watchNamespace config is required for extension supporting single
    namespace" (@SingleOwnNamespaceInstallSupport). Same condition and reason; pivoter's message
    names the missing setting in its own words."""
    olm.catalog(
        "test",
        [
            Package(
                "single-namespace-operator",
                [
                    Bundle(
                        "1.0.0",
                        ("alpha",),
                        contents=("CRD", "Deployment"),
                        install_modes=("SingleNamespace",),
                    )
                ],
            )
        ],
    )
    target = f"single-namespace-operator-target-{olm.scenario}"
    olm.apply(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {target}\n")
    try:
        manifest = CE.replace("${PACKAGE:test}", "single-namespace-operator")
        olm.apply(manifest)
        ce = olm.reports("Progressing", "False", "InvalidConfiguration", "watchNamespace")
        assert condition(ce, "Installed")["status"] == "False"
        olm.apply(
            manifest.replace(
                "  source:",
                "  config:\n    configType: Inline\n    inline:\n"
                f"      watchNamespace: {target}\n  source:",
            )
        )
        olm.wait(lambda o: reports(o, "Installed", "True"), what="Installed")
        olm.bundle_installed("single-namespace-operator.1.0.0", "1.0.0")
        # operator "test-operator-${SCENARIO_ID}" target namespace is the watched one
        deployments = olm.kube.resource("apps/v1", "Deployment")
        deployment = olm.kube.get(
            deployments,
            f"test-operator-{olm.scenario}-single-namespace-operator",
            olm.test_namespace,
        )
        annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
        assert annotations.get("olm.targetNamespaces") == target
    finally:
        olm.delete_extensions()
        olm.kube.delete(olm.kube.resource("v1", "Namespace"), target)


def test_update_to_a_successor_version(olm: Olm) -> None:
    """update.feature: "Update to a successor version"."""
    olm.catalog("test", UPDATE_CATALOG)
    olm.apply(with_version("1.0.0"))
    olm.rolled_out()
    olm.available()
    olm.bundle_installed("test.1.0.0", "1.0.0")
    olm.apply(with_version("1.0.1"))
    olm.bundle_installed("test.1.0.1", "1.0.1")
    olm.rolled_out()
    olm.available()


def test_cannot_update_to_a_non_successor_version(olm: Olm) -> None:
    """update.feature: "Cannot update extension to non successor version" (the exact message)."""
    olm.catalog("test", UPDATE_CATALOG)
    olm.apply(with_version("1.0.0"))
    olm.rolled_out()
    olm.available()
    olm.apply(with_version("1.2.0"))
    ce = olm.reports(
        "Progressing",
        "True",
        "Retrying",
        'error upgrading from currently installed version "1.0.0": no bundles found for package '
        '"test" matching version "1.2.0"',
        exact=True,
    )
    # nothing installed is lost
    assert ce["status"]["install"]["bundle"] == {"name": "test.1.0.0", "version": "1.0.0"}
    assert condition(ce, "Installed")["status"] == "True"


def test_force_update_to_a_non_successor_version(olm: Olm) -> None:
    """update.feature: "Force update to non successor version" (SelfCertified)."""
    olm.catalog("test", UPDATE_CATALOG)
    olm.apply(with_version("1.0.0"))
    olm.rolled_out()
    olm.available()
    olm.apply(with_version("1.2.0", "SelfCertified"))
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.available()


def test_auto_update_from_a_new_catalog_image_ref(olm: Olm) -> None:
    """update.feature: "Auto update when new version becomes available in the new catalog image
    ref" (@catalog-updates)."""
    olm.catalog("test", [Package("test", [Bundle("1.0.0"), Bundle("1.2.0", replaces="1.0.0")])])
    olm.apply(CE)
    olm.rolled_out()
    olm.available()
    olm.bundle_installed("test.1.2.0", "1.2.0")
    from tests.olmv1.content import push_catalog

    ref = push_catalog(
        olm.registry,
        olm.scenario,
        "test",
        "v2",
        [
            Package(
                "test",
                [
                    Bundle("1.0.0"),
                    Bundle("1.2.0", replaces="1.0.0"),
                    Bundle("1.3.0", replaces="1.2.0"),
                ],
            )
        ],
    )
    olm.kube.merge_patch(
        CLUSTER_CATALOGS, olm.catalogs["test"], {"spec": {"source": {"image": {"ref": ref}}}}
    )
    olm.bundle_installed("test.1.3.0", "1.3.0")
    olm.rolled_out()


def test_downgrade_with_self_certified(olm: Olm) -> None:
    """docs/tutorials/downgrade-extension.md: pin an older version with SelfCertified and the CRD
    upgrade safety check off (the manifest of the tutorial)."""
    olm.catalog("test", UPDATE_CATALOG)
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    olm.apply(
        CE.replace(
            "  source:",
            "  install:\n    preflight:\n      crdUpgradeSafety:\n"
            "        enforcement: None\n  source:",
        ).rstrip("\n")
        + "\n      version: 1.0.0\n      upgradeConstraintPolicy: SelfCertified\n"
    )
    olm.bundle_installed("test.1.0.0", "1.0.0")
    ce = olm.rolled_out()
    children = [
        bd
        for bd in olm.kube.list(olm.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"))[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
        == f"ClusterExtension/{olm.name}"
    ]
    assert [bd["spec"].get("preflight") for bd in children] == [
        {"crdUpgradeSafety": {"disabled": True}}
    ]
    assert ce["status"]["selection"][0]["version"] == "1.0.0"


def test_auto_update_in_the_same_catalog_image_ref(olm: Olm) -> None:
    """update.feature: "Auto update when new version becomes available in the same catalog image
    ref" (the catalog polled every minute, as upstream's e2e catalogs are)."""
    from tests.olmv1.content import push_catalog

    olm.catalog(
        "test",
        [Package("test", [Bundle("1.0.0"), Bundle("1.2.0", replaces="1.0.0")])],
        tag="latest",
    )
    olm.kube.merge_patch(
        CLUSTER_CATALOGS,
        olm.catalogs["test"],
        {"spec": {"source": {"image": {"pollIntervalMinutes": 1}}}},
    )
    olm.apply(CE)
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    # catalog "test" image version "v2" is also tagged as "latest"
    push_catalog(
        olm.registry,
        olm.scenario,
        "test",
        "latest",
        [
            Package(
                "test",
                [
                    Bundle("1.0.0"),
                    Bundle("1.2.0", replaces="1.0.0"),
                    Bundle("1.3.0", replaces="1.2.0"),
                ],
            )
        ],
    )
    olm.bundle_installed("test.1.3.0", "1.3.0")
    olm.rolled_out()


def test_service_account_is_the_install_identity(olm: Olm) -> None:
    """``spec.serviceAccount`` (ignored by OLM v1 today) is honoured: an account without the
    rights the bundle needs makes the install fail with the API server's refusal, nothing is
    created; once it may, it installs as that account. Clearing the field (update.feature:
    "Clearing deprecated serviceAccount field is reconciled without warnings") installs with
    pivoter's identity."""
    olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    accounts = olm.kube.resource("v1", "ServiceAccount")
    olm.kube.create(
        accounts,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer"}},
        olm.test_namespace,
    )
    with_account = CE.replace("  source:", "  serviceAccount:\n    name: installer\n  source:")
    olm.apply(with_account)
    ce = olm.reports("Progressing", "True", "Retrying", "forbidden")
    assert (
        "system:serviceaccount:" + olm.test_namespace + ":installer"
        in condition(ce, "Progressing")["message"]
    )
    assert condition(ce, "Installed")["status"] == "False"
    binding = f"installer-{olm.scenario}"
    rbac = "rbac.authorization.k8s.io/v1"
    bindings = olm.kube.resource(rbac, "ClusterRoleBinding")
    olm.kube.create(
        bindings,
        {
            "apiVersion": rbac,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": binding, "labels": session_labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": "installer", "namespace": olm.test_namespace}
            ],
        },
    )
    try:
        olm.kube.merge_patch(
            olm.kube.resource("olm.operatorframework.io/v1", "ClusterExtension"),
            olm.name,
            {"metadata": {"annotations": {"pivoter.io/retry-now": "1"}}},
        )
        olm.bundle_installed("test.1.2.0", "1.2.0")
        olm.rolled_out()
        child = next(
            bd
            for bd in olm.kube.list(
                olm.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment")
            )[0]
            if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
            == f"ClusterExtension/{olm.name}"
        )
        assert child["spec"]["serviceAccount"] == {
            "name": "installer",
            "namespace": olm.test_namespace,
        }
        ce = olm.apply(CE)  # serviceAccount cleared
        generation = ce["metadata"]["generation"]
        ce = olm.wait(
            lambda o: (
                reports(o, "Progressing", "True", "Succeeded")
                and o["status"].get("observedGeneration") == generation
                and "serviceAccount" not in _child(olm)["spec"]
            ),
            what="reconciled without the service account",
        )
        assert condition(ce, "Installed")["status"] == "True"
    finally:
        olm.delete_extensions()
        olm.kube.delete(bindings, binding)


def _child(olm: Olm) -> dict[str, object]:
    return next(
        bd
        for bd in olm.kube.list(olm.kube.resource("core.rukpak.io/v1alpha1", "BundleDeployment"))[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input")
        == f"ClusterExtension/{olm.name}"
    )
