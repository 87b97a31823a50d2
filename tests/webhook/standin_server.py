"""A minimal HTTPS admission server standing in for an operator's webhook that cannot run here.

Real operator images do not run on the test control plane, so a test that must show the API
server calling a bundle's webhook through its Service runs this server instead, with the
certificate and key pivoter generated for that webhook (read from the Secret), in a network
namespace (:mod:`tests.netns`). It answers every ``POST`` with an ``admission.k8s.io/v1``
AdmissionReview: denied when the object carries the label ``DENY_LABEL`` set to ``"true"``,
allowed otherwise; each review is appended to a JSON-lines file the test reads. Started by
``tests/registry_v1_cluster/test_webhook_service_cluster.py`` as
``python -m tests.webhook.standin_server --cert ... --key ... --host ... --port ... --record ...``;
it prints ``ready`` once it listens, and stops on SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import signal
import ssl
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["DENY_LABEL", "decide", "main"]

DENY_LABEL = "standin.test.pivoter.io/deny"
MAX_BODY = 4 * 1024 * 1024


def decide(review: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview answering ``review`` by the label rule."""
    request = review.get("request") or {}
    obj = request.get("object") or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    denied = labels.get(DENY_LABEL) == "true"
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": not denied}
    if denied:
        response["status"] = {
            "code": 403,
            "reason": "Forbidden",
            "message": f"denied by the stand-in webhook: label {DENY_LABEL}=true",
        }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


def _handler(record: Path, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the record file is the log

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self.send_error(HTTPStatus.BAD_REQUEST, "an AdmissionReview body is required")
                return
            try:
                review = json.loads(self.rfile.read(length))
            except ValueError:
                self.send_error(HTTPStatus.BAD_REQUEST, "the body is not JSON")
                return
            answer = decide(review)
            request = review.get("request") or {}
            entry = {
                "path": self.path,
                "uid": request.get("uid"),
                "operation": request.get("operation"),
                "kind": (request.get("kind") or {}).get("kind"),
                "namespace": request.get("namespace"),
                "name": request.get("name")
                or (request.get("object") or {}).get("metadata", {}).get("name"),
                "allowed": answer["response"]["allowed"],
            }
            with lock, record.open("a") as out:
                out.write(json.dumps(entry) + "\n")
            body = json.dumps(answer).encode()
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cert", type=Path, required=True, help="PEM serving certificate")
    parser.add_argument("--key", type=Path, required=True, help="PEM private key")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record", type=Path, required=True, help="JSON-lines file of reviews")
    args = parser.parse_args(argv)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server = ThreadingHTTPServer((args.host, args.port), _handler(args.record, threading.Lock()))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print("ready", flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
