"""The daemon's admission webhook: certificate, server and registration.

The server (:mod:`pivoter.webhook`) serves TLS with the certificate of
:attr:`~pivoter.daemon.settings.Webhook.cert_dir` (``tls.crt``, ``tls.key``, and ``ca.crt`` to
inject; e.g. a Secret written by cert-manager, needed when several replicas serve) or one
generated at start for the name the API server uses. With a URL (daemon outside the cluster) or
a Service, the ValidatingWebhookConfiguration is applied at start with the CA injected. Started
by :func:`pivoter.daemon.product.build` (``pivoter run --webhook-*``).
"""

from __future__ import annotations

import logging
import tempfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from pivoter.daemon.settings import Webhook
from pivoter.kube import Kube, apply
from pivoter.webhook.registration import configuration
from pivoter.webhook.server import WebhookServer
from provisioners.certs import issue_serving_certificate

__all__ = ["GENERATED_VALIDITY", "start_webhook"]

log = logging.getLogger("pivoter.run")

GENERATED_VALIDITY = timedelta(days=365)


def _names(webhook: Webhook) -> list[str]:
    """The DNS names the API server calls the webhook by (those of the generated certificate)."""
    if webhook.url:
        host = urlsplit(webhook.url).hostname
        if not host:
            raise ValueError(f"--webhook-url {webhook.url!r} has no host")
        return [host]
    if webhook.service is not None:
        namespace, name = webhook.service
        return [
            f"{name}.{namespace}.svc",
            f"{name}.{namespace}",
            f"{name}.{namespace}.svc.cluster.local",
        ]
    raise ValueError("--webhook-bind-address needs --webhook-url or --webhook-service")


def start_webhook(
    kube: Kube, webhook: Webhook, namespace: str, *, cluster_extensions: bool = False
) -> WebhookServer:
    """Start the webhook server and register it; ``namespace`` is pivoter's own,
    ``cluster_extensions``: the daemon serves OLM v1's ClusterExtensions, admit them too."""
    if webhook.cert_dir is not None:
        cert_dir = webhook.cert_dir
        ca = (cert_dir / "ca.crt").read_bytes()
    else:
        issued = issue_serving_certificate(
            _names(webhook), ca_name="pivoter webhook CA", validity=GENERATED_VALIDITY
        )
        cert_dir = Path(tempfile.mkdtemp(prefix="pivoter-webhook-"))
        (cert_dir / "tls.crt").write_bytes(issued.certificate)
        (cert_dir / "tls.key").write_bytes(issued.private_key)
        ca = issued.ca
    host, port = webhook.address
    server = WebhookServer(
        kube,
        system_namespace=namespace,
        cert=cert_dir / "tls.crt",
        key=cert_dir / "tls.key",
        host=host,
        port=port,
    )
    server.start()
    if webhook.url or webhook.service is not None:
        config = configuration(
            ca_bundle=ca,
            system_namespace=namespace,
            url=webhook.url,
            service=(*webhook.service, 443) if webhook.service is not None else None,
            cluster_extensions=cluster_extensions,
        )
        apply(kube, config, field_manager="pivoter", force=True)
        where = webhook.url or "/".join(webhook.service or ())
        log.info("admission webhooks registered (%s)", where)
    return server
