"""An operator OLM v0 installed is adopted and then upgraded by pivoter from a registry that
requires credentials (every Red Hat catalog's bundles do): the global pull secret, as on an
OpenShift cluster, is what pivoter pulls the bundle images with, and the password appears in no
status, Event or log.

OLM v0's own catalog inlines the bundle's manifests (``opm serve``), as in the other adoption
tests; pivoter's Catalog names the bundle images, pushed to an htpasswd registry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pivoter.apis.resources import RESOLUTIONS
from pivoter.olmv0.mapping import resolution_name
from tests.cluster import TestCluster
from tests.inputs.conftest import is_
from tests.inputs.test_registries_cluster import (
    GLOBAL,
    PASSWORD,
    Private,
    private,
    private_registry,
)
from tests.olmv0.content import BundleDir, new_version, read_bundle
from tests.olmv0.peer import OlmV0
from tests.olmv0.test_adopt_cluster import (
    DEPLOYMENTS,
    NAMESPACES,
    _adopt,
    _namespace,
    _next_patch,
    _pivoter_catalog,
)
from tests.registry_v1.helpers import bundle

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.timeout(600)]
__all__ = ["private", "private_registry"]  # the fixtures of tests/inputs/test_registries_cluster


def test_an_adopted_operator_upgrades_from_a_registry_that_needs_credentials(
    cluster: TestCluster,
    olm: OlmV0,
    olm_catalog: Callable[[list[BundleDir]], str],
    private: Private,
    tmp_path: Path,
) -> None:
    env = private.env
    aqua = read_bundle(bundle("aqua"))
    namespace = _namespace(env)
    source = olm.catalog_source(namespace, olm_catalog([aqua]))
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, aqua.package, aqua.channels[0], source)
    olm.wait_installed(namespace, aqua.package)
    deployment = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    private.secret(GLOBAL, PASSWORD)
    _pivoter_catalog(env, [aqua])  # the bundle image, pushed to the htpasswd registry
    name = resolution_name(namespace, aqua.package)
    adopted = _adopt(cluster, "--subscription", f"{namespace}/{aqua.package}", "--timeout", "300")
    env.created.append((RESOLUTIONS, name))
    assert adopted.returncode == 0, adopted.stderr + adopted.stdout
    (child,) = env.children(name).values()
    assert child["spec"]["template"]["spec"]["source"]["image"]["ref"].startswith(
        private.registry.host
    )
    # The next version reaches the adopted operator as a pivot, pulled with the credential.
    newer = new_version(aqua, _next_patch(aqua.version), tmp_path, env={"UPGRADED_BY": "pivoter"})
    _pivoter_catalog(env, [aqua, newer])
    obj = env.wait(
        name,
        lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
        what="the upgrade of the adopted operator through a pivot",
        timeout=240,
    )
    now = env.kube.get(DEPLOYMENTS, "aqua-operator", namespace)
    assert now["metadata"]["uid"] == deployment["metadata"]["uid"]
    containers = now["spec"]["template"]["spec"]["containers"]
    assert {"name": "UPGRADED_BY", "value": "pivoter"} in [
        e for c in containers for e in c.get("env") or []
    ]
    private.never_shown(obj)
    env.cleanup()
    env.kube.delete(NAMESPACES, namespace)
