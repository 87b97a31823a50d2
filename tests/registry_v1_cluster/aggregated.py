"""A stand-in aggregated API server for the cluster tests of bundles that own APIServices.

No operator image runs in the tests, so what the kube-apiserver's aggregation layer reaches
behind an APIService is served from the test process: :func:`stand_in` answers discovery for
``/apis/<group>/<version>`` over TLS with the certificate and key of the operator's
``<deployment>-service-cert`` Secret, on a socket inside a network namespace (:mod:`tests.netns`).

Two ways to put it behind the operator's Service:

* the test names the namespace's address in an EndpointSlice of its own
  (:func:`tests.netns.endpoint_slice`; the operator's pods kept unschedulable), as
  test_apiservice_cluster.py does;
* :func:`serve_service` follows the EndpointSlices kube-controller-manager writes for the
  Service: each ready address is a pod's IP under kwok (10.244.x.y) that nothing on the host
  serves, so it is routed into the namespace (:func:`tests.netns.routed_address`), where the
  stand-in listens on every address. That is how OLM v0, which marks a CSV Succeeded only once
  its APIServices are Available, installs such an operator in tests/olmv0/.

The certificate is read again whenever the Secret changes, so a re-issued one is served at once.
Used by tests/registry_v1_cluster/test_apiservice_cluster.py and tests/olmv0/.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from pivoter.kube import Kube, NotFound, Resource
from tests.netns import NetNamespace, network_namespace, routed_address
from tests.polling import wait_for

__all__ = [
    "APISERVICES",
    "PORT",
    "SECRETS",
    "SLICES",
    "StandIn",
    "available",
    "decoded",
    "serve_service",
    "stand_in",
    "wait_available",
    "write_bundle",
]

PORT = 8443
VERSION = "v1alpha1"
SECRETS = Resource("v1", "Secret", "secrets", namespaced=True)
SLICES = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", namespaced=True)
APISERVICES = Resource("apiregistration.k8s.io/v1", "APIService", "apiservices", namespaced=False)


def write_bundle(
    root: Path,
    *,
    deployment: str,
    group: str,
    package: str = "wardle",
    version: str = "0.1.0",
    port: int = PORT,
) -> Path:
    """A registry+v1 bundle ``<package>.v<version>`` (channel ``alpha``) whose one Deployment
    serves ``v1alpha1.<group>`` on ``port``, under a service account of the Deployment's name
    that the CSV's ``permissions`` create (so OLM v0 and pivoter both make it)."""
    pod_spec = {
        "serviceAccountName": deployment,
        "containers": [{"name": "server", "image": f"example.com/{package}:{version}"}],
    }
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": f"{package}.v{version}"},
        "spec": {
            "version": version,
            "displayName": package.capitalize(),
            "installModes": [
                {"type": "OwnNamespace", "supported": True},
                {"type": "SingleNamespace", "supported": False},
                {"type": "MultiNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": True},
            ],
            "apiservicedefinitions": {
                "owned": [
                    {
                        "group": group,
                        "version": VERSION,
                        "name": "flunders",
                        "kind": "Flunder",
                        "displayName": "Flunder",
                        "deploymentName": deployment,
                        "containerPort": port,
                    }
                ]
            },
            "install": {
                "strategy": "deployment",
                "spec": {
                    "permissions": [
                        {
                            "serviceAccountName": deployment,
                            "rules": [
                                {
                                    "apiGroups": [""],
                                    "resources": ["configmaps"],
                                    "verbs": ["get", "list", "watch"],
                                }
                            ],
                        }
                    ],
                    "deployments": [
                        {
                            "name": deployment,
                            "spec": {
                                "replicas": 1,
                                "selector": {"matchLabels": {"app": deployment}},
                                "template": {
                                    "metadata": {"labels": {"app": deployment}},
                                    "spec": pod_spec,
                                },
                            },
                        }
                    ],
                },
            },
        },
    }
    prefix = "operators.operatorframework.io.bundle"
    annotations = {
        "annotations": {
            f"{prefix}.mediatype.v1": "registry+v1",
            f"{prefix}.manifests.v1": "manifests/",
            f"{prefix}.metadata.v1": "metadata/",
            f"{prefix}.package.v1": package,
            f"{prefix}.channels.v1": "alpha",
        }
    }
    (root / "manifests").mkdir(parents=True)
    (root / "metadata").mkdir()
    (root / "manifests" / f"{package}.clusterserviceversion.yaml").write_text(yaml.safe_dump(csv))
    (root / "metadata" / "annotations.yaml").write_text(yaml.safe_dump(annotations))
    return root


def decoded(secret: dict[str, Any], key: str) -> bytes:
    """The bytes of ``key`` in a Secret's data."""
    return base64.b64decode(secret["data"][key])


@dataclass
class StandIn:
    """A running stand-in: the paths requested so far, and the certificate it serves."""

    workdir: Path
    context: ssl.SSLContext
    requested: list[str] = field(default_factory=list)
    served_version: str = ""
    """The resourceVersion of the Secret whose certificate is served."""

    def load(self, secret: dict[str, Any]) -> None:
        """Serve the certificate and key of ``secret`` from the next handshake on."""
        cert, key = self.workdir / "tls.crt", self.workdir / "tls.key"
        cert.write_bytes(decoded(secret, "tls.crt"))
        key.write_bytes(decoded(secret, "tls.key"))
        self.context.load_cert_chain(cert, key)
        self.served_version = str(secret["metadata"].get("resourceVersion", ""))


