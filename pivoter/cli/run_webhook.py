"""The admission webhook part of ``pivoter run``: flags, certificate, server and registration.

With ``--webhook-bind-address`` the daemon serves :mod:`pivoter.webhook` over TLS. The
certificate comes from ``--webhook-cert-dir`` (``tls.crt``, ``tls.key``, and ``ca.crt`` to inject;
e.g. a Secret written by cert-manager, needed when several replicas serve) or is generated at
start for the address the API server uses. With ``--webhook-url`` (daemon outside the cluster) or
``--webhook-service NAMESPACE/NAME`` the ValidatingWebhookConfiguration is applied at start with
the CA injected.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from pivoter.cli.commands.run import add_webhook_flags  # the flags, kept importable from here
from pivoter.daemon import Server
from pivoter.kube import Kube, apply
from pivoter.observability import parse_address
from pivoter.webhook.registration import configuration
from pivoter.webhook.server import WebhookServer
from provisioners.certs import issue_serving_certificate

__all__ = ["Server", "add_webhook_flags", "start_webhook"]

log = logging.getLogger("pivoter.run")

GENERATED_VALIDITY = timedelta(days=365)


def _names(args: argparse.Namespace) -> list[str]:
    if args.webhook_url:
        host = urlsplit(args.webhook_url).hostname
        if not host:
            raise ValueError(f"--webhook-url {args.webhook_url!r} has no host")
        return [host]
    if args.webhook_service:
        namespace, _, name = str(args.webhook_service).partition("/")
        if not namespace or not name:
            raise ValueError("--webhook-service must be NAMESPACE/NAME")
        return [
            f"{name}.{namespace}.svc",
            f"{name}.{namespace}",
            f"{name}.{namespace}.svc.cluster.local",
        ]
    raise ValueError("--webhook-bind-address needs --webhook-url or --webhook-service")


def start_webhook(
    kube: Kube, args: argparse.Namespace, namespace: str, *, cluster_extensions: bool = False
) -> WebhookServer | None:
    """Start the webhook server and register it, as the flags say; None when disabled.
    ``cluster_extensions``: the daemon serves OLM v1's ClusterExtensions, admit them too."""
    address = parse_address(args.webhook_bind_address)
    if address is None:
        return None
    if args.webhook_cert_dir:
        cert_dir: Path = args.webhook_cert_dir
        ca = (cert_dir / "ca.crt").read_bytes()
    else:
        issued = issue_serving_certificate(
            _names(args), ca_name="pivoter webhook CA", validity=GENERATED_VALIDITY
        )
        cert_dir = Path(tempfile.mkdtemp(prefix="pivoter-webhook-"))
        (cert_dir / "tls.crt").write_bytes(issued.certificate)
        (cert_dir / "tls.key").write_bytes(issued.private_key)
        ca = issued.ca
    server = WebhookServer(
        kube,
        system_namespace=namespace,
        cert=cert_dir / "tls.crt",
        key=cert_dir / "tls.key",
        host=address[0],
        port=address[1],
    )
    server.start()
    if args.webhook_url or args.webhook_service:
        service = None
        if args.webhook_service:
            svc_namespace, _, svc_name = str(args.webhook_service).partition("/")
            service = (svc_namespace, svc_name, 443)
        config = configuration(
            ca_bundle=ca,
            system_namespace=namespace,
            url=args.webhook_url or "",
            service=service,
            cluster_extensions=cluster_extensions,
        )
        apply(kube, config, field_manager="pivoter", force=True)
        log.info("admission webhooks registered (%s)", args.webhook_url or args.webhook_service)
    return server
