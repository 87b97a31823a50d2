"""The full conversion output of three real bundles, compared with reviewed golden YAML.

kube-green (webhooks), mercury-operator (SingleNamespace, with Deployment overrides) and
aws-neuron-operator (many RBAC manifests and permissions). Generated certificate material is
replaced by numbered placeholders (equal values get equal placeholders, so the golden still
shows that the caBundle is the Secret's CA). Regenerate after a reviewed change with
``PIVOTER_UPDATE_GOLDEN=1 pytest tests/registry_v1/test_golden.py``.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from provisioners.formats.registry_v1 import RegistryV1
from provisioners.formats.registry_v1.webhooks import CERT_HASH_ANNOTATION
from tests.registry_v1.helpers import bundle

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "registry_v1" / "golden"
UPDATE = os.environ.get("PIVOTER_UPDATE_GOLDEN") == "1"
NOW = datetime(2026, 1, 1, tzinfo=UTC)

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "kube-green": ("kube-green", {}),
    "mercury-operator-single-namespace": (
        "mercury-operator",
        {
            "installNamespace": "mercury",
            "watchNamespace": "team-a",
            "deploymentConfig": {
                "env": [{"name": "LOG_LEVEL", "value": "debug"}],
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                "tolerations": [{"key": "infra", "operator": "Exists"}],
            },
        },
    ),
    "aws-neuron-operator": ("aws-neuron-operator", {}),
}


class _Placeholders:
    """Replaces generated values by ``<generated-N>``, the same value by the same N."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        return self.seen.setdefault(value, f"<generated-{len(self.seen) + 1}>")


def normalise(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Objects with certificate material, keys and their hashes replaced by placeholders."""
    placeholder = _Placeholders()
    for obj in objects:
        if obj["kind"] == "Secret" and obj.get("type") == "kubernetes.io/tls":
            for key in sorted(obj["data"]):
                obj["data"][key] = placeholder(obj["data"][key])
        for webhook in obj.get("webhooks", []):
            webhook["clientConfig"]["caBundle"] = placeholder(webhook["clientConfig"]["caBundle"])
        conversion = (
            obj.get("spec", {}).get("conversion", {}) if obj["kind"].endswith("Definition") else {}
        )
        if conversion.get("strategy") == "Webhook":
            client = conversion["webhook"]["clientConfig"]
            client["caBundle"] = placeholder(client["caBundle"])
        if obj["kind"] == "Deployment":
            annotations = obj["spec"]["template"]["metadata"]["annotations"]
            if CERT_HASH_ANNOTATION in annotations:
                annotations[CERT_HASH_ANNOTATION] = placeholder(annotations[CERT_HASH_ANNOTATION])
    return objects


def render(objects: list[dict[str, Any]]) -> str:
    """Multi-document YAML, keys in a stable order."""
    return yaml.safe_dump_all(normalise(objects), sort_keys=True, width=100)


@pytest.mark.parametrize("case", sorted(CASES))
def test_conversion_matches_golden(case: str) -> None:
    name, config = CASES[case]
    conversion = RegistryV1().convert_bundle(bundle(name), config, now=NOW)
    actual = render(conversion.objects)
    golden = GOLDEN_DIR / f"{case}.yaml"
    if UPDATE:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual)
    assert golden.is_file(), f"no golden file; create it with PIVOTER_UPDATE_GOLDEN=1 ({golden})"
    assert actual == golden.read_text(), (
        f"conversion of {name} differs from {golden.name}; review the difference and, if it is "
        "intended, regenerate with PIVOTER_UPDATE_GOLDEN=1"
    )
