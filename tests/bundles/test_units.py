"""Pure parts of the Bundle controllers: source specs from Bundle sources, names, health rules."""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from pivoter.apis import rukpak
from pivoter.apis.conditions import find
from pivoter.controllers.bundle import BundleReconciler
from pivoter.controllers.generatedbundles import generated_bundle_name, template_hash
from pivoter.controllers.health import object_health
from pivoter.controllers.sourcespec import source_spec
from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.registries import RegistryAccessProvider
from pivoter.registries.names import ANNOTATION_PULL_SERVICE_ACCOUNT, bundle_pull_secrets
from provisioners.errors import InvalidSourceError
from provisioners.registries import RegistryAccess
from provisioners.sources import ConfigMapsSpec, FetchOptions, GitSpec, HttpSpec, ImageSpec
from provisioners.store import BundleStore

OBJECTS: dict[tuple[str, str], dict[str, Any]] = {
    ("Secret", "pull"): {"data": {".dockerconfigjson": base64.b64encode(b"{}").decode()}},
    ("Secret", "basic"): {
        "data": {
            "username": base64.b64encode(b"u").decode(),
            "password": base64.b64encode(b"p").decode(),
        }
    },
    ("Secret", "broken"): {"data": {"username": "%%%"}},
    ("ConfigMap", "frozen"): {"immutable": True, "data": {"a.yaml": "x"}},
    ("ConfigMap", "mutable"): {"data": {"a.yaml": "x"}},
}


def _read(kind: str, name: str) -> Mapping[str, Any] | None:
    return OBJECTS.get((kind, name))


def test_source_specs() -> None:
    image = source_spec({"type": "image", "image": {"ref": "r/x:1", "pullSecret": "pull"}}, _read)
    assert isinstance(image, ImageSpec)
    assert image.ref == "r/x:1"
    # The pull secrets and mirrors are the Bundle controller's to add (pivoter.registries).
    assert image.access == RegistryAccess()
    git = source_spec(
        {
            "type": "git",
            "git": {
                "repository": "https://g/r",
                "ref": {"tag": "v1"},
                "directory": "d",
                "auth": {"secret": {"name": "basic"}},
            },
        },
        _read,
    )
    assert isinstance(git, GitSpec)
    assert git.ref.tag == "v1"
    assert git.auth is not None
    assert (git.auth.username, git.auth.password) == ("u", "p")
    http = source_spec({"type": "http", "http": {"url": "https://h/b.tgz"}}, _read)
    assert isinstance(http, HttpSpec)
    cms = source_spec(
        {"type": "configMaps", "configMaps": [{"configMap": {"name": "frozen"}, "path": "m"}]},
        _read,
    )
    assert isinstance(cms, ConfigMapsSpec)
    assert cms.config_maps[0].path == "m"


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ({"type": "upload", "upload": {}}, "not served by pivoter"),
        ({"type": "git", "git": {"repository": "r", "ref": {}}}, "exactly one of"),
        (
            {
                "type": "http",
                "http": {"url": "https://h", "auth": {"secret": {"name": "broken"}}},
            },
            "not base64",
        ),
        ({"type": "configMaps", "configMaps": [{"configMap": {"name": "mutable"}}]}, "immutable"),
    ],
)
def test_bad_sources(source: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidSourceError, match=fragment):
        source_spec(source, _read)


