"""The real OLM v0 installs a real registry+v1 bundle on the local control plane: the peer the
differential (test_differential_cluster.py) and the adoption tests rely on."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pivoter.kube import Resource
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.peer import CSVS, OlmV0
from tests.registry_v1.helpers import bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok]

DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", True)


def test_olm_installs_kube_green_from_opm_serve(
    olm: OlmV0, olm_catalog: Callable[[list[BundleDir]], str], namespace: str
) -> None:
    green = read_bundle(bundle("kube-green"))
    source = olm.catalog_source(namespace, olm_catalog([green]))
    olm.operator_group(namespace, None)
    olm.subscription(namespace, green.package, "alpha", source)
    installed = olm.wait_installed(namespace, green.package)
    assert installed == green.name
    csv = olm.kube.get(CSVS, installed, namespace)
    # OLM's OperatorGroup controller annotated it: AllNamespaces (targets "").
    annotations = csv["metadata"]["annotations"]
    assert annotations["olm.targetNamespaces"] == ""
    assert annotations["olm.operatorNamespace"] == namespace
    deployment = olm.kube.get(DEPLOYMENTS, "kube-green-controller-manager", namespace)
    assert deployment["metadata"]["labels"]["olm.owner"] == installed
    assert (deployment.get("status") or {}).get("availableReplicas") == 1
