"""Bundles that live in a registry which requires credentials, on the real control plane: every
kind of pull secret a Resolution or a PlatformOperator can be installed with, and what a person
sees while the credential is missing or wrong.

The registry is distribution's ``registry`` with htpasswd authentication; the catalog names its
images. Each test starts without a usable credential (the child's Bundle cannot be unpacked and
the input says which registry refused and where pivoter looked), adds or fixes the Secret without
touching the input, and sees the package installed and then upgraded. No credential appears in
the inputs' status, the Bundles' status, the namespace's Events or the daemon's log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLES, CATALOGS, PLATFORM_OPERATORS, SECRETS
from pivoter.catalogs import SourceSettings
from pivoter.daemon.product import build
from pivoter.daemon.settings import Settings
from pivoter.kube import Kube, NotFound, load_client
from pivoter.runtime import Manager
from tests.cluster import TestCluster, session_labels, unique_name
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Publisher, Version, config_map
from tests.polling import wait_for
from tests.provisioners.oci import (
    Pusher,
)
from tests.provisioners.servers import Registry, run_registry

pytestmark = pytest.mark.cluster

USER, PASSWORD = "puller", "pull-S3cret-7f2a"
GLOBAL = "global-pull"


@pytest.fixture(scope="module")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry on loopback that lets nobody pull without a password."""
    with run_registry(
        tmp_path_factory.mktemp("private-bundles"), htpasswd=(USER, PASSWORD)
    ) as running:
        yield running


@dataclass
class Private:
    """The daemon (in this process) with ``--global-pull-secret <namespace>/global-pull``."""

    env: Env
    registry: Registry
    log: pytest.LogCaptureFixture

    def secret(self, name: str, password: str, namespace: str | None = None) -> None:
        """Create or replace a docker config Secret for the registry."""
        auth = base64.b64encode(f"{USER}:{password}".encode()).decode()
        config = json.dumps({"auths": {self.registry.host: {"auth": auth}}}).encode()
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(config).decode()},
        }
        kube, namespace = self.env.kube, namespace or self.env.namespace
        with contextlib.suppress(NotFound):
            kube.delete(SECRETS, name, namespace)
        kube.create(SECRETS, body, namespace)

    def never_shown(self, *objects: Any) -> None:
        """The password is in none of ``objects``, the Bundles, the Events or the log."""
        bundles, _ = self.env.kube.list(BUNDLES)
        events, _ = self.env.kube.list(self.env.kube.resource("v1", "Event"), self.env.namespace)
        for what, value in (
            ("the inputs", objects),
            ("the Bundles' status", [b.get("status") for b in bundles]),
            ("the Events", events),
            ("the log", self.log.text),
        ):
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            assert PASSWORD not in text, f"the password appears in {what}"
            assert base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() not in text


@pytest.fixture
def private(
    cluster: TestCluster,
    input_crds: None,
    private_registry: Registry,
    namespace: str,
    tmp_path: Path,
    *,
    caplog: pytest.LogCaptureFixture,
) -> Iterator[Private]:
    """The daemon's product in this process with the global pull secret (not created yet)."""
    caplog.set_level(logging.DEBUG)
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    kube = Kube(api_client)
    manager = Manager(kube)
    settings = Settings(
        namespace=namespace,
        store_dir=tmp_path / "store",
        olmv1="read",
        read_olm_catalogs=False,
        catalog_sources=SourceSettings(workdir=tmp_path / "work", timeout=3.0, deadline=20.0),
        global_pull_secret=(namespace, GLOBAL),
    )
    product = build(manager, settings)
    assert product.revisions is not None
    manager.start()
    served = tmp_path / "served"
    served.mkdir()
    pusher = Pusher(private_registry.base, USER, PASSWORD)
    env = Env(
        kube,
        namespace,
        Publisher(pusher, private_registry.host, served),
        product.revisions,
        manager,
        product.resolutions,
    )
    try:
        assert manager.wait_controllers_started(30)
        yield Private(env, private_registry, caplog)
    finally:
        try:
            env.cleanup()
        finally:
            manager.shutdown()
            product.stop()
            if env.server is not None:
                env.server.close()
            api_client.close()


