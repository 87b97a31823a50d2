"""The ``Preparing`` phase of a grouped pivot on the real control plane: every bundle unpacked
and dry-run on the API server before any child changes, providers of CRDs and namespaces applied
before their consumers, and prepared Bundles released when a pivot ends."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import BUNDLES
from pivoter.kube import NotFound, Resource
from pivoter.pivot import children_selector
from pivoter.resolvesets import InputRef
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map, missing_kind
from tests.manifests import cr_manifest, crd_manifest

pytestmark = pytest.mark.cluster

CRDS = Resource(
    "apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", False
)


def _ready_at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


def _bundles_of(env: Env, name: str) -> list[str]:
    items, _ = env.kube.list(
        BUNDLES, label_selector=children_selector(InputRef("Resolution", name))
    )
    return sorted(str(b["metadata"]["name"]) for b in items)


@pytest.fixture
def group(namespace: str) -> str:
    """A CRD group of this test only (the test deletes its CRD: CRDs are kept on uninstall)."""
    return f"{namespace}.prepare.pivoter.io"


def test_providers_are_applied_before_their_consumers(env: Env, group: str) -> None:
    ns = env.namespace
    extra = f"{ns}-extra"
    namespace_doc = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": extra}}
    )
    widget = cr_manifest(group, "w", ns)
    env.publisher.add("provider", Version("1.0.0", crd_manifest(group) + "---\n" + namespace_doc))
    env.publisher.add(
        "consumer",
        Version(
            "1.0.0",
            widget + "---\n" + config_map("settings", extra, mode="fast"),
            requires=(("provider", ">=1.0.0"),),
        ),
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "consumer"}])
    try:
        obj = env.wait(name, _ready_at(1), what="provider then consumer installed", timeout=120)
        pivot = obj["status"]["pivot"]
        assert pivot["waves"] == [["provider"], ["consumer"]]
        assert pivot["appliedWaves"] == 2
        widgets = env.kube.resource(f"{group}/v1", "Widget")
        assert env.kube.get(widgets, "w", ns)["spec"] == {"size": 1}
        cm = env.kube.get(env.kube.resource("v1", "ConfigMap"), "settings", extra)
        assert cm["data"] == {"mode": "fast"}
        # The children own the Bundles prepared for them; none is left over.
        children = env.children(name)
        bundles = _bundles_of(env, name)
        assert len(bundles) == 2
        for bundle_name in bundles:
            bundle = env.kube.get(BUNDLES, bundle_name)
            owner = bundle["metadata"]["ownerReferences"][0]
            assert owner["kind"] == "BundleDeployment"
            assert owner["name"] in children
            assert bundle["metadata"]["name"] == children[owner["name"]]["status"]["activeBundle"]
    finally:
        env.cleanup()
        with contextlib.suppress(NotFound):
            env.kube.delete(CRDS, f"widgets.{group}")


def test_a_required_package_is_applied_first_though_no_object_shows_it(env: Env) -> None:
    """web needs db only at run time (``olm.package.required``; ``olm.gvk.required`` works the
    same): none of web's objects uses what db brings, and db still goes a wave earlier."""
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add(
        "web",
        Version("1.0.0", config_map("web", ns, version="1.0.0"), requires=(("db", ">=1.0.0"),)),
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    obj = env.wait(name, _ready_at(1), what="db then web installed", timeout=120)
    assert obj["status"]["pivot"]["waves"] == [["db"], ["web"]]
    (revision,) = env.store.list(InputRef("Resolution", name))
    bundles = {b["package"]: b for b in yaml.safe_load(revision.document)["bundles"]}
    assert bundles["web"]["requires"] == ["db"]
    assert "requires" not in bundles["db"]
    env.cleanup()


def test_a_dry_run_failure_changes_nothing_and_names_the_bundle(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add("app", Version("1.0.0", config_map("app", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "app"}, {"name": "db"}])
    env.wait(name, _ready_at(1), what="revision 1 installed")
    before = {n: bd["metadata"]["generation"] for n, bd in env.children(name).items()}

    env.publisher.add("db", Version("1.1.0", config_map("db", ns, version="1.1.0"), "1.0.0"))
    env.publisher.add(
        "app",
        Version(
            "1.1.0",
            config_map("app", ns, version="1.1.0") + "---\n" + missing_kind("x", ns),
            replaces="1.0.0",
        ),
    )
    env.publish()
    obj = env.wait(
        name, lambda o: is_(o, "Progressing", "False", "RolledBack"), what="the pivot to fail"
    )
    pivot = obj["status"]["pivot"]
    assert pivot["failedBundle"] == "app.v1.1.0"
    assert "server-side dry run of bundle app.v1.1.0 failed" in pivot["message"]
    assert "Nowhere" in pivot["message"]
    # Nothing of revision 2 was applied: not even db, whose bundle is fine.
    after = env.children(name)
    assert {n: bd["metadata"]["generation"] for n, bd in after.items()} == before
    assert env.config_map_data("db") == {"version": "1.0.0"}
    # The Bundles prepared for revision 2 were released when the pivot ended.
    active = sorted(str(bd["status"]["activeBundle"]) for bd in after.values())
    assert _bundles_of(env, name) == active


def test_a_first_install_that_cannot_unpack_fails_before_creating_children(env: Env) -> None:
    # A plain+v0 bundle without its manifests/ directory fails its format check on unpack.
    env.publisher.add("web", Version("1.0.0", "", files=(("docs/README.md", "no manifests"),)))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    obj = env.wait(
        name, lambda o: is_(o, "Progressing", "False", "PivotFailed"), what="the pivot to fail"
    )
    pivot = obj["status"]["pivot"]
    assert pivot["phase"] == "Failed"
    assert pivot["failedBundle"] == "web.v1.0.0"
    assert "Failed to unpack" in pivot["message"]
    assert "no earlier successful revision" in pivot["message"]
    assert env.children(name) == {}
    assert _bundles_of(env, name) == []
