"""What the registry+v1 conversion shares with OLM v0 so that an install OLM v0 made can be taken
over in place (docs/registry-v1.md, "Compared with OLM v0"): the certificate Secret OLM v0 wrote
is kept, the pod template's ``olmcahash`` is OLM v0's, and ``objectNames`` gives generated
objects the names OLM v0 gave them."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from provisioners.certs import issue_serving_certificate
from provisioners.formats.registry_v1 import RegistryV1
from provisioners.formats.registry_v1.errors import InvalidInstallConfigError
from tests.registry_v1.helpers import bundle

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SERVICE = "kube-green-controller-manager-service"


def _olm_secret(namespace: str) -> dict[str, Any]:
    """A Secret as OLM v0 writes it: a certificate for the names OLM v0 issues (not the bare
    Service name), tls.crt, tls.key and the CA under olmCAKey, no ca.crt."""
    hosts = [f"{SERVICE}.{namespace}", f"{SERVICE}.{namespace}.svc"]
    hosts.append(f"{SERVICE}.{namespace}.svc.cluster.local")
    issued = issue_serving_certificate(
        hosts, ca_name="olm-selfsigned", validity=timedelta(days=730), now=NOW
    )

    def encoded(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return {
        "data": {
            "tls.crt": encoded(issued.certificate),
            "tls.key": encoded(issued.private_key),
            "olmCAKey": encoded(issued.ca),
        }
    }


def test_the_certificate_olm_wrote_is_kept_and_the_pod_template_hash_is_olms() -> None:
    olm = _olm_secret("ops")
    converter = RegistryV1(
        secret_lookup=lambda ns, name: olm, clock=lambda: NOW + timedelta(days=1)
    )
    conversion = converter.convert_bundle(bundle("kube-green"), {"installNamespace": "ops"})
    assert not any(plan.rotated for plan in conversion.certificates.values())
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in conversion.objects}
    secret = by_kind[("Secret", f"{SERVICE}-cert")]
    assert secret["data"]["tls.crt"] == olm["data"]["tls.crt"]
    assert secret["data"]["olmCAKey"] == olm["data"]["olmCAKey"]
    assert secret["data"]["ca.crt"] == olm["data"]["olmCAKey"]
    deployment = by_kind[("Deployment", "kube-green-controller-manager")]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    # OLM v0: sha256 of the CA's PEM, hex.
    assert (
        annotations["olmcahash"]
        == hashlib.sha256(base64.b64decode(olm["data"]["olmCAKey"])).hexdigest()
    )
    service = by_kind[("Service", SERVICE)]
    assert [p["name"] for p in service["spec"]["ports"]] == ["443"]


def test_object_names_rename_generated_objects_and_their_bindings_follow() -> None:
    root: Path = bundle("kube-green")
    plain = RegistryV1().convert_bundle(root, {"installNamespace": "ops"})
    generated = {(o["kind"], o["metadata"]["name"]) for o in plain.objects}
    role = next(
        n for k, n in generated if k == "ClusterRole" and n.startswith("kube-green.v0.6.0-")
    )
    webhook = next(n for k, n in generated if k == "ValidatingWebhookConfiguration")
    names = {
        f"ClusterRole/{role}": "kube-green.v0.6.0-kube-g-abc",
        f"ValidatingWebhookConfiguration/{webhook}": "vsleepinfo.kb.io-x7k2p",
    }
    renamed = RegistryV1().convert_bundle(root, {"installNamespace": "ops", "objectNames": names})
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in renamed.objects}
    assert ("ClusterRole", "kube-green.v0.6.0-kube-g-abc") in by_kind
    assert ("ClusterRole", role) not in by_kind
    assert ("ValidatingWebhookConfiguration", "vsleepinfo.kb.io-x7k2p") in by_kind
    binding = by_kind[("ClusterRoleBinding", role)]
    assert binding["roleRef"]["name"] == "kube-green.v0.6.0-kube-g-abc"


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        ({"Deployment/x": "y"}, "keys are KIND/NAME"),
        ({"ClusterRole": "y"}, "keys are KIND/NAME"),
        ({"ClusterRole/x": "Not Valid"}, "is not a valid object name"),
    ],
)
def test_object_names_refuses_what_it_cannot_rename(names: dict[str, str], problem: str) -> None:
    with pytest.raises(InvalidInstallConfigError, match=problem):
        RegistryV1().convert_bundle(
            bundle("kube-green"), {"installNamespace": "ops", "objectNames": names}
        )
