"""pivoter's admission webhook registered through a Service, served from a network namespace.

The API server refuses EndpointSlices on loopback, so the webhook server runs in a network
namespace behind a veth pair (:mod:`tests.netns`) and a selector-less Service names its address
in an EndpointSlice. The server is started inside the namespace through the code of ``pivoter run
--webhook-bind-address ... --webhook-service NAMESPACE/NAME``
(:func:`pivoter.daemon.webhook.start_webhook`): it issues a certificate for the Service's DNS
names and registers the ValidatingWebhookConfiguration with a ``service`` client config. The same
denials as the URL test (``test_webhook_cluster.py``) then come back, so the API server reached
the server through the Service; the server's own log records each decision.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from pivoter.apis.resources import BUNDLES
from pivoter.kube import Forbidden, Invalid, Kube, KubeError, NotFound, load_client
from pivoter.webhook.registration import NAME
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.netns import NetNamespace, endpoint_slice, network_namespace

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
WEBHOOK_CONFIGS = "admissionregistration.k8s.io/v1"
SERVICE = "pivoter-webhook"
SERVER_PORT = 9443

# What runs inside the namespace: the webhook part of `pivoter run`, and nothing else (the
# controllers of a whole daemon would reconcile other tests' objects). Stops when stdin closes.
ENTRY = """
import logging, sys
from pivoter.daemon.settings import Webhook
from pivoter.daemon.webhook import start_webhook
from pivoter.kube import Kube, load_client

kubeconfig, system_namespace, host, port, service_namespace, service = sys.argv[1:]
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s %(message)s")
webhook = Webhook(address=(host, int(port)), service=(service_namespace, service))
api = load_client(kubeconfig=kubeconfig)
server = start_webhook(Kube(api), webhook, system_namespace)
print("ready", flush=True)
sys.stdin.read()
server.stop()
"""


@dataclass
class ServedWebhook:
    """The webhook server in the namespace and where its decisions are logged."""

    netns: NetNamespace
    log: Path

    def decisions(self) -> str:
        """What the server logged so far."""
        return self.log.read_text(errors="replace")


@pytest.fixture
def admin(cluster: TestCluster, rukpak_crds: None) -> Iterator[Kube]:
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(api_client)
    api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def webhook_service(
    cluster: TestCluster, admin: Kube, namespace: str, tmp_path: Path
) -> Iterator[ServedWebhook]:
    """The Service (no selector, 443 -> the server's port), its EndpointSlice naming the
    namespace's address, and the webhook server running there and registered through it."""
    services = admin.resource("v1", "Service")
    admin.create(
        services,
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "labels": session_labels()},
            "spec": {
                "ports": [
                    {"name": "https", "port": 443, "targetPort": SERVER_PORT, "protocol": "TCP"}
                ]
            },
        },
        namespace=namespace,
    )
    log = tmp_path / "webhook.log"
    configs = admin.resource(WEBHOOK_CONFIGS, "ValidatingWebhookConfiguration")
    with network_namespace() as netns, log.open("wb") as log_file:
        admin.create(
            admin.resource("discovery.k8s.io/v1", "EndpointSlice"),
            endpoint_slice(
                service=SERVICE,
                namespace=namespace,
                ip=netns.ip,
                port=SERVER_PORT,
                port_name="https",
                labels=session_labels(),
            ),
            namespace=namespace,
        )
        # The server inside reads and registers through the API server on the host's loopback.
        api_port = urlsplit(cluster.server).port
        assert api_port is not None
        netns.forward_loopback(api_port)
        process = netns.popen(
            [
                sys.executable,
                "-c",
                ENTRY,
                str(cluster.kubeconfig),
                namespace,
                netns.ip,
                str(SERVER_PORT),
                namespace,
                SERVICE,
            ],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.strip() == b"ready", f"webhook server did not start:\n{log.read_text()}"
            yield ServedWebhook(netns, log)
        finally:
            # failurePolicy Fail: a configuration left behind would block every later test.
            with contextlib.suppress(NotFound):
                admin.delete(configs, NAME)
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
            netns.stop(process)


def _when_reachable(action: Any) -> Any:
    """Run ``action`` once the API server can resolve the Service (its informers saw the new
    EndpointSlice); until then a webhook call fails with "no endpoints available"."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return action()
        except KubeError as exc:
            if "no endpoints available" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def _eventually_denied(action: Any, fragment: str) -> KubeError:
    """The webhook configuration takes a moment to reach the API server's admission chain."""

    def denial() -> KubeError | None:
        try:
            action()
        except (Forbidden, Invalid, KubeError) as exc:
            if fragment in str(exc):
                return exc
            # Until the API server's informers see the new EndpointSlice it cannot resolve the
            # Service ("no endpoints available"); anything else is a real failure.
            if "no endpoints available" not in str(exc):
                raise
        return None

    result: KubeError = wait_for(
        denial, timeout=30, interval=0.5, what=f"a denial with {fragment!r}"
    )
    return result


def _config_map(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": session_labels()},
        "data": {"a.yaml": "kind: ConfigMap"},
        "immutable": True,
    }


def test_registered_through_the_service(
    admin: Kube, namespace: str, webhook_service: ServedWebhook
) -> None:
    config = admin.get(admin.resource(WEBHOOK_CONFIGS, "ValidatingWebhookConfiguration"), NAME)
    for webhook in config["webhooks"]:
        client_config = webhook["clientConfig"]
        assert "url" not in client_config, webhook["name"]
        assert client_config["service"]["namespace"] == namespace
        assert client_config["service"]["name"] == SERVICE
        assert client_config["service"]["port"] == 443
        assert client_config["caBundle"]
    assert webhook_service.netns.ip not in str(config)  # the address is the slice's business


def test_bundle_rules_through_the_service(
    admin: Kube, namespace: str, webhook_service: ServedWebhook
) -> None:
    cms = admin.resource("v1", "ConfigMap")
    # The ConfigMap webhook admits this create: retried until the API server resolves the slice.
    _when_reachable(lambda: admin.create(cms, _config_map("content"), namespace=namespace))
    name = unique_name("b")
    bundle = {
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "Bundle",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "source": {"type": "configMaps", "configMaps": [{"configMap": {"name": "content"}}]},
        },
    }
    admin.create(BUNDLES, bundle)
    try:
        patch = {"spec": {"source": {"configMaps": [{"configMap": {"name": "other"}}]}}}
        denied = _eventually_denied(
            lambda: admin.merge_patch(BUNDLES, name, patch), "bundle.spec is immutable"
        )
        assert "vbundles.core.rukpak.io" in str(denied)
        admin.merge_patch(BUNDLES, name, {"metadata": {"labels": {"extra": "ok"}}})
        in_use = _eventually_denied(
            lambda: admin.delete(cms, "content", namespace), "in use by Bundle(s) " + name
        )
        assert "vconfigmaps.core.rukpak.io" in str(in_use)
    finally:
        admin.delete(BUNDLES, name)
    admin.delete(cms, "content", namespace)
    with pytest.raises(NotFound):
        admin.get(cms, "content", namespace)
    # The decisions were taken by the server in the namespace, reached through the Service.
    log = wait_for(
        lambda: (text := webhook_service.decisions()) and "in use by Bundle(s)" in text and text,
        timeout=10,
        what="the webhook server's log of its decisions",
    )
    assert f"UPDATE Bundle {name}" in log
    assert "denied (bundle.spec is immutable" in log
    assert "DELETE ConfigMap content by" in log
