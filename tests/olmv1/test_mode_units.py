"""Pure pieces of serving OLM v1 side by side with it: when ``--olmv1=auto`` decides again, the
idle controllers an ``auto`` daemon registers at start, what a leftover of OLM v1 says, and the CA
of ``--catalogd-ca``. (``test_side_by_side_cluster.py`` drives them against a control plane.)"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, Configuration

from pivoter.catalogs import CatalogCache, SourceSettings
from pivoter.catalogs.foreign import CATALOGD_CA, CatalogdCA, cluster_catalog_spec
from pivoter.kube import Kube, KubeError
from pivoter.olmv1 import setup
from pivoter.olmv1.leftovers import (
    LeftoverFinding,
    LeftoverProblem,
    _any_ready,
    _deployment,
    _intercepted,
)
from pivoter.olmv1.mode import LEASE_MARGIN, ModeDecision, next_check
from pivoter.runtime import Manager
from provisioners.certs import issue_serving_certificate

NOW = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)


def test_auto_decides_again_every_interval_or_just_after_the_lease_expires() -> None:
    assert next_check(ModeDecision(False, "a CRD is not pivoter's"), NOW, 30.0) == 30.0
    soon = ModeDecision(False, "held", held_until=NOW + dt.timedelta(seconds=5))
    assert next_check(soon, NOW, 30.0) == 5.0 + LEASE_MARGIN
    later = ModeDecision(False, "held", held_until=NOW + dt.timedelta(minutes=5))
    assert next_check(later, NOW, 30.0) == 30.0
    expired = ModeDecision(False, "held", held_until=NOW - dt.timedelta(seconds=5))
    assert next_check(expired, NOW, 30.0) == LEASE_MARGIN


def _offline() -> Kube:
    """A client whose every request fails: anything that reaches the API server raises."""
    return Kube(ApiClient(Configuration(host="https://127.0.0.1:1")))


def test_idle_controllers_do_nothing_until_they_start_serving(tmp_path: Path) -> None:
    manager = Manager(_offline())
    olm = setup(
        manager,
        cache=CatalogCache(),
        store=None,  # type: ignore[arg-type]  # only the ClusterCatalog controller: no inputs
        preparer=None,  # type: ignore[arg-type]
        base_url="http://localhost:8082",
        source_settings=SourceSettings(workdir=tmp_path),
        extensions=False,
        serving=False,
    )
    assert [c.name for c in olm.controllers] == ["clustercatalogs"]
    assert [c.name for c in manager.controllers] == ["clustercatalogs"]
    (controller,) = olm.controllers
    assert not olm.serving
    assert controller.reconcile("operatorhubio") is None  # no request was made
    olm.start_serving()
    assert olm.serving
    with pytest.raises(KubeError):
        controller.reconcile("operatorhubio")  # now it reads the ClusterCatalog


def test_a_webhook_counts_when_its_rules_name_olm_v1s_objects() -> None:
    group = "olm.operatorframework.io"
    assert _intercepted([{"apiGroups": [group], "resources": ["clustercatalogs"]}]) == (
        "clustercatalogs",
    )
    assert _intercepted([{"apiGroups": [group], "resources": ["*"]}]) == (
        "clustercatalogs",
        "clusterextensions",
    )
    assert _intercepted([{"apiGroups": [group], "resources": ["clusterextensions/status"]}]) == (
        "clusterextensions",
    )
    assert _intercepted([{"apiGroups": ["*"], "resources": ["*"]}]) == ()
    assert _intercepted([{"apiGroups": ["apps"], "resources": ["deployments"]}]) == ()


def test_an_endpoint_without_a_ready_condition_is_ready() -> None:
    assert not _any_ready([])
    assert not _any_ready([{"endpoints": [{"conditions": {"ready": False}}]}])
    assert _any_ready([{"endpoints": [{"conditions": {}}]}])
    assert _any_ready([{"endpoints": [{"conditions": {"ready": False}}, {"conditions": {}}]}])


def test_an_olm_deployment_says_what_to_do() -> None:
    def deployment(replicas: int | None) -> dict[str, object]:
        spec = {} if replicas is None else {"replicas": replicas}
        return {
            "metadata": {"name": "catalogd-controller-manager", "namespace": "olmv1-system"},
            "spec": spec,
        }

    running = _deployment(deployment(None), "catalogd")  # no replicas: 1
    assert running.problem is LeftoverProblem.DEPLOYMENT_RUNNING
    assert running.remedy == (
        "kubectl -n olmv1-system scale deployment catalogd-controller-manager --replicas=0"
    )
    assert running.message.endswith(running.remedy)
    assert not running.blocks
    stopped = _deployment(deployment(0), "catalogd")
    assert stopped.problem is LeftoverProblem.DEPLOYMENT_PRESENT
    assert stopped.remedy == "kubectl -n olmv1-system delete deployment catalogd-controller-manager"
    assert stopped.regarding() == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "catalogd-controller-manager", "namespace": "olmv1-system"},
    }
    unchecked = LeftoverFinding(LeftoverProblem.NOT_CHECKED, "Deployment", "", "", "m", "r")
    assert unchecked.regarding() is None


def test_catalogd_ca_is_given_to_https_clustercatalogs_only(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(
        issue_serving_certificate(["x"], ca_name="c", validity=dt.timedelta(days=1)).ca
    )
    ca = CatalogdCA(ca_file)

    def catalog(base: str) -> dict[str, object]:
        return {"metadata": {"name": "c"}, "status": {"urls": {"base": base}}}

    https = cluster_catalog_spec(catalog("https://catalogd/catalogs/c"), catalogd_ca=True)
    assert https is not None
    assert https.source["http"]["caConfigMap"] == {"name": CATALOGD_CA}
    plain = cluster_catalog_spec(catalog("http://catalogd/catalogs/c"), catalogd_ca=True)
    assert plain is not None
    assert "caConfigMap" not in plain.source["http"]
    read = ca.reader(lambda kind, name: {"data": {"other": name}})
    assert read("ConfigMap", CATALOGD_CA) == {"data": {"ca.crt": ca_file.read_text()}}
    assert read("ConfigMap", "mine") == {"data": {"other": "mine"}}
    # A file that turns bad later: the CA read before is kept.
    ca_file.write_text("not a certificate")
    assert read("ConfigMap", CATALOGD_CA) == {"data": {"ca.crt": ca.pem().decode()}}
    assert b"BEGIN CERTIFICATE" in ca.pem()


def test_a_bad_catalogd_ca_names_the_flag_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^--catalogd-ca .*missing\.crt: No such file"):
        CatalogdCA(tmp_path / "missing.crt")
    junk = tmp_path / "junk.crt"
    junk.write_text("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    with pytest.raises(ValueError, match=r"^--catalogd-ca .*junk\.crt: not a PEM CA certificate"):
        CatalogdCA(junk)
