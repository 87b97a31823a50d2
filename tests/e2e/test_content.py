"""Bundle content through ``pivoter run``: ``status.contentURL`` behind TokenReview and
SubjectAccessReview (rukpak's ``bundle-reader`` role), a 100 MB bundle that never touches etcd,
and unpacking again after the store is wiped and the daemon restarted.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.cluster import session_labels, unique_name, wait_for
from tests.e2e.conftest import Tarballs
from tests.e2e.helpers import BUNDLES, E2E, plain_layer, tgz
from tests.manifests import cm_manifest
from tests.provisioners.oci import Pusher, file
from tests.provisioners.servers import Registry

pytestmark = pytest.mark.cluster

RBAC = "rbac.authorization.k8s.io/v1"


def _get(url: str, token: str | None) -> tuple[int, bytes]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _service_account_token(e2e: E2E, name: str) -> str:
    sas = e2e.kube.resource("v1", "ServiceAccount")
    e2e.kube.create(
        sas,
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        e2e.namespace,
    )
    answer = e2e.kube.request(
        "POST",
        f"/api/v1/namespaces/{e2e.namespace}/serviceaccounts/{name}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )
    return str(answer["status"]["token"])


def _grant_bundle_reader(e2e: E2E, account: str) -> None:
    role = unique_name("bundle-reader")
    e2e.kube.create(
        e2e.kube.resource(RBAC, "ClusterRole"),
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": role, "labels": session_labels()},
            "rules": [{"nonResourceURLs": ["/bundles/*"], "verbs": ["get"]}],
        },
    )
    e2e.kube.create(
        e2e.kube.resource(RBAC, "ClusterRoleBinding"),
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role, "labels": session_labels()},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": e2e.namespace}],
        },
    )


def _members(tar_gz: bytes) -> dict[str, bytes]:
    out = {}
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(tar_gz)), mode="r:") as archive:
        for member in archive.getmembers():
            if member.isfile():
                extracted = archive.extractfile(member)
                assert extracted is not None
                out[member.name.removeprefix("./")] = extracted.read()
    return out


def _content_url(e2e: E2E, bd: dict[str, Any]) -> str:
    bundle = e2e.kube.get(BUNDLES, bd["status"]["activeBundle"])
    return str(bundle["status"]["contentURL"])


def test_content_url_needs_bundle_reader(e2e: E2E) -> None:
    manifest = cm_manifest("served", e2e.namespace)
    content = e2e.config_map({"cm.yaml": manifest})
    name = e2e.deploy(
        {
            "type": "configMaps",
            "configMaps": [{"configMap": {"name": content}, "path": "manifests"}],
        }
    )
    url = _content_url(e2e, e2e.wait_installed(name))
    assert url.startswith(e2e.daemon.content_url + "/bundles/")

    status, body = _get(url, None)
    assert status == 401, body
    status, body = _get(url, "not-a-real-token")
    assert status == 401, body
    reader = unique_name("reader")
    token = _service_account_token(e2e, reader)
    status, body = _get(url, token)
    assert status == 403, body
    assert reader in body.decode()

    _grant_bundle_reader(e2e, reader)
    status, body = wait_for(
        lambda: (answer := _get(url, token))[0] == 200 and answer,
        timeout=30,
        what="RBAC to grant the bundle-reader role",
    )
    assert _members(body) == {"manifests/cm.yaml": manifest.encode()}


@pytest.mark.timeout(600)  # pushes 100 MB, then waits up to 300 s for the install
def test_hundred_megabyte_bundle(e2e: E2E, registry: Registry, pusher: Pusher) -> None:
    blob = os.urandom(100 * 1024 * 1024)  # incompressible: passes the compression-ratio limit
    layer = plain_layer(
        {"cm.yaml": cm_manifest("large-bundle", e2e.namespace)}, [file("blobs/big.bin", blob)]
    )
    repo = unique_name("large")
    pusher.image(repo, "v1", [layer])
    name = e2e.deploy({"type": "image", "image": {"ref": f"{registry.host}/{repo}:v1"}})
    bd = e2e.wait_installed(name, timeout=300)
    assert e2e.config_map_in("large-bundle") is not None
    bundle = e2e.kube.get(BUNDLES, bd["status"]["activeBundle"])
    # Nothing of the content went to etcd: the Bundle and BundleDeployment stay small.
    assert len(json.dumps(bundle)) < 8192
    assert len(json.dumps(e2e.get(name))) < 8192
    stored = [p for p in e2e.daemon.store_dir.rglob("big.bin") if p.is_file()]
    assert stored, "the large file is not in the content store"
    assert hashlib.sha256(stored[0].read_bytes()).digest() == hashlib.sha256(blob).digest()


def test_store_wiped_and_daemon_restarted_unpacks_again(e2e: E2E, tarballs: Tarballs) -> None:
    url = tarballs.publish(
        f"/{unique_name('again')}.tgz",
        tgz(plain_layer({"cm.yaml": cm_manifest("again", e2e.namespace)})),
    )
    name = e2e.deploy({"type": "http", "http": {"url": url}})
    bd = e2e.wait_installed(name)
    bundle_name = bd["status"]["activeBundle"]
    digest = e2e.kube.get(BUNDLES, bundle_name)["status"]["digest"]

    e2e.daemon.stop()
    shutil.rmtree(e2e.daemon.store_dir)
    e2e.daemon.start()

    # The new daemon finds the Bundle unpacked but its content missing: it fetches it again.
    def republished() -> bool:
        bundle = e2e.kube.get(BUNDLES, bundle_name)
        objects = e2e.daemon.store_dir / "objects"
        return (
            bundle["status"].get("contentURL", "").startswith(e2e.daemon.content_url)
            and objects.is_dir()
            and any(objects.iterdir())
        )

    wait_for(republished, timeout=90, what="the bundle to be unpacked again")
    bundle = e2e.kube.get(BUNDLES, bundle_name)
    assert bundle["status"]["digest"] == digest
    bd = e2e.wait_installed(name)
    assert bd["status"]["activeBundle"] == bundle_name
    assert e2e.config_map_in("again") is not None