def _installed(version: str, revision: int) -> Callable[[dict[str, Any]], bool]:
    """Revision ``revision`` (selecting ``version``) is the active one and Ready."""

    def check(obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        versions = [s.get("version") for s in status.get("selection") or []]
        return (
            is_(obj, "Ready", "True")
            and status.get("activeRevision") == revision
            and versions == [version]
        )

    return check


def _says(*fragments: str) -> Callable[[dict[str, Any]], bool]:
    """The input's status names every fragment (in any condition's message)."""

    def check(obj: dict[str, Any]) -> bool:
        text = json.dumps(obj.get("status") or {})
        return all(f in text for f in fragments)

    return check


def test_the_global_pull_secret_installs_and_upgrades_once_it_exists(private: Private) -> None:
    env, ns = private.env, private.env.namespace
    env.publisher.add("vault", Version("1.0.0", config_map("vault", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "vault"}])
    # The Secret --global-pull-secret names does not exist yet: the input says which registry
    # refused and that pivoter had no credential for it; nothing is installed.
    refused = env.wait(
        name,
        _says(f"registry {private.registry.host} requires authentication", "no pull secret"),
        what="the refusal in the Resolution's status",
    )
    assert env.config_map_data("vault") is None
    assert not is_(refused, "Installed", "True")
    # The admin creates it; the input is not touched.
    private.secret(GLOBAL, PASSWORD)
    obj = env.wait(name, _installed("1.0.0", 1), what="vault 1.0.0 installed", timeout=120)
    assert env.config_map_data("vault") == {"version": "1.0.0"}
    env.publisher.add(
        "vault", Version("1.1.0", config_map("vault", ns, version="1.1.0"), replaces="1.0.0")
    )
    env.publish()
    obj = env.wait(name, _installed("1.1.0", 2), what="the upgrade to 1.1.0")
    assert env.config_map_data("vault") == {"version": "1.1.0"}
    private.never_shown(obj)


def test_a_wrong_password_is_named_with_its_secret_and_fixing_it_is_enough(
    private: Private,
) -> None:
    env, ns = private.env, private.env.namespace
    private.secret(GLOBAL, "not-the-password")
    env.publisher.add("etcd", Version("3.5.0", config_map("etcd", ns, version="3.5.0")))
    env.publish()
    env.catalog()
    name = env.platform_operator("etcd")
    refused = env.wait(
        name,
        _says("rejected", f"Secret {ns}/{GLOBAL}"),
        what="the rejected credential in the PlatformOperator's status",
        resource=PLATFORM_OPERATORS,
    )
    assert env.config_map_data("etcd") is None
    private.secret(GLOBAL, PASSWORD)
    obj = env.wait(
        name,
        lambda o: env.config_map_data("etcd") == {"version": "3.5.0"},
        what="etcd installed once the Secret is fixed",
        timeout=120,
        resource=PLATFORM_OPERATORS,
    )
    env.publisher.add(
        "etcd", Version("3.5.1", config_map("etcd", ns, version="3.5.1"), replaces="3.5.0")
    )
    env.publish()
    upgraded = env.wait(
        name,
        lambda o: env.config_map_data("etcd") == {"version": "3.5.1"},
        what="etcd upgraded to 3.5.1 from the private registry",
        resource=PLATFORM_OPERATORS,
    )
    private.never_shown(refused, obj, upgraded)


def test_the_installing_service_accounts_image_pull_secrets_are_offered(
    private: Private,
) -> None:
    """The Kubernetes convention: what the kubelet offers for a Pod of the account. Its secret
    comes before the global one (which here is wrong), so the account's credential installs."""
    env, ns, kube = private.env, private.env.namespace, private.env.kube
    private.secret(GLOBAL, "stale-global-password")
    private.secret("team-pull", PASSWORD)
    account = "installer"
    kube.create(
        kube.resource("v1", "ServiceAccount"),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": account},
            "imagePullSecrets": [{"name": "absent"}, {"name": "team-pull"}],
        },
        ns,
    )
    kube.create(
        kube.resource("rbac.authorization.k8s.io/v1", "Role"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": account},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}],
        },
        ns,
    )
    kube.create(
        kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": account},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}],
        },
        ns,
    )
    env.publisher.add("redis", Version("7.0.0", config_map("redis", ns, version="7.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "redis"}], serviceAccount={"name": account, "namespace": ns})
    obj = env.wait(name, _installed("7.0.0", 1), what="redis installed with the account's secret")
    assert env.config_map_data("redis") == {"version": "7.0.0"}
    (child,) = env.children(name).values()
    template = child["spec"]["template"]["metadata"]
    # The child names the account, never the Secret's content.
    assert template["annotations"]["pivoter.io/pull-service-account"] == f"{ns}/{account}"
    assert PASSWORD not in json.dumps(child)
    private.never_shown(obj)


def test_a_catalog_image_pull_secret_serves_the_catalog_and_the_bundles_it_names(
    private: Private,
) -> None:
    """A Catalog's pullSecret pulls its image and every bundle image the catalog names (and no
    other image); a Secret created after the Catalog is picked up by the next poll."""
    env, ns, kube = private.env, private.env.namespace, private.env.kube
    env.publisher.add("minio", Version("1.0.0", config_map("minio", ns, version="1.0.0")))
    env.publisher.publish()
    repo = unique_name("catalog")
    ref, _ = env.publisher.push_catalog(repo, "latest")
    catalog = unique_name("cat")
    kube.create(
        CATALOGS,
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": catalog, "labels": session_labels()},
            "spec": {
                "source": {"type": "image", "image": {"ref": ref, "pullSecret": "catalog-pull"}},
                "pollInterval": "1s",
            },
        },
    )
    env.created.append((CATALOGS, catalog))

    def catalog_says(fragment: str) -> Callable[[], bool]:
        def check() -> bool:
            status = kube.get(CATALOGS, catalog).get("status") or {}
            return fragment in json.dumps(status)

        return check

    wait_for(
        catalog_says("spec.source.image.pullSecret: Secret 'catalog-pull' not found"),
        timeout=30,
        what="the Catalog to name the missing Secret",
    )
    private.secret("catalog-pull", PASSWORD)
    name = env.resolution([{"name": "minio"}])
    obj = env.wait(name, _installed("1.0.0", 1), what="minio 1.0.0 installed", timeout=120)
    assert env.config_map_data("minio") == {"version": "1.0.0"}
    env.publisher.add(
        "minio", Version("1.1.0", config_map("minio", ns, version="1.1.0"), replaces="1.0.0")
    )
    env.publisher.publish()
    env.publisher.push_catalog(repo, "latest")
    obj = env.wait(name, _installed("1.1.0", 2), what="the upgrade to 1.1.0", timeout=120)
    assert env.config_map_data("minio") == {"version": "1.1.0"}
    private.never_shown(obj, kube.get(CATALOGS, catalog))
