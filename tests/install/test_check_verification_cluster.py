"""``pivoter check`` says whether the cluster's verification policy is off, in force, or unusable
(a policy that cannot be used fails every pull, so it fails the check), on the real control
plane."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from pivoter.apis.resources import CONFIG_MAPS, SECRETS
from pivoter.install.health import verification
from pivoter.kube import Kube, load_client
from pivoter.registries.verification import CONFIG_MAP
from tests.cluster import TestCluster
from tests.verification.fakes import public_pem

pytestmark = pytest.mark.cluster


def test_check_reports_the_verification_policy(cluster: TestCluster, namespace: str) -> None:
    kube = Kube(load_client(kubeconfig=str(cluster.kubeconfig)))
    off = verification(kube, namespace)
    assert (off.status, off.message) == (
        "ok",
        f"off: no ConfigMap {namespace}/{CONFIG_MAP} (nothing verified)",
    )
    policy = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP},
        "data": {"mode": "enforce", "keys": "signing-keys"},
    }
    kube.create(CONFIG_MAPS, policy, namespace)
    missing = verification(kube, namespace)
    assert missing.status == "failed"
    assert f"every pull fails: ConfigMap {namespace}/{CONFIG_MAP}: keys: Secret" in missing.message
    assert "signing-keys not found" in missing.message
    pem = public_pem(ec.generate_private_key(ec.SECP256R1()))
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "signing-keys"},
        "data": {"release.pub": base64.b64encode(pem).decode()},
    }
    kube.create(SECRETS, secret, namespace)
    enforced = verification(kube, namespace)
    assert (enforced.status, enforced.message) == (
        "ok",
        f"enforce: ConfigMap {namespace}/{CONFIG_MAP}",
    )
