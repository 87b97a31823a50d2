"""The admission webhook's HTTPS server: one path per admitted kind, decisions from the cluster.

``WebhookServer`` routes ``/validate-bundles``, ``/validate-configmaps``,
``/validate-bundledeployments`` and, for every input kind of
:data:`pivoter.apis.inputs.INPUT_KINDS`, ``/validate-<plural>`` (``/validate-resolutions``, ...)
to the validators, answering with the API server's lookups (ConfigMaps of the system namespace,
Bundles that use them, SubjectAccessReviews for the requesting user). A request that cannot be
decided (the API server unreachable) is refused: the webhook configurations use
``failurePolicy: Fail``, and so does the server. Started by ``pivoter run`` with
``--webhook-bind-address``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from pivoter.apis.inputs import INPUT_KINDS, InputKind
from pivoter.apis.resources import BUNDLES, CONFIG_MAPS
from pivoter.httpserving import BackgroundHTTPServer, ConnectionLimits
from pivoter.kube import Kube, KubeError, NotFound
from pivoter.kube.access import Subject, subject_access_review
from pivoter.webhook.bundledeployments import validate_bundle_deployment
from pivoter.webhook.bundles import validate_bundle
from pivoter.webhook.configmaps import validate_config_map
from pivoter.webhook.inputs import validate_input
from pivoter.webhook.review import Request, Validator, Verdict, deny, respond
from resolver import safedata

__all__ = ["PATHS", "WebhookServer"]

log = logging.getLogger(__name__)

PATHS = {
    "bundles": "/validate-bundles",
    "configmaps": "/validate-configmaps",
    "bundledeployments": "/validate-bundledeployments",
    **{k.resource.plural: f"/validate-{k.resource.plural}" for k in INPUT_KINDS},
}
"""The path of each admitted kind, by its plural."""
MAX_BODY = 8 * 1024 * 1024  # the API server's own request limit is 3 MiB per object


class WebhookServer:
    """Serves the validators over TLS (``cert`` and ``key`` are PEM files)."""

    def __init__(
        self,
        kube: Kube,
        *,
        system_namespace: str,
        cert: Path,
        key: Path,
        host: str = "0.0.0.0",  # the API server reaches it through a Service or a URL
        port: int = 9443,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.kube = kube
        self.system_namespace = system_namespace
        self.validators: dict[str, Validator] = {
            PATHS["bundles"]: lambda r: validate_bundle(r, self.read_config_map, self.can),
            PATHS["configmaps"]: self._config_map,
            PATHS["bundledeployments"]: lambda r: validate_bundle_deployment(r, self.can),
            **{PATHS[k.resource.plural]: self._input_validator(k) for k in INPUT_KINDS},
        }
        # Handshakes run per connection with timeouts (pivoter.httpserving): with failurePolicy
        # Fail, one idle client must not stall every admission request.
        self.server = BackgroundHTTPServer(
            _handler(self),
            host=host,
            port=port,
            name="webhook-server",
            tls_cert=cert,
            tls_key=key,
            limits=limits,
        )

    @property
    def port(self) -> int:
        """The bound port."""
        return self.server.port

    def start(self) -> None:
        """Serve in a background thread."""
        self.server.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.stop()

    # -- lookups -----------------------------------------------------------------------------

    def read_config_map(self, name: str) -> Mapping[str, Any] | None:
        """ConfigMap ``name`` of the system namespace, or None."""
        try:
            return self.kube.get(CONFIG_MAPS, name, self.system_namespace)
        except NotFound:
            return None

    def bundles_using(self, config_map: str) -> list[str]:
        """Names of the Bundles whose configMaps source reads ``config_map``."""
        bundles, _ = self.kube.list(BUNDLES)
        users = []
        for bundle in bundles:
            source = (bundle.get("spec") or {}).get("source") or {}
            names = {
                (entry.get("configMap") or {}).get("name")
                for entry in source.get("configMaps") or []
            }
            if config_map in names:
                users.append(bundle["metadata"]["name"])
        return users

    def _input_validator(self, kind: InputKind) -> Validator:
        """The validator of the inputs of ``kind``."""
        return lambda request: validate_input(kind, request, self.can)

    def _config_map(self, request: Request) -> Verdict:
        if request.namespace != self.system_namespace:
            return Verdict(True)
        return validate_config_map(request, self.bundles_using)

    def can(self, request: Request, attributes: Mapping[str, str]) -> tuple[bool, str]:
        """A SubjectAccessReview for the requesting user."""
        subject = Subject(request.username, request.groups, request.uid_of_user, request.extra)
        return subject_access_review(self.kube, subject, resource=attributes)

    def decide(self, path: str, review: Mapping[str, Any]) -> dict[str, Any]:
        """The AdmissionReview answer to ``review`` posted at ``path``."""
        request = Request.from_review(review)
        validator = self.validators[path]
        try:
            verdict = validator(request)
        except KubeError as exc:
            verdict = deny(f"pivoter could not check this request: {exc}")
        log.info(
            "admission %s %s %s by %s: %s%s",
            request.operation,
            request.kind,
            request.name,
            request.username,
            "allowed" if verdict.allowed else "denied",
            "" if verdict.allowed else f" ({verdict.message})",
        )
        return respond(request.uid, verdict)


def _handler(server: WebhookServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("webhook: " + format, *args)

        def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            if path not in server.validators:
                self._send(HTTPStatus.NOT_FOUND, b"unknown webhook path\n", "text/plain")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._send(HTTPStatus.BAD_REQUEST, b"bad Content-Length\n", "text/plain")
                return
            try:
                review = safedata.load_json(self.rfile.read(length))
                answer = server.decide(path, review)
            except (ValueError, TypeError) as exc:
                self._send(HTTPStatus.BAD_REQUEST, f"{exc}\n".encode(), "text/plain")
                return
            self._send(HTTPStatus.OK, json.dumps(answer).encode(), "application/json")

    return Handler