def _handler(group: str, server: StandIn) -> type[BaseHTTPRequestHandler]:
    path = f"/apis/{group}/{VERSION}"
    discovery = json.dumps(
        {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{VERSION}",
            "resources": [
                {
                    "name": "flunders",
                    "singularName": "flunder",
                    "namespaced": True,
                    "kind": "Flunder",
                    "verbs": ["get", "list"],
                }
            ],
        }
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            server.requested.append(self.path)
            found = self.path.split("?")[0] == path
            body = discovery if found else b'{"kind":"Status","code":404}'
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def stand_in(
    netns: NetNamespace,
    secret: dict[str, Any],
    group: str,
    workdir: Path,
    *,
    host: str = "",
    port: int = PORT,
) -> Iterator[StandIn]:
    """Serve ``/apis/<group>/v1alpha1`` over TLS with the Secret's certificate, inside
    ``netns`` on ``host:port`` (``host`` "": every address of the namespace), until the block
    ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = StandIn(workdir, ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    server.load(secret)
    listener = netns.bound_socket(host, port)
    http = ThreadingHTTPServer(listener.getsockname(), _handler(group, server), False)
    http.socket.close()
    http.socket = server.context.wrap_socket(listener, server_side=True)
    thread = threading.Thread(target=http.serve_forever, name="apiservice-stand-in", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        http.shutdown()
        http.server_close()
        thread.join(10)


def _ready_addresses(kube: Kube, namespace: str, service: str) -> set[str]:
    """The ready endpoint addresses of ``service``, from its EndpointSlices."""
    selector = f"kubernetes.io/service-name={service}"
    addresses: set[str] = set()
    for piece in kube.list(SLICES, namespace, label_selector=selector)[0]:
        for endpoint in piece.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                addresses.update(endpoint.get("addresses") or [])
    return addresses


@dataclass
class _Follower:
    """Routes each ready address of the Service into the namespace, and reloads the
    certificate when the Secret changes, until stopped (a thread)."""

    kube: Kube
    netns: NetNamespace
    server: StandIn
    namespace: str
    service: str
    secret: str
    stop: threading.Event = field(default_factory=threading.Event)
    routed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    routes: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.once()
            except Exception as exc:  # reported by serve_service's caller
                if not self.errors or self.errors[-1] != str(exc):
                    self.errors.append(str(exc))
            self.stop.wait(0.5)

    def once(self) -> None:
        for address in sorted(_ready_addresses(self.kube, self.namespace, self.service)):
            if address not in self.routed:
                self.routes.enter_context(routed_address(self.netns, address))
                self.routed.append(address)
        try:
            secret = self.kube.get(SECRETS, self.secret, self.namespace)
        except NotFound:
            return
        if str(secret["metadata"].get("resourceVersion", "")) != self.server.served_version:
            self.server.load(secret)


@dataclass
class ServedService:
    """What :func:`serve_service` yields: the stand-in, and the addresses routed to it."""

    server: StandIn
    follower: _Follower

    @property
    def requested(self) -> list[str]:
        """The paths requested so far."""
        return self.server.requested

    @property
    def routed(self) -> list[str]:
        """The Service's endpoint addresses routed to the stand-in so far."""
        return list(self.follower.routed)

    @property
    def errors(self) -> list[str]:
        """What went wrong following the Service (a route that could not be made...)."""
        return list(self.follower.errors)


@contextlib.contextmanager
def serve_service(
    kube: Kube,
    *,
    namespace: str,
    deployment: str,
    group: str,
    workdir: Path,
    port: int = PORT,
    timeout: float = 180.0,
) -> Iterator[ServedService]:
    """Answer for the aggregated API server ``deployment`` behind its Service
    ``<deployment>-service``, with the certificate of ``<deployment>-service-cert`` (waited for
    up to ``timeout``), at the addresses the Service's EndpointSlices name, until the block ends.
    The namespace, its routes and the server are removed on exit, whatever happened."""
    secret_name = f"{deployment}-service-cert"

    def secret() -> dict[str, Any] | None:
        try:
            return kube.get(SECRETS, secret_name, namespace)
        except NotFound:
            return None

    first = wait_for(secret, timeout=timeout, what=f"Secret {namespace}/{secret_name}")
    with (
        network_namespace("agg") as netns,
        stand_in(netns, first, group, workdir, port=port) as server,
    ):
        follower = _Follower(kube, netns, server, namespace, f"{deployment}-service", secret_name)
        thread = threading.Thread(target=follower.run, name=f"follow-{deployment}", daemon=True)
        thread.start()
        try:
            yield ServedService(server, follower)
        finally:
            follower.stop.set()
            thread.join(30)
            follower.routes.close()


def available(apiservice: dict[str, Any]) -> dict[str, Any]:
    """The APIService's ``Available`` condition (empty if absent)."""
    for c in (apiservice.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Available":
            return dict(c)
    return {}


def wait_available(
    kube: Kube,
    name: str,
    *,
    timeout: float = 90.0,
    detail: Callable[[], object] | None = None,
) -> dict[str, Any]:
    """Wait until the APIService ``name`` is Available; return that condition."""

    def now() -> dict[str, Any]:
        return available(kube.get(APISERVICES, name))

    return dict(
        wait_for(
            lambda: (found := now()).get("status") == "True" and found,
            timeout=timeout,
            what=f"APIService {name} to become Available",
            detail=lambda: (now(), detail() if detail else ""),
        )
    )
