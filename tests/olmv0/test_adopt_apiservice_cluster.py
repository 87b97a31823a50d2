"""``pivoter adopt`` of an operator whose CSV owns an APIService, against the real OLM v0: the
Deployment, its Service, the ``<deployment>-service-cert`` Secret, the APIService and both
delegated-authentication bindings are taken over in place (same uids, one of each, no rollout),
the APIService stays Available throughout, and OLM v0's owner marks are gone.

OLM v0 marks such a CSV Succeeded only once the APIService is Available, and under kwok the
operator's pod is Ready at an address (10.244.x.y) nothing serves. So, as soon as OLM v0 has
made the certificate Secret, :func:`tests.registry_v1_cluster.aggregated.serve_service` routes
the addresses of the Service's EndpointSlices into a network namespace where a stand-in
aggregated API server answers with OLM v0's certificate; it keeps serving through the adoption,
which must not replace the certificate (the stand-in would then serve one the APIService's
caBundle no longer names, and the APIService would flip to unavailable).

The bundle is generated (tests/registry_v1_cluster/aggregated.py): OLM v0 reads it from an
``opm serve`` catalog with the manifests inline, pivoter from a bundle image, as in
test_adopt_cluster.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import NotFound, Resource
from pivoter.olmv0.resources import LABEL_OWNER
from tests.cluster import TestCluster, unique_name
from tests.inputs.conftest import Env
from tests.olmv0.content import BundleDir, read_bundle
from tests.olmv0.peer import OlmV0
from tests.olmv0.test_adopt_cluster import (
    DEPLOYMENTS,
    Adoption,
    _adopt,
    _check_adopted,
    _deployments,
    _namespace,
    _pivoter_catalog,
    _pods,
    _replica_sets,
    _uids,
    _wait_settled,
)
from tests.registry_v1_cluster.aggregated import (
    APISERVICES,
    SECRETS,
    available,
    serve_service,
    wait_available,
    write_bundle,
)

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(600)]

RBAC = "rbac.authorization.k8s.io/v1"
SERVICES = Resource("v1", "Service", "services", True)
CLUSTER_ROLE_BINDINGS = Resource(RBAC, "ClusterRoleBinding", "clusterrolebindings", False)
ROLE_BINDINGS = Resource(RBAC, "RoleBinding", "rolebindings", True)
PIVOTER_OWNER = "core.rukpak.io/owner-name"


def _served(env: Env, namespace: str, deployment: str, group: str) -> dict[str, dict[str, Any]]:
    """The objects that make ``deployment`` an aggregated API server, each the only one of its
    kind for it (nothing duplicated under another name), by role."""
    account = {"kind": "ServiceAccount", "name": deployment, "namespace": namespace}

    def binds(binding: dict[str, Any], role: str) -> bool:
        return binding["roleRef"]["name"] == role and account in (binding.get("subjects") or [])

    found = {
        "Deployment": env.kube.list(DEPLOYMENTS, namespace)[0],
        "Service": env.kube.list(SERVICES, namespace)[0],
        "Secret": [
            s for s in env.kube.list(SECRETS, namespace)[0] if s.get("type") == "kubernetes.io/tls"
        ],
        "APIService": [a for a in env.kube.list(APISERVICES)[0] if a["spec"].get("group") == group],
        "ClusterRoleBinding": [
            b for b in env.kube.list(CLUSTER_ROLE_BINDINGS)[0] if binds(b, "system:auth-delegator")
        ],
        "RoleBinding": [
            b
            for b in env.kube.list(ROLE_BINDINGS, "kube-system")[0]
            if binds(b, "extension-apiserver-authentication-reader")
        ],
    }
    names = {kind: [o["metadata"]["name"] for o in objs] for kind, objs in found.items()}
    assert all(len(n) == 1 for n in names.values()), f"not one of each: {names}"
    return {kind: objs[0] for kind, objs in found.items()}


def test_adopt_an_operator_serving_an_apiservice_in_place(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    env: Env,
    tmp_path: Path,
) -> None:
    deployment = unique_name("wardle")
    group = f"{unique_name('wardle')}.pivoter.test"
    apiservice = f"v1alpha1.{group}"
    wardle = read_bundle(write_bundle(tmp_path / "bundle", deployment=deployment, group=group))
    address = olm_catalog([wardle])
    _pivoter_catalog(env, [wardle])
    namespace = _namespace(env)
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, wardle.package, "alpha", olm.catalog_source(namespace, address))
    try:
        with serve_service(
            env.kube,
            namespace=namespace,
            deployment=deployment,
            group=group,
            workdir=tmp_path / "stand-in",
        ) as served:
            # OLM v0 succeeds only once the aggregator reached the stand-in through its Service.
            csv = olm.wait_installed(namespace, wardle.package, timeout=300)
            _wait_settled(env, namespace, [])
            was_available = wait_available(env.kube, apiservice, detail=lambda: served.errors)
            before = _served(env, namespace, deployment, group)
            assert before["APIService"]["metadata"]["labels"][LABEL_OWNER] == csv
            assert served.routed, "the stand-in answered at the pod's address"
            adoption = Adoption(
                wardle,
                namespace,
                csv,
                before=_uids(env, namespace, []),
                deployments=_deployments(env, namespace),
                pods=_pods(env, namespace),
                replica_sets=_replica_sets(env, namespace),
            )

            done = _adopt(
                cluster, "--subscription", f"{namespace}/{wardle.package}", "--timeout", "300"
            )
            env.created.append((RESOLUTIONS, adoption.resolution))  # uninstalled at the end
            assert done.returncode == 0, done.stderr + done.stdout
            # OLM v0 let go, uids kept, no rollout, no other manager (test_adopt_cluster.py).
            _check_adopted(env, adoption)
            after = _served(env, namespace, deployment, group)
            assert {k: o["metadata"]["uid"] for k, o in after.items()} == {
                k: o["metadata"]["uid"] for k, o in before.items()
            }
            # The certificate is OLM v0's still, so the APIService never stopped being Available.
            assert after["Secret"]["data"]["tls.crt"] == before["Secret"]["data"]["tls.crt"]
            assert (
                after["APIService"]["spec"]["caBundle"]
                == (before["APIService"]["spec"]["caBundle"])
            )
            now = available(env.kube.get(APISERVICES, apiservice))
            assert now["status"] == "True"
            assert now["lastTransitionTime"] == was_available["lastTransitionTime"]
            (child,) = env.children(adoption.resolution).values()
            for kind, obj in after.items():
                labels = obj["metadata"].get("labels") or {}
                assert LABEL_OWNER not in labels, kind
                assert not [k for k in labels if k.startswith("olm.owner")], kind
                assert labels.get(PIVOTER_OWNER) == child["metadata"]["name"], kind
                owners = obj["metadata"].get("ownerReferences") or []
                assert not [o for o in owners if o["kind"] == "ClusterServiceVersion"], kind
            assert served.errors == []
    finally:
        # An APIService nobody serves breaks discovery for the whole cluster: never leave one
        # behind if the test failed before pivoter took it over (pivoter's uninstall removes
        # the one it manages).
        with contextlib.suppress(NotFound):
            if not (env.kube.get(APISERVICES, apiservice)["metadata"].get("labels") or {}).get(
                PIVOTER_OWNER
            ):
                env.kube.delete(APISERVICES, apiservice)