class _Secrets:
    """The Secrets and service accounts of one namespace, as the Bundle controller reads them."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        found = {**OBJECTS, ("ServiceAccount", "installer"): _ACCOUNT}.get((resource.kind, name))
        if found is None:
            raise NotFound(404, "NotFound", f"{resource.plural} {name} not found")
        return dict(found)


_ACCOUNT = {"imagePullSecrets": [{"name": "pull"}, {"name": "gone"}]}


@pytest.mark.parametrize(
    ("pull_secret", "fragment"),
    [
        ("absent", "spec.source.image.pullSecret: Secret system/absent not found"),
        ("basic", "spec.source.image.pullSecret: Secret system/basic has no .dockerconfigjson"),
    ],
)
def test_a_bundles_own_pull_secret_must_exist_and_hold_a_docker_config(
    pull_secret: str, fragment: str
) -> None:
    image = {"ref": "r", "pullSecret": pull_secret}
    bundle = {"spec": {"source": {"type": "image", "image": image}}}
    kube = cast(Kube, _Secrets())
    refs = bundle_pull_secrets(kube, bundle, "system")
    with pytest.raises(InvalidSourceError, match=fragment):
        RegistryAccessProvider(kube, "system").access(refs)


def test_a_bundle_offers_its_own_secret_then_its_service_accounts() -> None:
    """The account's imagePullSecrets come after the Bundle's own; a missing one is skipped, as
    the kubelet skips it."""
    bundle = {
        "metadata": {"annotations": {ANNOTATION_PULL_SERVICE_ACCOUNT: "apps/installer"}},
        "spec": {"source": {"type": "image", "image": {"ref": "r", "pullSecret": "pull"}}},
    }
    kube = cast(Kube, _Secrets())
    refs = bundle_pull_secrets(kube, bundle, "system")
    assert [(r.namespace, r.name, r.required) for r in refs] == [
        ("system", "pull", True),
        ("apps", "pull", False),
        ("apps", "gone", False),
    ]
    access = RegistryAccessProvider(kube, "system").access(refs)
    assert access.keyring.sources == (
        "spec.source.image.pullSecret: Secret system/pull key '.dockerconfigjson'",
        "imagePullSecrets of service account apps/installer: Secret apps/pull key "
        "'.dockerconfigjson'",
    )


def test_template_hash_and_names() -> None:
    a = template_hash({"spec": {"x": 1, "y": 2}})
    assert a == template_hash({"spec": {"y": 2, "x": 1}}), "key order must not matter"
    assert a != template_hash({"spec": {"x": 1, "y": 3}})
    name = generated_bundle_name("b" * 45, a)
    assert len(name) == 52
    assert name.startswith("b" * 45 + "-")


@pytest.mark.parametrize(
    ("obj", "healthy"),
    [
        (
            {
                "kind": "Deployment",
                "metadata": {"generation": 2},
                "spec": {"replicas": 2},
                "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2},
            },
            True,
        ),
        (
            {
                "kind": "Deployment",
                "metadata": {"generation": 3},
                "spec": {"replicas": 1},
                "status": {"observedGeneration": 2, "updatedReplicas": 1, "availableReplicas": 1},
            },
            False,
        ),
        (
            {
                "kind": "Deployment",
                "spec": {"replicas": 3},
                "status": {"updatedReplicas": 3, "availableReplicas": 1},
            },
            False,
        ),
        (
            {
                "kind": "CustomResourceDefinition",
                "status": {"conditions": [{"type": "Established", "status": "True"}]},
            },
            True,
        ),
        ({"kind": "CustomResourceDefinition", "status": {}}, False),
        (
            {"kind": "Widget", "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
            False,
        ),
        ({"kind": "ConfigMap"}, True),
    ],
)
def test_object_health(obj: dict[str, Any], healthy: bool) -> None:
    assert (object_health(obj) is None) is healthy


class _StatusOnlyKube:
    """The one Bundle the reconciler reads, and the status writes it makes (a fake of Kube)."""

    def __init__(self, bundle: dict[str, Any]) -> None:
        self.bundle = bundle
        self.writes: list[dict[str, Any]] = []

    def get(self, resource: object, name: str, namespace: str | None = None) -> dict[str, Any]:
        return copy.deepcopy(self.bundle)

    def patch_status(self, resource: object, name: str, status: dict[str, Any]) -> None:
        self.writes.append(copy.deepcopy(status))
        self.bundle["status"] = copy.deepcopy(status)


def test_a_failing_unpack_retried_writes_no_new_status(tmp_path: Path) -> None:
    """Each status write is a watch event that queues the Bundle at once: a retry that writes
    Unpacking, then UnpackFailed again, loops as fast as the API server answers (seen: every
    15 ms) instead of backing off. A retry of the same generation changes nothing."""
    bundle = {
        "metadata": {"name": "b", "generation": 1},
        "spec": {
            "provisionerClassName": rukpak.CLASS_PLAIN,
            "source": {"type": "http", "http": {"url": "http://127.0.0.1:9/b.tgz"}},
        },
    }
    kube = _StatusOnlyKube(bundle)
    reconciler = BundleReconciler(
        kube,  # type: ignore[arg-type]
        BundleStore(tmp_path / "store"),
        system_namespace="pivoter-system",
        fetch_options=FetchOptions(timeout_seconds=2.0, deadline_seconds=5.0),
    )
    first = reconciler.reconcile("b")
    assert first is not None
    assert first.requeue
    assert [w["phase"] for w in kube.writes] == [rukpak.PHASE_UNPACKING, rukpak.PHASE_FAILING]
    failed = kube.writes[-1]
    for _ in range(3):
        assert reconciler.reconcile("b") == first
    # Later attempts write the same status (an API no-op, no event) or none at all.
    assert all(w == failed for w in kube.writes[2:])
    condition = find(kube.bundle["status"]["conditions"], rukpak.TYPE_UNPACKED)
    assert condition is not None
    assert condition["reason"] == rukpak.REASON_UNPACK_FAILED
    # A new generation is reported as unpacking again.
    kube.bundle["metadata"]["generation"] = 2
    reconciler.reconcile("b")
    assert kube.writes[-2]["phase"] == rukpak.PHASE_UNPACKING
