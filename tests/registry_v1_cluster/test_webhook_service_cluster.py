"""A real webhook-bearing bundle (kube-green): the API server calls its webhook through the
Service pivoter generated, verifies the served certificate with the injected caBundle, and keeps
doing so after pivoter rotates the certificate.

kube-green's operator image cannot run here, so a stand-in admission server
(:mod:`tests.webhook.standin_server`) serves the webhook, with the certificate and key pivoter
put in the Secret ``kube-green-controller-manager-service-cert``, from a network namespace
(:mod:`tests.netns`; EndpointSlices may not name loopback). How the Service reaches it: pivoter's
Service, webhook configuration and Secret are left exactly as pivoter made them (drift correction
would restore any edit, and the point is to test what pivoter generated). The operator's pods are
kept unschedulable through the BundleDeployment's ``deploymentConfig.nodeSelector``, so the
EndpointSlice controller's slice for the Service's selector has no endpoints; the test adds a
second EndpointSlice for the same Service under a manager of its own, naming the stand-in's
address and the Service's target port. The API server resolves the Service through its
EndpointSlices and skips slices without endpoints, so every call lands on the stand-in, exactly
as it would land on the operator's pod: same Service, port, path, TLS name and caBundle.

Rotation: the BundleDeployment's ``spec.config.webhookCertificates.validity`` is shortened to
60 s (``renewBefore`` then defaults to a third, 20 s); the daemon runs with a 2 s full check, so it
re-issues the certificate on its own about 40 s after issuing it. The stand-in is restarted with
the new certificate, which no CA of the old caBundle signed: calls that still pass prove the API
server uses the new caBundle.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from pivoter.kube import Forbidden, Kube, KubeError, Resource
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.drift.running import Pivoter, running_pivoter
from tests.netns import NetNamespace, endpoint_slice, network_namespace
from tests.registry_v1.helpers import bundle
from tests.webhook.standin_server import DENY_LABEL

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
REGISTRY = "core-rukpak-io-registry"
WEBHOOK = "vsleepinfo.kb.io"
SECRET = "kube-green-controller-manager-service-cert"
VALIDITY = "60s"
SERVICES = Resource("v1", "Service", "services", namespaced=True)
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
SLICES = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", namespaced=True)
WEBHOOK_CONFIGS = Resource(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)
SLEEP_INFOS = Resource("kube-green.com/v1alpha1", "SleepInfo", "sleepinfos", namespaced=True)


@pytest.fixture
def pivoter(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers with a 2 s full check (the daemon's default is 10 min), so a
    certificate entering its renewal window is re-issued within seconds."""
    with running_pivoter(
        cluster.kubeconfig,
        tmp_path / "store",
        namespace,
        session_labels(),
        full_check_interval_seconds=2.0,
    ) as running:
        yield running


