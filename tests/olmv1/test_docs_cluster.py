"""operator-controller's documented ClusterExtension manifests, applied unchanged (names, namespace,
package, selectors as the docs write them) against an ``operatorhubio`` ClusterCatalog whose image
is in the local registry: docs/howto/how-to-pin-version.md, how-to-channel-based-upgrades.md,
how-to-version-range-upgrades.md and docs/concepts/controlling-catalog-selection.md (selection by
catalog name, by label, ``matchExpressions`` and priority).

The catalog offers ``argocd-operator`` so that each manifest picks a different bundle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from pivoter.apis.resources import CLUSTER_CATALOGS
from pivoter.kube import NotFound
from tests.cluster import wait_for
from tests.olmv1.conftest import Olm, reports
from tests.olmv1.content import Bundle, Package

pytestmark = pytest.mark.cluster

ARGOCD = Package(
    "argocd-operator",
    [
        Bundle("0.6.0", ("alpha", "stable")),
        Bundle("1.3.1", ("stable",), "0.6.0"),
        Bundle("1.3.2", ("stable",), "1.3.1"),
        Bundle("3.0.0", ("preview",)),
        Bundle("3.5.0", ("preview", "dev-preview"), "3.0.0"),
        Bundle("3.7.0", ("dev-preview",), "3.5.0"),
    ],
    default_channel="stable",
)

PIN = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
        packageName: argocd-operator
        version: 0.6.0 # Pin argocd-operator to v0.6.0
"""

CHANNELS = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      # Automatically upgrade to the latest version found in the preview and dev-preview channels
      channels: [dev-preview, preview]
"""

CHANNEL_AND_VERSION = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      channels: [stable] # Automatically upgrade to the latest version found in ‘stable’
      version: "!=1.3.2" # Don’t allow version 1.3.2
"""  # noqa: RUF001 (the doc's own quotes)

RANGE = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      version: ">=3.0, <3.6"  # Install versions from v3.0.0 up to, but not including, v3.6.0
"""

BY_NAME = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      selector:
        matchLabels:
          olm.operatorframework.io/metadata.name: operatorhubio
"""

BY_LABEL = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      selector:
        matchLabels:
          example.com/support: "true"
"""

WITHOUT_LABEL = """
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: argocd
spec:
  namespace: argocd
  source:
    sourceType: Catalog
    catalog:
      packageName: argocd-operator
      selector:
        matchExpressions:
          - key: example.com/support
            operator: DoesNotExist
"""


@pytest.fixture
def argocd(olm: Olm) -> Iterator[Olm]:
    """The docs' world: namespace ``argocd``, ClusterCatalog ``operatorhubio`` (the docs' image
    replaced by the local registry's) and a second catalog labelled ``example.com/support``, of
    priority -1, offering a newer argocd-operator (9.0.0) in ``stable``."""
    namespaces = olm.kube.resource("v1", "Namespace")

    def gone() -> bool:
        try:
            olm.kube.get(namespaces, "argocd")
        except NotFound:
            return True
        return False

    wait_for(gone, timeout=120, what="namespace argocd of an earlier test to be deleted")
    olm.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: argocd\n")
    olm.catalogs["operatorhubio"] = "operatorhubio"
    olm.catalog("operatorhubio", [ARGOCD])
    supported = Package("argocd-operator", [Bundle("9.0.0", ("stable",))])
    name = olm.catalog("supported", [supported])
    olm.kube.merge_patch(
        CLUSTER_CATALOGS,
        name,
        {"metadata": {"labels": {"example.com/support": "true"}}, "spec": {"priority": -1}},
    )
    for catalog in olm.catalogs.values():
        olm.wait(
            lambda o: reports(o, "Serving", "True"),
            what="Serving",
            name=catalog,
            resource=CLUSTER_CATALOGS,
        )
    try:
        yield olm
    finally:
        olm.delete_extensions()
        with contextlib.suppress(NotFound):
            olm.kube.delete(namespaces, "argocd")
        wait_for(gone, timeout=120, what="namespace argocd to be deleted")


@pytest.mark.parametrize(
    ("manifest", "bundle", "version"),
    [
        pytest.param(PIN, "argocd-operator.0.6.0", "0.6.0", id="how-to-pin-version"),
        pytest.param(
            CHANNELS, "argocd-operator.3.7.0", "3.7.0", id="how-to-channel-based-upgrades"
        ),
        pytest.param(
            CHANNEL_AND_VERSION, "argocd-operator.1.3.1", "1.3.1", id="channel-and-version"
        ),
        pytest.param(RANGE, "argocd-operator.3.5.0", "3.5.0", id="how-to-version-range-upgrades"),
        pytest.param(BY_NAME, "argocd-operator.3.7.0", "3.7.0", id="select-catalog-by-name"),
        pytest.param(BY_LABEL, "argocd-operator.9.0.0", "9.0.0", id="select-catalog-by-label"),
        pytest.param(WITHOUT_LABEL, "argocd-operator.3.7.0", "3.7.0", id="exclude-by-label"),
    ],
)
def test_documented_manifest(argocd: Olm, manifest: str, bundle: str, version: str) -> None:
    argocd.apply(manifest, label=False)
    argocd.bundle_installed(bundle, version, name="argocd")
    argocd.rolled_out("argocd")
    argocd.available("argocd")


def test_priority_decides_between_catalogs(argocd: Olm) -> None:
    """controlling-catalog-selection.md, "Catalog priority": with no selector both catalogs
    offer the package; the higher-priority one (operatorhubio, 0 against -1) wins even though
    the other has a newer bundle (OLM v1's rule, kept)."""
    no_selector = BY_NAME.split("      selector:", maxsplit=1)[0]
    argocd.apply(no_selector, label=False)
    argocd.bundle_installed("argocd-operator.3.7.0", "3.7.0", name="argocd")


def test_label_is_set_on_every_catalog(argocd: Olm) -> None:
    for name in argocd.catalogs.values():
        labels = argocd.get(name, CLUSTER_CATALOGS)["metadata"]["labels"]
        assert labels["olm.operatorframework.io/metadata.name"] == name