class StandIn:
    """The stand-in webhook server in the namespace, restartable with another certificate."""

    def __init__(self, netns: NetNamespace, port: int, workdir: Path) -> None:
        self.netns = netns
        self.port = port
        self.workdir = workdir
        self.record = workdir / "reviews.jsonl"
        self.record.touch()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, secret: dict[str, Any]) -> None:
        """Serve with the certificate and key of ``secret`` (stopping the previous server)."""
        self.stop()
        cert, key = self.workdir / "tls.crt", self.workdir / "tls.key"
        cert.write_bytes(_decoded(secret, "tls.crt"))
        key.write_bytes(_decoded(secret, "tls.key"))
        self.process = self.netns.popen(
            [
                sys.executable,
                "-m",
                "tests.webhook.standin_server",
                *("--cert", str(cert), "--key", str(key)),
                *("--host", self.netns.ip, "--port", str(self.port)),
                *("--record", str(self.record)),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == b"ready", "the stand-in did not start"

    def stop(self) -> None:
        """Stop the running server, if any."""
        if self.process is not None:
            self.netns.stop(self.process)
            self.process = None

    def reviews(self) -> list[dict[str, Any]]:
        """Every AdmissionReview received so far."""
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]


def _decoded(secret: dict[str, Any], key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def _webhook(kube: Kube, install_namespace: str) -> dict[str, Any]:
    """kube-green's validating webhook as pivoter registered it for this install."""
    configs, _ = kube.list(WEBHOOK_CONFIGS)
    for config in configs:
        for webhook in config.get("webhooks") or []:
            service = webhook["clientConfig"].get("service") or {}
            if webhook["name"] == WEBHOOK and service.get("namespace") == install_namespace:
                return dict(webhook)
    raise AssertionError(f"no {WEBHOOK} webhook for namespace {install_namespace}")


def _certificate(kube: Kube, install_namespace: str) -> tuple[dict[str, Any], bytes]:
    """The webhook's Secret and the caBundle injected in its configuration, read as one pair:
    the daemon may rotate between two reads, so read again until the Secret's ``ca.crt`` is
    the configuration's caBundle."""

    def pair() -> tuple[dict[str, Any], bytes] | None:
        secret = kube.get(SECRETS, SECRET, install_namespace)
        ca_bundle = base64.b64decode(_webhook(kube, install_namespace)["clientConfig"]["caBundle"])
        return (secret, ca_bundle) if _decoded(secret, "ca.crt") == ca_bundle else None

    found: tuple[dict[str, Any], bytes] = wait_for(
        pair, timeout=30, what="the Secret's CA bundle in the webhook configuration"
    )
    return found


def _der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)


def _handshake(ip: str, port: int, *, ca_bundle: bytes, server_name: str) -> bytes:
    """Connect as the API server does (trusting only ``ca_bundle``, checking ``server_name``);
    return the served certificate (DER). Raises ssl.SSLCertVerificationError if untrusted."""
    context = ssl.create_default_context(cadata=ca_bundle.decode())
    with (
        socket.create_connection((ip, port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        served = tls.getpeercert(binary_form=True)
    assert served is not None
    return served


def _sleep_info(name: str, *, deny: bool) -> dict[str, Any]:
    labels = {DENY_LABEL: "true"} if deny else {}
    return {
        "apiVersion": "kube-green.com/v1alpha1",
        "kind": "SleepInfo",
        "metadata": {"name": name, "labels": labels},
        "spec": {"weekdays": "1-5", "sleepAt": "20:00", "wakeUpAt": "08:00"},
    }


def _create_admitted(kube: Kube, name: str, namespace: str, *, deny: bool) -> KubeError | None:
    """Create a SleepInfo; return the denial (None when admitted). Retries while the API server
    has not yet seen the EndpointSlice ("no endpoints available")."""
    deadline = time.monotonic() + 30
    while True:
        try:
            kube.create(SLEEP_INFOS, _sleep_info(name, deny=deny), namespace)
        except Forbidden as exc:
            return exc
        except KubeError as exc:
            if "no endpoints available" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
            continue
        return None


def _calls(kube: Kube, stand_in: StandIn, namespace: str, tag: str) -> None:
    """One allowed and one denied create, each decided by the stand-in."""
    before = len(stand_in.reviews())
    allowed, denied = unique_name(f"{tag}-ok"), unique_name(f"{tag}-no")
    assert _create_admitted(kube, allowed, namespace, deny=False) is None
    assert kube.get(SLEEP_INFOS, allowed, namespace)["metadata"]["name"] == allowed
    refusal = _create_admitted(kube, denied, namespace, deny=True)
    assert refusal is not None, "the stand-in's rule should have denied the create"
    assert "denied by the stand-in webhook" in str(refusal)
    assert WEBHOOK in str(refusal)
    seen = [(r["name"], r["operation"], r["kind"], r["allowed"]) for r in stand_in.reviews()]
    assert seen[before:] == [
        (allowed, "CREATE", "SleepInfo", True),
        (denied, "CREATE", "SleepInfo", False),
    ]


def test_webhook_through_service_with_rotation(
    pivoter: Pivoter, make_namespace: Callable[[], str], tmp_path: Path
) -> None:
    install = make_namespace()
    name = unique_name("green")
    sources = pivoter.registry_bundle(unique_name("green"), bundle("kube-green"))
    pivoter.bundle_deployment(
        name,
        sources,
        provisioner=REGISTRY,
        config={
            "installNamespace": install,
            # No node matches: the operator's pods stay Pending, so its Service's own
            # EndpointSlice stays empty and the stand-in's is the only one with an endpoint.
            "deploymentConfig": {"nodeSelector": {"pivoter.test/no-such-node": "true"}},
            "webhookCertificates": {"validity": VALIDITY},
        },
        crdDeletionPolicy="Delete",
    )
    pivoter.wait(name, "Installed", "True", timeout=120)

    webhook = _webhook(pivoter.kube, install)
    target = webhook["clientConfig"]["service"]
    service = pivoter.kube.get(SERVICES, target["name"], install)
    port = next(p for p in service["spec"]["ports"] if p["port"] == target.get("port", 443))
    target_port = int(port["targetPort"])
    server_name = f"{target['name']}.{install}.svc"  # the name the API server checks

    with network_namespace() as netns:
        pivoter.kube.create(
            SLICES,
            endpoint_slice(
                service=target["name"],
                namespace=install,
                ip=netns.ip,
                port=target_port,
                port_name=port.get("name", ""),
                labels=session_labels(),
            ),
            install,
        )
        stand_in = StandIn(netns, target_port, tmp_path)
        try:
            # 1. The certificate pivoter generated, served; the injected caBundle verifies it.
            first, old_bundle = _certificate(pivoter.kube, install)
            stand_in.start(first)
            served = _handshake(
                netns.ip, target_port, ca_bundle=old_bundle, server_name=server_name
            )
            assert served == _der(_decoded(first, "tls.crt"))
            # 2. The API server calls it through the Service: the rule decides, reviews recorded.
            _calls(pivoter.kube, stand_in, install, "before")

            # 3. Rotation by the daemon before the short-lived certificate expires.
            old_cert = _decoded(first, "tls.crt")
            rotated, new_bundle = wait_for(
                lambda: (
                    (found := _certificate(pivoter.kube, install))
                    and _decoded(found[0], "tls.crt") != old_cert
                    and found
                ),
                timeout=90,
                what="pivoter to rotate the webhook certificate",
            )
            stand_in.start(rotated)
            # The new certificate is trusted through the new caBundle only: no CA of the old
            # one signed it.
            served = _handshake(
                netns.ip, target_port, ca_bundle=new_bundle, server_name=server_name
            )
            assert served == _der(_decoded(rotated, "tls.crt"))
            with pytest.raises(ssl.SSLCertVerificationError):
                _handshake(netns.ip, target_port, ca_bundle=old_bundle, server_name=server_name)
            # 4. The API server still calls it: it verified the new certificate.
            _calls(pivoter.kube, stand_in, install, "after")
        finally:
            stand_in.stop()
            with contextlib.suppress(KubeError):
                pivoter.kube.delete(SLICES, f"{target['name']}-netns", install)
